"""Fixtures for the CAP tenant tests: the `shop` application (three versions, a Domain with DNS
entries per subdomain) and tenant records written into a copy of it, one file per tenant, as
the subscription server writes them.

Renders go through the real pipeline in process (`render_cluster`: loading, schema validation,
the CAP domain, layout); nothing is faked.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import RenderResult, render_cluster

SHOP = Path(__file__).parent / "data" / "shop"
DEPROVISION_ANNOTATION = "btp-gitops.io/deprovision"
CLUSTER = "demo"
NAMESPACE = "shop"


def tenant_record(
    name: str,
    *,
    sub_domain: str | None = None,
    tenant_id: str | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A CAPTenant record of the shop application; ids and subdomains derived from the name."""
    record: dict[str, Any] = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenant",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "capApplicationInstance": "shop",
            "subDomain": sub_domain or name,
            "tenantId": tenant_id or f"tenant-{name}",
            **(spec or {}),
        },
    }
    if annotations:
        record["metadata"]["annotations"] = annotations
    if status:
        record["status"] = status
    return record


def recorded_status(current: str, *, state: str = "Ready", **extra: Any) -> dict[str, Any]:
    return {"state": state, "currentCAPApplicationVersionInstance": current, **extra}


def write_tenants(source: Path, records: list[dict[str, Any]]) -> Path:
    """One file per tenant under `tenants/`, the subscription server's layout."""
    directory = source / "tenants"
    directory.mkdir(exist_ok=True)
    for record in records:
        (directory / f"{record['metadata']['name']}.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    return source


@pytest.fixture
def shop_source(tmp_path: Path) -> Path:
    """A writable copy of the shop application, without tenants."""
    target = tmp_path / "source"
    shutil.copytree(SHOP, target)
    return target


def render_result(*sources: Path) -> RenderResult:
    return render_cluster(tuple(sources), CLUSTER, EmbeddedHelm(), load_schema_registry())


def render_files(*sources: Path) -> dict[str, str]:
    return render_result(*sources).files


def tenant_dir(name: str) -> str:
    return f"cap-tenant.{NAMESPACE}.{name}"


def tenant_files(files: dict[str, str], name: str) -> dict[str, str]:
    """The files of one tenant's app (in its shard directory), by path under the cluster directory."""
    return {path: text for path, text in files.items() if app_path(path).app == tenant_dir(name)}


def tenant_objects(files: dict[str, str], name: str) -> dict[str, dict[str, Any]]:
    """file name -> object of one tenant's app, kustomization.yaml left out."""
    return {
        path.rsplit("/", 1)[1]: yaml.safe_load(text)
        for path, text in tenant_files(files, name).items()
        if not path.endswith("/kustomization.yaml")
    }


def objects_of_kind(objects: dict[str, dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """Objects of one kind, in file order (which for Jobs of one operation is not step order)."""
    return [obj for _, obj in sorted(objects.items()) if obj["kind"] == kind]


def jobs_in_step_order(objects: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        objects_of_kind(objects, "Job"),
        key=lambda job: int(job["metadata"]["labels"]["sme.sap.com/tenant-operation-step"]),
    )
