"""controller.gitstore against a writer that wins every race for a while: pushes that lose a race
to another writer are retried for `race_timeout` seconds, beyond `max_attempts`; pushes the remote
declines (a hook) still fail after `max_attempts` (tests/controller/test_gitstore.py).

The race is real and deterministic: the clone's `remote.origin.uploadpack` is a script that serves
the fetch with `git upload-pack` and then, before the fetch returns, has another clone push a
commit to the branch. Every push made on what a fetch brought is then refused by the remote as
"fetch first", until the script has pushed its quota. Nothing is faked."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from btp_gitops.controller.errors import GitPushRejected
from btp_gitops.controller.gitstore import RepoSettings, SourceRepo, _backoff
from tests.controller.test_gitstore import WriteFile, fresh_clone, remote, run_git, settings_for

__all__ = ["remote"]  # the fixture, shared with test_gitstore


def install_racing_upload_pack(
    remote: Path, clone: Path, tmp_path: Path, races: int, *, also: str = "true"
) -> Path:
    """After each fetch from `clone`, another writer pushes a line of competitor.txt to main, until
    it pushed `races` times; returns its clone (its lines, in order, in competitor.txt there).
    `also`: a shell command run in that clone before each of its commits (`$count`: the race's
    number), for files of its own beside competitor.txt."""
    competitor = fresh_clone(remote, tmp_path / "competitor")
    counter = tmp_path / "races"
    counter.write_text("0\n")
    script = tmp_path / "racing-upload-pack"
    quoted = shlex.quote
    script.write_text(
        f"""#!/bin/sh
git upload-pack "$@" || exit $?
count=$(cat {quoted(str(counter))})
[ "$count" -lt {races} ] || exit 0
echo $((count + 1)) > {quoted(str(counter))}
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
export GIT_AUTHOR_NAME=other GIT_AUTHOR_EMAIL=other@example.com
export GIT_COMMITTER_NAME=other GIT_COMMITTER_EMAIL=other@example.com
cd {quoted(str(competitor))} || exit 1
{{
  git fetch --quiet origin &&
  git reset --quiet --hard origin/main &&
  echo "other-$count" >> competitor.txt &&
  {also} &&
  git add --all &&
  git commit --quiet --message "other $count" &&
  git push --quiet origin HEAD:refs/heads/main
}} >/dev/null 2>&1 || exit 1
"""
    )
    script.chmod(0o755)
    run_git(clone, "config", "remote.origin.uploadpack", str(script))
    return competitor


def shown(remote: Path, path: str) -> str:
    return run_git(remote, "show", f"main:{path}")


def test_a_push_that_keeps_losing_races_is_retried_beyond_max_attempts(remote: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    source = SourceRepo(settings_for(remote, workdir, max_attempts=2, backoff_initial=0.01, race_timeout=60))
    source.start()
    try:
        install_racing_upload_pack(remote, workdir, tmp_path, races=5)
        outcome = source.apply(WriteFile("ours.txt", "ours\n"), "Write ours", timeout=60)
    finally:
        source.stop()
    assert outcome.attempts == 6  # five lost races, then the push that landed
    assert outcome.commit == run_git(remote, "rev-parse", "main").strip()
    assert shown(remote, "ours.txt") == "ours"
    # Every competitor commit is kept, in order, below ours.
    assert shown(remote, "competitor.txt").splitlines() == [f"other-{n}" for n in range(5)]


def test_races_are_retried_only_for_race_timeout(remote: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    source = SourceRepo(settings_for(remote, workdir, max_attempts=2, backoff_initial=0.01, race_timeout=0))
    source.start()
    try:
        install_racing_upload_pack(remote, workdir, tmp_path, races=5)
        with pytest.raises(GitPushRejected, match=r"rejected 2 pushes.*fetch first"):
            source.apply(WriteFile("ours.txt", "ours\n"), "Write ours", timeout=60)
    finally:
        source.stop()
    assert "ours.txt" not in run_git(remote, "ls-tree", "--name-only", "main").split()


def test_after_a_lost_race_the_writer_waits_at_most_the_initial_backoff() -> None:
    """The branch moved just now: waiting longer would only land the next attempt at a random
    point of the winner's cycle. A push the remote declined backs off exponentially as before."""
    settings = RepoSettings(url="unused", workdir=Path("unused"), backoff_initial=0.05, backoff_max=2.0)
    for attempt in (1, 5, 10, 50):
        waits = [_backoff(settings, attempt, lost_race=True) for _ in range(200)]
        assert all(0.0 <= wait <= 0.05 for wait in waits)
    declined = [_backoff(settings, 6) for _ in range(200)]
    assert all(0.8 <= wait <= 1.6 for wait in declined)  # ceiling 0.05 * 2**5 = 1.6 (under the cap)
