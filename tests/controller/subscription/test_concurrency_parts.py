"""The parts that let a burst of callbacks through without waiting in line for each other: binding
Secret reads shared by concurrent requests (never older than the request), handler slots given up
while a handler waits for its push, and request threads started off the event loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from btp_gitops.controller.clients.credentials import _SharedReads
from btp_gitops.controller.kube import KubeObject
from btp_gitops.controller.subscription.handlers import WorkSlots
from btp_gitops.controller.subscription.server import _RequestThreads


class VersionedSecret:
    """A Secret whose every read returns the version current when the read started, and whose
    reads block until released (so callers can be lined up behind one in flight)."""

    def __init__(self) -> None:
        self.version = 0
        self.reads = 0
        self.release = threading.Event()
        self.started = threading.Event()
        self._lock = threading.Lock()

    def read(self, namespace: str, name: str) -> KubeObject | None:
        with self._lock:
            self.reads += 1
            seen = self.version
        self.started.set()
        assert self.release.wait(10)
        return {"metadata": {"name": name, "namespace": namespace}, "data": {"version": str(seen)}}


def in_threads(count: int, call: Callable[[], object]) -> tuple[list[threading.Thread], list[object]]:
    results: list[object] = []
    lock = threading.Lock()

    def run() -> None:
        value = call()
        with lock:
            results.append(value)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, results


def version_of(secret: object) -> str:
    assert isinstance(secret, dict)
    return str(secret["data"]["version"])


def test_callers_that_arrive_during_a_read_share_the_next_one_and_never_get_an_older_secret() -> None:
    secret = VersionedSecret()
    reads = _SharedReads(secret.read)
    first, first_results = in_threads(1, lambda: reads.get("ns", "binding"))
    assert secret.started.wait(10)
    secret.version = 1  # rotated while the first read is in flight: later callers must see it
    later, later_results = in_threads(20, lambda: reads.get("ns", "binding"))
    time.sleep(0.2)  # the twenty are waiting behind the read in flight
    secret.release.set()
    for thread in [*first, *later]:
        thread.join(10)
    assert [version_of(r) for r in first_results] == ["0"]
    assert sorted(version_of(r) for r in later_results) == ["1"] * 20
    assert secret.reads == 2  # one for the first caller, one shared by the twenty


def test_a_failed_read_fails_its_callers_and_the_next_caller_reads_again() -> None:
    calls = []

    def read(namespace: str, name: str) -> KubeObject | None:
        calls.append(name)
        if len(calls) == 1:
            raise ConnectionError("the API server went away")
        return {"data": {}}

    reads = _SharedReads(read)
    with pytest.raises(ConnectionError):
        reads.get("ns", "binding")
    assert reads.get("ns", "binding") == {"data": {}}
    assert calls == ["binding", "binding"]


def test_a_handler_waiting_for_its_push_lets_another_one_work() -> None:
    slots = WorkSlots(1)
    waiting = threading.Event()
    done = threading.Event()

    def first() -> None:
        with slots.working(), slots.waiting():
            waiting.set()
            assert done.wait(10)

    thread = threading.Thread(target=first)
    thread.start()
    assert waiting.wait(10)
    entered = threading.Event()

    def second() -> None:
        with slots.working():
            entered.set()

    other = threading.Thread(target=second)
    other.start()
    assert entered.wait(5)  # the only slot was given up by the first handler while it waits
    done.set()
    thread.join(10)
    other.join(10)


def test_a_working_handler_holds_its_slot() -> None:
    slots = WorkSlots(1)
    release = threading.Event()
    entered = threading.Event()

    def holder() -> None:
        with slots.working():
            entered.set()
            assert release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert entered.wait(10)
    second = threading.Event()

    def waiter() -> None:
        with slots.working():
            second.set()

    other = threading.Thread(target=waiter)
    other.start()
    assert not second.wait(0.3)  # no slot while the first works
    release.set()
    assert second.wait(10)
    thread.join(10)
    other.join(10)


def test_request_threads_run_each_request_in_a_thread_of_its_own_up_to_the_limit() -> None:
    threads = _RequestThreads(50, "test-request")
    gate = threading.Event()
    running = threading.Semaphore(0)

    def request(number: int) -> int:
        running.release()
        assert gate.wait(10)
        return number

    try:
        futures = [threads.submit(request, n) for n in range(50)]
        for _ in range(50):  # all fifty run at once: none waits for a free thread
            assert running.acquire(timeout=10)
        gate.set()
        assert [f.result(10) for f in futures] == list(range(50))
    finally:
        threads.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        threads.submit(request, 0)


def test_request_threads_cancel_what_is_queued_at_shutdown() -> None:
    threads = _RequestThreads(1, "test-request")
    gate = threading.Event()
    started = threading.Event()

    def blocking() -> None:
        started.set()
        assert gate.wait(10)

    first = threads.submit(blocking)
    assert started.wait(10)
    queued = threads.submit(lambda: None)  # no second thread: waits behind the first
    threads.shutdown(wait=False, cancel_futures=True)
    gate.set()
    first.result(10)
    assert queued.cancelled()
