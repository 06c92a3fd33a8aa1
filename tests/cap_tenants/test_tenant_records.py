"""Tenant records the render refuses, each problem at its file and field, and the provider tenant.

Covers: records for applications that are missing or services-only; tenant ids, subdomains and
names that collide (with each other, with the provider, with exposures on a shared domain); a
provider record with another name; deprovision annotations that are neither "true"
nor "false"; routing annotations of the application that are not JSON objects of strings; every
problem reported in one run (exit 3 from the CLI). The provider tenant is derived from
`spec.provider` without a file, and its record, when the controller wrote one, is recognised by
its tenant id and carries its status. Real pipeline (in process, and the installed CLI once).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import InvalidSpec
from tests.cap.conftest import SERVICES_ONLY
from tests.cap_tenants.conftest import (
    CLUSTER,
    objects_of_kind,
    recorded_status,
    render_result,
    tenant_objects,
    tenant_record,
    write_tenants,
)
from tests.conftest import ROOT, RunCli

PROVIDER_ID = "1a2b3c4d-0000-4000-8000-00000000c001"


def problems_of(*sources: Path) -> list[tuple[str, str | None, str]]:
    with pytest.raises(InvalidSpec) as raised:
        render_result(*sources)
    return [(p.object_ref or "", p.field_path, p.message) for p in raised.value.problems]


def annotate_application(source: Path, annotations: dict[str, str]) -> None:
    path = source / "capapplication.yaml"
    documents = list(yaml.safe_load_all(path.read_text()))
    documents[0]["metadata"]["annotations"] = annotations
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


CASES: list[Any] = [
    pytest.param(
        [tenant_record("t", spec={"capApplicationInstance": "nope"})],
        [
            (
                "CAPTenant shop/t",
                "spec.capApplicationInstance",
                "no CAPApplication nope in namespace shop in the sources",
            )
        ],
        id="unknown-application",
    ),
    pytest.param(
        [tenant_record("a", tenant_id="same"), tenant_record("b", tenant_id="same")],
        [
            (
                "CAPTenant shop/b",
                "spec.tenantId",
                "tenant same is also CAPTenant shop/a of CAPApplication shop",
            )
        ],
        id="tenant-id-twice",
    ),
    pytest.param(
        [tenant_record("a", sub_domain="same"), tenant_record("b", sub_domain="same")],
        [("CAPTenant shop/b", "spec.subDomain", "same.shop.example.com is also served by CAPTenant shop/a")],
        id="subdomain-twice",
    ),
    pytest.param(
        [tenant_record("a", sub_domain="shop-provider")],
        [
            (
                "CAPTenant shop/a",
                "spec.subDomain",
                "shop-provider.shop.example.com is also served by CAPTenant shop/shop-provider",
            )
        ],
        id="provider-subdomain",
    ),
    pytest.param(
        [tenant_record("shop-provider", tenant_id="someone-else")],
        [
            (
                "CAPTenant shop/shop-provider",
                "metadata.name",
                "shop-provider is the name of CAPApplication shop's provider tenant",
            )
        ],
        id="provider-name-taken",
    ),
    pytest.param(
        [tenant_record("provider", sub_domain="shop-provider", tenant_id=PROVIDER_ID)],
        [
            (
                "CAPTenant shop/provider",
                "metadata.name",
                f"the provider tenant's record must be named shop-provider (tenantId {PROVIDER_ID} is CAPApplication shop's provider)",
            )
        ],
        id="provider-record-name",
    ),
    pytest.param(
        [tenant_record("t", annotations={"btp-gitops.io/deprovision": "yes"})],
        [("CAPTenant shop/t", "metadata.annotations.btp-gitops.io/deprovision", 'must be "true" or "false"')],
        id="deprovision-annotation",
    ),
]


@pytest.mark.parametrize(("records", "expected"), CASES)
def test_refused_records(shop_source: Path, records: list[dict[str, Any]], expected: list[Any]) -> None:
    write_tenants(shop_source, records)
    assert problems_of(shop_source) == expected


def test_a_services_only_application_has_no_tenants(tmp_path: Path) -> None:
    record = tenant_record("t", spec={"capApplicationInstance": "catalog-api"})
    record["metadata"]["namespace"] = "catalog"
    write_tenants(tmp_path, [record])

    assert problems_of(SERVICES_ONLY, tmp_path) == [
        (
            "CAPTenant catalog/t",
            "spec.capApplicationInstance",
            "CAPApplication catalog-api is services-only (no spec.provider, and its first version has only "
            "Service deployments and Content jobs): it has no tenants",
        )
    ]


def test_routing_annotations_must_be_json_objects_of_strings(shop_source: Path) -> None:
    annotate_application(
        shop_source,
        {
            "sme.sap.com/vs-route-request-header-set": "{not json",
            "sme.sap.com/vs-route-response-header-set": '{"x-count": 3}',
        },
    )
    assert problems_of(shop_source) == [
        (
            "CAPApplication shop/shop",
            "metadata.annotations.sme.sap.com/vs-route-request-header-set",
            "not JSON: Expecting property name enclosed in double quotes",
        ),
        (
            "CAPApplication shop/shop",
            "metadata.annotations.sme.sap.com/vs-route-response-header-set",
            "must be a JSON object of strings",
        ),
    ]


def test_every_problem_is_reported_at_once_by_the_cli(
    shop_source: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    write_tenants(
        shop_source,
        [
            tenant_record("a", tenant_id="same"),
            tenant_record("b", tenant_id="same", annotations={"btp-gitops.io/deprovision": "soon"}),
        ],
    )

    done = run_cli("render", shop_source, "--out", tmp_path / "repo", "--cluster", CLUSTER, cwd=ROOT)

    assert done.returncode == 3
    lines = done.stderr.splitlines()
    assert lines[0] == "error: invalid CAP applications (2 problems)"
    assert lines[1].endswith(
        'tenants/b.yaml: document 1 (CAPTenant shop/b): metadata.annotations.btp-gitops.io/deprovision: must be "true" or "false"'
    )
    assert lines[2].endswith(
        "tenants/b.yaml: document 1 (CAPTenant shop/b): spec.tenantId: tenant same is also CAPTenant shop/a of CAPApplication shop"
    )
    assert not (tmp_path / "repo").exists()


def test_the_provider_tenant_is_derived_from_the_application(shop_source: Path) -> None:
    result = render_result(shop_source)

    objects = tenant_objects(result.files, "shop-provider")
    (tenant,) = objects_of_kind(objects, "CAPTenant")
    assert tenant["spec"] == {
        "capApplicationInstance": "shop",
        "subDomain": "shop-provider",
        "tenantId": PROVIDER_ID,
    }
    assert tenant["metadata"]["labels"]["sme.sap.com/tenant-type"] == "provider"
    jobs = objects_of_kind(objects, "Job")
    assert {job["metadata"]["labels"]["sme.sap.com/tenant-operation-type"] for job in jobs} == {
        "provisioning"
    }
    env = jobs[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "CAPOP_TENANT_TYPE", "value": "provider"} in env
    payload = next(item for item in env if item["name"] == "CAPOP_SUBSCRIPTION_PAYLOAD")
    # Referenced, never inlined: the payload stays in the cluster.
    assert payload["valueFrom"]["secretKeyRef"] == {
        "name": "shop-provider-subscription-context",
        "key": "subscriptionContext",
    }


def test_the_provider_record_carries_its_status(shop_source: Path) -> None:
    record = tenant_record(
        "shop-provider", sub_domain="shop-provider", tenant_id=PROVIDER_ID, status=recorded_status("shop-3")
    )
    write_tenants(shop_source, [record])

    objects = tenant_objects(render_result(shop_source).files, "shop-provider")

    assert sorted(obj["kind"] for obj in objects.values()) == ["CAPTenant", "DNSEntry", "VirtualService"]
    assert (
        objects_of_kind(objects, "CAPTenant")[0]["metadata"]["labels"]["sme.sap.com/tenant-type"]
        == "provider"
    )


def test_a_tenant_on_a_removed_version_is_reported(shop_source: Path) -> None:
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-2"))])
    (shop_source / "version-2.yaml").unlink()

    notes = [
        note
        for app in render_result(shop_source).apps
        for note in app.notes
        if note.reason == "TenantVersionMissing"
    ]

    assert [(note.level, note.subject.rsplit(" (", 1)[1]) for note in notes] == [
        ("warning", "CAPTenant shop/acme)")
    ]
    assert notes[0].message == (
        "the tenant runs on shop-2, which is not in the sources: its routing leads nowhere until the upgrade to "
        "shop-3 completes"
    )
