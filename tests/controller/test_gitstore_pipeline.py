"""controller.gitstore's push pipeline (`pipeline.PushPipeline`) and its listeners on their own,
against a real bare remote, without the writer thread: one `push_batch` call commits and pushes a
batch and answers its futures; the batch queued while that push is in flight (a pre-receive hook
holds it) is applied on top of it, told to `on_commit` readers, and pushed next without running
again; a push that loses a race is rebased and pushed again; one a hook declines fails after
`max_attempts`; one that gets no answer and did not land fails with OutcomeUnknown."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from btp_gitops.controller.errors import GitPushRejected, OutcomeUnknown
from btp_gitops.controller.gitstore import CommitOutcome, RepoSettings
from btp_gitops.controller.gitstore.batches import ChangeQueue, Request
from btp_gitops.controller.gitstore.clone import Clone
from btp_gitops.controller.gitstore.listeners import Listeners
from btp_gitops.controller.gitstore.pipeline import PushPipeline, backoff
from btp_gitops.controller.gitstore.probe import RemoteWatch
from btp_gitops.controller.gitstore.runner import GitRunner
from tests.controller.test_gitstore import remote, remote_head, run_git, settings_for
from tests.controller.test_push_races import install_racing_upload_pack

__all__ = ["remote"]  # the fixture, shared with test_gitstore


@dataclass
class Counted:
    """Writes `path`, counting its runs."""

    path: str
    text: str
    runs: int = 0

    def __call__(self, tree: Path) -> str | None:
        self.runs += 1
        (tree / self.path).write_text(self.text)
        return f"write {self.path}"


@dataclass
class Heard:
    heads: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    pushed: list[str] = field(default_factory=list)


@dataclass
class Parts:
    clone: Clone
    changes: ChangeQueue
    pipeline: PushPipeline
    heard: Heard


def pipeline_for(remote: Path, tmp_path: Path, **overrides: object) -> Parts:
    settings: RepoSettings = settings_for(remote, tmp_path / "work", **overrides)
    watch = RemoteWatch("the remote", settings.probe_interval)
    clone = Clone(
        settings, GitRunner(settings, settings.workdir, "the remote", watch.contacted), "the remote"
    )
    clone.open()
    changes = ChangeQueue(settings)
    listeners = Listeners(clone, "the remote")
    heard = Heard()
    listeners.add_head(lambda tree, head: heard.heads.append(head))
    listeners.add_commit(lambda tree, commit: heard.commits.append(commit))
    listeners.add_pushed(heard.pushed.append)
    return Parts(clone, changes, PushPipeline(settings, clone, changes, listeners, "the remote"), heard)


def taken(change: Callable[[Path], str | None], message: str) -> Request:
    """A request as the writer takes it from the queue (its future running)."""
    future: concurrent.futures.Future[CommitOutcome] = concurrent.futures.Future()
    future.set_running_or_notify_cancel()
    return Request(change, message, future)


def hook(remote: Path, script: str) -> None:
    path = remote / "hooks" / "pre-receive"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


def test_a_batch_is_committed_pushed_and_answered(remote: Path, tmp_path: Path) -> None:
    parts = pipeline_for(remote, tmp_path, pipeline=False)
    seed = parts.clone.head
    live = [taken(Counted("a.txt", "a\n"), "write a"), taken(lambda tree: None, "nothing to do")]
    assert parts.pipeline.push_batch(live, None) is None
    head = remote_head(remote)
    assert live[0].future.result(0) == CommitOutcome(head, "write a.txt", 1)
    assert live[1].future.result(0) == CommitOutcome(None, None, 1)
    assert run_git(remote, "rev-parse", "main^") == seed
    assert parts.clone.head == head and parts.clone.pristine
    assert parts.heard == Heard(heads=[seed, head])  # when added, then at the pushed commit


def test_the_batch_queued_during_a_push_goes_on_top_of_it_and_is_pushed_next(
    remote: Path, tmp_path: Path
) -> None:
    hook(remote, "sleep 1")  # the push stays in flight a while
    parts = pipeline_for(remote, tmp_path, batch_window=0.05)
    next_changes = [Counted("b.txt", "b\n"), Counted("c.txt", "c\n")]
    futures = [parts.changes.submit(change, f"write {change.path}") for change in next_changes]
    seed = parts.clone.head
    first = Counted("a.txt", "a\n")
    live = [taken(first, "write a")]
    follower = parts.pipeline.push_batch(live, None)
    ours = remote_head(remote)
    assert live[0].future.result(0).commit == ours
    assert follower is not None and follower.prepared and follower.commit is not None
    assert follower.base == ours and [r.message for r in follower.requests] == ["write b.txt", "write c.txt"]
    assert run_git(parts.clone.tree, "rev-parse", f"{follower.commit}^") == ours
    # Readers indexed the commit in flight before the tree moved on, and heard it landed.
    assert parts.heard == Heard(heads=[seed], commits=[ours], pushed=[ours])
    assert parts.pipeline.push_batch(follower.requests, follower) is None
    assert remote_head(remote) == follower.commit
    assert [f.result(0).commit for f in futures if f is not None] == [follower.commit] * 2
    assert [c.runs for c in (first, *next_changes)] == [1, 1, 1]  # nothing applied twice


def test_a_push_that_lost_a_race_is_made_again_on_the_new_head(remote: Path, tmp_path: Path) -> None:
    parts = pipeline_for(remote, tmp_path, backoff_initial=0.01)
    install_racing_upload_pack(remote, parts.clone.tree, tmp_path, races=2)
    change = Counted("ours.txt", "ours\n")
    live = [taken(change, "write ours")]
    assert parts.pipeline.push_batch(live, None) is None
    outcome = live[0].future.result(0)
    assert outcome.attempts == 3 and outcome.commit == remote_head(remote)
    assert change.runs == 3  # no tracker: the batch is applied to each new head
    assert run_git(remote, "log", "--format=%s", "-3", "main").splitlines() == [
        "write ours",
        "other 1",
        "other 0",
    ]


def test_a_push_a_hook_declines_fails_after_max_attempts(remote: Path, tmp_path: Path) -> None:
    hook(remote, "echo 'not today' >&2; exit 1")
    parts = pipeline_for(remote, tmp_path, max_attempts=2, backoff_initial=0.01, backoff_max=0.02)
    seed = parts.clone.head
    live = [taken(Counted("ours.txt", "ours\n"), "write ours")]
    assert parts.pipeline.push_batch(live, None) is None
    with pytest.raises(GitPushRejected, match=r"the remote rejected 2 pushes to main: .*not today"):
        live[0].future.result(0)
    assert remote_head(remote) == seed
    assert parts.clone.local_head() == seed and parts.clone.pristine  # back at the remote's commit
    assert not (parts.clone.tree / "ours.txt").exists()


def test_a_push_that_got_no_answer_and_did_not_land_has_an_unknown_outcome(
    remote: Path, tmp_path: Path
) -> None:
    hook(remote, "sleep 30")  # the push is killed, hook and all, after network_timeout
    parts = pipeline_for(remote, tmp_path, network_timeout=1.0, pipeline=False)
    seed = parts.clone.head
    live = [taken(Counted("ours.txt", "ours\n"), "write ours")]
    assert parts.pipeline.push_batch(live, None) is None
    with pytest.raises(OutcomeUnknown, match="got no answer and has not landed yet; it may still land"):
        live[0].future.result(0)
    assert remote_head(remote) == seed
    assert parts.clone.local_head() == seed


def test_backoff_doubles_per_attempt_up_to_its_ceiling_with_jitter(remote: Path, tmp_path: Path) -> None:
    settings = settings_for(remote, tmp_path, backoff_initial=0.1, backoff_max=0.5)
    for attempt, ceiling in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.5), (9, 0.5)]:
        waits = [backoff(settings, attempt) for _ in range(100)]
        assert all(ceiling / 2 <= wait <= ceiling for wait in waits)
        assert len(set(waits)) > 1
