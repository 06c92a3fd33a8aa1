"""controller.gitstore's runner of Git commands (`runner.GitRunner`) on its own, against real Git:
a command that talks to the remote and does not answer within `network_timeout` is killed with
everything it started (the remote's side, run here as Git's upload-pack, is in its process group),
each network command's outcome is reported, and errors never show a URL's credentials."""

from __future__ import annotations

import os
import time
from pathlib import Path

import git
import pytest

from btp_gitops.controller.errors import GitTimeout
from btp_gitops.controller.gitstore.runner import GitRunner
from btp_gitops.generator.core.errors import GitError
from tests.controller.test_gitstore import remote, remote_head, run_git, settings_for

__all__ = ["remote"]  # the fixture, shared with test_gitstore


def runner_in(clone: Path, remote: Path | str, heard: list[str], **overrides: object) -> GitRunner:
    runner = GitRunner(settings_for(remote, clone, **overrides), clone, "the remote", heard.append)
    runner.repo = git.Repo(clone)
    return runner


@pytest.fixture
def clone(remote: Path, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    run_git(tmp_path, "clone", "--quiet", str(remote), str(work))
    return work


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(") ")[-1].startswith("Z"))


def test_a_network_command_that_does_not_answer_is_killed_with_its_helpers(
    remote: Path, clone: Path, tmp_path: Path
) -> None:
    """The remote side (an upload-pack that hangs, started by `git fetch` as its child) is in the
    fetch's process group: both are gone when GitTimeout is raised, after about the timeout."""
    pid_file = tmp_path / "upload-pack.pid"
    hanging = tmp_path / "hanging-upload-pack"
    hanging.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    hanging.chmod(0o755)
    heard: list[str] = []
    runner = runner_in(clone, remote, heard, network_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(GitTimeout) as raised:
        runner.network("fetch", "fetch", "--quiet", f"--upload-pack={hanging}", "origin")
    assert time.monotonic() - started < 15
    assert "fetch" in raised.value.message and "the remote" in raised.value.message
    assert heard == ["git fetch did not answer within 1s"]
    helper = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(helper)


def test_an_answer_is_reported_as_contact_and_a_rejection_is_an_answer(
    remote: Path, clone: Path, tmp_path: Path
) -> None:
    heard: list[str] = []
    runner = runner_in(clone, remote, heard)
    status, out, _ = runner.network("ls-remote", "ls-remote", "--heads", "origin", "refs/heads/main")
    assert status == 0 and out.startswith(remote_head(remote))
    # Another writer moves the branch: our push of an older history is refused, an answer all the same.
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "--quiet", str(remote), str(other))
    (other / "theirs.txt").write_text("theirs\n")
    run_git(other, "add", "theirs.txt")
    run_git(other, "commit", "--quiet", "-m", "theirs")
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    (clone / "ours.txt").write_text("ours\n")
    run_git(clone, "add", "ours.txt")
    run_git(clone, "commit", "--quiet", "-m", "ours")
    status, out, err = runner.network("push", "push", "--quiet", "origin", "HEAD:refs/heads/main")
    assert status != 0 and "rejected" in err + out
    assert heard == ["", ""]


def test_a_remote_that_cannot_be_reached_is_reported_with_its_problem(clone: Path, tmp_path: Path) -> None:
    heard: list[str] = []
    runner = runner_in(clone, tmp_path / "gone.git", heard)
    status, _, _ = runner.network("ls-remote", "ls-remote", str(tmp_path / "gone.git"))
    assert status != 0
    assert len(heard) == 1 and heard[0].startswith("git ls-remote failed: ")


def test_errors_mask_the_credentials_of_a_url(remote: Path, clone: Path) -> None:
    """Git quotes the pathspec it cannot find as given, credentials and all; the error does not."""
    runner = runner_in(clone, remote, [])
    with pytest.raises(GitError) as raised:
        runner.run("checkout", "https://deploy:s3cr@t@git.example.com/source.git")
    assert "s3cr" not in raised.value.message and "deploy" not in raised.value.message
    assert "'https://***@git.example.com/source.git'" in raised.value.message


def test_local_commands_need_an_open_clone_and_fail_with_gits_reason(remote: Path, clone: Path) -> None:
    runner = GitRunner(settings_for(remote, clone), clone, "the remote", lambda problem: None)
    with pytest.raises(GitError, match=r"not open \(start\(\) first\)"):
        runner.execute("status")
    runner.repo = git.Repo(clone)
    assert runner.run("rev-parse", "HEAD") == remote_head(remote)
    with pytest.raises(
        GitError, match="git rev-parse failed for the remote: fatal: Needed a single revision"
    ):
        runner.run("rev-parse", "--verify", "no-such-ref")
    with pytest.raises(GitError, match="git cat-file failed"):
        runner.run_bytes("cat-file", "-p", "0" * 40)
    assert runner.run_bytes("cat-file", "-t", "HEAD") == b"commit\n"


def test_commits_are_made_with_the_settings_identity_whatever_the_local_config(
    remote: Path, clone: Path
) -> None:
    """Hooks and signing are off and the identity is the settings': a commit-msg hook that would
    fail and a signing demand in the clone's own config change nothing."""
    hook = clone / ".git" / "hooks" / "commit-msg"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    run_git(clone, "config", "commit.gpgSign", "true")
    runner = runner_in(clone, remote, [], author_name="the writer", author_email="writer@example.com")
    (clone / "ours.txt").write_text("ours\n")
    runner.run("add", "ours.txt")
    runner.run("commit", "--quiet", "-m", "ours")
    assert run_git(clone, "log", "-1", "--format=%an <%ae> / %cn <%ce>") == (
        "the writer <writer@example.com> / the writer <writer@example.com>"
    )
