"""controller.gitstore's writer thread (`writer.Writer`) on its own, over the real parts and a real bare
remote: an unexpected failure fails its batch and not the thread; changes queued while the remote
does not answer fail with its problem instead of waiting one timeout each; an idle writer probes
the remote; `stop` finishes what was queued and refuses what comes after."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from btp_gitops.controller.errors import GitTimeout
from btp_gitops.controller.gitstore.batches import ChangeQueue
from btp_gitops.controller.gitstore.clone import Clone
from btp_gitops.controller.gitstore.listeners import Listeners
from btp_gitops.controller.gitstore.pipeline import PushPipeline
from btp_gitops.controller.gitstore.probe import RemoteWatch
from btp_gitops.controller.gitstore.runner import GitRunner
from btp_gitops.controller.gitstore.writer import Writer
from btp_gitops.generator.core.errors import GitError
from tests.controller.test_gitstore import WriteFile, remote, remote_head, run_git, settings_for
from tests.controller.test_gitstore_clone import PathTracker

__all__ = ["remote"]  # the fixture, shared with test_gitstore


@dataclass
class Parts:
    clone: Clone
    changes: ChangeQueue
    watch: RemoteWatch
    writer: Writer


def started_writer(
    remote: Path, tmp_path: Path, tracker: PathTracker | None = None, **overrides: object
) -> Parts:
    settings = settings_for(remote, tmp_path / "work", **overrides)
    watch = RemoteWatch("the remote", settings.probe_interval)
    clone = Clone(
        settings, GitRunner(settings, settings.workdir, "the remote", watch.contacted), "the remote"
    )
    clone.tracker = tracker
    changes = ChangeQueue(settings)
    pipeline = PushPipeline(settings, clone, changes, Listeners(clone, "the remote"), "the remote")
    writer = Writer(clone, changes, pipeline, watch, "the remote")
    writer.claim()
    clone.open()
    writer.start()
    return Parts(clone, changes, watch, writer)


class FailsToOpenOnce(PathTracker):
    def __init__(self) -> None:
        super().__init__()
        self.opened = 0

    def open(self, tree: Path) -> None:
        self.opened += 1
        if self.opened == 1:
            raise RuntimeError("the index is broken")


def test_an_unexpected_failure_fails_its_batch_and_the_writer_goes_on(remote: Path, tmp_path: Path) -> None:
    tracker = FailsToOpenOnce()
    parts = started_writer(remote, tmp_path, tracker)
    try:
        failed = parts.changes.submit(WriteFile("a.txt", "a\n"), "write a")
        assert failed is not None
        with pytest.raises(GitError, match=r"writing to the remote failed unexpectedly \(RuntimeError\)"):
            failed.result(30)
        assert tracker.forgotten == 1  # whatever it knew of the tree is walked again
        landed = parts.changes.submit(WriteFile("b.txt", "b\n"), "write b")
        assert landed is not None and landed.result(30).commit == remote_head(remote)
    finally:
        parts.writer.stop()


def test_changes_queued_while_the_remote_is_silent_fail_with_its_problem(
    remote: Path, tmp_path: Path
) -> None:
    parts = started_writer(remote, tmp_path, network_timeout=2.0)
    hanging = tmp_path / "hanging-upload-pack"
    hanging.write_text("#!/bin/sh\nexec sleep 60\n")
    hanging.chmod(0o755)
    run_git(parts.clone.tree, "config", "remote.origin.uploadpack", str(hanging))
    try:
        first = parts.changes.submit(WriteFile("a.txt", "a\n"), "write a")
        time.sleep(0.5)  # the writer's fetch hangs
        waiting = [parts.changes.submit(WriteFile(f"{n}.txt", "n\n"), f"write {n}") for n in range(3)]
        started = time.monotonic()
        assert first is not None
        with pytest.raises(GitTimeout):
            first.result(30)
        for future in waiting:
            assert future is not None
            with pytest.raises(
                GitError, match="the remote the remote does not answer: git fetch did not answer"
            ):
                future.result(30)
        assert time.monotonic() - started < 2.0  # not one more timeout for them
        assert not parts.watch.health().reachable
    finally:
        parts.writer.stop()


def test_an_idle_writer_probes_the_remote(remote: Path, tmp_path: Path) -> None:
    parts = started_writer(remote, tmp_path, probe_interval=0.2)
    try:
        before = parts.watch.health().last_contact
        assert before is not None
        time.sleep(1.0)
        after = parts.watch.health().last_contact
        assert after is not None and after > before
    finally:
        parts.writer.stop()


def test_stop_finishes_what_was_queued_and_refuses_what_comes_after(remote: Path, tmp_path: Path) -> None:
    parts = started_writer(remote, tmp_path, batch_window=0.2)
    with pytest.raises(GitError, match="the writer of the remote is already running"):
        parts.writer.claim()
    queued = [parts.changes.submit(WriteFile(f"{n}.txt", f"{n}\n"), f"write {n}") for n in range(5)]
    parts.writer.stop()
    assert all(f is not None and f.result(0).commit == remote_head(remote) for f in queued)
    assert parts.changes.submit(WriteFile("late.txt", "late\n"), "too late") is None
