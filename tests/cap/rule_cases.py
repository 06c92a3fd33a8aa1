"""What the rule table of test_validation_rules.py starts from and how it breaks a rule: a valid
multi-tenant application and a services-only one, as documents by role, small editors that change
one field each, and the problems the real render pipeline reports for a set of documents."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.errors import InvalidSpec, Problem
from tests.cap.conftest import render_result, write_documents

Docs = dict[str, dict[str, Any]]
Edit = Callable[[Docs], None]


def multi_tenant() -> Docs:
    return {
        "app": {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "CAPApplication",
            "metadata": {"name": "shop", "namespace": "shop"},
            "spec": {
                "btpAppName": "shop",
                "providerSubaccountId": "sub-1",
                "provider": {"subDomain": "shop-provider", "tenantId": "tenant-1"},
                "btp": {
                    "services": [
                        {"class": "xsuaa", "name": "uaa", "secret": "uaa-binding"},
                        {"class": "saas-registry", "name": "registry", "secret": "registry-binding"},
                    ]
                },
                "domainRefs": [{"kind": "Domain", "name": "shop"}],
            },
        },
        "domain": {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "Domain",
            "metadata": {"name": "shop", "namespace": "shop"},
            "spec": {"domain": "shop.example.com", "ingressSelector": {"istio": "ingressgateway"}},
        },
        "version": {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "CAPApplicationVersion",
            "metadata": {"name": "shop-1", "namespace": "shop"},
            "spec": {
                "capApplicationInstance": "shop",
                "version": "1.0.0",
                "workloads": [
                    {
                        "name": "srv",
                        "consumedBTPServices": ["uaa"],
                        "deploymentDefinition": {"type": "CAP", "image": "srv:1"},
                    },
                    {
                        "name": "router",
                        "consumedBTPServices": ["uaa"],
                        "deploymentDefinition": {"type": "Router", "image": "router:1"},
                    },
                    {"name": "tenant", "jobDefinition": {"type": "TenantOperation", "image": "srv:1"}},
                    {"name": "content", "jobDefinition": {"type": "Content", "image": "content:1"}},
                ],
            },
        },
    }


def services_only() -> Docs:
    docs = multi_tenant()
    del docs["app"]["spec"]["provider"]
    docs["version"]["spec"] = {
        "capApplicationInstance": "shop",
        "version": "1.0.0",
        "workloads": [
            {
                "name": "api",
                "consumedBTPServices": ["uaa"],
                "deploymentDefinition": {
                    "type": "Service",
                    "image": "api:1",
                    "ports": [{"name": "http", "port": 4004}],
                },
            },
            {"name": "content", "jobDefinition": {"type": "Content", "image": "content:1"}},
        ],
        "serviceExposures": [{"subDomain": "api", "routes": [{"workloadName": "api", "port": 4004}]}],
    }
    return docs


def problems_of(tmp_path: Path, docs: Docs) -> list[Problem]:
    source = write_documents(tmp_path / "source", "sources.yaml", list(docs.values()))
    try:
        render_result(source)
    except InvalidSpec as error:
        return list(error.problems)
    return []


def workload(docs: Docs, name: str) -> dict[str, Any]:
    return next(w for w in docs["version"]["spec"]["workloads"] if w["name"] == name)


def definition(docs: Docs, name: str) -> dict[str, Any]:
    found = workload(docs, name)
    return dict(found.get("deploymentDefinition") or found["jobDefinition"])  # a view for reading


def edit_definition(name: str, **fields: Any) -> Edit:
    def edit(docs: Docs) -> None:
        found = workload(docs, name)
        target = found.get("deploymentDefinition") or found["jobDefinition"]
        target.update(copy.deepcopy(fields))

    return edit


def add_workload(entry: dict[str, Any]) -> Edit:
    return lambda docs: docs["version"]["spec"]["workloads"].append(copy.deepcopy(entry))


def newer_version_with(entry: dict[str, Any]) -> Edit:
    """A version 2.0.0 (`shop-2`) like the first, plus one workload: the application's mode is the
    first version's, so what the workload may be is decided by the first version."""

    def edit(docs: Docs) -> None:
        newer = copy.deepcopy(docs["version"])
        newer["metadata"]["name"] = "shop-2"
        newer["spec"]["version"] = "2.0.0"
        newer["spec"]["workloads"].append(copy.deepcopy(entry))
        docs["version2"] = newer

    return edit


def set_spec(document: str, **fields: Any) -> Edit:
    return lambda docs: docs[document]["spec"].update(copy.deepcopy(fields))


def annotate(document: str, key: str, value: str) -> Edit:
    return lambda docs: docs[document]["metadata"].setdefault("annotations", {}).__setitem__(key, value)


def steps(*names: str, custom_continue: bool = False) -> list[dict[str, Any]]:
    return [
        {"workloadName": name} | ({"continueOnFailure": True} if custom_continue else {}) for name in names
    ]


def custom_job(name: str = "notify") -> dict[str, Any]:
    return {"name": name, "jobDefinition": {"type": "CustomTenantOperation", "image": "notify:1"}}


def content(name: str) -> dict[str, Any]:
    return {"name": name, "jobDefinition": {"type": "Content", "image": f"{name}:1"}}


def chain(*edits: Edit) -> Edit:
    def edit(docs: Docs) -> None:
        for one in edits:
            one(docs)

    return edit
