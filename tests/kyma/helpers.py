"""Helpers for the Kyma tests: YAML text in, source documents, catalogs and Kymas out.

Inputs are parsed with PyYAML's own safe loader (not the product's), so a test's input does not
depend on the code under test.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.kyma.catalog import Catalog, build_catalog
from btp_gitops.generator.domains.kyma.model import Kyma

HEADER = "apiVersion: operator.kyma-project.io/v1beta2\n"


def documents(
    text: str, file: str = "catalog.yaml", directory: Path = Path("/catalog")
) -> list[SourceDocument]:
    """Every document of `text` as a source document of `file`."""
    return [
        SourceDocument(file=file, document=index, body=body, directory=directory)
        for index, body in enumerate(yaml.safe_load_all(text), start=1)
        if body is not None
    ]


def template(
    name: str,
    *,
    module: str | None = None,
    channel: str = "",
    version: str = "",
    labels: dict[str, str] | None = None,
    **spec: object,
) -> str:
    """A ModuleTemplate in kyma-system, as YAML text."""
    all_labels = dict(labels or {})
    if module:
        all_labels["operator.kyma-project.io/module-name"] = module
    body = {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "ModuleTemplate",
        "metadata": {"name": name, "namespace": "kyma-system", "labels": all_labels},
        "spec": {"channel": channel, "version": version, **spec},
    }
    return yaml.safe_dump(body, sort_keys=False)


def release_meta(name: str, channels: dict[str, str] | None = None, **spec: object) -> str:
    """A ModuleReleaseMeta in kyma-system; `ocmComponentName=None` leaves its OCM component name out."""
    body = {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "ModuleReleaseMeta",
        "metadata": {"name": name, "namespace": "kyma-system"},
        "spec": {"moduleName": name, "ocmComponentName": f"kyma-project.io/module/{name}", **spec},
    }
    if "ocmComponentName" in spec and spec["ocmComponentName"] is None:  # None: a release meta without one
        del body["spec"]["ocmComponentName"]  # type: ignore[attr-defined]
    if channels is not None:
        body["spec"]["channels"] = [{"channel": c, "version": v} for c, v in channels.items()]  # type: ignore[index]
    return yaml.safe_dump(body, sort_keys=False)


def catalog_of(*texts: str) -> Catalog:
    catalog, problems = build_catalog(documents("---\n".join(texts)))
    assert problems == [], problems
    return catalog


def kyma(spec: str, labels: dict[str, str] | None = None, name: str = "default") -> Kyma:
    """A Kyma in kyma-system with `spec` (YAML flow or block text) and labels."""
    body = {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "Kyma",
        "metadata": {"name": name, "namespace": "kyma-system", "labels": labels or {}},
        "spec": yaml.safe_load(spec) or {},
    }
    return Kyma.from_source(SourceDocument("kyma.yaml", 1, body, Path("/src")))
