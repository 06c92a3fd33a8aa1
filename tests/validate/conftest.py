"""Shared pieces of the validate tests: the bundled Kubernetes schemas, our test CRD, a checker."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.io.kube_schemas import BundledKubernetesSchemas
from btp_gitops.generator.manifests.validation import (
    ManifestDocument,
    ManifestSchemas,
    validate_manifests,
)

HERE = Path(__file__).resolve().parent
WIDGET_CRD_FILE = HERE / "data" / "widgets-crd.yaml"
WIDGET_CRD: dict[str, Any] = yaml.safe_load(WIDGET_CRD_FILE.read_text())
KUBERNETES_VERSION = "1.37"  # the version the tables below are written against

Found = list[tuple[str | None, str]]  # (field path, message) of each problem of one document


@pytest.fixture(scope="session")
def builtin_schemas() -> BundledKubernetesSchemas:
    return BundledKubernetesSchemas(KUBERNETES_VERSION)


def widget(**spec: Any) -> dict[str, Any]:
    """A valid Widget with `spec` fields added or replaced."""
    return {
        "apiVersion": "test.btp-gitops.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"size": 3, **spec},
    }


def deployment() -> dict[str, Any]:
    return copy.deepcopy(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "web", "image": "nginx:1", "ports": [{"containerPort": 80}]}]
                    },
                },
            },
        }
    )


def check(
    builtin: BundledKubernetesSchemas, body: Any, crds: list[dict[str, Any]] | None = None
) -> tuple[Found, Found]:
    """(problems, warnings) of one document, as (field path, message) pairs."""
    schemas = ManifestSchemas(builtin, [WIDGET_CRD] if crds is None else crds)
    report = validate_manifests([ManifestDocument("case.yaml", 1, body)], schemas)
    assert report.objects == 1
    return [(p.field_path, p.message) for p in report.problems], [
        (w.field_path, w.message) for w in report.warnings
    ]
