"""An application marked for retirement (`btp-gitops.io/deprovision: "true"` on the CAPApplication).

Covers: every tenant of the application, the derived provider included, renders its
deprovisioning (on its current version, or the one its provisioning targeted) and nothing new: no
upgrade, no provisioning, no VirtualService or DNS entry; a tenant whose deprovisioning is recorded
renders nothing; the application's own app keeps its versions (the Jobs run on them); an annotation
other than "true" or "false" is refused at its field. Real pipeline in process; nothing is faked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.core.layout import app_path
from tests.cap_tenants.conftest import (
    jobs_in_step_order,
    recorded_status,
    render_files,
    render_result,
    tenant_dir,
    tenant_objects,
    tenant_record,
    write_tenants,
)


def mark_application(source: Path, value: str) -> None:
    path = source / "capapplication.yaml"
    documents = list(yaml.safe_load_all(path.read_text()))
    documents[0]["metadata"]["annotations"] = {"btp-gitops.io/deprovision": value}
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def operations(objects: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(operation, version label) of a tenant's Jobs, in step order."""
    return [
        (
            job["metadata"]["labels"]["sme.sap.com/tenant-operation-type"],
            job["metadata"]["labels"]["sme.sap.com/cav-version"],
        )
        for job in jobs_in_step_order(objects)
    ]


def kinds(objects: dict[str, dict[str, Any]]) -> set[str]:
    return {str(obj["kind"]) for obj in objects.values()}


@pytest.fixture
def retiring_shop(shop_source: Path) -> Path:
    """The shop with a Ready tenant on 1.0.0 (newest is 3.0.0), a new one, and one already gone."""
    write_tenants(
        shop_source,
        [
            tenant_record("ready", status=recorded_status("shop-1")),
            tenant_record("fresh"),
            tenant_record(
                "gone",
                status=recorded_status(
                    "shop-2",
                    lastCompletedOperation={
                        "operation": "deprovisioning",
                        "capApplicationVersionInstance": "shop-2",
                    },
                ),
            ),
        ],
    )
    mark_application(shop_source, "true")
    return shop_source


def test_every_tenant_is_deprovisioned_and_nothing_else(retiring_shop: Path) -> None:
    files = render_files(retiring_shop)
    ready, fresh, provider = (tenant_objects(files, n) for n in ("ready", "fresh", "shop-provider"))
    # The Ready tenant is deprovisioned where it runs, not upgraded to 3.0.0 first.
    assert operations(ready) == [("deprovisioning", "1.0.0")]
    # Never provisioned as far as the records know: undone on the version a provisioning targeted.
    assert operations(fresh) == [("deprovisioning", "3.0.0")]
    assert operations(provider) == [("deprovisioning", "3.0.0")]
    for objects in (ready, fresh, provider):
        assert kinds(objects) == {"CAPTenant", "Job"}  # no routing, no DNS entries
    assert not any(app_path(path).app == tenant_dir("gone") for path in files)


def test_the_application_keeps_its_versions_while_tenants_leave(retiring_shop: Path) -> None:
    files = render_files(retiring_shop)
    gates = {path.rsplit("/", 1)[1] for path in files if path.startswith("cap.shop.shop/configmap-")}
    assert {"configmap-shop-1-ready.yaml", "configmap-shop-3-ready.yaml"} <= gates


def test_without_the_mark_the_same_tenants_are_served(shop_source: Path) -> None:
    write_tenants(shop_source, [tenant_record("ready", status=recorded_status("shop-1"))])
    mark_application(shop_source, "false")
    objects = tenant_objects(render_files(shop_source), "ready")
    assert set(operations(objects)) == {("upgrade", "3.0.0")}
    assert "VirtualService" in kinds(objects)


def test_a_mark_that_is_not_true_or_false_is_refused(shop_source: Path) -> None:
    mark_application(shop_source, "yes")
    with pytest.raises(InvalidSpec) as raised:
        render_result(shop_source)
    assert [(p.object_ref, p.field_path, p.message) for p in raised.value.problems] == [
        (
            "CAPApplication shop/shop",
            "metadata.annotations.btp-gitops.io/deprovision",
            'must be "true" or "false"',
        )
    ]


def test_the_tenant_record_keeps_its_own_annotations(retiring_shop: Path) -> None:
    """The mark lives on the application: the rendered CAPTenant is the record as written."""
    objects = tenant_objects(render_files(retiring_shop), "ready")
    tenant = next(obj for obj in objects.values() if obj["kind"] == "CAPTenant")
    assert "btp-gitops.io/deprovision" not in (tenant["metadata"].get("annotations") or {})
