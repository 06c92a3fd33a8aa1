"""Deprovisioning of the BtpOperator against the real API server, one reconcile at a time: blocked
without `force-delete`, hard delete that the service operator completes, hard delete that times
out into soft delete (webhooks of an absent operator refusing updates until soft delete removes
them), and a module object whose deletion the API server refuses (ResourceRemovalFailed, then
success once allowed). The test plays the service operator (clearing its finalizer, or refusing
to) and the kubelet; refusals come from a ValidatingAdmissionPolicy. Nothing else is faked."""

from __future__ import annotations

import dataclasses
import time

import pytest

from btp_gitops.controller.btp_operator import FINALIZER, BtpOperatorReconciler, BtpOperatorSettings
from btp_gitops.controller.btp_operator.status import reason_since
from btp_gitops.controller.errors import ControllerError, TemporaryError
from btp_gitops.controller.kube import (
    BTP_OPERATOR,
    CONFIG_MAP,
    DEPLOYMENT,
    MUTATING_WEBHOOK,
    SECRET,
    SERVICE_BINDING,
    SERVICE_INSTANCE,
    VALIDATING_WEBHOOK,
    KubeClient,
    Resource,
)
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.btp_operator.cluster import (
    FIXTURE_LABEL,
    MODULE_NAMESPACE,
    OPERATOR,
    ModuleCluster,
    ServiceOperand,
    finalizers_of,
    module_labels,
    reconcile_until,
    wait_for,
)

pytestmark = pytest.mark.kube

KEY = ObjectKey(MODULE_NAMESPACE, "btpoperator")


def _state(cluster: ModuleCluster) -> tuple[str, str, str]:
    obj = cluster.module_cr() or {}
    condition = obj["status"]["conditions"][0]
    return obj["status"]["state"], condition["reason"], condition["message"]


def _config_map(name: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": MODULE_NAMESPACE,
            "labels": {**labels, FIXTURE_LABEL: "btp-operator"},
        },
    }


def _terminating(kube: KubeClient, resource: Resource, namespace: str) -> list[bool]:
    return [bool(o["metadata"].get("deletionTimestamp")) for o in kube.list(resource, namespace)]


def _update_refused(kube: KubeClient, namespace: str) -> bool:
    try:
        kube.patch(SERVICE_INSTANCE, "db", {"metadata": {"labels": {"touched": "true"}}}, namespace)
    except ControllerError:
        return True
    return False


def test_instances_and_bindings_block_deletion_without_force_delete(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    cluster.create_operator(available=True)
    module_cr = cluster.create_module_cr()
    reconciler = BtpOperatorReconciler(kube, settings)
    reconciler.reconcile(KEY)
    cluster.create_instance(kube_namespace, "db")
    cluster.create_instance(kube_namespace, "cache")
    cluster.create_binding(kube_namespace, "db-binding", "db")
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)

    outcome = reconciler.reconcile(KEY)

    assert outcome.requeue_after == settings.blocked_check_interval
    assert _state(cluster) == (
        "Warning",
        "ServiceInstancesAndBindingsNotCleaned",
        "All service instances and bindings must be removed: 2 instance(s) and 1 binding(s)",
    )
    assert _terminating(kube, SERVICE_INSTANCE, kube_namespace) == [False, False]
    assert _terminating(kube, SERVICE_BINDING, kube_namespace) == [False]
    assert finalizers_of(cluster.module_cr()) == [FINALIZER]

    # The user removes them; the operator finishes; the next reconcile deprovisions the module.
    for resource, name in (
        (SERVICE_BINDING, "db-binding"),
        (SERVICE_INSTANCE, "db"),
        (SERVICE_INSTANCE, "cache"),
    ):
        kube.delete(resource, name, kube_namespace)
    assert operand.finish_deletions() == 3
    reconcile_until(reconciler, KEY, lambda: cluster.module_cr() is None)

    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None
    assert cluster.events(module_cr) == [
        ("Warning", "MissingSecret"),
        ("Warning", "ServiceInstancesAndBindingsNotCleaned"),
        ("Normal", "HardDeleting"),
    ]


def test_hard_delete_with_force_delete(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    cluster.create_operator(available=True)
    kube.create(CONFIG_MAP, _config_map("sap-btp-operator-config", module_labels()), MODULE_NAMESPACE)
    kube.create(
        CONFIG_MAP,
        _config_map("users-own", {"app.kubernetes.io/managed-by": "someone-else"}),
        MODULE_NAMESPACE,
    )
    module_cr = cluster.create_module_cr(**{"force-delete": "true"})
    reconciler = BtpOperatorReconciler(kube, settings)
    reconciler.reconcile(KEY)
    cluster.create_instance(kube_namespace, "db")
    cluster.create_instance(MODULE_NAMESPACE, "audit")
    cluster.create_binding(kube_namespace, "db-binding", "db")
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)

    outcome = reconciler.reconcile(KEY)

    assert _state(cluster) == ("Deleting", "HardDeleting", "Deleting all service bindings and instances")
    assert outcome.requeue_after is not None and outcome.requeue_after <= settings.hard_delete_check_interval
    assert _terminating(kube, SERVICE_INSTANCE, kube_namespace) == [True]
    assert _terminating(kube, SERVICE_INSTANCE, MODULE_NAMESPACE) == [True]
    assert _terminating(kube, SERVICE_BINDING, kube_namespace) == [True]
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is not None, (
        "hard delete leaves the operator running"
    )

    assert operand.finish_deletions() == 3
    assert reconciler.reconcile(KEY) == DONE

    assert cluster.module_cr() is None
    assert cluster.names(SERVICE_INSTANCE) == [] and cluster.names(SERVICE_BINDING) == []
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None
    assert cluster.names(CONFIG_MAP, MODULE_NAMESPACE) == ["users-own"]
    assert cluster.events(module_cr) == [("Warning", "MissingSecret"), ("Normal", "HardDeleting")]


