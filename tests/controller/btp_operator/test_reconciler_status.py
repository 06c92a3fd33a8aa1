"""BtpOperatorReconciler while the module is in use, against the real API server: the finalizer,
the status from the required Secret (missing, invalid, complete; values never logged) and from the
operator Deployment (the test plays the kubelet by setting Available), requeue intervals, and a
BtpOperator with another name (reported, never held). Nothing else is faked."""

from __future__ import annotations

import pytest

from btp_gitops.controller.btp_operator import FINALIZER, BtpOperatorReconciler, BtpOperatorSettings
from btp_gitops.controller.kube import BTP_OPERATOR, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.btp_operator.cluster import MODULE_NAMESPACE, OPERATOR, ModuleCluster, finalizers_of

pytestmark = pytest.mark.kube

KEY = ObjectKey(MODULE_NAMESPACE, "btpoperator")
VALID = {
    "clientid": "client-id-value",
    "clientsecret": "very-secret-value",
    "sm_url": "https://sm.example.com",
    "tokenurl": "https://token.example.com",
    "cluster_id": "3f9d2c1e",
}


def _condition(
    cluster: ModuleCluster, name: str = "btpoperator", namespace: str = MODULE_NAMESPACE
) -> tuple[str, str, str, str]:
    obj = cluster.module_cr(name, namespace) or {}
    condition = obj["status"]["conditions"][0]
    return obj["status"]["state"], condition["status"], condition["reason"], condition["message"]


def test_missing_secret_is_a_warning_and_the_finalizer_is_set(
    cluster: ModuleCluster, settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    module_cr = cluster.create_module_cr()

    outcome = BtpOperatorReconciler(kube, settings).reconcile(KEY)

    assert finalizers_of(cluster.module_cr()) == [FINALIZER]
    assert _condition(cluster) == (
        "Warning",
        "False",
        "MissingSecret",
        "sap-btp-manager Secret in kyma-system namespace not found",
    )
    assert outcome.requeue_after == settings.processing_requeue
    assert cluster.events(module_cr) == [("Warning", "MissingSecret")]


def test_invalid_secret_names_keys_and_never_values(
    cluster: ModuleCluster,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    decisions: pytest.LogCaptureFixture,
) -> None:
    cluster.create_module_cr()
    cluster.create_required_secret(clientid="", clientsecret="very-secret-value", cluster_id="3f9d2c1e")

    BtpOperatorReconciler(kube, settings).reconcile(KEY)

    state = _condition(cluster)
    assert state == (
        "Error",
        "False",
        "InvalidSecret",
        "key(s) sm_url, tokenurl not found; missing value(s) for clientid key(s)",
    )
    assert "very-secret-value" not in decisions.text
    assert "InvalidSecret" in decisions.text


def test_processing_until_the_operator_deployment_is_available(
    cluster: ModuleCluster, settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    cluster.create_module_cr()
    cluster.create_required_secret(**VALID)
    reconciler = BtpOperatorReconciler(kube, settings)

    assert reconciler.reconcile(KEY).requeue_after == settings.ready_check_interval
    assert _condition(cluster)[:3] == ("Processing", "False", "Initialized")
    assert "not applied yet" in _condition(cluster)[3]

    cluster.create_operator()
    reconciler.reconcile(KEY)
    assert (
        _condition(cluster)[3] == f"waiting for Deployment {MODULE_NAMESPACE}/{OPERATOR} to become Available"
    )

    cluster.set_available(OPERATOR)
    outcome = reconciler.reconcile(KEY)

    assert _condition(cluster)[:3] == ("Ready", "True", "ReconcileSucceeded")
    assert outcome.requeue_after == settings.ready_requeue


def test_a_reconcile_without_change_writes_nothing(
    cluster: ModuleCluster, settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    cluster.create_module_cr()
    reconciler = BtpOperatorReconciler(kube, settings)
    reconciler.reconcile(KEY)
    version = (cluster.module_cr() or {})["metadata"]["resourceVersion"]

    reconciler.reconcile(KEY)

    assert (cluster.module_cr() or {})["metadata"]["resourceVersion"] == version


def test_another_btpoperator_is_reported_and_not_held(
    cluster: ModuleCluster, settings: BtpOperatorSettings, kube: KubeClient, kube_namespace: str
) -> None:
    cluster.create_module_cr(name="btpoperator", namespace=kube_namespace)
    reconciler = BtpOperatorReconciler(kube, settings)

    assert reconciler.reconcile(ObjectKey(kube_namespace, "btpoperator")) == DONE

    assert _condition(cluster, namespace=kube_namespace) == (
        "Warning",
        "False",
        "WrongNamespaceOrName",
        "only the BtpOperator kyma-system/btpoperator is reconciled; this one is ignored",
    )
    assert finalizers_of(cluster.module_cr(namespace=kube_namespace)) == []
    kube.delete(BTP_OPERATOR, "btpoperator", kube_namespace)
    assert cluster.module_cr(namespace=kube_namespace) is None


def test_a_finalizer_on_another_btpoperator_is_released(
    cluster: ModuleCluster, settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    """Ours only by mistake (e.g. set by hand): its deletion must not wait for a deprovisioning
    that never runs for it."""
    created = cluster.create_module_cr(name="second")
    kube.add_finalizer(BTP_OPERATOR, created, FINALIZER)
    kube.delete(BTP_OPERATOR, "second", MODULE_NAMESPACE)

    BtpOperatorReconciler(kube, settings).reconcile(ObjectKey(MODULE_NAMESPACE, "second"))

    assert cluster.module_cr("second") is None


def test_a_deleted_object_is_done(
    cluster: ModuleCluster, settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    assert BtpOperatorReconciler(kube, settings).reconcile(KEY) == DONE
