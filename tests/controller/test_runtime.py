"""controller.runtime: the work queue (dedup, delays, one worker per key) as pure unit tests, and
the Manager against the real API server: initial list, watch events, retries with backoff, and a
restart that resumes from cluster state. Nothing is faked."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest
from prometheus_client import CollectorRegistry

from btp_gitops.controller.errors import TemporaryError
from btp_gitops.controller.kube import CONFIG_MAP, KubeClient
from btp_gitops.controller.runtime import DONE, Manager, ObjectKey, Outcome, RuntimeSettings, Watch, WorkQueue
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

A, B = ObjectKey("ns", "a"), ObjectKey("ns", "b")


def test_queue_hands_out_due_keys_in_order_and_dedups() -> None:
    queue = WorkQueue()
    queue.add(B, delay=0.05)
    queue.add(A)
    queue.add(A)
    assert len(queue) == 2
    assert queue.get() == A
    queue.done(A)
    started = time.monotonic()
    assert queue.get() == B
    assert time.monotonic() - started >= 0.04
    queue.done(B)
    assert len(queue) == 0


def test_queue_keeps_the_earlier_of_two_schedules() -> None:
    queue = WorkQueue()
    queue.add(A, delay=10)
    queue.add(A, delay=0)
    assert queue.get() == A


def test_a_key_added_while_active_runs_again_after_done_never_in_parallel() -> None:
    queue = WorkQueue()
    queue.add(A)
    assert queue.get() == A
    queue.add(A)
    got: list[ObjectKey | None] = []
    reader = threading.Thread(target=lambda: got.append(queue.get()))
    reader.start()
    reader.join(0.1)
    assert got == []  # not handed out while the first worker still has it
    queue.done(A)
    reader.join(2)
    assert got == [A]


def test_closing_releases_waiting_workers() -> None:
    queue = WorkQueue()
    got: list[ObjectKey | None] = []
    reader = threading.Thread(target=lambda: got.append(queue.get()))
    reader.start()
    queue.close()
    reader.join(2)
    assert got == [None]


@dataclass
class StampingReconciler:
    """Sets annotation `stamped` on ConfigMaps labelled `stamp=me`; fails `flaky` twice first."""

    kube: KubeClient
    namespace: str
    name: str = "stamper"
    calls: list[ObjectKey] = field(default_factory=list)
    failures_left: int = 2

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch(CONFIG_MAP, label_selector="stamp=me", namespace=self.namespace),)

    def reconcile(self, key: ObjectKey) -> Outcome:
        self.calls.append(key)
        obj = self.kube.get(CONFIG_MAP, key.name, key.namespace)
        if obj is None:
            return DONE
        if key.name == "flaky" and self.failures_left > 0:
            self.failures_left -= 1
            raise TemporaryError("not yet", delay=0.05)
        if (obj["metadata"].get("annotations") or {}).get("stamped") != "yes":
            self.kube.patch(
                CONFIG_MAP, key.name, {"metadata": {"annotations": {"stamped": "yes"}}}, key.namespace
            )
        return DONE


def _stamped(kube: KubeClient, namespace: str, name: str) -> bool:
    obj = kube.get(CONFIG_MAP, name, namespace) or {}
    return ((obj.get("metadata") or {}).get("annotations") or {}).get("stamped") == "yes"


def _config_map(name: str, namespace: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"stamp": "me"}},
    }


@pytest.fixture
def kube(kube_api: KubeAPI) -> Iterator[KubeClient]:
    client = KubeClient(kube_api.api_client())
    yield client
    client.close()


SETTINGS = RuntimeSettings(
    resync_period=3600, backoff_initial=0.05, backoff_max=0.5, workers=2, watch_timeout=5
)


@pytest.mark.kube
def test_manager_reconciles_listed_and_watched_objects_and_retries(
    kube: KubeClient, kube_namespace: str
) -> None:
    kube.create(CONFIG_MAP, _config_map("before", kube_namespace), kube_namespace)
    registry = CollectorRegistry()
    reconciler = StampingReconciler(kube, kube_namespace)
    manager = Manager(kube, [reconciler], SETTINGS, registry)
    manager.start()
    try:
        wait_until(manager.ready)
        wait_until(lambda: _stamped(kube, kube_namespace, "before"))
        kube.create(CONFIG_MAP, _config_map("after", kube_namespace), kube_namespace)
        kube.create(CONFIG_MAP, _config_map("flaky", kube_namespace), kube_namespace)
        wait_until(
            lambda: _stamped(kube, kube_namespace, "after") and _stamped(kube, kube_namespace, "flaky")
        )
        assert manager.healthy()
    finally:
        manager.stop()
    retries = registry.get_sample_value(
        "btp_gitops_controller_reconcile_total", {"reconciler": "stamper", "result": "retry"}
    )
    assert retries == 2.0


@pytest.mark.kube
def test_a_new_manager_resumes_from_cluster_state(kube: KubeClient, kube_namespace: str) -> None:
    first = Manager(
        kube, [StampingReconciler(kube, kube_namespace, failures_left=0)], SETTINGS, CollectorRegistry()
    )
    first.start()
    wait_until(first.ready)
    first.stop()
    # Work that arrived while no controller ran is found by the next one's initial list.
    kube.create(CONFIG_MAP, _config_map("while-down", kube_namespace), kube_namespace)
    second_reconciler = StampingReconciler(kube, kube_namespace, failures_left=0)
    second = Manager(kube, [second_reconciler], SETTINGS, CollectorRegistry())
    second.start()
    try:
        wait_until(lambda: _stamped(kube, kube_namespace, "while-down"))
    finally:
        second.stop()
    assert ObjectKey(kube_namespace, "while-down") in second_reconciler.calls


@pytest.mark.kube
def test_stop_does_not_wait_for_long_polls(kube: KubeClient, kube_namespace: str) -> None:
    settings = RuntimeSettings(
        resync_period=3600, backoff_initial=0.05, backoff_max=0.5, workers=1, watch_timeout=300
    )
    manager = Manager(kube, [StampingReconciler(kube, kube_namespace)], settings, CollectorRegistry())
    manager.start()
    wait_until(manager.ready)
    time.sleep(0.3)  # the watch is now blocked in its long poll
    started = time.monotonic()
    manager.stop(timeout=30)
    assert time.monotonic() - started < 3
    assert not any(thread.is_alive() for thread in manager._threads)
