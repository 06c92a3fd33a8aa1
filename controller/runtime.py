"""Level-triggered reconcile loops: watch a kind, queue object keys, reconcile each key alone.

A reconciler never gets an event's payload, only the key of an object that may need work: it reads
the live object and decides from its state (status, annotations, finalizers, what exists around
it) what to do next. So a controller killed at any moment resumes where it was by reconciling every
object again (the initial list queues every key), and a reconcile done twice does nothing new.

    watch thread per watched kind ──> WorkQueue (dedups keys, delays, backoff) ──> worker threads
         list + watch, relist on                                                      reconcile(key)
         410/errors, resync timer                                                     -> Outcome

A key is never reconciled by two workers at once. `TemporaryError(delay)` requeues with bounded
exponential backoff; `PermanentError` is logged and retried only on the next change or resync;
anything else is logged with its traceback and backed off like a temporary error.
"""

from __future__ import annotations

import heapq
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from btp_gitops.controller.errors import PermanentError, TemporaryError
from btp_gitops.controller.kube import KubeClient, KubeObject, Resource

log = logging.getLogger("btp_gitops.controller")


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    namespace: str  # "" for cluster-scoped objects
    name: str

    @classmethod
    def of(cls, obj: KubeObject) -> ObjectKey:
        meta = obj.get("metadata") or {}
        return cls(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to do after a reconcile: `requeue_after` seconds, or wait for a change (None)."""

    requeue_after: float | None = None


DONE = Outcome()


@dataclass(frozen=True, slots=True)
class Watch:
    """A kind whose changes queue keys: the object's own key for the primary kind, or the keys
    `to_keys` maps a related object to (e.g. a Job to the tenant it runs for)."""

    resource: Resource
    label_selector: str | None = None
    namespace: str | None = None
    to_keys: Callable[[KubeObject], Iterable[ObjectKey]] = lambda obj: (ObjectKey.of(obj),)


class Reconciler(Protocol):
    """One control loop. `watches[0]` is usually the kind whose objects are the keys."""

    @property
    def name(self) -> str: ...

    @property
    def watches(self) -> Sequence[Watch]: ...

    def reconcile(self, key: ObjectKey) -> Outcome: ...


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    resync_period: float = 300.0  # every key is queued again this often, in case an event was missed
    backoff_initial: float = 1.0
    backoff_max: float = 300.0
    workers: int = 2  # per reconciler
    watch_timeout: int = 300


class RuntimeMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconciles = Counter(
            "btp_gitops_controller_reconcile_total",
            "Reconciles by reconciler and result (ok, requeue, retry, permanent_error, error).",
            ["reconciler", "result"],
            registry=registry,
        )
        self.duration = Histogram(
            "btp_gitops_controller_reconcile_duration_seconds",
            "Time spent in one reconcile.",
            ["reconciler"],
            registry=registry,
        )
        self.queue_depth = Gauge(
            "btp_gitops_controller_queue_depth",
            "Keys waiting to be reconciled.",
            ["reconciler"],
            registry=registry,
        )
        self.watch_restarts = Counter(
            "btp_gitops_controller_watch_restarts_total",
            "Watches that ended with an error and were listed again.",
            ["resource"],
            registry=registry,
        )


class WorkQueue:
    """Keys due now or later; a key is in the queue at most once and never handed out twice at once."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._due: list[tuple[float, int, ObjectKey]] = []
        self._scheduled: dict[ObjectKey, float] = {}
        self._active: set[ObjectKey] = set()
        self._again: dict[ObjectKey, float] = {}  # keys queued while active: run after they finish
        self._counter = 0
        self._closed = False

    def add(self, key: ObjectKey, delay: float = 0.0) -> None:
        when = time.monotonic() + max(delay, 0.0)
        with self._lock:
            if self._closed:
                return
            if key in self._active:
                self._again[key] = min(when, self._again.get(key, when))
                return
            if key in self._scheduled and self._scheduled[key] <= when:
                return
            self._schedule(key, when)

    def _schedule(self, key: ObjectKey, when: float) -> None:
        self._scheduled[key] = when
        self._counter += 1
        heapq.heappush(self._due, (when, self._counter, key))
        self._lock.notify()

    def get(self) -> ObjectKey | None:
        """The next due key (blocking), or None once closed."""
        with self._lock:
            while not self._closed:
                while self._due and self._scheduled.get(self._due[0][2]) != self._due[0][0]:
                    heapq.heappop(self._due)  # superseded by an earlier schedule of the same key
                if self._due:
                    when, _, key = self._due[0]
                    wait = when - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._due)
                        del self._scheduled[key]
                        self._active.add(key)
                        return key
                    self._lock.wait(wait)
                else:
                    self._lock.wait()
            return None

    def done(self, key: ObjectKey) -> None:
        with self._lock:
            self._active.discard(key)
            again = self._again.pop(key, None)
            if again is not None and not self._closed:
                self._schedule(key, again)

    def __len__(self) -> int:
        with self._lock:
            return len(self._scheduled)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()


@dataclass
class _Loop:
    reconciler: Reconciler
    queue: WorkQueue = field(default_factory=WorkQueue)
    failures: dict[ObjectKey, int] = field(default_factory=dict)
    synced: threading.Event = field(default_factory=threading.Event)


