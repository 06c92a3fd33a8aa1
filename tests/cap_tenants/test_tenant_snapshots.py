"""What one tenant renders, as snapshots of its app directory, and the facts a reviewer checks first.

Scenarios against the shop application (versions 1.0.0, 2.0.0 and 3.0.0; 3.0.0 has custom steps):
a new tenant provisioned on 3.0.0 (steps `mtx`, `seed-data`); a tenant on 2.0.0 upgraded to 3.0.0
(`notify` with continueOnFailure, `mtx`, `seed-data`); an unsubscribed tenant deprovisioned on
2.0.0 (the default single step, no routing); and version affinity across the three versions: a
tenant that ran on 1.0.0 and runs on 2.0.0, being upgraded to 3.0.0, whose sessions stay where they
are until logout. Rendered by the real pipeline in process; snapshots are plain YAML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.cap_tenants.conftest import (
    DEPROVISION_ANNOTATION,
    jobs_in_step_order,
    objects_of_kind,
    recorded_status,
    render_files,
    tenant_files,
    tenant_objects,
    tenant_record,
    write_tenants,
)
from tests.conftest import tree_as_yaml

CAPOP_ORDER = [
    "CAPOP_APP_VERSION",
    "CAPOP_TENANT_ID",
    "CAPOP_TENANT_OPERATION",
    "CAPOP_TENANT_SUBDOMAIN",
    "CAPOP_TENANT_TYPE",
    "CAPOP_APP_NAME",
    "CAPOP_GLOBAL_ACCOUNT_ID",
    "CAPOP_PROVIDER_SUBACCOUNT_ID",
    "CAPOP_PROVIDER_TENANT_ID",
    "CAPOP_PROVIDER_SUBDOMAIN",
]


def env_names(job: dict[str, Any], field: str = "containers") -> list[str]:
    return [item["name"] for item in job["spec"]["template"]["spec"][field][0]["env"]]


def step_workloads(jobs: list[dict[str, Any]]) -> list[str]:
    return [job["spec"]["template"]["spec"]["containers"][0]["name"] for job in jobs]


def test_provisioning(shop_source: Path, yaml_snapshot: object) -> None:
    write_tenants(shop_source, [tenant_record("fresh")])

    files = render_files(shop_source)

    jobs = jobs_in_step_order(tenant_objects(files, "fresh"))
    assert step_workloads(jobs) == ["mtx", "seed-data"]
    mtx = jobs[0]
    assert env_names(mtx) == [
        *CAPOP_ORDER,
        "CAPOP_SUBSCRIPTION_PAYLOAD",
        "CAPOP_TENANT_MTXS_OPERATION",
        "CDS_ENV",
    ]
    assert env_names(mtx, "initContainers")[: len(CAPOP_ORDER)] == CAPOP_ORDER
    container = mtx["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == [
        "node",
        "./node_modules/@sap/cds-mtxs/bin/cds-mtx",
        "$(CAPOP_TENANT_MTXS_OPERATION)",
        "tenant-fresh",
        "--body",
        "$(CAPOP_SUBSCRIPTION_PAYLOAD)",
    ]
    payload = next(item for item in container["env"] if item["name"] == "CAPOP_SUBSCRIPTION_PAYLOAD")
    assert payload["valueFrom"] == {
        "secretKeyRef": {"name": "fresh-subscription-context", "key": "subscriptionContext"}
    }
    assert tree_as_yaml(tenant_files(files, "fresh")) == yaml_snapshot


def test_upgrade_with_custom_steps_and_continue_on_failure(shop_source: Path, yaml_snapshot: object) -> None:
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-2"))])

    files = render_files(shop_source)

    objects = tenant_objects(files, "acme")
    jobs = jobs_in_step_order(objects)
    assert step_workloads(jobs) == ["notify", "mtx", "seed-data"]
    continuing = [job["metadata"]["annotations"].get("btp-gitops.io/continue-on-failure") for job in jobs]
    assert continuing == ["true", None, None]
    assert [job["metadata"]["labels"]["sme.sap.com/tenant-operation-type"] for job in jobs] == ["upgrade"] * 3
    # Only the TenantOperation step gets the mtxs operation, and no payload outside provisioning.
    assert env_names(jobs[0]) == CAPOP_ORDER
    assert env_names(jobs[1])[-2:] == ["CAPOP_TENANT_MTXS_OPERATION", "CDS_ENV"]
    assert jobs[1]["spec"]["template"]["spec"]["containers"][0]["command"][-2:] == [
        "$(CAPOP_TENANT_MTXS_OPERATION)",
        "tenant-acme",
    ]
    (service,) = objects_of_kind(objects, "VirtualService")
    assert (
        service["spec"]["http"][0]["route"][0]["destination"]["host"]
        == "shop-3-router-svc.shop.svc.cluster.local"
    )
    assert tree_as_yaml(tenant_files(files, "acme")) == yaml_snapshot


def test_deprovisioning(shop_source: Path, yaml_snapshot: object) -> None:
    record = tenant_record(
        "initech",
        annotations={
            DEPROVISION_ANNOTATION: "true",
            "sme.sap.com/subscription-context-secret": "initech-ctx",
        },
        status=recorded_status("shop-2", previousCAPApplicationVersions=["shop-1"]),
    )
    write_tenants(shop_source, [record])

    files = render_files(shop_source)

    objects = tenant_objects(files, "initech")
    assert sorted(obj["kind"] for obj in objects.values()) == ["CAPTenant", "Job"]  # no routing, no DNS
    (job,) = objects_of_kind(objects, "Job")
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {item["name"]: item.get("value") for item in env}["CAPOP_TENANT_MTXS_OPERATION"] == "unsubscribe"
    assert job["metadata"]["labels"]["sme.sap.com/cav-version"] == "2.0.0"
    assert tree_as_yaml(tenant_files(files, "initech")) == yaml_snapshot


def test_version_affinity_across_three_versions(shop_source: Path, yaml_snapshot: object) -> None:
    application = shop_source / "capapplication.yaml"
    documents = list(yaml.safe_load_all(application.read_text()))
    documents[0]["metadata"]["annotations"] = {
        "sme.sap.com/enable-version-affinity": "true",
        "sme.sap.com/vs-route-request-header-set": '{"x-forwarded-host": "shop.example.com"}',
        "sme.sap.com/vs-route-response-header-set": '{"strict-transport-security": "max-age=31536000"}',
    }
    application.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    version = shop_source / "version-2.yaml"
    documents = list(yaml.safe_load_all(version.read_text()))
    documents[0]["metadata"]["annotations"] = {"sme.sap.com/logout-endpoint": "do/logout"}
    version.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    status = recorded_status("shop-2", previousCAPApplicationVersions=["shop-1"])
    write_tenants(shop_source, [tenant_record("acme", status=status)])

    files = render_files(shop_source)

    (service,) = objects_of_kind(tenant_objects(files, "acme"), "VirtualService")
    routes = service["spec"]["http"]
    hosts = [route["route"][0]["destination"]["host"].split("-router")[0] for route in routes]
    # Every earlier version keeps its logout and cookie routes, oldest first, as CAP Operator keeps them.
    assert hosts == ["shop-1", "shop-2", "shop-3", "shop-1", "shop-2", "shop-3", "shop-3"]
    # Each version's own logout endpoint: shop-2's annotation, the default for the others.
    assert [route["match"][0]["uri"]["regex"] for route in routes[:3]] == [
        "^|.*(logout|logoff).*",
        "^|.*(do/logout).*",
        "^|.*(logout|logoff).*",
    ]
    assert routes[1]["headers"]["response"]["set"] == {
        "strict-transport-security": "max-age=31536000",
        "Set-Cookie": "CAPOP_CAV=shop-2;Path=/;HttpOnly;Secure;Max-Age=0",
    }
    assert routes[-1]["headers"]["response"]["add"] == {
        "Set-Cookie": "CAPOP_CAV=shop-3;Path=/;HttpOnly;Secure"
    }
    assert all(
        route["headers"]["request"]["set"] == {"x-forwarded-host": "shop.example.com"} for route in routes
    )
    assert tree_as_yaml(tenant_files(files, "acme")) == yaml_snapshot
