"""A controller killed anywhere and restarted: the abrupt deletion of a whole CAP application still
ends with every tenant deprovisioned exactly as a render would, every Job created once, and every
CR released; and the same run under the real `Manager` (watches, work queue, workers), stopped in
the middle and started again.

Real kube-apiserver; the test plays the kubelet by writing Job statuses. What is faked is the
controller's death: `DyingKubeClient` is the real client, which raises `ProcessKilledError` right
after each write has reached the API server, so the next write happens only in a new life (a new
client and new reconcilers, nothing carried over). Dying after every write kills the controller
at every point of every phase where it matters: between any two of its effects.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client import CollectorRegistry

from btp_gitops.controller.cap.deletion import cap_deletion_reconcilers
from btp_gitops.controller.errors import TemporaryError
from btp_gitops.controller.kube import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    JOB,
    KubeClient,
    KubeObject,
    Resource,
)
from btp_gitops.controller.runtime import Manager, RuntimeSettings
from tests.controller.cap_deletion.conftest import (
    FAST,
    TENANTS,
    CapCluster,
    Controller,
    eventually,
    reconcile_everything,
)
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kube


class ProcessKilledError(BaseException):
    """The controller's process dies here: nothing in it may catch this."""


class DyingKubeClient(KubeClient):
    """The real client; the process dies right after each write. Jobs it created are counted."""

    def __init__(self, api_client: k8s.ApiClient, created_jobs: list[str]) -> None:
        super().__init__(api_client)
        self._created_jobs = created_jobs

    def create(self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None) -> KubeObject:
        created = super().create(resource, body, namespace)
        if resource == JOB:
            self._created_jobs.append(created["metadata"]["name"])
        raise ProcessKilledError(f"killed after creating {resource.kind} {created['metadata']['name']}")

    def patch(
        self, resource: Resource, name: str, patch: Any, namespace: str | None = None, **options: Any
    ) -> KubeObject:
        super().patch(resource, name, patch, namespace, **options)
        raise ProcessKilledError(f"killed after patching {resource.kind} {name}")

    def delete(
        self, resource: Resource, name: str, namespace: str | None = None, *, propagation: str = "Background"
    ) -> bool:
        if super().delete(resource, name, namespace, propagation=propagation):
            raise ProcessKilledError(f"killed after deleting {resource.kind} {name}")
        return False


def kubelet(cluster: CapCluster) -> None:
    """Every deprovisioning Job that has not finished finishes; globex's first step (allowed to
    fail) fails."""
    allowed_to_fail = cluster.example.expected_job_names("globex")[0]
    for name, job in cluster.jobs("deprovisioning").items():
        if not (job.get("status") or {}).get("conditions"):
            cluster.finish(name, succeeded=name != allowed_to_fail)


def delete_application_as_a_prune_does(cluster: CapCluster) -> None:
    cluster.delete(CAP_APPLICATION, "bookshop")
    for version in cluster.example.versions():
        cluster.delete(CAP_APPLICATION_VERSION, version["metadata"]["name"])


@pytest.fixture
def api_clients(kube_api: KubeAPI) -> Iterator[list[k8s.ApiClient]]:
    clients: list[k8s.ApiClient] = []
    yield clients
    for api_client in clients:
        api_client.close()  # type: ignore[no-untyped-call]


def test_a_controller_killed_after_every_write_finishes_the_deletion(
    cluster: CapCluster, kube_api: KubeAPI, api_clients: list[k8s.ApiClient]
) -> None:
    # Rendered by an older btp-gitops, without finalizers: a death after adding each one counts too.
    cluster.deploy(older_render=True)
    created: list[str] = []

    def life() -> Controller:
        api_clients.append(kube_api.api_client())
        return Controller.start(DyingKubeClient(api_clients[-1], created), FAST)

    def live_until_idle(max_lives: int = 400) -> int:
        """Restart after each death until a whole pass writes nothing; the lives it took."""
        for lives in range(1, max_lives + 1):
            try:
                reconcile_everything(life(), cluster)
            except ProcessKilledError:
                continue
            except TemporaryError:
                continue  # the runtime would retry; so does the next life
            return lives
        raise AssertionError(f"still writing after {max_lives} lives")

    assert live_until_idle() == 8  # a finalizer on each of the 7 CRs, one life each, then idle
    delete_application_as_a_prune_does(cluster)
    for _ in range(100):
        live_until_idle()
        kubelet(cluster)
        if not cluster.remaining():
            break
    assert cluster.remaining() == []
    assert sorted(created) == sorted(set(created)), "a Job was created twice"
    for name in TENANTS:
        assert cluster.tenant_jobs(name) == cluster.example.expected_job_names(name)
    assert sorted(created) == sorted(n for t in TENANTS for n in cluster.example.expected_job_names(t))


def test_the_manager_deletes_an_application_and_a_restarted_one_finishes(
    cluster: CapCluster, kube_api: KubeAPI, api_clients: list[k8s.ApiClient]
) -> None:
    cluster.deploy()
    settings = RuntimeSettings(
        resync_period=30.0, backoff_initial=0.1, backoff_max=1.0, workers=2, watch_timeout=2
    )

    def start_manager() -> Manager:
        api_clients.append(kube_api.api_client())
        kube = KubeClient(api_clients[-1])
        manager = Manager(kube, cap_deletion_reconcilers(kube, FAST), settings, CollectorRegistry())
        manager.start()
        eventually(manager.ready, "the manager's watches")
        return manager

    manager = start_manager()
    try:
        eventually(
            lambda: (
                all(finalizers for finalizers in cluster.finalized().values())
                and len(cluster.finalized()) == 7
            ),
            "finalizers on every CR",
        )
        delete_application_as_a_prune_does(cluster)
        first_steps = {cluster.example.expected_job_names(t)[0] for t in TENANTS}
        eventually(
            lambda: set(cluster.jobs("deprovisioning")) == first_steps, "the first step of every tenant"
        )
    finally:
        manager.stop(timeout=15)

    stopped = threading.Event()

    def play_kubelet() -> None:
        while not stopped.wait(0.2):
            kubelet(cluster)

    kubelet_thread = threading.Thread(target=play_kubelet, daemon=True)
    kubelet_thread.start()
    manager = start_manager()
    try:
        eventually(lambda: cluster.remaining() == [], "every CR released", timeout=60)
    finally:
        stopped.set()
        manager.stop(timeout=15)
        kubelet_thread.join(5)
    for name in TENANTS:
        assert cluster.tenant_jobs(name) == cluster.example.expected_job_names(name)
