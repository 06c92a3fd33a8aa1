"""BtpOperatorReconciler under the real controller.runtime.Manager and the real API server: watches
drive it (the polling intervals are set far beyond the test's length), from Processing to Ready
when the kubelet (played by the test) makes the operator Available, through a blocked deletion
that a `force-delete` label unblocks, to a completed hard delete; and a Manager stopped in the
middle of hard delete, replaced by a new Manager with a new reconciler, finishing the job without
issuing a delete twice. The test plays the service operator in a thread. Nothing else is faked."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from prometheus_client import CollectorRegistry

from btp_gitops.controller.btp_operator import BtpOperatorReconciler, BtpOperatorSettings
from btp_gitops.controller.btp_operator.status import current_reason
from btp_gitops.controller.kube import BTP_OPERATOR, SERVICE_INSTANCE, KubeClient
from btp_gitops.controller.runtime import Manager, RuntimeSettings
from tests.controller.btp_operator.cluster import (
    MODULE_NAMESPACE,
    OPERATOR,
    ModuleCluster,
    ServiceOperand,
    wait_for,
)

pytestmark = pytest.mark.kube

RUNTIME = RuntimeSettings(
    resync_period=300.0, backoff_initial=0.1, backoff_max=1.0, workers=1, watch_timeout=3
)
VALID = {
    "clientid": "id",
    "clientsecret": "secret",
    "sm_url": "https://sm",
    "tokenurl": "https://t",
    "cluster_id": "c",
}


@contextmanager
def running(kube: KubeClient, settings: BtpOperatorSettings) -> Iterator[Manager]:
    manager = Manager(kube, [BtpOperatorReconciler(kube, settings)], RUNTIME, CollectorRegistry())
    manager.start()
    try:
        wait_for(manager.ready, what="the manager's watches to list")
        yield manager
    finally:
        manager.stop()


def _reason(cluster: ModuleCluster) -> str | None:
    return current_reason(cluster.module_cr() or {})


def test_from_processing_to_ready_to_deprovisioned(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    watched_only = dataclasses.replace(settings, ready_check_interval=600.0, blocked_check_interval=600.0)
    cluster.create_required_secret(**VALID)
    cluster.create_operator()
    operand.start()
    with running(kube, watched_only):
        cluster.create_module_cr()
        wait_for(lambda: _reason(cluster) == "Initialized", what="Processing")

        cluster.set_available(OPERATOR)
        wait_for(
            lambda: _reason(cluster) == "ReconcileSucceeded",
            what="Ready after the Deployment became Available",
        )

        cluster.create_instance(kube_namespace, "db")
        cluster.create_binding(kube_namespace, "db-binding", "db")
        kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)
        wait_for(lambda: _reason(cluster) == "ServiceInstancesAndBindingsNotCleaned", what="deletion blocked")

        kube.patch(
            BTP_OPERATOR, "btpoperator", {"metadata": {"labels": {"force-delete": "true"}}}, MODULE_NAMESPACE
        )
        wait_for(lambda: cluster.module_cr() is None, what="the BtpOperator to be deprovisioned")

    assert sorted(operand.finished) == [
        ("ServiceBinding", f"{kube_namespace}/db-binding"),
        ("ServiceInstance", f"{kube_namespace}/db"),
    ]


def test_a_manager_stopped_in_hard_delete_is_replaced(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
    decisions: pytest.LogCaptureFixture,
) -> None:
    cluster.create_operator(available=True)
    cluster.create_module_cr(**{"force-delete": "true"})
    cluster.create_instance(kube_namespace, "db")
    cluster.create_instance(kube_namespace, "queue")
    operand.refusing = True  # until the first controller is gone

    with running(kube, settings):
        wait_for(
            lambda: bool((cluster.module_cr() or {})["metadata"].get("finalizers")), what="the finalizer"
        )
        kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)
        wait_for(
            lambda: all(
                o["metadata"].get("deletionTimestamp") for o in kube.list(SERVICE_INSTANCE, kube_namespace)
            ),
            what="the hard deletes",
        )
    assert _reason(cluster) == "HardDeleting"

    operand.refusing = False
    operand.start()
    with running(kube, settings):
        wait_for(lambda: cluster.module_cr() is None, what="the new controller to finish")

    deletes = [
        r.getMessage() for r in decisions.records if r.getMessage().startswith("deleted ServiceInstance")
    ]
    assert sorted(deletes) == [
        f"deleted ServiceInstance {kube_namespace}/db",
        f"deleted ServiceInstance {kube_namespace}/queue",
    ]
