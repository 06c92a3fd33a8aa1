"""The wheel users install, built once per test session from this checkout's sources."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def source_files(root: Path) -> list[str]:
    """The checkout's files as Git sees them: tracked or new, not ignored (no .venv, no build/)."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout
    return sorted(name for name in listed.decode().split("\0") if name and (root / name).exists())


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """btp_gitops-<version>-py3-none-any.whl, as `pip wheel --no-deps` builds it.

    Built from a copy of the working tree (links kept as links), so setuptools' build/ directory
    cannot carry files of an earlier build into it, and nothing is written into the checkout."""
    source = tmp_path_factory.mktemp("source")
    for name in source_files(ROOT):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_symlink():
            target.symlink_to((ROOT / name).readlink())
        else:
            shutil.copy2(ROOT / name, target)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("btp_gitops-*.whl")
    return wheel
