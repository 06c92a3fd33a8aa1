"""A controller killed in the middle of each deprovisioning phase and started again, against the
real API server: the reconciler instance is dropped at the phase boundary and a brand-new one
(sharing no memory) continues. Shown: it resumes in the same phase, keeps the hard-delete deadline
of the first, issues no delete twice, and completes. (Removal failures and their retry by a new
instance are in test_deprovisioning.py; a Manager stopped mid-phase in test_manager.py.)

The test plays the service operator; a ValidatingAdmissionPolicy refuses what must fail at the
boundary. Nothing else is faked."""

from __future__ import annotations

import dataclasses
import time

import pytest

from btp_gitops.controller.btp_operator import BtpOperatorReconciler, BtpOperatorSettings
from btp_gitops.controller.btp_operator.status import current_reason, reason_since
from btp_gitops.controller.errors import TemporaryError
from btp_gitops.controller.kube import (
    BTP_OPERATOR,
    DEPLOYMENT,
    SECRET,
    SERVICE_BINDING,
    SERVICE_INSTANCE,
    KubeClient,
)
from btp_gitops.controller.runtime import ObjectKey
from tests.controller.btp_operator.cluster import (
    JSON_PATCH,
    MODULE_NAMESPACE,
    OPERATOR,
    ModuleCluster,
    ServiceOperand,
    finalizers_of,
    reconcile_until,
)

pytestmark = pytest.mark.kube

KEY = ObjectKey(MODULE_NAMESPACE, "btpoperator")


def _count(decisions: pytest.LogCaptureFixture, message: str) -> int:
    return sum(1 for record in decisions.records if record.getMessage() == message)


def _reason(cluster: ModuleCluster) -> str | None:
    return current_reason(cluster.module_cr() or {})


def _start_deletion(
    cluster: ModuleCluster, kube: KubeClient, settings: BtpOperatorSettings, namespace: str
) -> None:
    """An Available operator, one instance with one binding, and a force-deleted BtpOperator that
    a first controller has seen (finalizer set)."""
    cluster.create_operator(available=True)
    cluster.create_module_cr(**{"force-delete": "true"})
    BtpOperatorReconciler(kube, settings).reconcile(KEY)
    cluster.create_instance(namespace, "db")
    cluster.create_binding(namespace, "db-binding", "db")
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)


def test_killed_after_issuing_the_hard_deletes(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
    decisions: pytest.LogCaptureFixture,
) -> None:
    _start_deletion(cluster, kube, settings, kube_namespace)
    first = BtpOperatorReconciler(kube, settings)
    first.reconcile(KEY)
    started = reason_since(cluster.module_cr() or {})
    assert _reason(cluster) == "HardDeleting"
    del first  # killed before it saw the deletes complete

    second = BtpOperatorReconciler(kube, settings)
    second.reconcile(KEY)  # the operand has not finished yet: only polls
    assert reason_since(cluster.module_cr() or {}) == started
    operand.finish_deletions()
    reconcile_until(second, KEY, lambda: cluster.module_cr() is None)

    assert _count(decisions, f"deleted ServiceInstance {kube_namespace}/db") == 1
    assert _count(decisions, f"deleted ServiceBinding {kube_namespace}/db-binding") == 1
    assert cluster.names(SERVICE_INSTANCE) == [] and cluster.names(SERVICE_BINDING) == []
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None


def test_the_hard_delete_deadline_survives_a_restart(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    short = dataclasses.replace(settings, hard_delete_timeout=2.0)
    operand.refusing = True
    _start_deletion(cluster, kube, short, kube_namespace)
    BtpOperatorReconciler(kube, short).reconcile(KEY)
    assert _reason(cluster) == "HardDeleting"

    time.sleep(2.2)  # down for longer than the timeout
    restarted = BtpOperatorReconciler(kube, short)
    reconcile_until(restarted, KEY, lambda: cluster.module_cr() is None, attempts=5)

    assert cluster.names(SERVICE_INSTANCE) == [] and cluster.names(SERVICE_BINDING) == []
    assert operand.finished == [], "soft delete, not the operand, removed them"


def test_killed_in_the_middle_of_soft_delete(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
    decisions: pytest.LogCaptureFixture,
) -> None:
    """The first controller deletes the operator and the binding's Secret, then dies where clearing
    the binding's finalizers fails; the second one finishes without deleting anything again."""
    short = dataclasses.replace(settings, hard_delete_timeout=1.0)
    operand.refusing = True
    _start_deletion(cluster, kube, short, kube_namespace)
    first = BtpOperatorReconciler(kube, short)
    first.reconcile(KEY)
    binding_path = SERVICE_BINDING.path(kube_namespace, "db-binding")
    cluster.refuse(
        "keep-binding-finalizers",
        ("services.cloud.sap.com", "servicebindings", "UPDATE"),
        "!has(oldObject.metadata.finalizers) || has(object.metadata.finalizers)",
        probe=lambda: cluster.dry_run_refused(
            "PATCH", binding_path, [{"op": "remove", "path": "/metadata/finalizers"}], JSON_PATCH
        ),
    )
    time.sleep(1.2)

    with pytest.raises(TemporaryError, match="cannot clear finalizers of ServiceBinding"):
        first.reconcile(KEY)
    assert _reason(cluster) == "SoftDeleting"
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None
    assert kube.get(SECRET, "db-binding", kube_namespace) is None
    assert finalizers_of(kube.get(SERVICE_BINDING, "db-binding", kube_namespace)) != []
    del first

    cluster.allow("keep-binding-finalizers")
    second = BtpOperatorReconciler(kube, short)
    reconcile_until(second, KEY, lambda: cluster.module_cr() is None)

    assert _count(decisions, f"soft delete: deleted Deployment {MODULE_NAMESPACE}/{OPERATOR}") == 1
    assert (
        _count(
            decisions, f"soft delete: deleted Secret {kube_namespace}/db-binding of ServiceBinding db-binding"
        )
        == 1
    )
    assert cluster.names(SERVICE_INSTANCE) == [] and cluster.names(SERVICE_BINDING) == []


def test_killed_while_blocked_then_unblocked(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    """Blocked is a state of the object, not of the process: a new controller reports it the same
    way, and goes on once the user adds the label."""
    cluster.create_operator(available=True)
    cluster.create_module_cr()
    BtpOperatorReconciler(kube, settings).reconcile(KEY)
    cluster.create_instance(kube_namespace, "db")
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)
    BtpOperatorReconciler(kube, settings).reconcile(KEY)
    blocked_since = reason_since(cluster.module_cr() or {})

    restarted = BtpOperatorReconciler(kube, settings)
    restarted.reconcile(KEY)
    assert _reason(cluster) == "ServiceInstancesAndBindingsNotCleaned"
    assert reason_since(cluster.module_cr() or {}) == blocked_since

    kube.patch(
        BTP_OPERATOR, "btpoperator", {"metadata": {"labels": {"force-delete": "true"}}}, MODULE_NAMESPACE
    )
    restarted.reconcile(KEY)
    assert _reason(cluster) == "HardDeleting"
    operand.finish_deletions()
    reconcile_until(BtpOperatorReconciler(kube, settings), KEY, lambda: cluster.module_cr() is None)
