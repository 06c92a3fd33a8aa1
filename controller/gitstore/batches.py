"""The writer's queue: changes submitted from any thread, taken by the writer in batches.

    take the first queued change, wait `batch_window` for more (at most `max_batch`)

They share one commit. While a push is in flight the writer takes the next batch the same way,
for one batch window from its first change, to apply on top of the commit being pushed. A change
whose future was cancelled before the writer took it is dropped; a stop marker ends the writer
once what was queued before it is done."""

from __future__ import annotations

import concurrent.futures
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from btp_gitops.controller.gitstore.interface import CommitOutcome, Footprint, RepoSettings, TreeChange
from btp_gitops.generator.core import BtpGitopsError


@dataclass(slots=True)
class Request:
    """One submitted change and the future its caller waits on."""

    change: TreeChange
    message: str
    future: concurrent.futures.Future[CommitOutcome]
    summary: str | None = None
    footprint: Footprint | None = None  # of its last application, when a tracker recorded it


def resolve(live: list[Request], commit: str | None, pushes: int) -> None:
    """The push of `commit` carried `live`: each change's future succeeds (commit None for a
    change that changed nothing)."""
    for request in live:
        carried = commit if request.summary is not None else None
        request.future.set_result(CommitOutcome(carried, request.summary, pushes))


def fail(live: list[Request], error: BtpGitopsError) -> None:
    for request in live:
        request.future.set_exception(error)


class ChangeQueue:
    """Submissions from any thread (while open), taken by the one writer thread."""

    def __init__(self, settings: RepoSettings) -> None:
        self._window = settings.batch_window
        self._max_batch = settings.max_batch
        self._queue: queue.SimpleQueue[Request | None] = queue.SimpleQueue()
        self._state = threading.Lock()  # accepting submissions / stopping
        self._accepting = True

    def open(self) -> None:
        with self._state:
            self._accepting = True

    def close(self, *, stop_marker: bool) -> None:
        """Accept nothing more; with `stop_marker`, the writer stops once it took what came before."""
        with self._state:
            self._accepting = False
            if stop_marker:
                self._queue.put(None)

    def submit(self, change: TreeChange, message: str) -> concurrent.futures.Future[CommitOutcome] | None:
        """Queue `change`; None when the queue is closed."""
        with self._state:
            if not self._accepting:
                return None
            future: concurrent.futures.Future[CommitOutcome] = concurrent.futures.Future()
            self._queue.put(Request(change, message, future))
            return future

    def first(self, timeout: float) -> Request | None:
        """The next queued request (None: the stop marker), waiting at most `timeout` seconds
        (not at all when <= 0); queue.Empty when there is none by then."""
        return self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()

    def collect(self, first: Request) -> tuple[list[Request], bool]:
        """The first request and whatever else arrives within the batch window; (batch, stop seen)."""
        batch = [first] if first.future.set_running_or_notify_cancel() else []
        deadline = time.monotonic() + self._window
        while len(batch) < self._max_batch:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            if item.future.set_running_or_notify_cancel():  # a cancelled future is dropped here
                batch.append(item)
        return batch, False

    def collect_while(self, busy: Callable[[], bool]) -> tuple[list[Request], bool]:
        """What is queued while `busy()` holds (a push in flight), for one batch window from the
        first request taken, as `collect`; (requests, stop seen)."""
        requests: list[Request] = []
        deadline = math.inf  # the batch window, from the first request taken
        while busy() and len(requests) < self._max_batch:
            if time.monotonic() >= deadline:
                break  # applied now, while the push is still in flight
            try:
                item = self._queue.get(timeout=0.002)
            except queue.Empty:
                continue
            if item is None:
                return requests, True
            if item.future.set_running_or_notify_cancel():
                requests.append(item)
                deadline = min(deadline, time.monotonic() + self._window)
        return requests, False

    def fail_waiting(self, error: BtpGitopsError) -> bool:
        """Fail every queued change with `error`; True when the stop marker was seen."""
        stopping = False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return stopping
            if item is None:
                stopping = True
            elif item.future.set_running_or_notify_cancel():
                item.future.set_exception(error)
