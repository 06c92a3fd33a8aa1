"""controller.gitstore's watch of the remote (`probe.RemoteWatch`) and its probe on their own: the
health follows the last contact (answered, failed, answered again, each change of state logged
once), an idle writer's probe is due `probe_interval` after the last network operation, and the
probe and `branch_head` ask a real bare remote with `git ls-remote`."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import git
import pytest

from btp_gitops.controller.gitstore.probe import RemoteWatch, branch_head
from btp_gitops.controller.gitstore.runner import GitRunner
from btp_gitops.generator.core.errors import GitError
from tests.controller.test_gitstore import remote, remote_head, run_git, settings_for

__all__ = ["remote"]  # the fixture, shared with test_gitstore


def watched_runner(remote: Path, tmp_path: Path, watch: RemoteWatch) -> GitRunner:
    work = tmp_path / "work"
    run_git(tmp_path, "clone", "--quiet", str(remote), str(work))
    runner = GitRunner(settings_for(remote, work), work, "the remote", watch.contacted)
    runner.repo = git.Repo(work)
    return runner


def test_health_follows_the_last_contact_and_logs_each_change_once(caplog: pytest.LogCaptureFixture) -> None:
    watch = RemoteWatch("the remote", probe_interval=10.0)
    health = watch.health()
    assert not health.reachable and health.last_contact is None
    assert (
        health.unready_reason()
        == "the source repository is unreachable: the remote has not been contacted yet"
    )
    with caplog.at_level(logging.INFO, logger="btp_gitops.controller.gitstore"):
        watch.contacted("")
        answered = watch.health()
        watch.contacted("git fetch did not answer within 30s")
        watch.contacted("git push did not answer within 30s")
        failed = watch.health()
        watch.contacted("")
    assert answered.reachable and answered.problem == "" and answered.last_contact is not None
    assert answered.unready_reason() is None
    # A failure keeps the time of the last answer, and says what failed last.
    assert failed == type(failed)(False, "git push did not answer within 30s", answered.last_contact)
    assert watch.health().reachable
    assert [r.getMessage() for r in caplog.records] == [
        "the remote the remote is unreachable: git fetch did not answer within 30s",
        "the remote the remote answers again",
    ]


def test_a_probe_is_due_an_interval_after_the_last_network_operation() -> None:
    watch = RemoteWatch("the remote", probe_interval=0.5)
    assert 0.3 < watch.probe_due_in() <= 0.5
    time.sleep(0.6)
    assert watch.probe_due_in() <= 0
    watch.contacted("refused")  # a failure counts as much as an answer
    assert 0.3 < watch.probe_due_in() <= 0.5


def test_the_probe_asks_the_remote_and_follows_it_away_and_back(remote: Path, tmp_path: Path) -> None:
    watch = RemoteWatch("the remote", probe_interval=10.0)
    runner = watched_runner(remote, tmp_path, watch)
    watch.probe(runner, "main")
    assert watch.health().reachable
    moved = tmp_path / "moved.git"
    shutil.move(remote, moved)
    watch.probe(runner, "main")  # no exception: the outcome is the health
    health = watch.health()
    assert not health.reachable and health.problem.startswith("git ls-remote failed: ")
    shutil.move(moved, remote)
    watch.probe(runner, "main")
    assert watch.health().reachable


def test_no_probe_before_the_clone_is_open(remote: Path, tmp_path: Path) -> None:
    watch = RemoteWatch("the remote", probe_interval=10.0)
    runner = GitRunner(settings_for(remote, tmp_path), tmp_path, "the remote", watch.contacted)
    watch.probe(runner, "main")
    assert watch.health().last_contact is None
    with pytest.raises(GitError, match="not open"):
        branch_head(runner, "main", "the remote")


def test_the_branch_head_is_asked_without_fetching(remote: Path, tmp_path: Path) -> None:
    watch = RemoteWatch("the remote", probe_interval=10.0)
    runner = watched_runner(remote, tmp_path, watch)
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "--quiet", str(remote), str(other))
    run_git(other, "commit", "--quiet", "--allow-empty", "-m", "moved on")
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    assert branch_head(runner, "main", "the remote") == remote_head(remote)
    assert run_git(tmp_path / "work", "rev-parse", "origin/main") != remote_head(remote)  # nothing fetched
    with pytest.raises(GitError, match="branch nowhere does not exist on the remote"):
        branch_head(runner, "nowhere", "the remote")
    assert watch.health().reachable  # a missing branch is an answer
