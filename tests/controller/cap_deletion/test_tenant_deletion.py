"""Deleting a CAPTenant abruptly: the finalizer holds it while the controller creates the
deprovisioning Jobs a render would (names from the CLI's render with the tenant marked for
deprovisioning), one step after another, and releases it once they passed; a failed step keeps it.

Real kube-apiserver; the test plays the kubelet and the Job controller by writing Job statuses.
Reconcilers are called directly, one reconcile at a time, so each step of the protocol is seen.
"""

from __future__ import annotations

import pytest

from btp_gitops.controller.cap.cluster_models import read_application
from btp_gitops.controller.cap.deletion import TENANT_FINALIZER
from btp_gitops.controller.errors import TemporaryError
from btp_gitops.controller.kube import CAP_APPLICATION, CAP_TENANT, CAP_TENANT_OUTPUT, JOB, KubeObject
from btp_gitops.controller.runtime import ObjectKey
from btp_gitops.generator.domains.cap.model import TenantOperation
from btp_gitops.generator.domains.cap.tenants.render import operation_jobs
from tests.controller.cap_deletion.conftest import (
    FAST,
    TENANTS,
    CapCluster,
    Controller,
    ControllerFactory,
    reconcile_everything,
)
from tests.support.crds import OUR_CRDS, load_crds
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = pytest.mark.kube


def tenant(cluster: CapCluster, name: str) -> KubeObject:
    found = cluster.get(CAP_TENANT, name)
    assert found is not None, f"CAPTenant {name} is gone"
    return found


def deprovision(cluster: CapCluster, controller: Controller, name: str) -> list[str]:
    """Drive one deleted tenant to its release as the kubelet would: each step's Job succeeds only
    after the controller created it; returns the Jobs in the order they were created."""
    key = ObjectKey(cluster.namespace, name)
    created: list[str] = []
    for _ in range(8):  # two reconciles per step at most, and no version has more than 3 steps
        if cluster.get(CAP_TENANT, name) is None:
            return created
        controller.tenants.reconcile(key)
        jobs = cluster.tenant_jobs(name)
        assert jobs[: len(created)] == created, "a step's Job was replaced"
        assert len(jobs) <= len(created) + 1, "a step started before the one before it finished"
        if len(jobs) > len(created):
            created.append(jobs[-1])
            cluster.finish(jobs[-1])
    raise AssertionError(f"{name} was not released; Jobs created: {created}")


