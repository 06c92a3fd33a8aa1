"""Deleting CAPApplicationVersions and CAPApplications abruptly: a version is held while a tenant
runs on it or is deprovisioned on it, and released after; an application deletes its tenants,
which deprovision through their own finalizers, and is released once none is left.

Real kube-apiserver; the test plays the kubelet by writing Job statuses. Reconcilers are called
directly.
"""

from __future__ import annotations

import pytest

from btp_gitops.controller.cap.deletion import VERSION_FINALIZER
from btp_gitops.controller.kube import CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT, JOB, Resource
from btp_gitops.controller.runtime import ObjectKey
from tests.controller.cap_deletion.conftest import (
    FAST,
    TENANTS,
    CapCluster,
    ControllerFactory,
    reconcile_everything,
)

pytestmark = pytest.mark.kube

V100, V110 = "bookshop-1-0-0", "bookshop-1-1-0"


def released_condition(cluster: CapCluster, resource: Resource, name: str) -> dict[str, str]:
    obj = cluster.kube.get(resource, name, cluster.namespace)
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Released")


def finish_running_deprovisioning(cluster: CapCluster) -> int:
    """The kubelet's part: every deprovisioning Job that has not finished succeeds now."""
    finished = 0
    for name, job in cluster.jobs("deprovisioning").items():
        if not (job.get("status") or {}).get("conditions"):
            cluster.finish(name)
            finished += 1
    return finished


def test_a_version_is_held_while_a_tenant_runs_on_it(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()  # acme runs on 1.0.0 (its status); the others on 1.1.0
    controller = start_controller()
    reconcile_everything(controller, cluster)
    cluster.delete(CAP_APPLICATION_VERSION, V100)
    key = ObjectKey(cluster.namespace, V100)

    assert controller.versions.reconcile(key).requeue_after == FAST.check_interval
    held = cluster.get(CAP_APPLICATION_VERSION, V100)
    assert held is not None and held["metadata"]["finalizers"] == [VERSION_FINALIZER]
    message = "held while CAPTenants run on it or are deprovisioned on it: acme"
    condition = released_condition(cluster, CAP_APPLICATION_VERSION, V100)
    assert (condition["status"], condition["reason"], condition["message"]) == ("False", "InUse", message)
    start_controller().versions.reconcile(key)
    events = cluster.events(V100, "VersionInUse")
    assert [(e["message"], e["count"]) for e in events] == [(message, 1)]

    cluster.delete(CAP_TENANT, "acme")
    controller.tenants.reconcile(ObjectKey(cluster.namespace, "acme"))
    assert controller.versions.reconcile(key).requeue_after == FAST.check_interval  # deprovisioned on it
    finish_running_deprovisioning(cluster)
    controller.tenants.reconcile(ObjectKey(cluster.namespace, "acme"))
    assert cluster.get(CAP_TENANT, "acme") is None

    assert controller.versions.reconcile(key).requeue_after is None
    assert cluster.get(CAP_APPLICATION_VERSION, V100) is None


def test_a_version_no_tenant_uses_is_released_at_once(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    status = {**cluster.example.git_statuses["acme"], "currentCAPApplicationVersionInstance": V110}
    cluster.kube.patch_status(CAP_TENANT, "acme", status, cluster.namespace)  # acme upgraded meanwhile
    controller = start_controller()
    reconcile_everything(controller, cluster)
    cluster.delete(CAP_APPLICATION_VERSION, V100)

    controller.versions.reconcile(ObjectKey(cluster.namespace, V100))
    assert cluster.get(CAP_APPLICATION_VERSION, V100) is None


def test_a_version_is_held_for_tenants_the_cluster_shows_on_it(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    # Argo CD synced globex's provisioning on 1.1.0; it has not finished
    provisioning = cluster.example.deployed_jobs("globex")
    assert [j["metadata"]["labels"]["sme.sap.com/tenant-operation-type"] for j in provisioning] == [
        "provisioning"
    ]
    cluster.kube.create(JOB, provisioning[0], cluster.namespace)
    controller = start_controller()
    reconcile_everything(controller, cluster)
    cluster.delete(CAP_APPLICATION_VERSION, V110)

    controller.versions.reconcile(ObjectKey(cluster.namespace, V110))
    message = released_condition(cluster, CAP_APPLICATION_VERSION, V110)["message"]
    # initech runs on it (its status), globex is being provisioned on it; the provider shows
    # nothing, so it follows the newest version that stays
    assert message == "held while CAPTenants run on it or are deprovisioned on it: globex, initech"


def test_deleting_an_application_deprovisions_every_tenant_then_releases_everything(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    controller = start_controller()
    reconcile_everything(controller, cluster)
    # the prune: the application and its versions at once (its tenants' apps are still synced)
    cluster.delete(CAP_APPLICATION, "bookshop")
    for name in (V100, V110):
        cluster.delete(CAP_APPLICATION_VERSION, name)

    application = ObjectKey(cluster.namespace, "bookshop")
    assert controller.applications.reconcile(application).requeue_after == FAST.check_interval
    assert all(
        (cluster.get(CAP_TENANT, name) or {})["metadata"].get("deletionTimestamp") for name in TENANTS
    ), "the application deletes its tenants"
    assert released_condition(cluster, CAP_APPLICATION, "bookshop")["message"] == (
        "waiting for 4 CAPTenant(s) to be deprovisioned: acme, bookshop-provider, globex, initech"
    )
    for _ in range(10):
        reconcile_everything(controller, cluster)
        if not finish_running_deprovisioning(cluster) and not cluster.remaining():
            break
    assert cluster.remaining() == []
    for name in TENANTS:
        assert cluster.tenant_jobs(name) == cluster.example.expected_job_names(name)


def test_tenants_the_controller_has_not_seen_yet_are_held_before_the_application_deletes_them(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy(older_render=True)  # the render's own finalizers would hold them anyway
    controller = start_controller()
    application = ObjectKey(cluster.namespace, "bookshop")
    controller.applications.reconcile(application)  # the tenants' own reconciler has not run
    assert all(not cluster.finalized()[("CAPTenant", name)] for name in TENANTS)
    cluster.delete(CAP_APPLICATION, "bookshop")

    controller.applications.reconcile(application)
    for name in TENANTS:
        tenant = cluster.get(CAP_TENANT, name)
        assert tenant is not None, f"{name} went undeprovisioned"
        assert tenant["metadata"]["finalizers"] == ["sme.sap.com/captenant"]
        assert tenant["metadata"].get("deletionTimestamp")
