"""OutdatedModuleResourcesReconciler against the real API server, with a copy of the project's
`module-resources/` whose `delete/to-delete.yml` the test writes: which objects go (module-labelled
with another chart version and not in apply/; listed for deletion and module-labelled) and which
stay (in apply/, current version, another manager's, a user's object of a listed name); the sweep
waiting until the cluster runs the current version; a refused deletion reported as
DeletionOfOrphanedResourcesFailed; and the sweep under a Manager, started by the operator
Deployment becoming Available. The test plays the kubelet; a ValidatingAdmissionPolicy refuses.
Nothing else is faked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from btp_gitops.controller.btp_operator import BtpOperatorSettings, OutdatedModuleResourcesReconciler
from btp_gitops.controller.btp_operator.outdated import SWEEP_KEY
from btp_gitops.controller.errors import TemporaryError
from btp_gitops.controller.kube import (
    BTP_OPERATOR,
    CONFIG_MAP,
    DEPLOYMENT,
    EVENT,
    KubeClient,
    KubeObject,
    Resource,
)
from btp_gitops.controller.runtime import DONE, Manager, RuntimeSettings
from tests.controller.btp_operator.cluster import (
    FIXTURE_LABEL,
    MODULE_NAMESPACE,
    OPERATOR,
    ModuleCluster,
    module_labels,
    module_resources_copy,
    wait_for,
)

pytestmark = pytest.mark.kube

CLUSTER_ROLE = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
SERVICE = Resource("", "v1", "services", "Service")
PDB = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
OLD = "0.0.9"
MANAGED_BY_OTHERS = {"app.kubernetes.io/managed-by": "Helm", "chart-version": OLD}


def _to_delete(namespace: str) -> str:
    """The previous version's objects that the current one no longer has, as the artifact lists them."""
    return (
        "---\n# Source: sap-btp-operator/templates/configmap.yaml\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old-config\n  namespace: kyma-system\n"
        "---\n# Source: sap-btp-operator/templates/configmap.yaml\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: users-config\n  namespace: kyma-system\n"
        "---\n# Source: sap-btp-operator/templates/pdb.yaml\n"
        f"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: old-pdb\n  namespace: {namespace}\n"
    )


def _config_map(name: str, labels: dict[str, str]) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": MODULE_NAMESPACE,
            "labels": {**labels, FIXTURE_LABEL: "btp-operator"},
        },
    }


@pytest.fixture
def sweep_settings(settings: BtpOperatorSettings, tmp_path: Path, kube_namespace: str) -> BtpOperatorSettings:
    copy = module_resources_copy(tmp_path / "module-resources", _to_delete(kube_namespace))
    return dataclasses.replace(settings, module_resources_dir=copy, outdated_sweep_interval=60.0)


@pytest.fixture
def leftovers(cluster: ModuleCluster, kube: KubeClient, kube_namespace: str) -> ModuleCluster:
    """What a cluster that applies without pruning holds after an upgrade from 0.0.9 to 0.1.0."""
    cluster.create_module_cr()
    kube.create(CONFIG_MAP, _config_map("leftover-config", module_labels(OLD)), MODULE_NAMESPACE)
    kube.create(CONFIG_MAP, _config_map("old-config", module_labels(OLD)), MODULE_NAMESPACE)
    kube.create(CONFIG_MAP, _config_map("current-extra", module_labels()), MODULE_NAMESPACE)
    kube.create(CONFIG_MAP, _config_map("other-tool", MANAGED_BY_OTHERS), MODULE_NAMESPACE)
    kube.create(CONFIG_MAP, _config_map("users-config", {}), MODULE_NAMESPACE)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "btp-old-role", "labels": module_labels(OLD)},
    }
    kube.create(CLUSTER_ROLE, role)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "sap-btp-operator-webhook-service",
            "namespace": MODULE_NAMESPACE,
            "labels": module_labels(OLD),
        },
        "spec": {"ports": [{"port": 443, "targetPort": 9443}]},
    }
    kube.create(SERVICE, service, MODULE_NAMESPACE)
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": "old-pdb",
            "namespace": kube_namespace,
            "labels": {"app.kubernetes.io/managed-by": "btp-manager"},
        },
        "spec": {"maxUnavailable": 1},
    }
    kube.create(PDB, pdb, kube_namespace)
    return cluster


def _config_maps(cluster: ModuleCluster) -> list[str]:
    return cluster.names(CONFIG_MAP, MODULE_NAMESPACE)


