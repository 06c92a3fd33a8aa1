"""`SourceRepo`, the face of the package: what the subscription server and the reconcilers call.

It wires the parts (the clone and its Git runner, the queue, the push pipeline with its applier
and rebaser, the listeners, the remote's watch, the writer thread) and delegates to them.

Reads (`read`) run under the clone's lock, on a tree that is exactly a commit of the remote."""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from btp_gitops.controller.gitstore.batches import ChangeQueue
from btp_gitops.controller.gitstore.clone import Clone
from btp_gitops.controller.gitstore.interface import (
    CommitOutcome,
    RemoteHealth,
    RepoSettings,
    TreeChange,
    TreeTracker,
)
from btp_gitops.controller.gitstore.listeners import Listeners
from btp_gitops.controller.gitstore.messages import mask_credentials
from btp_gitops.controller.gitstore.pipeline import PushPipeline
from btp_gitops.controller.gitstore.probe import RemoteWatch, branch_head
from btp_gitops.controller.gitstore.rebase import overlaps
from btp_gitops.controller.gitstore.runner import GitRunner
from btp_gitops.controller.gitstore.writer import Writer
from btp_gitops.generator.core import GitError

log = logging.getLogger(__name__)

T = TypeVar("T")


class SourceRepo:
    """The source repository as the controller edits it: one clone, one writer thread."""

    # Which competitor files send a rebase the long way (tests call it on the class, as before).
    _overlaps = staticmethod(overlaps)

    def __init__(self, settings: RepoSettings, *, tracker: TreeTracker | None = None) -> None:
        self._settings = settings
        self._remote = remote = mask_credentials(settings.url)
        self._watch = RemoteWatch(remote, settings.probe_interval)
        self._runner = GitRunner(settings, settings.workdir, remote, self._watch.contacted)
        self._clone = Clone(settings, self._runner, remote)
        self._clone.tracker = tracker
        self._changes = ChangeQueue(settings)
        self._listeners = Listeners(self._clone, remote)
        pipeline = PushPipeline(settings, self._clone, self._changes, self._listeners, remote)
        self._writer = Writer(self._clone, self._changes, pipeline, self._watch, remote)

    # --- what it is -------------------------------------------------------------------------------

    @property
    def settings(self) -> RepoSettings:
        return self._settings

    @property
    def tracker(self) -> TreeTracker | None:
        return self._clone.tracker

    def track_tree(self, tracker: TreeTracker) -> None:
        """Keep `tracker` informed of the tree (before `start`; a second call is ignored)."""
        with self._clone.lock:
            if self._clone.tracker is None:
                self._clone.tracker = tracker

    @property
    def head(self) -> str:
        """Sha of the last commit known to be on the remote's branch ("" before `start`)."""
        return self._clone.head

    def remote_health(self) -> RemoteHealth:
        """Whether the remote answered the last time it was asked (by a fetch, push or probe)."""
        return self._watch.health()

    # --- its life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Clone the remote into `workdir` (or reuse the clone there), check out the remote's newest
        commit, and start the writer. Raises GitError when the remote or its branch cannot be read."""
        self._writer.claim()
        with self._clone.lock:
            self._clone.open()
        self._writer.start()
        log.info(
            "source repository %s (branch %s) at %s", self._remote, self._settings.branch, self._clone.head
        )

    def stop(self) -> None:
        """Finish every change queued so far, then stop the writer. Changes submitted afterwards (or
        left when the writer never ran) fail with GitError."""
        self._writer.stop()
        with self._clone.lock:
            self._clone.close()

    # --- who hears of commits ---------------------------------------------------------------------

    def on_new_head(self, listener: Callable[[Path, str], None]) -> None:
        """Call `listener(tree, head)` whenever the clone's tree is at a new commit of the remote
        (after our push, or a read that fetched), under the tree's lock: readers keep what they
        need of each commit (an index) and then answer without waiting for the lock."""
        with self._clone.lock:
            self._listeners.add_head(listener)

    def on_commit(self, listener: Callable[[Path, str], None]) -> None:
        """Call `listener(tree, commit)` when the tree is exactly at a commit of ours whose push is
        in flight (not on the remote yet) and the next batch is about to be applied on top, under
        the tree's lock: a reader indexes the commit now, to publish it on `on_pushed`."""
        with self._clone.lock:
            self._listeners.add_commit(listener)

    def on_pushed(self, listener: Callable[[str], None]) -> None:
        """Call `listener(head)` once our push made `head` the remote's commit while the tree has
        moved on (the next batch is applied on top of it already); `on_new_head` otherwise."""
        with self._clone.lock:
            self._listeners.add_pushed(listener)

    # --- changes and reads ------------------------------------------------------------------------

    def submit(self, change: TreeChange, message: str) -> concurrent.futures.Future[CommitOutcome]:
        """Queue `change`; the future resolves once a push carrying it succeeded (commit None when it
        changed nothing), or fails with the change's own error, GitPushRejected or GitError."""
        future = self._changes.submit(change, message)
        if future is None:
            future = concurrent.futures.Future()
            future.set_exception(GitError(f"the writer of {self._remote} has stopped"))
        return future

    def apply(self, change: TreeChange, message: str, timeout: float | None = None) -> CommitOutcome:
        """`submit` and wait (concurrent.futures.TimeoutError after `timeout` seconds: the change
        may still be pushed later)."""
        return self.submit(change, message).result(timeout)

    def read(self, reader: Callable[[Path], T], *, refresh: bool = True) -> T:
        """Run `reader` on the tree at a commit of the remote, under the writer's lock; with `refresh`,
        that commit is at least as new as the remote's branch when `read` was called. `reader` must
        not edit the tree, nor wait for a change of this repository (the writer waits for the lock)."""
        called = time.monotonic()
        clone = self._clone
        with clone.lock:
            self._runner.require()
            # A fetch that began after this call is as fresh as one of our own: concurrent readers
            # (and the writer) share it rather than each paying for a round trip.
            if refresh and clone.last_fetch_started < called:
                clone.fetch()
                clone.pristine = clone.pristine and clone.local_head() == clone.head
            if not clone.pristine:
                clone.reset_to_remote()
            self._listeners.head()
            return reader(clone.tree)

    def remote_head(self) -> str:
        """Sha of the remote's branch now, asked with `git ls-remote`: nothing is fetched and the
        writer's lock is not taken, so it costs one round trip even while a push is in flight.
        Readers compare it with `head` to learn whether a fetch would bring anything new."""
        return branch_head(self._runner, self._settings.branch, self._remote)

    def has_commit(self, sha: str) -> bool:
        """Whether the clone holds commit `sha` (without the writer's lock). A remote head the
        clone holds but `head` is not yet at is the writer's own commit, its push in flight."""
        status, _, _ = self._runner.execute("cat-file", "-e", f"{sha}^{{commit}}")
        return status == 0
