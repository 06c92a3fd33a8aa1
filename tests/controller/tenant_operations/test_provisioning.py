"""A subscribed tenant's provisioning: outcome recorded in Git, then the callback to the SaaS registry.

Covers: nothing is recorded or called back while the Jobs run; every rendered Job Complete -> the
record in the remote says Ready on the version with lastCompletedOperation provisioning, and the
SaaS registry gets SUCCEEDED with the subscription URL and the application's additional output,
using a client-credentials token; the ConfigMap goes once the callback was answered; a failed step
-> status ProvisioningError, callback FAILED naming the step; logs never carry the client secret
or a token; a subscription manager callback (its own binding, `applicationUrl`) for a tenant
already Ready. Real Git, real API server; the SaaS registry is a local HTTP peer (conftest).
"""

from __future__ import annotations

import base64
import json
import logging

import pytest
import yaml

from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.kube import CONFIG_MAP, SECRET, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.tenant_operations.conftest import (
    ADDITIONAL_OUTPUT,
    CLIENT_ID,
    CLIENT_SECRET,
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

GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
NEWEST = "bookshop-1-1-0"


@pytest.fixture
def subscribed(source: SourceRemote, kube: KubeClient, saas_peer: SaasPeer) -> ObjectKey:
    """globex just subscribed: a record without status in Git, a pending callback in the cluster."""
    namespace = source.namespace
    source.write_records(tenant_record(namespace, "globex", GLOBEX_ID))
    bind_saas_registry(kube, namespace, saas_peer)
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    return ObjectKey(namespace, "globex")


def test_provisioning_is_recorded_then_called_back(
    subscribed: ObjectKey,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    jobs = create_jobs(kube, source.rendered_jobs("globex"))
    assert [j["metadata"]["labels"]["sme.sap.com/tenant-operation-type"] for j in jobs] == ["provisioning"]
    commits = source.commits()

    waiting = controller.tenant_operations.reconcile(subscribed)
    assert waiting.requeue_after is not None  # looked at again by the deadline at the latest
    assert source.commits() == commits and saas_peer.callbacks == []

    for job in jobs:
        finish_job(kube, job, "Complete")
    assert reconcile_until_settled(controller.tenant_operations, subscribed) == DONE

    record = source.record("globex")
    assert record is not None
    assert record["status"] == {
        "state": "Ready",
        "currentCAPApplicationVersionInstance": NEWEST,
        "lastCompletedOperation": {"operation": "provisioning", "capApplicationVersionInstance": NEWEST},
    }
    [callback] = saas_peer.callbacks
    assert callback.path == f"/saas-manager/v1/subscription-callback/{GLOBEX_ID}/result"
    assert callback.body == {
        "status": "SUCCEEDED",
        "message": "Provisioning successful",
        "additionalOutput": ADDITIONAL_OUTPUT,
        "subscriptionUrl": "https://globex.bookshop.apps.example.com",
    }
    assert callback.authorization == "Bearer peer-issued-token-0"
    assert saas_peer.token_requests == [
        {
            "path": "/oauth/token",
            "grant_type": "client_credentials",
            "client_id": CLIENT_ID.replace("!", "%21"),
        }
    ]
    assert (
        kube.get(CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), subscribed.namespace)
        is None
    )
    assert controller.outcomes == ["succeeded"]

    # Done is done: a later reconcile neither writes nor calls back again.
    head = source.head()
    assert controller.tenant_operations.reconcile(subscribed) == DONE
    assert source.head() == head and len(saas_peer.callbacks) == 1
    logged = caplog.text
    assert CLIENT_SECRET not in logged and "peer-issued-token" not in logged


def test_a_failed_step_is_recorded_and_reported_failed(
    subscribed: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    [job] = create_jobs(kube, source.rendered_jobs("globex"))
    finish_job(kube, job, "Failed")
    assert reconcile_until_settled(controller.tenant_operations, subscribed) == DONE

    record = source.record("globex")
    assert record is not None and record["status"] == {"state": "ProvisioningError"}
    [callback] = saas_peer.callbacks
    assert callback.body["status"] == "FAILED"
    assert callback.body["message"].startswith(
        "Provisioning failed: step 1 (tenant-job, Job globex-provisioning-"
    )
    assert "BackoffLimitExceeded" in callback.body["message"]
    assert callback.body["subscriptionUrl"] == "https://globex.bookshop.apps.example.com"
    assert (
        kube.get(CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), subscribed.namespace)
        is None
    )
    # The failure stays recorded, and is not written again on every look.
    head = source.head()
    controller.tenant_operations.reconcile(subscribed)
    assert source.head() == head


def test_a_subscription_manager_callback_reports_the_application_url(
    source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    """A tenant already provisioned (the subscription repeated) is answered at once; a subscription
    manager callback names the URL `applicationUrl` and uses that binding's credentials."""
    namespace = source.namespace
    app = yaml.safe_load(source.read("capapplication.yaml") or "")
    app["spec"]["btp"]["services"].append(
        {"class": "subscription-manager", "name": "bookshop-sms", "secret": "bookshop-sms-binding"}
    )
    source.write({"capapplication.yaml": yaml.safe_dump(app, sort_keys=False)})
    source.write_records(tenant_record(namespace, "globex", GLOBEX_ID, status=ready_on(NEWEST)))
    credentials = {
        "clientid": CLIENT_ID,
        "clientsecret": CLIENT_SECRET,
        "url": saas_peer.url,
        "subscription_manager_url": saas_peer.url,
        "callback_certificate_subject": '{"CN": "sms"}',
        "callback_certificate_issuer": '{"CN": "issuer"}',
    }
    kube.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "bookshop-sms-binding"},
            "data": {"credentials": base64.b64encode(json.dumps(credentials).encode()).decode()},
        },
        namespace,
    )
    opened = open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    kube.patch(CONFIG_MAP, opened["metadata"]["name"], {"data": {"subscriptionType": "SMS"}}, namespace)
    commits = source.commits()

    assert reconcile_until_settled(controller.tenant_operations, ObjectKey(namespace, "globex")) == DONE

    [callback] = saas_peer.callbacks
    assert callback.body == {
        "status": "SUCCEEDED",
        "message": "Provisioning successful",
        "additionalOutput": ADDITIONAL_OUTPUT,
        "applicationUrl": "https://globex.bookshop.apps.example.com",
    }
    assert source.commits() == commits  # nothing to record: the record said so already