class Manager:
    """Runs reconcilers until `stop()`; `ready()` once every watch has listed once."""

    def __init__(
        self,
        kube: KubeClient,
        reconcilers: Sequence[Reconciler],
        settings: RuntimeSettings,
        registry: CollectorRegistry,
    ) -> None:
        self._kube = kube
        self._loops = [_Loop(r) for r in reconcilers]
        self._settings = settings
        self._metrics = RuntimeMetrics(registry)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watches_synced: list[threading.Event] = []

    def start(self) -> None:
        self._kube.keep_connections(self.connections_needed())
        for loop in self._loops:
            for watch in loop.reconciler.watches:
                synced = threading.Event()
                self._watches_synced.append(synced)
                self._spawn(
                    f"watch-{loop.reconciler.name}-{watch.resource.plural}", self._watch, loop, watch, synced
                )
            for index in range(self._settings.workers):
                self._spawn(f"reconcile-{loop.reconciler.name}-{index}", self._work, loop)

    def connections_needed(self) -> int:
        """Connections to the API server in use at once: one per watch (its list, then its long
        poll), one per worker (a reconcile sends one request at a time), and two for the process
        around the manager (the Lease renewals and its release). A smaller pool opens the surplus
        for each request and discards it afterwards, with a urllib3 warning per connection, which
        is every watch at once when the manager stops."""
        watches = sum(len(loop.reconciler.watches) for loop in self._loops)
        return watches + self._settings.workers * len(self._loops) + 2

    def _spawn(self, name: str, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def ready(self) -> bool:
        return all(event.is_set() for event in self._watches_synced) and not self._stopping.is_set()

    def healthy(self) -> bool:
        return all(thread.is_alive() for thread in self._threads) or self._stopping.is_set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        for loop in self._loops:
            loop.queue.close()
        self._kube.interrupt_watches()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- watching

    def _watch(self, loop: _Loop, watch: Watch, synced: threading.Event) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                items, version = self._kube.list_with_version(
                    watch.resource, watch.namespace, watch.label_selector
                )
                for item in items:
                    self._enqueue_for(loop, watch, item)
                synced.set()
                listed_at = time.monotonic()
                failures = 0
                while not self._stopping.is_set():
                    for kind, obj in self._kube.watch(
                        watch.resource,
                        version,
                        watch.namespace,
                        watch.label_selector,
                        timeout_seconds=self._settings.watch_timeout,
                    ):
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        if kind != "BOOKMARK":
                            self._enqueue_for(loop, watch, obj)
                        if self._stopping.is_set():
                            return
                    if time.monotonic() - listed_at >= self._settings.resync_period:
                        break  # list again: every key is reconciled again (resync)
            except TemporaryError as error:
                if self._stopping.is_set():
                    # `stop()` cut the long poll on purpose (interrupt_watches): the end of the
                    # watch is the stop itself, not a failure to report or retry.
                    log.debug("watch %s interrupted: stopping", watch.resource.plural)
                    return
                failures += 1
                self._metrics.watch_restarts.labels(watch.resource.plural).inc()
                delay = min(
                    self._settings.backoff_max, self._settings.backoff_initial * 2 ** min(failures, 8)
                )
                log.warning("watch %s ended: %s; listing again in %.1fs", watch.resource.plural, error, delay)
                self._stopping.wait(delay if failures > 1 else 0.2)
            except PermanentError as error:
                if self._stopping.is_set():
                    return
                failures += 1
                log.error("cannot watch %s: %s", watch.resource.plural, error)
                self._stopping.wait(min(self._settings.backoff_max, 5.0 * failures))

    def _enqueue_for(self, loop: _Loop, watch: Watch, obj: KubeObject) -> None:
        for key in watch.to_keys(obj):
            loop.queue.add(key)
        self._metrics.queue_depth.labels(loop.reconciler.name).set(len(loop.queue))

    # -- reconciling

    def _work(self, loop: _Loop) -> None:
        name = loop.reconciler.name
        while True:
            key = loop.queue.get()
            if key is None:
                return
            try:
                self._reconcile_one(loop, key)
            finally:
                loop.queue.done(key)
                self._metrics.queue_depth.labels(name).set(len(loop.queue))

    def _backoff(self, loop: _Loop, key: ObjectKey, hint: float) -> float:
        failures = loop.failures.get(key, 0) + 1
        loop.failures[key] = failures
        delay = max(hint, self._settings.backoff_initial * 2 ** min(failures - 1, 16))
        return float(min(self._settings.backoff_max, delay) * random.uniform(0.9, 1.1))

    def _reconcile_one(self, loop: _Loop, key: ObjectKey) -> None:
        name = loop.reconciler.name
        started = time.monotonic()
        try:
            outcome = loop.reconciler.reconcile(key)
        except TemporaryError as error:
            delay = self._backoff(loop, key, error.delay)
            log.info("%s %s: %s (retrying in %.1fs)", name, key, error.message, delay)
            self._metrics.reconciles.labels(name, "retry").inc()
            loop.queue.add(key, delay)
            return
        except PermanentError as error:
            loop.failures.pop(key, None)
            log.error("%s %s: %s", name, key, error.message)
            self._metrics.reconciles.labels(name, "permanent_error").inc()
            return
        except Exception:
            delay = self._backoff(loop, key, self._settings.backoff_initial)
            log.exception("%s %s: unexpected error (retrying in %.1fs)", name, key, delay)
            self._metrics.reconciles.labels(name, "error").inc()
            loop.queue.add(key, delay)
            return
        finally:
            self._metrics.duration.labels(name).observe(time.monotonic() - started)
        loop.failures.pop(key, None)
        if outcome.requeue_after is not None:
            loop.queue.add(key, outcome.requeue_after)
            self._metrics.reconciles.labels(name, "requeue").inc()
        else:
            self._metrics.reconciles.labels(name, "ok").inc()
