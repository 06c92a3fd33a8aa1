"""The writer thread: the one thread that owns the clone between reads.

It takes a batch from the queue and hands it to the push pipeline, which pushes it and the
batches prepared behind it, in order. Nothing may end the thread: an unexpected failure fails the
batches it was carrying and is logged. While the remote does not answer, the changes queued
meanwhile fail with its problem rather than wait one timeout more; while idle, the thread probes
the remote (`RemoteWatch.probe`)."""

from __future__ import annotations

import logging
import queue
import threading

from btp_gitops.controller.gitstore.batches import ChangeQueue, Request, fail
from btp_gitops.controller.gitstore.clone import Clone
from btp_gitops.controller.gitstore.pipeline import Follower, PushPipeline
from btp_gitops.controller.gitstore.probe import RemoteWatch
from btp_gitops.generator.core import GitError

log = logging.getLogger(__name__)


class Writer:
    """Runs batches of `changes` through `pipeline` on a thread of its own, between `start` and
    `stop`."""

    def __init__(
        self, clone: Clone, changes: ChangeQueue, pipeline: PushPipeline, watch: RemoteWatch, remote: str
    ) -> None:
        self._clone = clone
        self._changes = changes
        self._pipeline = pipeline
        self._watch = watch
        self._remote = remote
        self._guard = threading.Lock()  # the thread: started once, stopped once
        self._thread: threading.Thread | None = None

    def claim(self) -> None:
        """Before a start: GitError when a writer is running already; submissions are accepted."""
        with self._guard:
            if self._thread is not None:
                raise GitError(f"the writer of {self._remote} is already running")
            self._changes.open()

    def start(self) -> None:
        thread = threading.Thread(
            target=self._write_loop, name=f"source-repo-writer:{self._clone.tree}", daemon=True
        )
        self._thread = thread
        thread.start()

    def stop(self) -> None:
        """Finish every change queued so far and end the thread; what comes later fails."""
        with self._guard:
            thread, self._thread = self._thread, None
            self._changes.close(stop_marker=thread is not None)
        if thread is not None:
            thread.join()
        self._changes.fail_waiting(GitError(f"the writer of {self._remote} has stopped"))

    def _write_loop(self) -> None:
        while True:
            idle = self._watch.probe_due_in()
            try:
                first = self._changes.first(idle)
            except queue.Empty:
                self._watch.probe(self._clone.runner, self._clone.settings.branch)
                continue
            if first is None:
                return
            batch, stopping = self._changes.collect(first)
            if batch:
                stopping = self._process_safely(batch) or stopping
            if not self._watch.health().reachable:
                # What queued up meanwhile would wait for the same silent remote once more: fail it
                # now (nothing of it was written), so no caller waits longer than one timeout or so.
                stopping = self._changes.fail_waiting(self._unanswered()) or stopping
            if stopping:
                return

    def _unanswered(self) -> GitError:
        return GitError(f"the remote {self._remote} does not answer: {self._watch.health().problem}")

    def _process_safely(self, batch: list[Request]) -> bool:
        """Nothing may end the writer thread: an unexpected failure fails its batch (and the
        batches prepared behind it) and is logged. True when the stop marker was seen."""
        taken = list(batch)  # every request taken from the queue, followers included
        try:
            return self._process(batch, taken)
        except Exception as error:
            log.exception("writing a batch of %d changes to %s failed", len(batch), self._remote)
            self._clone.pristine = False  # whatever state the tree was left in, a reset comes first
            if self._clone.tracker is not None:
                self._clone.tracker.forget()  # and whatever it knew of the tree, a walk
            failure = GitError(f"writing to {self._remote} failed unexpectedly ({type(error).__name__})")
            for request in taken:
                if not request.future.done():
                    request.future.set_exception(failure)
            return False

    def _process(self, batch: list[Request], taken: list[Request]) -> bool:
        """Push `batch`, then each batch prepared while the one before was being pushed, in order.
        True when the stop marker was seen while collecting them."""
        live: list[Request] = batch
        prepared: Follower | None = None
        stopping = False
        while live:
            follower = self._pipeline.push_batch(live, prepared)
            if follower is None:
                return stopping
            taken += follower.requests
            stopping = stopping or follower.stopping
            if not self._watch.health().reachable:
                fail(follower.requests, self._unanswered())
                return stopping
            live, prepared = follower.requests, (follower if follower.commit is not None else None)
        return stopping
