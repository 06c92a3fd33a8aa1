"""Unsubscribed tenants and upgrades.

Covers: an unsubscribed tenant whose deprovisioning Jobs completed has its record removed from the
remote, and only then is SUCCEEDED called back (the peer looks at the remote when the callback
arrives); a failed deprovisioning keeps the record (state Deleting) and reports FAILED; an upgrade
with a failed continueOnFailure step and a completed last step is recorded as completed (Ready on
the new version, the old one in previousCAPApplicationVersions) and calls nobody back; a failed
last step records UpgradeError. Real Git, real API server; the SaaS registry is a local HTTP peer.
"""

from __future__ import annotations

import pytest

from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.kube import CONFIG_MAP, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.tenant_operations.conftest import (
    Controller,
    SaasPeer,
    SourceRemote,
    bind_saas_registry,
    create_jobs,
    finish_job,
    open_callback,
    ready_on,
    reconcile_until_settled,
    tenant_record,
)

pytestmark = pytest.mark.kube

INITECH_ID = "4c3d2e1f-0a9b-4c8d-a7e6-f5d4c3b2a190"
ACME_ID = "2b7c9d1e-3f4a-4b5c-8d6e-7f8091a2b3c4"


@pytest.fixture
def unsubscribed(source: SourceRemote, kube: KubeClient, saas_peer: SaasPeer) -> ObjectKey:
    """initech runs on 1.1.0 and unsubscribed: marked for deprovisioning, a callback pending."""
    status = ready_on("bookshop-1-1-0", "upgrade", previousCAPApplicationVersions=["bookshop-1-0-0"])
    source.write_records(
        tenant_record(source.namespace, "initech", INITECH_ID, status=status, deprovision=True)
    )
    bind_saas_registry(kube, source.namespace, saas_peer)
    open_callback(kube, source.namespace, "initech", INITECH_ID, Operation.DEPROVISIONING)
    return ObjectKey(source.namespace, "initech")


def test_the_record_is_removed_before_the_callback(
    unsubscribed: ObjectKey,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    jobs = create_jobs(kube, source.rendered_jobs("initech"))
    assert [j["metadata"]["labels"]["sme.sap.com/tenant-operation-type"] for j in jobs] == ["deprovisioning"]
    assert [j["metadata"]["labels"]["sme.sap.com/cav-version"] for j in jobs] == ["1.1.0"]
    saas_peer.on_callback = lambda: source.read("tenants/initech.yaml")
    for job in jobs:
        finish_job(kube, job, "Complete")

    assert reconcile_until_settled(controller.tenant_operations, unsubscribed) == DONE

    assert source.record("initech") is None
    assert source.last_commit_changes() == ["D\ttenants/initech.yaml"]
    [callback] = saas_peer.callbacks
    assert callback.seen is None  # when the callback arrived, the remote no longer had the record
    assert callback.body == {
        "status": "SUCCEEDED",
        "message": "Deprovisioning successful",
        "subscriptionUrl": "https://initech.bookshop.apps.example.com",
    }
    assert (
        kube.get(
            CONFIG_MAP, pending_callback_name("initech", Operation.DEPROVISIONING), unsubscribed.namespace
        )
        is None
    )
    assert source.rendered_jobs("initech") == []  # the tenant renders nothing any more


def test_a_failed_deprovisioning_keeps_the_record(
    unsubscribed: ObjectKey,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    saas_peer.on_callback = lambda: source.record("initech")
    [job] = create_jobs(kube, source.rendered_jobs("initech"))
    finish_job(kube, job, "Failed")

    reconcile_until_settled(controller.tenant_operations, unsubscribed)

    record = source.record("initech")
    assert record is not None and record["status"]["state"] == "Deleting"
    [callback] = saas_peer.callbacks
    assert callback.seen is not None and callback.seen["status"]["state"] == "Deleting"  # recorded first
    assert callback.body["status"] == "FAILED"
    assert callback.body["message"].startswith("Deprovisioning failed: step 1 (tenant-job, Job initech-")
    # The deprovisioning is still what the tenant renders: it waits for someone to delete the Job.
    assert [j["metadata"]["name"] for j in source.rendered_jobs("initech")] == [job["metadata"]["name"]]


@pytest.fixture
def upgrading(source: SourceRemote) -> ObjectKey:
    """acme was provisioned on 1.0.0 and follows the newest version: an upgrade to 1.1.0."""
    source.write_records(tenant_record(source.namespace, "acme", ACME_ID, status=ready_on("bookshop-1-0-0")))
    return ObjectKey(source.namespace, "acme")


def test_an_upgrade_is_recorded_without_a_callback(
    upgrading: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    notify, tenant_job = create_jobs(kube, source.rendered_jobs("acme"))
    assert notify["metadata"]["annotations"]["btp-gitops.io/continue-on-failure"] == "true"
    finish_job(kube, notify, "Failed")  # optional: the operation goes on
    commits = source.commits()
    assert controller.tenant_operations.reconcile(upgrading) == DONE
    assert source.commits() == commits  # the last step still runs

    finish_job(kube, tenant_job, "Complete")
    assert controller.tenant_operations.reconcile(upgrading) == DONE

    record = source.record("acme")
    assert record is not None
    assert record["status"] == {
        "state": "Ready",
        "currentCAPApplicationVersionInstance": "bookshop-1-1-0",
        "previousCAPApplicationVersions": ["bookshop-1-0-0"],
        "lastCompletedOperation": {"operation": "upgrade", "capApplicationVersionInstance": "bookshop-1-1-0"},
    }
    assert saas_peer.callbacks == [] and saas_peer.token_requests == []
    assert source.rendered_jobs("acme") == []  # a completed operation is not rendered again


def test_a_failed_upgrade_step_records_upgrade_error(
    upgrading: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller
) -> None:
    notify, tenant_job = create_jobs(kube, source.rendered_jobs("acme"))
    finish_job(kube, notify, "Complete")
    finish_job(kube, tenant_job, "Failed")

    controller.tenant_operations.reconcile(upgrading)

    record = source.record("acme")
    assert record is not None
    assert record["status"]["state"] == "UpgradeError"
    assert record["status"]["currentCAPApplicationVersionInstance"] == "bookshop-1-0-0"
