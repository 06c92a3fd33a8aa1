"""Planned deletion of an application through Git (`btp-gitops.io/deprovision: "true"` on it).

Covers, under a real Manager running both reconcilers: every tenant, the derived provider
included, is deprovisioned as rendered; a consumer's record goes once its Jobs completed, the
provider's record is written with the deprovisioning; the application stays while a callback for
it is pending (its credentials are found through it), then its CAPApplication, versions and
tenant records leave the remote in one commit, the Domain file beside them untouched, and the
render has nothing of it left. Also a retirement that is not due changing nothing (removing one
document of a multi-document file is the records editor's, tests/controller/test_tenant_records.py). Real Git, real API server; the SaaS registry is a local peer.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry

from btp_gitops.controller.cap.application_retirement import RetireApplication
from btp_gitops.controller.cap.callbacks import CallbackSettings
from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.kube import CONFIG_MAP, KubeClient
from btp_gitops.controller.runtime import Manager, RuntimeSettings
from tests.controller.tenant_operations.conftest import (
    Controller,
    SaasPeer,
    SourceRemote,
    bind_saas_registry,
    create_jobs,
    finish_job,
    open_callback,
    ready_on,
    tenant_record,
)

ACME_ID = "2b7c9d1e-3f4a-4b5c-8d6e-7f8091a2b3c4"


def wait_until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.1)


@pytest.mark.kube
def test_a_marked_application_leaves_once_its_tenants_are_gone(
    source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    namespace = source.namespace
    source.write_records(tenant_record(namespace, "acme", ACME_ID, status=ready_on("bookshop-1-0-0")))
    source.mark_application({"btp-gitops.io/deprovision": "true"})
    bind_saas_registry(kube, namespace, saas_peer)
    # The SaaS registry unsubscribes acme meanwhile; its callback cannot be delivered at first.
    open_callback(kube, namespace, "acme", ACME_ID, Operation.DEPROVISIONING)
    saas_peer.fail_callbacks_with = 503
    saas_peer.on_callback = lambda: source.read("capapplication.yaml") is not None
    controller.callback_settings = CallbackSettings(max_attempts=100, backoff_initial=0.2, backoff_max=0.2)
    controller.restart()

    acme_jobs = source.rendered_jobs("acme")
    provider_jobs = source.rendered_jobs("bookshop-provider")
    # Deprovisioning only: acme where it runs (1.0.0, no upgrade first), the provider on the newest.
    assert [
        (
            j["metadata"]["labels"]["sme.sap.com/tenant-operation-type"],
            j["metadata"]["labels"]["sme.sap.com/cav-version"],
        )
        for j in acme_jobs + provider_jobs
    ] == [
        ("deprovisioning", "1.0.0"),
        ("deprovisioning", "1.1.0"),
    ]
    settings = RuntimeSettings(resync_period=30.0, backoff_initial=0.1, backoff_max=1.0, watch_timeout=2)
    manager = Manager(
        kube, [controller.tenant_operations, controller.application_retirement], settings, CollectorRegistry()
    )
    manager.start()
    try:
        for job in create_jobs(kube, acme_jobs):
            finish_job(kube, job, "Complete")
        wait_until(lambda: source.record("acme") is None)
        for job in create_jobs(kube, provider_jobs):
            finish_job(kube, job, "Complete")
        wait_until(lambda: source.record("bookshop-provider") is not None)
        provider = source.record("bookshop-provider")
        assert provider is not None and provider["status"]["lastCompletedOperation"] == {
            "operation": "deprovisioning",
            "capApplicationVersionInstance": "bookshop-1-1-0",
        }
        time.sleep(1.5)  # several retirement looks: the pending callback holds it back
        assert source.read("capapplication.yaml") is not None

        saas_peer.fail_callbacks_with = None
        wait_until(lambda: source.read("capapplication.yaml") is None)
    finally:
        manager.stop()

    [callback] = saas_peer.callbacks
    assert callback.body["status"] == "SUCCEEDED" and callback.seen is True  # the app was still there
    assert kube.get(CONFIG_MAP, pending_callback_name("acme", Operation.DEPROVISIONING), namespace) is None
    assert source.last_commit_changes() == [
        "D\tcapapplication.yaml",
        "D\ttenants/bookshop-provider.yaml",
        "D\tversion-1.0.0.yaml",
        "D\tversion-1.1.0.yaml",
    ]
    assert source.files() == ["domains.yaml"]
    assert source.rendered_jobs("bookshop-provider") == []


@pytest.mark.kube
def test_a_retirement_not_due_changes_nothing(source: SourceRemote) -> None:
    source.write_records(tenant_record(source.namespace, "acme", ACME_ID, status=ready_on("bookshop-1-0-0")))
    source.mark_application({"btp-gitops.io/deprovision": "true"})
    before = source.files()
    assert RetireApplication(source.namespace, "bookshop")(source.work) is None  # acme and the provider wait
    assert RetireApplication(source.namespace, "unknown")(source.work) is None
    assert sorted(p.relative_to(source.work).as_posix() for p in source.work.rglob("*.yaml")) == before
