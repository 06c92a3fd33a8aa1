"""CAPTenantOutput: what a tenant operation adds to the provisioning callback (issue #20).

Covers: the CAPTenantOutputs of the tenant (label `sme.sap.com/btp-tenant-id`, in the tenant's
namespace) go into the callback's `additionalOutput` over the application's
`sme.sap.com/saas-additional-output`, key by key, in the order of their names; the docs' own
example (`subscriptionCallbackData: '{foo: bar}'`) is read; another tenant's output and an output
that is not a JSON object are left out (the latter with a warning naming it, never its text);
a failed provisioning and a deprovisioning carry none. The outputs of earlier operations are
deleted once the operation's first Job exists, as CAP Operator deletes them before it starts an
operation; those a step creates stay for the callback. The CRD is the chart's, generated from schemas/ and
installed into a real API server; Git is real; the SaaS registry is the local HTTP peer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from btp_gitops.controller.clients.cluster_side import Operation
from btp_gitops.controller.kube import CAP_TENANT_OUTPUT, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.tenant_operations.conftest import (
    ADDITIONAL_OUTPUT,
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
from tests.support.crds import OUR_CRDS, load_crds
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = pytest.mark.kube

GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
ACME_ID = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"


@pytest.fixture(scope="module")
def tenant_output_crd(kube_api: KubeAPI) -> Iterator[None]:
    with kube_api.api_client() as client:
        install_crds(client, load_crds([OUR_CRDS / "captenantoutputs.sme.sap.com.yaml"]))
    yield


def _output(name: str, tenant_id: str, data: str) -> dict[str, Any]:
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenantOutput",
        "metadata": {"name": name, "labels": {"sme.sap.com/btp-tenant-id": tenant_id}},
        "spec": {"subscriptionCallbackData": data},
    }


def _next_second() -> None:
    """Wait until the clock is in a later second: the API server stamps creation to the second."""
    start = int(time.time())
    while int(time.time()) == start:
        time.sleep(0.05)
    time.sleep(0.05)


def _provision(
    kube: KubeClient,
    source: SourceRemote,
    controller: Controller,
    saas_peer: SaasPeer,
    produced: list[dict[str, Any]] = [],  # noqa: B006 (never changed)
) -> dict[str, Any]:
    """Provision globex; its step creates `produced` while it runs, as an onboarding step would."""
    namespace = source.namespace
    source.write_records(tenant_record(namespace, "globex", GLOBEX_ID))
    bind_saas_registry(kube, namespace, saas_peer)
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    jobs = create_jobs(kube, source.rendered_jobs("globex"))
    for output in produced:
        kube.create(CAP_TENANT_OUTPUT, output, namespace)
    for job in jobs:
        finish_job(kube, job, "Complete")
    assert reconcile_until_settled(controller.tenant_operations, ObjectKey(namespace, "globex")) == DONE
    [callback] = saas_peer.callbacks
    assert callback.body["status"] == "SUCCEEDED"
    return callback.body


@pytest.mark.parametrize(
    ("outputs", "expected", "warned"),
    [
        pytest.param([], ADDITIONAL_OUTPUT, [], id="none: the application's output alone"),
        pytest.param(
            [_output("cap-app-consumer-output", GLOBEX_ID, "{foo: bar}")],
            {**ADDITIONAL_OUTPUT, "foo": "bar"},
            [],
            id="the docs' example",
        ),
        pytest.param(
            [
                _output("b-portal", GLOBEX_ID, '{"portalUrl": "https://portal.example.com/globex", "n": 2}'),
                _output(
                    "a-support", GLOBEX_ID, '{"supportUrl": "https://globex.support.example.com", "n": 1}'
                ),
                _output("acme-only", ACME_ID, '{"portalUrl": "https://portal.example.com/acme"}'),
            ],
            {
                "supportUrl": "https://globex.support.example.com",
                "portalUrl": "https://portal.example.com/globex",
                "n": 2,
            },
            [],
            id="merged by name over the application's, another tenant's left out",
        ),
        pytest.param(
            [
                _output("broken", GLOBEX_ID, '["not", "an object"]'),
                _output("good", GLOBEX_ID, '{"region": "eu10"}'),
            ],
            {**ADDITIONAL_OUTPUT, "region": "eu10"},
            ["broken"],
            id="not an object: left out with a warning",
        ),
    ],
)
def test_tenant_outputs_go_into_the_provisioning_callback(
    tenant_output_crd: None,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
    caplog: pytest.LogCaptureFixture,
    outputs: list[dict[str, Any]],
    expected: dict[str, Any],
    warned: list[str],
) -> None:
    caplog.set_level(logging.WARNING, logger="btp_gitops.controller.cap.callbacks")

    body = _provision(kube, source, controller, saas_peer, outputs)

    assert body["additionalOutput"] == expected
    assert body["subscriptionUrl"] == "https://globex.bookshop.apps.example.com"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w for w in warnings if "CAPTenantOutput" in w] == [
        f"CAPTenantOutput {source.namespace}/{name}: spec.subscriptionCallbackData is not a JSON object; "
        "left out of the callback's additionalOutput"
        for name in warned
    ]
    assert '"an object"' not in caplog.text


def test_a_deprovisioning_callback_carries_no_tenant_output(
    tenant_output_crd: None,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    namespace = source.namespace
    kube.create(CAP_TENANT_OUTPUT, _output("globex-output", GLOBEX_ID, '{"foo": "bar"}'), namespace)
    _next_second()  # the provisioning's output is older than the deprovisioning's Jobs
    status = ready_on("bookshop-1-1-0")
    source.write_records(tenant_record(namespace, "globex", GLOBEX_ID, status=status, deprovision=True))
    bind_saas_registry(kube, namespace, saas_peer)
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.DEPROVISIONING)
    for job in create_jobs(kube, source.rendered_jobs("globex")):
        finish_job(kube, job, "Complete")

    assert reconcile_until_settled(controller.tenant_operations, ObjectKey(namespace, "globex")) == DONE

    [callback] = saas_peer.callbacks
    assert callback.body == {
        "status": "SUCCEEDED",
        "message": "Deprovisioning successful",
        "subscriptionUrl": "https://globex.bookshop.apps.example.com",
    }
    assert kube.list(CAP_TENANT_OUTPUT, namespace) == []  # deleted before the deprovisioning


def test_a_failed_provisioning_reports_no_tenant_output(
    tenant_output_crd: None,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    namespace = source.namespace
    kube.create(CAP_TENANT_OUTPUT, _output("globex-output", GLOBEX_ID, '{"foo": "bar"}'), namespace)
    source.write_records(tenant_record(namespace, "globex", GLOBEX_ID))
    bind_saas_registry(kube, namespace, saas_peer)
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    [job] = create_jobs(kube, source.rendered_jobs("globex"))
    finish_job(kube, job, "Failed")

    assert reconcile_until_settled(controller.tenant_operations, ObjectKey(namespace, "globex")) == DONE

    [callback] = saas_peer.callbacks
    assert callback.body["status"] == "FAILED"
    assert callback.body["additionalOutput"] == ADDITIONAL_OUTPUT


@pytest.mark.parametrize(
    ("name", "tenant_id", "when", "kept"),
    [
        pytest.param("old-portal", GLOBEX_ID, "before", False, id="the tenant's, of an earlier operation"),
        pytest.param("new-portal", GLOBEX_ID, "during", True, id="the tenant's, made by this operation"),
        pytest.param("acme-portal", ACME_ID, "before", True, id="another tenant's"),
    ],
)
def test_outputs_of_earlier_operations_are_deleted_when_an_operation_starts(
    tenant_output_crd: None,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
    name: str,
    tenant_id: str,
    when: str,
    kept: bool,
) -> None:
    namespace = source.namespace
    output = _output(name, tenant_id, '{"portalUrl": "https://portal.example.com"}')
    if when == "before":
        kube.create(CAP_TENANT_OUTPUT, output, namespace)
        _next_second()

    body = _provision(kube, source, controller, saas_peer, [output] if when == "during" else [])

    remaining = [o["metadata"]["name"] for o in kube.list(CAP_TENANT_OUTPUT, namespace)]
    assert remaining == ([name] if kept else [])
    expected = {**ADDITIONAL_OUTPUT, "portalUrl": "https://portal.example.com"}
    assert body["additionalOutput"] == (expected if when == "during" else ADDITIONAL_OUTPUT)


def test_an_output_written_while_the_controller_looks_at_a_running_operation_is_kept(
    tenant_output_crd: None,
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    """The controller looks at the operation again on every Job event: an output its step made
    after the first look is not taken for an earlier operation's."""
    namespace = source.namespace
    source.write_records(tenant_record(namespace, "globex", GLOBEX_ID))
    bind_saas_registry(kube, namespace, saas_peer)
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    kube.create(CAP_TENANT_OUTPUT, _output("earlier", GLOBEX_ID, '{"a": 1}'), namespace)
    _next_second()
    jobs = create_jobs(kube, source.rendered_jobs("globex"))
    key = ObjectKey(namespace, "globex")

    controller.tenant_operations.reconcile(key)  # running: the earlier output goes
    assert kube.list(CAP_TENANT_OUTPUT, namespace) == []
    _next_second()
    kube.create(CAP_TENANT_OUTPUT, _output("made-by-step", GLOBEX_ID, '{"b": 2}'), namespace)
    controller.tenant_operations.reconcile(key)  # still running: the step's output stays
    for job in jobs:
        finish_job(kube, job, "Complete")
    assert reconcile_until_settled(controller.tenant_operations, key) == DONE

    assert [o["metadata"]["name"] for o in kube.list(CAP_TENANT_OUTPUT, namespace)] == ["made-by-step"]
    [callback] = saas_peer.callbacks
    assert callback.body["additionalOutput"] == {**ADDITIONAL_OUTPUT, "b": 2}
