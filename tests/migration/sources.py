"""The CAP sources the import tests start from: examples/cap-app, and the provider's record."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLES

CAP_APP = EXAMPLES / "cap-app"
PROVIDER = "bookshop-provider"
# CAP Operator's statuses of the example's tenants: acme provisioned on 1.0.0, initech upgraded
# from 1.0.0 to 1.1.0, the provider on 1.1.0, globex not reconciled yet (no status).
OPERATOR_TENANT_STATUS: dict[str, dict[str, Any]] = {
    "acme": {"state": "Ready", "currentCAPApplicationVersionInstance": "bookshop-1-0-0"},
    "initech": {
        "state": "Ready",
        "currentCAPApplicationVersionInstance": "bookshop-1-1-0",
        "previousCAPApplicationVersions": ["bookshop-1-0-0"],
    },
    PROVIDER: {"state": "Ready", "currentCAPApplicationVersionInstance": "bookshop-1-1-0"},
}


def provider_record() -> dict[str, Any]:
    """The provider's record as the controller writes it once its status is known."""
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenant",
        "metadata": {"name": PROVIDER, "namespace": "bookshop"},
        "spec": {
            "capApplicationInstance": "bookshop",
            "subDomain": "bookshop-provider",
            "tenantId": "6f5e4d3c-2b1a-4098-b7c6-d5e4f3a2b1c0",
        },
        "status": {
            "state": "Ready",
            "currentCAPApplicationVersionInstance": "bookshop-1-1-0",
            "lastCompletedOperation": {
                "operation": "provisioning",
                "capApplicationVersionInstance": "bookshop-1-1-0",
            },
        },
    }


def example_documents() -> dict[str, list[dict[str, Any]]]:
    """examples/cap-app's documents by file (relative path), comments aside."""
    return {
        path.relative_to(CAP_APP).as_posix(): [d for d in yaml.safe_load_all(path.read_text()) if d]
        for path in sorted(CAP_APP.rglob("*.yaml"))
    }


def source_objects() -> list[dict[str, Any]]:
    """Every source object of the example, and the provider's record."""
    documents = [copy.deepcopy(d) for docs in example_documents().values() for d in docs]
    return [*documents, provider_record()]


GENERATION_ANNOTATION = "btp-gitops.io/cap-operator-generation"


def as_imported_from_cap_operator(
    objects: list[dict[str, Any]], generation: str = "1"
) -> list[dict[str, Any]]:
    """`objects` as the import writes them back from versions CAP Operator reconciled: each
    version with its generation, which the pod selectors of CAP Operator's Deployments hold."""
    marked = copy.deepcopy(objects)
    for body in marked:
        if body["kind"] == "CAPApplicationVersion":
            annotations = {**body["metadata"].get("annotations", {}), GENERATION_ANNOTATION: generation}
            body["metadata"]["annotations"] = dict(sorted(annotations.items()))
    return marked


def imported_layout(
    objects: list[dict[str, Any]], namespace: str = "bookshop"
) -> dict[str, list[dict[str, Any]]]:
    """Where the import writes each object of `objects`: the layout of generator/migration/cap.py."""
    files: dict[str, list[dict[str, Any]]] = {}
    for body in sorted(objects, key=lambda d: d["metadata"]["name"]):
        kind, name = body["kind"], body["metadata"]["name"]
        app_dir = f"cap/{namespace}/bookshop"
        if kind == "CAPApplication":
            path = f"{app_dir}/capapplication.yaml"
        elif kind == "CAPApplicationVersion":
            path = f"{app_dir}/version-{body['spec']['version']}.yaml"
        elif kind == "CAPTenant":
            path = f"{app_dir}/tenants/{name}.yaml"
        elif kind == "Domain":
            path = f"cap/{namespace}/domains.yaml"
        else:
            path = "cap/cluster-domains.yaml"
        files.setdefault(path, []).append(body)
    return dict(sorted(files.items()))


def without_comments(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))


def read_tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
