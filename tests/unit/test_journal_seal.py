"""The journal key and seal (io.journal_seal): made private once, refused when others could touch
it, and a seal that binds the plan, the journal's name and the cluster directory."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from btp_gitops.generator.io.journal_seal import KEY_FILE, journal_key, seal_text, seal_verifies, state_dir


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def test_the_key_is_made_once_private_and_read_back(environ: dict[str, str]) -> None:
    assert journal_key(create=False, environ=environ) is None
    key = journal_key(create=True, environ=environ)
    assert key is not None and len(key) == 32
    assert journal_key(create=False, environ=environ) == key
    directory = state_dir(environ)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / KEY_FILE).stat().st_mode) == 0o600
    assert sorted(p.name for p in directory.iterdir()) == [KEY_FILE]  # no temporary file left


def test_processes_making_the_key_at_once_agree_on_one(environ: dict[str, str]) -> None:
    keys: list[bytes | None] = []
    threads = [
        threading.Thread(target=lambda: keys.append(journal_key(create=True, environ=environ)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == 1 and keys[0] is not None


def test_a_key_others_could_write_or_read_is_not_used(environ: dict[str, str], tmp_path: Path) -> None:
    journal_key(create=True, environ=environ)
    directory = state_dir(environ)
    (directory / KEY_FILE).chmod(0o644)
    assert journal_key(create=False, environ=environ) is None
    (directory / KEY_FILE).chmod(0o600)
    directory.chmod(0o777)
    assert journal_key(create=True, environ=environ) is None
    directory.chmod(0o700)
    os.replace(directory / KEY_FILE, tmp_path / "elsewhere")
    (directory / KEY_FILE).symlink_to(tmp_path / "elsewhere")  # a link is never followed
    assert journal_key(create=False, environ=environ) is None


def test_the_seal_binds_plan_journal_and_directory(environ: dict[str, str], tmp_path: Path) -> None:
    key = journal_key(create=True, environ=environ)
    target = tmp_path / "repo" / "clusters" / "c1"
    seal = seal_text(key or b"", target, ".c1.journal-ab", b"plan").encode()
    assert seal_verifies(key, target, ".c1.journal-ab", b"plan", seal)
    assert not seal_verifies(key, target, ".c1.journal-ab", b"plan!", seal)
    assert not seal_verifies(key, target, ".c1.journal-cd", b"plan", seal)
    assert not seal_verifies(key, tmp_path / "other" / "clusters" / "c1", ".c1.journal-ab", b"plan", seal)
    assert not seal_verifies(os.urandom(32), target, ".c1.journal-ab", b"plan", seal)
    assert not seal_verifies(None, target, ".c1.journal-ab", b"plan", seal)
