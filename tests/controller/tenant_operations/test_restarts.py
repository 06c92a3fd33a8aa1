"""The controller stopped between recording an outcome and answering its callback, and started anew.

Covers: the controller (clone, snapshots, delivery, reconciler: all of it) is dropped right after
the Git write; a new one, sharing nothing in memory, sends the callback exactly once and writes
nothing more; the same when the first attempt was refused by the SaaS registry (the stored
verdict and attempt count carry over); and the reconcilers under a real Manager, from the Jobs'
and the ConfigMap's watch events alone. Real Git, real API server; the SaaS registry is a local
HTTP peer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from prometheus_client import CollectorRegistry

from btp_gitops.controller.cap.callbacks import DELIVERY_ANNOTATION
from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.kube import CONFIG_MAP, KubeClient
from btp_gitops.controller.runtime import DONE, Manager, ObjectKey, Reconciler, RuntimeSettings
from tests.controller.tenant_operations.conftest import (
    Controller,
    SaasPeer,
    SourceRemote,
    bind_saas_registry,
    create_jobs,
    finish_job,
    open_callback,
    reconcile_until_settled,
    tenant_record,
)

pytestmark = pytest.mark.kube

GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"


@pytest.fixture
def provisioned_jobs(source: SourceRemote, kube: KubeClient, saas_peer: SaasPeer) -> ObjectKey:
    """globex subscribed, a callback pending, and its provisioning Jobs completed."""
    source.write_records(tenant_record(source.namespace, "globex", GLOBEX_ID))
    bind_saas_registry(kube, source.namespace, saas_peer)
    open_callback(kube, source.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    for job in create_jobs(kube, source.rendered_jobs("globex")):
        finish_job(kube, job, "Complete")
    return ObjectKey(source.namespace, "globex")


def test_a_new_controller_sends_the_callback_once(
    provisioned_jobs: ObjectKey,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    controller.tenant_operations.record_operation(provisioned_jobs)
    record = source.record("globex")
    assert record is not None and record["status"]["state"] == "Ready"
    assert saas_peer.callbacks == []

    controller.restart()  # the process ends after the push; nothing of it survives
    head = source.head()
    # Until settled: a request to the local peer can fail on a loaded machine (conftest), and the
    # attempt after it must not send the callback twice either.
    assert reconcile_until_settled(controller.tenant_operations, provisioned_jobs) == DONE
    assert controller.tenant_operations.reconcile(provisioned_jobs) == DONE

    assert [c.body["status"] for c in saas_peer.callbacks] == ["SUCCEEDED"]
    assert source.head() == head  # the outcome was not written again
    assert (
        kube.get(
            CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), provisioned_jobs.namespace
        )
        is None
    )


def test_a_refused_attempt_is_retried_by_the_next_controller(
    provisioned_jobs: ObjectKey,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    saas_peer.fail_callbacks_with = 502
    controller.tenant_operations.reconcile(provisioned_jobs)
    pending = kube.get(
        CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), provisioned_jobs.namespace
    )
    assert pending is not None and DELIVERY_ANNOTATION in pending["metadata"]["annotations"]

    controller.restart()
    saas_peer.fail_callbacks_with = None
    time.sleep(0.3)  # the stored backoff
    assert reconcile_until_settled(controller.tenant_operations, provisioned_jobs) == DONE
    assert controller.tenant_operations.reconcile(provisioned_jobs) == DONE
    assert [c.body["status"] for c in saas_peer.callbacks] == ["SUCCEEDED"]


@contextmanager
def running(kube: KubeClient, *reconcilers: Reconciler) -> Iterator[Manager]:
    settings = RuntimeSettings(
        resync_period=30.0, backoff_initial=0.1, backoff_max=1.0, workers=2, watch_timeout=2
    )
    manager = Manager(kube, list(reconcilers), settings, CollectorRegistry())
    manager.start()
    try:
        yield manager
    finally:
        manager.stop()


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.1)


def test_under_a_manager_the_watches_drive_it(
    source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    namespace = source.namespace
    source.write_records(tenant_record(namespace, "globex", GLOBEX_ID))
    bind_saas_registry(kube, namespace, saas_peer)
    jobs = create_jobs(kube, source.rendered_jobs("globex"))
    with running(kube, controller.tenant_operations):
        open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
        time.sleep(0.5)
        assert saas_peer.callbacks == []
        for job in jobs:
            finish_job(kube, job, "Complete")
        wait_until(
            lambda: (
                kube.get(CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), namespace)
                is None
            )
        )

    record = source.record("globex")
    assert record is not None and record["status"]["state"] == "Ready"
    assert [c.body["status"] for c in saas_peer.callbacks] == ["SUCCEEDED"]