def test_finalizers_are_added_to_every_object_once(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    """The safety net: CRs an older btp-gitops rendered without finalizers get them."""
    cluster.deploy(older_render=True)
    assert all(finalizers == [] for finalizers in cluster.finalized().values())
    controller = start_controller()
    reconcile_everything(controller, cluster)
    held = cluster.finalized()
    assert held == {
        ("CAPApplication", "bookshop"): ["sme.sap.com/capapplication"],
        ("CAPApplicationVersion", "bookshop-1-0-0"): ["sme.sap.com/capapplicationversion"],
        ("CAPApplicationVersion", "bookshop-1-1-0"): ["sme.sap.com/capapplicationversion"],
        **{("CAPTenant", name): ["sme.sap.com/captenant"] for name in TENANTS},
    }
    versions = cluster.resource_versions()
    reconcile_everything(start_controller(), cluster)
    assert cluster.resource_versions() == versions  # nothing written the second time
    assert cluster.jobs() == {}


@pytest.mark.parametrize("name", TENANTS)
def test_a_deleted_tenant_runs_the_rendered_deprovisioning_and_is_released(
    cluster: CapCluster, start_controller: ControllerFactory, name: str
) -> None:
    cluster.deploy()
    controller = start_controller()
    reconcile_everything(controller, cluster)
    cluster.delete(CAP_TENANT, name)
    uid = tenant(cluster, name)["metadata"]["uid"]

    created = deprovision(cluster, controller, name)

    assert created == cluster.example.expected_job_names(name)
    for job_name in created:
        job = cluster.get(JOB, job_name)
        assert job is not None
        assert job["metadata"]["ownerReferences"][0]["uid"] == uid
        env_from = job["spec"]["template"]["spec"]["containers"][0].get("envFrom", [])
        assert not [s for s in env_from if "configMapRef" in s], "a controller's Job reads no version gate"
    assert [e["reason"] for e in cluster.events(name, "Deprovisioned")] == ["Deprovisioned"]
    assert cluster.jobs("provisioning") == {} and cluster.jobs("upgrade") == {}


def test_steps_run_in_order_and_a_step_allowed_to_fail_does_not_stop_the_rest(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()  # globex has no status: deprovisioned on the newest version, 1.1.0 (two steps)
    controller = start_controller()
    reconcile_everything(controller, cluster)
    cluster.delete(CAP_TENANT, "globex")
    key = ObjectKey(cluster.namespace, "globex")
    first, second = cluster.example.expected_job_names("globex")

    outcome = controller.tenants.reconcile(key)
    assert cluster.tenant_jobs("globex") == [first]
    assert outcome.requeue_after == FAST.check_interval
    status = tenant(cluster, "globex")["status"]
    assert status["state"] == "Deleting"
    assert cluster.condition("globex")["reason"] == "Deprovisioning"
    assert cluster.condition("globex")["message"] == (
        f"step 1 of 2 of the deprovisioning on bookshop-1-1-0 (from newest version): Job {first} runs"
    )
    controller.tenants.reconcile(key)
    assert cluster.tenant_jobs("globex") == [first]  # the running step is not created again

    cluster.finish(first, succeeded=False)  # notify-upgrade: continueOnFailure
    controller.tenants.reconcile(key)
    assert cluster.tenant_jobs("globex") == [first, second]
    cluster.finish(second)
    controller.tenants.reconcile(key)
    assert cluster.get(CAP_TENANT, "globex") is None


def test_a_failed_step_keeps_the_tenant_until_its_job_is_deleted(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    controller = start_controller()
    reconcile_everything(controller, cluster)
    cluster.delete(CAP_TENANT, "initech")
    key = ObjectKey(cluster.namespace, "initech")
    first, second = cluster.example.expected_job_names("initech")
    controller.tenants.reconcile(key)
    cluster.finish(first)
    controller.tenants.reconcile(key)
    cluster.finish(second, succeeded=False)

    assert controller.tenants.reconcile(key).requeue_after is None  # nothing to poll: a person acts
    failed_uid = (cluster.get(JOB, second) or {})["metadata"]["uid"]
    for _ in range(3):
        start_controller().tenants.reconcile(key)
    assert cluster.tenant_jobs("initech") == [first, second]
    assert (cluster.get(JOB, second) or {})["metadata"]["uid"] == failed_uid
    assert tenant(cluster, "initech")["metadata"]["finalizers"] == [TENANT_FINALIZER]
    condition = cluster.condition("initech")
    assert (condition["status"], condition["reason"]) == ("False", "DeprovisioningFailed")
    warnings = cluster.events("initech", "DeprovisioningFailed")
    assert len(warnings) == 1 and warnings[0]["type"] == "Warning" and warnings[0]["count"] == 1
    assert f"Job {second}; delete the Job to run the step again" in warnings[0]["message"]

    cluster.delete(JOB, second)  # a person retries the step
    controller.tenants.reconcile(key)
    retried = cluster.get(JOB, second)
    assert retried is not None and retried["metadata"]["uid"] != failed_uid
    cluster.finish(second)
    controller.tenants.reconcile(key)
    assert cluster.get(CAP_TENANT, "initech") is None


def test_a_job_rendered_from_git_is_that_step(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    controller = start_controller()
    reconcile_everything(controller, cluster)
    rendered = cluster.example.expected_jobs("initech")[0]  # Argo CD synced it before the prune
    uid = cluster.kube.create(JOB, rendered, cluster.namespace)["metadata"]["uid"]
    cluster.delete(CAP_TENANT, "initech")
    key = ObjectKey(cluster.namespace, "initech")

    controller.tenants.reconcile(key)
    assert cluster.tenant_jobs("initech") == [rendered["metadata"]["name"]]
    assert (cluster.get(JOB, rendered["metadata"]["name"]) or {})["metadata"]["uid"] == uid
    # its version gate went with the application's app: the tenant says why the step waits
    assert cluster.condition("initech")["reason"] == "DeprovisioningStepStuck"
    assert (
        "waits for ConfigMap bookshop-1-1-0-ready, which is gone" in cluster.condition("initech")["message"]
    )
    assert len(cluster.events("initech", "DeprovisioningStepStuck")) == 1

    assert deprovision(cluster, controller, "initech") == cluster.example.expected_job_names("initech")


def test_a_job_of_an_earlier_tenant_of_the_same_name_is_replaced(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    controller = start_controller()
    reconcile_everything(controller, cluster)
    leftover = cluster.example.expected_jobs("globex")[0]
    leftover["metadata"]["labels"]["sme.sap.com/btp-tenant-id"] = "an-earlier-subscription"
    cluster.kube.create(JOB, leftover, cluster.namespace)
    cluster.finish(leftover["metadata"]["name"])
    cluster.delete(CAP_TENANT, "globex")
    key = ObjectKey(cluster.namespace, "globex")

    with pytest.raises(TemporaryError, match="belonged to an earlier CAPTenant"):
        controller.tenants.reconcile(key)
    controller.tenants.reconcile(key)
    replaced = cluster.get(JOB, leftover["metadata"]["name"])
    assert replaced is not None
    assert (
        replaced["metadata"]["labels"]["sme.sap.com/btp-tenant-id"] == "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
    )
    assert not (replaced.get("status") or {}).get("conditions"), "the step runs anew"


def test_jobs_of_the_tenant_tell_its_version_and_a_running_operation_is_waited_for(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy(with_git_statuses=False)  # no status in the cluster: only Jobs can tell
    controller = start_controller()
    reconcile_everything(controller, cluster)
    models = read_application(cluster.kube, cluster.namespace, "bookshop")
    assert models is not None
    acme, v100 = models.tenants["acme"], models.versions.ordered[0]
    provisioning = operation_jobs(models.app, acme, TenantOperation.PROVISIONING, v100)
    for job in provisioning:
        cluster.kube.create(JOB, job, cluster.namespace)
    cluster.finish(provisioning[0]["metadata"]["name"])
    cluster.delete(CAP_TENANT, "acme")
    key = ObjectKey(cluster.namespace, "acme")

    controller.tenants.reconcile(key)
    assert cluster.tenant_jobs("acme") == []
    assert cluster.condition("acme")["reason"] == "WaitingForOperation"
    assert provisioning[1]["metadata"]["name"] in cluster.condition("acme")["message"]

    cluster.finish(provisioning[1]["metadata"]["name"], succeeded=False)  # seed-data may fail
    # the provisioning on 1.0.0 completed, so the tenant is deprovisioned there, as its Git record says
    assert deprovision(cluster, controller, "acme") == cluster.example.expected_job_names("acme")


def test_a_tenant_whose_application_is_gone_is_blocked(
    cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    cluster.deploy()
    controller = start_controller()
    reconcile_everything(controller, cluster)
    application = cluster.get(CAP_APPLICATION, "bookshop")
    assert application is not None
    cluster.kube.remove_finalizer(CAP_APPLICATION, application, "sme.sap.com/capapplication")  # by hand
    cluster.delete(CAP_APPLICATION, "bookshop")
    cluster.delete(CAP_TENANT, "acme")

    outcome = controller.tenants.reconcile(ObjectKey(cluster.namespace, "acme"))
    assert outcome.requeue_after == FAST.blocked_interval
    assert cluster.condition("acme")["reason"] == "DeprovisioningBlocked"
    assert cluster.condition("acme")["message"].startswith(
        f"cannot deprovision: CAPApplication {cluster.namespace}/bookshop is not in the cluster"
    )
    assert tenant(cluster, "acme")["metadata"]["finalizers"] == [TENANT_FINALIZER]
    assert cluster.tenant_jobs("acme") == []


ACME_ID = "2b7c9d1e-3f4a-4b5c-8d6e-7f8091a2b3c4"
GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"


def _tenant_output(name: str, tenant_id: str) -> KubeObject:
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenantOutput",
        "metadata": {"name": name, "labels": {"sme.sap.com/btp-tenant-id": tenant_id}},
        "spec": {"subscriptionCallbackData": '{"foo": "bar"}'},
    }


def test_the_tenants_outputs_are_deleted_before_its_deprovisioning_starts(
    kube_api: KubeAPI, cluster: CapCluster, start_controller: ControllerFactory
) -> None:
    """As CAP Operator deletes a tenant's CAPTenantOutputs before it creates an operation: before
    the first step's Job, not later (what a step writes stays), and only the tenant's."""
    with kube_api.api_client() as client:
        install_crds(client, load_crds([OUR_CRDS / "captenantoutputs.sme.sap.com.yaml"]))
    cluster.deploy()
    controller = start_controller()
    reconcile_everything(controller, cluster)
    for output in (
        _tenant_output("acme-onboarding", ACME_ID),
        _tenant_output("globex-onboarding", GLOBEX_ID),
    ):
        cluster.kube.create(CAP_TENANT_OUTPUT, output, cluster.namespace)
    cluster.delete(CAP_TENANT, "acme")
    key = ObjectKey(cluster.namespace, "acme")

    controller.tenants.reconcile(key)  # creates step 1

    def outputs() -> list[str]:
        return sorted(o["metadata"]["name"] for o in cluster.kube.list(CAP_TENANT_OUTPUT, cluster.namespace))

    first = cluster.tenant_jobs("acme")
    assert len(first) == 1
    assert outputs() == ["globex-onboarding"]
    cluster.kube.create(CAP_TENANT_OUTPUT, _tenant_output("acme-offboarding", ACME_ID), cluster.namespace)
    cluster.finish(first[0])
    deprovision(cluster, controller, "acme")  # the remaining steps, to the release
    assert outputs() == ["acme-offboarding", "globex-onboarding"]
