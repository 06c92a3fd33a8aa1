"""Inputs CAP Operator accepts, rendered as CAP Operator reconciles them (issue 20), one table per item.

- An application without `spec.provider` (absent, or `provider: {}`) whose versions are
  multi-tenant: no provider tenant, its consumer tenants provisioned and routed as any other.
- The provider tenant's record with another subdomain than `spec.provider.subDomain` (a subdomain
  change): the record's subdomain is served (VirtualService hosts, DNS entry), with a note.
- A `Content` job named among a version's `tenantOperations` steps: left out of the tenant
  operations, with a note, the other steps numbered as CAP Operator numbers them.

Written like the upstream documentation's examples (CAPApplication, CAPTenant, the
`tenantOperations` sequencing), rendered by the real pipeline in process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.core.report import Level
from tests.cap_tenants.conftest import (
    jobs_in_step_order,
    objects_of_kind,
    recorded_status,
    render_result,
    tenant_dir,
    tenant_objects,
    tenant_record,
    write_tenants,
)

PROVIDER_ID = "1a2b3c4d-0000-4000-8000-00000000c001"


def _edit(path: Path, change: Any) -> None:
    documents = list(yaml.safe_load_all(path.read_text()))
    change(documents[0])
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def _env(job: dict[str, Any]) -> dict[str, Any]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


def _workload(job: dict[str, Any]) -> str:
    """The workload a Job runs (its container is named after it)."""
    name: str = job["spec"]["template"]["spec"]["containers"][0]["name"]
    return name


# --- an application without provider -------------------------------------------------------------


def _set_provider(value: object) -> Any:
    def change(app: dict[str, Any]) -> None:
        if value is None:
            del app["spec"]["provider"]
        else:
            app["spec"]["provider"] = value

    return change


@pytest.mark.parametrize("provider", [None, {}], ids=["provider-absent", "provider-empty"])
def test_consumer_tenants_of_an_application_without_provider(shop_source: Path, provider: object) -> None:
    _edit(shop_source / "capapplication.yaml", _set_provider(provider))
    write_tenants(shop_source, [tenant_record("acme", sub_domain="consumer-x")])

    result = render_result(shop_source)

    apps = {app.app for app in result.apps}
    assert tenant_dir("shop-provider") not in apps  # no provider tenant
    objects = tenant_objects(result.files, "acme")
    assert sorted(obj["kind"] for obj in objects.values()) == [
        "CAPTenant",
        "DNSEntry",
        "Job",
        "Job",
        "VirtualService",
    ]
    (tenant,) = objects_of_kind(objects, "CAPTenant")
    assert tenant["spec"] == {
        "capApplicationInstance": "shop",
        "subDomain": "consumer-x",
        "tenantId": "tenant-acme",
    }
    assert tenant["metadata"]["labels"]["sme.sap.com/tenant-type"] == "consumer"
    jobs = jobs_in_step_order(objects)
    assert [_workload(job) for job in jobs] == ["mtx", "seed-data"]
    env = _env(jobs[0])
    assert env["CAPOP_TENANT_OPERATION"] == "provisioning"
    assert env["CAPOP_TENANT_SUBDOMAIN"] == "consumer-x"
    assert env["CAPOP_TENANT_TYPE"] == "consumer"
    assert "CAPOP_PROVIDER_TENANT_ID" not in env and "CAPOP_PROVIDER_SUBDOMAIN" not in env
    assert env["CAPOP_PROVIDER_SUBACCOUNT_ID"] == "1a2b3c4d-0000-4000-8000-00000000a001"
    (dns,) = objects_of_kind(objects, "DNSEntry")
    assert (dns["spec"]["dnsName"], dns["spec"]["targets"]) == (
        "consumer-x.shop.example.com",
        ["ingress.example.com"],
    )
    (service,) = objects_of_kind(objects, "VirtualService")
    assert service["spec"]["hosts"] == ["consumer-x.shop.example.com"]
    assert (
        service["spec"]["http"][0]["route"][0]["destination"]["host"]
        == "shop-3-router-svc.shop.svc.cluster.local"
    )
    # The application's app still gates its versions for the tenants' operations.
    gates = [
        m.body["metadata"]["name"]
        for app in result.apps
        if app.app == "cap.shop.shop"
        for m in app.manifests
        if m.body["kind"] == "ConfigMap"
    ]
    assert gates == ["shop-1-ready", "shop-2-ready", "shop-3-ready"]


@pytest.mark.parametrize(
    ("provider", "field"),
    [({"subDomain": "shop-provider"}, "tenantId"), ({"tenantId": PROVIDER_ID}, "subDomain")],
    ids=["no-tenant-id", "no-subdomain"],
)
def test_a_provider_with_one_field_is_refused(
    shop_source: Path, provider: dict[str, str], field: str
) -> None:
    _edit(shop_source / "capapplication.yaml", _set_provider(provider))
    with pytest.raises(InvalidSpec) as raised:
        render_result(shop_source)
    assert [(p.object_ref, p.field_path, p.message) for p in raised.value.problems] == [
        (
            "CAPApplication shop/shop",
            f"spec.provider.{field}",
            "required with the provider's other field (or leave spec.provider empty: no provider tenant)",
        )
    ]


# --- the provider's subdomain changes ---------------------------------------------------------------


def test_a_changed_provider_subdomain_is_served(shop_source: Path) -> None:
    record = tenant_record(
        "shop-provider", sub_domain="shop-hq", tenant_id=PROVIDER_ID, status=recorded_status("shop-3")
    )
    write_tenants(shop_source, [record, tenant_record("acme", sub_domain="shop-provider")])

    result = render_result(shop_source)

    objects = tenant_objects(result.files, "shop-provider")
    (tenant,) = objects_of_kind(objects, "CAPTenant")
    assert tenant["spec"]["subDomain"] == "shop-hq"
    assert tenant["metadata"]["labels"]["sme.sap.com/tenant-type"] == "provider"
    (service,) = objects_of_kind(objects, "VirtualService")
    assert service["spec"]["hosts"] == ["shop-hq.shop.example.com"]
    (dns,) = objects_of_kind(objects, "DNSEntry")
    assert dns["spec"]["dnsName"] == "shop-hq.shop.example.com"
    assert objects_of_kind(objects, "Job") == []  # nothing to run: Ready on the newest version
    # The old subdomain is free again: a consumer may take it.
    (consumer_service,) = objects_of_kind(tenant_objects(result.files, "acme"), "VirtualService")
    assert consumer_service["spec"]["hosts"] == ["shop-provider.shop.example.com"]
    (app,) = [a for a in result.apps if a.app == tenant_dir("shop-provider")]
    assert [(n.level, n.reason) for n in app.notes] == [(Level.INFO, "ProviderSubdomainChanged")]
    assert app.notes[0].subject.endswith(
        "tenants/shop-provider.yaml: document 1 (CAPTenant shop/shop-provider)"
    )
    assert "served on subdomain shop-hq (its CAPTenant), not shop-provider" in app.notes[0].message


def test_the_provider_keeps_the_application_subdomain_without_a_note(shop_source: Path) -> None:
    result = render_result(shop_source)
    (app,) = [a for a in result.apps if a.app == tenant_dir("shop-provider")]
    assert app.notes == []
    (service,) = objects_of_kind(tenant_objects(result.files, "shop-provider"), "VirtualService")
    assert service["spec"]["hosts"] == ["shop-provider.shop.example.com"]


# --- a Content job among the tenant operation steps -------------------------------------------------

CONTENT_JOB = {
    "name": "ui-content",
    "consumedBTPServices": ["shop-uaa"],
    "jobDefinition": {"type": "Content", "image": "registry.example.com/shop/ui-content:3.0.0"},
}


def _content_among_steps(version: dict[str, Any]) -> None:
    version["spec"]["workloads"].append(CONTENT_JOB)
    version["spec"]["tenantOperations"]["upgrade"].insert(1, {"workloadName": "ui-content"})
    version["spec"]["tenantOperations"]["provisioning"].append({"workloadName": "ui-content"})


def test_a_content_job_among_the_steps_is_left_out(shop_source: Path) -> None:
    _edit(shop_source / "version-3.yaml", _content_among_steps)
    status = recorded_status("shop-2", previousCAPApplicationVersions=["shop-1"])
    write_tenants(shop_source, [tenant_record("acme", status=status)])

    result = render_result(shop_source)

    jobs = jobs_in_step_order(tenant_objects(result.files, "acme"))
    assert [
        (
            _workload(job),
            job["metadata"]["labels"]["sme.sap.com/tenant-operation-step"],
        )
        for job in jobs
    ] == [("notify", "1"), ("mtx", "2"), ("seed-data", "3")]
    # The Content job runs once for the version, in the application's app.
    (app,) = [a for a in result.apps if a.app == "cap.shop.shop"]
    content_jobs = [
        (m.body["metadata"]["name"], _workload(m.body)) for m in app.manifests if m.body["kind"] == "Job"
    ]
    assert content_jobs == [("shop-3-content", "ui-content")]  # CAP Operator's name without contentJobs
    notes = [n for n in app.notes if n.reason == "ContentJobNotATenantOperation"]
    assert [(n.level, n.subject.rsplit(": ", 1)[1]) for n in notes] == [
        (Level.WARNING, "spec.tenantOperations.provisioning[2].workloadName"),
        (Level.WARNING, "spec.tenantOperations.upgrade[1].workloadName"),
    ]
    assert notes[1].message == (
        "ui-content is a Content job: it runs once for the version, not per tenant, so upgrade leaves "
        "this step out (as CAP Operator does); remove it from the list"
    )
