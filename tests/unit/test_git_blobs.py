"""io.git_blobs: the blob ids Git vouches for, checked against real Git."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from btp_gitops.generator.io import git_blobs
from btp_gitops.generator.io.commit_tree import commit_blobs
from btp_gitops.generator.io.git_blobs import _clean_entries, blob_id, work_tree_blobs

IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@localhost")


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args], input=stdin, capture_output=True, check=True, timeout=60
    ).stdout.decode()


def repository(path: Path, object_format: str = "sha1") -> Path:
    path.mkdir()
    git(path, "init", "-q", f"--object-format={object_format}")
    (path / "d").mkdir()
    (path / "d" / "a.yaml").write_bytes(b"a: 1\n")
    (path / "d" / "b.yaml").write_bytes(b"")
    (path / "d" / "c.yaml").write_bytes(b"c: \xff\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "files")
    return path


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_blob_ids_are_gits_for_either_object_format(tmp_path: Path, object_format: str) -> None:
    repo = repository(tmp_path / "repo", object_format)
    for data in (b"a: 1\n", b"", b"c: \xff\n"):
        assert blob_id(data, object_format) == git(repo, "hash-object", "--stdin", stdin=data).strip()
    vouched = work_tree_blobs(repo / "d")
    assert vouched is not None and vouched.object_format == object_format
    assert sorted(vouched.blobs) == ["a.yaml", "b.yaml", "c.yaml"]
    assert vouched.holds("a.yaml", b"a: 1\n") and not vouched.holds("a.yaml", b"a: 2\n")


def test_no_work_tree_vouches_for_nothing(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert work_tree_blobs(tmp_path / "plain") is None
    assert work_tree_blobs(tmp_path / "missing") is None


def test_a_dirty_an_untracked_and_a_conflicted_file_are_not_vouched_for(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    git(repo, "checkout", "-qb", "other")
    (repo / "d" / "c.yaml").write_bytes(b"c: other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "-")
    (repo / "d" / "c.yaml").write_bytes(b"c: main\n")
    git(repo, "commit", "-qam", "main")
    merge = ["git", "-C", str(repo), *IDENTITY, "merge", "-q", "other"]
    merged = subprocess.run(merge, capture_output=True, check=False, timeout=60)
    assert merged.returncode != 0  # c.yaml in conflict: stages 1 to 3 in the index
    (repo / "d" / "a.yaml").write_bytes(b"a: 2\n")  # dirty
    (repo / "d" / "new.yaml").write_bytes(b"new\n")  # untracked
    vouched = work_tree_blobs(repo / "d")
    assert vouched is not None
    assert sorted(vouched.blobs) == ["b.yaml"]


def test_a_commits_blobs_are_read_only_when_asked_and_checked(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    tree = git(repo, "rev-parse", "HEAD:d").strip()
    files = commit_blobs(repo, tree, "sha1", ("d/", "HEAD"))
    assert sorted(files) == ["a.yaml", "b.yaml", "c.yaml"]
    assert files.holds("c.yaml", b"c: \xff\n")
    files.fetch(["a.yaml", "c.yaml"])
    assert (files["a.yaml"], files["b.yaml"], files["c.yaml"]) == (b"a: 1\n", b"", b"c: \xff\n")
    left = files.without(["a.yaml", "c.yaml", "not-there.yaml"])
    assert dict(left.items()) == {"b.yaml": b""} and sorted(files) == ["a.yaml", "b.yaml", "c.yaml"]


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_commits_listing_takes_every_blob_by_its_whole_path_and_nothing_else(
    tmp_path: Path, object_format: str
) -> None:
    """The listing is read at fixed offsets: paths holding tabs, spaces, ` blob ` and what looks
    like a whole entry are taken whole; a link is a blob (its target's text), a submodule's
    commit and a directory are not files; either object format's ids."""
    repo = repository(tmp_path / "repo", object_format)
    oid = "e" * (40 if object_format == "sha1" else 64)
    odd = [
        "tab\there.yaml",
        " lead and trail ",
        f"100644 blob {oid}\tspelt.yaml",
        "x blob y",
        "ünï cödé.yaml",
    ]
    for name in odd:
        (repo / "d" / "sub dir").mkdir(exist_ok=True)
        (repo / "d" / "sub dir" / name).write_bytes(name.encode() + b"\n")
    (repo / "d" / "link").symlink_to("a.yaml")
    git(repo, "add", "-A")
    git(
        repo,
        "update-index",
        "--add",
        "--cacheinfo",
        f"160000,{git(repo, 'rev-parse', 'HEAD').strip()},d/module",
    )
    git(repo, "commit", "-qm", "odd names")
    tree = git(repo, "rev-parse", "HEAD:d").strip()
    files = commit_blobs(repo, tree, object_format, ("d/", "HEAD"))
    expected = sorted(["a.yaml", "b.yaml", "c.yaml", "link", *(f"sub dir/{name}" for name in odd)])
    assert list(files) == expected  # in path order, no directory, no submodule
    for name in odd:
        assert files[f"sub dir/{name}"] == name.encode() + b"\n"
    assert files["link"] == b"a.yaml"
    assert files.blob_of("a.yaml") == (blob_id(b"a: 1\n") if object_format == "sha1" else None)


def test_a_path_spelling_an_index_entry_is_never_read_as_one(tmp_path: Path) -> None:
    """A committed path may hold a tab, spaces and hex digits: one spelling a whole entry of the
    listing (tag H, a blob id, stage 0, then a path) must not make Git seem to vouch for the path
    it names, here an untracked file whose bytes are not that blob's."""
    repo = repository(tmp_path / "repo")
    claimed = b"planted: 1\n"
    spelt = f"H 100644 {blob_id(claimed)} 0\tplanted.yaml"
    (repo / "d" / "x").mkdir()
    (repo / "d" / "x" / spelt).write_bytes(b"x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a path spelling an entry")
    git(repo, "update-index", "--skip-worktree", f"d/x/{spelt}")  # its own entry is not vouched for
    (repo / "d" / "planted.yaml").write_bytes(b"other bytes\n")  # untracked
    vouched = work_tree_blobs(repo / "d")
    assert vouched is not None
    assert sorted(vouched.blobs) == ["a.yaml", "b.yaml", "c.yaml"]
    assert not vouched.holds("planted.yaml", claimed)


def test_a_listing_of_another_form_is_trusted_for_nothing() -> None:
    oid = "a" * 40
    good = f"H 100644 {oid} 0\ta.yaml\0"
    assert _clean_entries(good, "sha1") == {"a.yaml": oid}
    broken_forms = (
        good + "junk",
        good + "junk\0",
        good.replace(" 0\t", " 9\t"),
        good[:-1],
        f"H 100644 {oid[:-1]} 0\ta\0",
    )
    for broken in broken_forms:
        assert _clean_entries(broken, "sha1") is None
    # An entry Git cannot vouch for (skip-worktree) beside a clean one: the listing is read whole.
    assert _clean_entries(good + f"S 100644 {oid} 0\tb.yaml\0", "sha1") == {"a.yaml": oid}


def fake_git(tmp_path: Path, script: str) -> str:
    """A PATH whose `git` is this shell script."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "git").chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def test_git_never_reads_the_callers_standard_input(tmp_path: Path) -> None:
    """Behind `helm --post-renderer` this process's standard input is Helm's stream: a Git
    command run without input of its own must not see a byte of it."""
    path = fake_git(tmp_path, "cat")  # prints what it is given
    code = "import sys; from pathlib import Path; from btp_gitops.generator.io.git_blobs import git_output; "
    code += "sys.stdout.write(repr(git_output(Path('.'), 'status')) + '|' + repr(git_output(Path('.'), 'x', stdin=b'own')))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=b"kind: Secret\nstringData: {token: from-helm}\n",
        capture_output=True,
        check=True,
        timeout=60,
        env={**os.environ, "PATH": path},
    )
    assert done.stdout.decode() == "b''|b'own'"


def test_a_git_that_hangs_is_stopped_at_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_git(tmp_path, "exec sleep 60"))
    monkeypatch.setattr(git_blobs, "_GIT_TIMEOUT", 0.5)
    started = time.monotonic()
    assert git_blobs.git_output(tmp_path, "status") is None
    assert time.monotonic() - started < 30