def test_outdated_objects_go_and_everything_else_stays(
    leftovers: ModuleCluster,
    sweep_settings: BtpOperatorSettings,
    kube: KubeClient,
    kube_namespace: str,
    decisions: pytest.LogCaptureFixture,
) -> None:
    leftovers.create_operator(available=True)

    outcome = OutdatedModuleResourcesReconciler(kube, sweep_settings).reconcile(SWEEP_KEY)

    assert outcome.requeue_after == 60.0
    assert _config_maps(leftovers) == ["current-extra", "other-tool", "users-config"]
    assert kube.get(CLUSTER_ROLE, "btp-old-role") is None
    assert kube.get(PDB, "old-pdb", kube_namespace) is None
    assert kube.get(SERVICE, "sap-btp-operator-webhook-service", MODULE_NAMESPACE) is not None, (
        "apply/ still has it"
    )
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is not None
    assert "kept ConfigMap kyma-system/users-config of to-delete.yml" in decisions.text
    assert leftovers.events(leftovers.module_cr() or {}) == [("Normal", "OutdatedResourcesDeleted")]
    message = next(
        e["message"] for e in kube.list(EVENT, MODULE_NAMESPACE) if e["reason"] == "OutdatedResourcesDeleted"
    )
    assert message.startswith("Deleted 4 module resource(s) not of chart version 0.1.0: ")

    again = OutdatedModuleResourcesReconciler(kube, sweep_settings).reconcile(SWEEP_KEY)
    assert again.requeue_after == 60.0
    assert "outdated module resources: none found (chart version 0.1.0)" in decisions.text


def test_the_sweep_waits_until_the_cluster_runs_the_current_version(
    leftovers: ModuleCluster,
    sweep_settings: BtpOperatorSettings,
    kube: KubeClient,
    decisions: pytest.LogCaptureFixture,
) -> None:
    """Until the GitOps tool applied the new render, every object carries the old version."""
    leftovers.create_operator(version=OLD, available=True)
    reconciler = OutdatedModuleResourcesReconciler(kube, sweep_settings)

    assert reconciler.reconcile(SWEEP_KEY).requeue_after == 60.0
    assert "runs chart version 0.0.9, the module resources are 0.1.0" in decisions.text

    kube.patch(
        DEPLOYMENT,
        OPERATOR,
        {"metadata": {"labels": {"chart-version": "0.1.0"}}, "spec": {"replicas": 2}},
        MODULE_NAMESPACE,
    )
    kube.patch_status(
        DEPLOYMENT,
        OPERATOR,
        {"conditions": [{"type": "Available", "status": "False", "reason": "Rolling"}]},
        MODULE_NAMESPACE,
    )
    reconciler.reconcile(SWEEP_KEY)
    assert "is not Available yet" in decisions.text
    assert "leftover-config" in _config_maps(leftovers)

    leftovers.set_available(OPERATOR)
    reconciler.reconcile(SWEEP_KEY)
    assert "leftover-config" not in _config_maps(leftovers)


def test_nothing_is_swept_without_a_btpoperator_in_use(
    leftovers: ModuleCluster, sweep_settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    leftovers.create_operator(available=True)
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)

    assert OutdatedModuleResourcesReconciler(kube, sweep_settings).reconcile(SWEEP_KEY) == DONE
    assert "leftover-config" in _config_maps(leftovers)


def test_a_refused_deletion_is_reported_and_retried(
    leftovers: ModuleCluster, sweep_settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    leftovers.create_operator(available=True)
    leftovers.refuse(
        "keep-leftover",
        ("", "configmaps", "DELETE"),
        "oldObject.metadata.name != 'leftover-config'",
        probe=lambda: leftovers.dry_run_refused(
            "DELETE", CONFIG_MAP.path(MODULE_NAMESPACE, "leftover-config")
        ),
    )

    with pytest.raises(TemporaryError, match="1 outdated module resource"):
        OutdatedModuleResourcesReconciler(kube, sweep_settings).reconcile(SWEEP_KEY)

    assert _config_maps(leftovers) == ["current-extra", "leftover-config", "other-tool", "users-config"]
    assert leftovers.events(leftovers.module_cr() or {}) == [
        ("Normal", "OutdatedResourcesDeleted"),
        ("Warning", "DeletionOfOrphanedResourcesFailed"),
    ]


def test_under_a_manager_the_sweep_starts_when_the_operator_becomes_available(
    leftovers: ModuleCluster, sweep_settings: BtpOperatorSettings, kube: KubeClient
) -> None:
    leftovers.create_operator()
    runtime = RuntimeSettings(
        resync_period=300.0, backoff_initial=0.1, backoff_max=1.0, workers=1, watch_timeout=3
    )
    manager = Manager(
        kube, [OutdatedModuleResourcesReconciler(kube, sweep_settings)], runtime, CollectorRegistry()
    )
    manager.start()
    try:
        wait_for(manager.ready, what="the manager's watches to list")
        assert "leftover-config" in _config_maps(leftovers)
        leftovers.set_available(OPERATOR)
        wait_for(lambda: "leftover-config" not in _config_maps(leftovers), what="the sweep")
    finally:
        manager.stop()