def test_hard_delete_timeout_goes_to_soft_delete(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    short = dataclasses.replace(settings, hard_delete_timeout=2.0)
    cluster.create_operator(available=True)
    module_cr = cluster.create_module_cr(**{"force-delete": "true"})
    reconciler = BtpOperatorReconciler(kube, short)
    reconciler.reconcile(KEY)
    cluster.create_instance(kube_namespace, "db")
    cluster.create_binding(kube_namespace, "db-binding", "db")
    cluster.create_binding(kube_namespace, "named", "db", secret_name="db-credentials")
    kube.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "unrelated", "namespace": kube_namespace},
        },
        kube_namespace,
    )
    webhooks = cluster.create_module_webhooks()
    wait_for(lambda: _update_refused(kube, kube_namespace), what="the webhooks to refuse updates")
    operand.refusing = True  # the service operator cannot reach SAP Service Manager
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)

    reconciler.reconcile(KEY)
    started = reason_since(cluster.module_cr() or {})
    time.sleep(0.3)
    reconciler.reconcile(KEY)
    assert _state(cluster)[1] == "HardDeleting"
    assert reason_since(cluster.module_cr() or {}) == started, "polling must not restart the timeout"

    time.sleep(2.0)
    results = reconcile_until(reconciler, KEY, lambda: cluster.module_cr() is None)

    assert cluster.names(SERVICE_INSTANCE) == [] and cluster.names(SERVICE_BINDING) == []
    assert cluster.names(SECRET, kube_namespace) == ["unrelated"], "binding Secrets are deleted"
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None
    assert [w for w in webhooks if kube.get(MUTATING_WEBHOOK, w) or kube.get(VALIDATING_WEBHOOK, w)] == []
    assert operand.finished == []
    assert [reason for _, reason in cluster.events(module_cr)][1:] == ["HardDeleting", "SoftDeleting"]
    assert all(not isinstance(r, TemporaryError) or "soft delete" in r.message for r in results)


def test_refused_removal_is_reported_and_retried(
    cluster: ModuleCluster, settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    cluster.create_operator(available=True)
    kube.create(CONFIG_MAP, _config_map("sap-btp-operator-config", module_labels()), MODULE_NAMESPACE)
    cluster.refuse(
        "keep-operator-config",
        ("", "configmaps", "DELETE"),
        "oldObject.metadata.name != 'sap-btp-operator-config'",
        probe=lambda: cluster.dry_run_refused(
            "DELETE", CONFIG_MAP.path(MODULE_NAMESPACE, "sap-btp-operator-config")
        ),
    )
    cluster.create_module_cr()
    BtpOperatorReconciler(kube, settings).reconcile(KEY)
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)

    with pytest.raises(TemporaryError, match="1 module resource"):
        BtpOperatorReconciler(kube, settings).reconcile(KEY)

    assert _state(cluster) == (
        "Error",
        "ResourceRemovalFailed",
        "Some resources can still be present due to errors while deprovisioning: "
        "ConfigMap kyma-system/sap-btp-operator-config",
    )
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None, "the rest is removed"
    assert finalizers_of(cluster.module_cr()) == [FINALIZER]

    cluster.allow("keep-operator-config")
    restarted = BtpOperatorReconciler(kube, settings)
    reconcile_until(restarted, KEY, lambda: cluster.module_cr() is None)

    assert kube.get(CONFIG_MAP, "sap-btp-operator-config", MODULE_NAMESPACE) is None


def test_a_refused_hard_delete_goes_to_soft_delete_at_once(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    """An error is a failed hard delete too (step 4): no waiting for the timeout. Soft delete, refused
    the same delete, is retried until the refusal goes."""
    cluster.create_operator(available=True)
    module_cr = cluster.create_module_cr(**{"force-delete": "true"})
    reconciler = BtpOperatorReconciler(kube, settings)
    reconciler.reconcile(KEY)
    cluster.create_instance(kube_namespace, "db")
    cluster.refuse(
        "keep-instances",
        ("services.cloud.sap.com", "serviceinstances", "DELETE"),
        "false",
        probe=lambda: cluster.dry_run_refused("DELETE", SERVICE_INSTANCE.path(kube_namespace, "db")),
    )
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)

    with pytest.raises(
        TemporaryError, match=r"soft delete: delete ServiceInstance .*/db: the API server answered 422"
    ):
        reconciler.reconcile(KEY)
    assert _state(cluster)[:2] == ("Deleting", "SoftDeleting")
    assert "refused by the test policy keep-instances" not in _state(cluster)[2], (
        "no response body in messages"
    )
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None

    cluster.allow("keep-instances")
    reconcile_until(reconciler, KEY, lambda: cluster.module_cr() is None)

    assert cluster.names(SERVICE_INSTANCE) == []
    assert operand.finished == []
    assert [reason for _, reason in cluster.events(module_cr)][-2:] == ["HardDeleting", "SoftDeleting"]
