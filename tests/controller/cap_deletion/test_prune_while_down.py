"""A CAP application pruned while no controller runs (a rollout, a crash loop): the CRs applied
from the rendered manifests carry the controller's finalizers from their creation, so the API
server holds every one of them (deletionTimestamp set, still there) until a controller, started
afterwards, has deprovisioned every tenant exactly as a render would and released them.

Real kube-apiserver; the CRs are the CLI's render of examples/cap-app; the test plays the kubelet
by writing Job statuses. Reconcilers are called directly, and only once the prune is done.
"""

from __future__ import annotations

import pytest

from btp_gitops.controller.kube import CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT
from tests.controller.cap_deletion.conftest import (
    APPLICATION,
    TENANTS,
    CapCluster,
    ControllerFactory,
    reconcile_everything,
)
from tests.controller.cap_deletion.test_versions_and_applications import finish_running_deprovisioning

pytestmark = pytest.mark.kube

RENDERED_FINALIZERS = {
    "CAPApplication": ["sme.sap.com/capapplication"],
    "CAPApplicationVersion": ["sme.sap.com/capapplicationversion"],
    "CAPTenant": ["sme.sap.com/captenant"],
}


def test_the_rendered_crs_are_held_from_their_creation_and_the_controller_writes_nothing(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    held = cluster.finalized()
    assert len(held) == 7
    assert all(finalizers == RENDERED_FINALIZERS[kind] for (kind, _), finalizers in held.items())
    versions = cluster.resource_versions()
    reconcile_everything(start_controller(), cluster)
    assert cluster.resource_versions() == versions, "the controller's add found its finalizer there"


def test_a_prune_while_no_controller_runs_waits_for_the_controller(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    # The prune, everything at once, with no controller running and none having run before.
    cluster.delete(CAP_APPLICATION, APPLICATION)
    for version in cluster.example.versions():
        cluster.delete(CAP_APPLICATION_VERSION, version["metadata"]["name"])
    for name in TENANTS:
        cluster.delete(CAP_TENANT, name)

    pruned = cluster.kube.list(CAP_APPLICATION, cluster.namespace)
    pruned += cluster.kube.list(CAP_APPLICATION_VERSION, cluster.namespace)
    pruned += cluster.kube.list(CAP_TENANT, cluster.namespace)
    assert len(pruned) == 7, "every CR is still there"
    for obj in pruned:
        assert obj["metadata"].get("deletionTimestamp"), obj["metadata"]["name"]
        assert obj["metadata"]["finalizers"] == RENDERED_FINALIZERS[obj["kind"]]
    assert cluster.jobs() == {}, "nothing deprovisions without the controller"

    controller = start_controller()
    for _ in range(12):
        reconcile_everything(controller, cluster)
        if not finish_running_deprovisioning(cluster) and not cluster.remaining():
            break
    assert cluster.remaining() == [], "the controller released every CR"
    for name in TENANTS:
        assert cluster.tenant_jobs(name) == cluster.example.expected_job_names(name)
        assert [e["reason"] for e in cluster.events(name, "Deprovisioned")] == ["Deprovisioned"]
