"""Source documents of a small multi-tenant CAP application `shop`, as users write them, and the tree
and bare Git remote that hold them. Nothing here is faked: the documents pass the schemas in
schemas/ and render with the generator."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import git
import yaml

from btp_gitops.controller.cap.version_cleanup import CLEANUP_ANNOTATION
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap.model import Application, Version
from btp_gitops.generator.domains.cap.tenants.model import Tenant, TenantType, tenant_from_source

APP = "shop"
Document = dict[str, Any]


def application(namespace: str, mode: str | None = "true", name: str = APP) -> Document:
    annotations = {CLEANUP_ANNOTATION: mode} if mode is not None else {}
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPApplication",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "btpAppName": name,
            "providerSubaccountId": "0d3e5f6a-1b2c-4d5e-8f90-a1b2c3d4e5f6",
            "provider": {"subDomain": f"{name}-provider", "tenantId": "6f5e4d3c-2b1a-4098-b7c6-d5e4f3a2b1c0"},
            "btp": {
                "services": [
                    {"class": "xsuaa", "name": f"{name}-uaa", "secret": f"{name}-uaa-binding"},
                    {
                        "class": "saas-registry",
                        "name": f"{name}-registry",
                        "secret": f"{name}-registry-binding",
                    },
                ]
            },
            "domainRefs": [{"kind": "Domain", "name": name}],
        },
    }


def domain(namespace: str, name: str = APP) -> Document:
    """The Domain an application's tenants are served on (a multi-tenant application needs one)."""
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "Domain",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "domain": f"{name}.apps.example.com",
            "ingressSelector": {"app": "istio-ingressgateway", "istio": "ingressgateway"},
            "dnsMode": "Wildcard",
            "dnsTarget": "public-ingress.apps.example.com",
        },
    }


def version_name(semver: str, app: str = APP) -> str:
    return f"{app}-{semver.replace('.', '-')}"


def gauge(metric: str, period: str, threshold: str) -> Document:
    return {"name": metric, "type": "Gauge", "calculationPeriod": period, "thresholdValue": threshold}


def counter(metric: str, period: str, threshold: str) -> Document:
    return {"name": metric, "type": "Counter", "calculationPeriod": period, "thresholdValue": threshold}


def version(
    namespace: str,
    semver: str,
    *,
    rules: Mapping[str, Document] | None = None,
    app: str = APP,
    name: str | None = None,
) -> Document:
    """A version with a CAP server `srv`, a Router `approuter` and a tenant operation job; `rules`
    maps a deployment workload's name to its `monitoring.deletionRules`."""
    rules = rules or {}

    def deployment(workload: str, kind: str, extra: Document) -> Document:
        definition: Document = {
            "type": kind,
            "image": f"registry.example.com/{app}/{workload}:{semver}",
            **extra,
        }
        if workload in rules:
            definition["monitoring"] = {"deletionRules": copy.deepcopy(dict(rules[workload]))}
        return {"name": workload, "consumedBTPServices": [f"{app}-uaa"], "deploymentDefinition": definition}

    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPApplicationVersion",
        "metadata": {"name": name or version_name(semver, app), "namespace": namespace},
        "spec": {
            "capApplicationInstance": app,
            "version": semver,
            "workloads": [
                deployment(
                    "srv",
                    "CAP",
                    {"ports": [{"name": "http", "port": 4004, "routerDestinationName": "srv-api"}]},
                ),
                deployment("approuter", "Router", {"ports": [{"name": "http", "port": 5000}]}),
                {
                    "name": "tenant-job",
                    "consumedBTPServices": [f"{app}-uaa", f"{app}-registry"],
                    "jobDefinition": {
                        "type": "TenantOperation",
                        "image": f"registry.example.com/{app}/srv:{semver}",
                    },
                },
            ],
        },
    }


def _tenant_id(name: str) -> str:
    digest = hashlib.sha1(name.encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


def tenant(
    namespace: str,
    name: str,
    *,
    current: str | None = None,
    pinned: str | None = None,
    never_upgrade: bool = False,
    deprovision: bool = False,
    app: str = APP,
    tenant_id: str | None = None,
) -> Document:
    """A consumer tenant; `current` is the semver of the version it runs on (recorded status)."""
    spec: Document = {
        "capApplicationInstance": app,
        "subDomain": name,
        "tenantId": tenant_id or _tenant_id(name),
    }
    if pinned:
        spec["version"] = pinned
    if never_upgrade:
        spec["versionUpgradeStrategy"] = "never"
    body: Document = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenant",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if deprovision:
        body["metadata"]["annotations"] = {"btp-gitops.io/deprovision": "true"}
    if current:
        body["status"] = {
            "state": "Ready",
            "currentCAPApplicationVersionInstance": version_name(current, app),
            "lastCompletedOperation": {
                "operation": "provisioning",
                "capApplicationVersionInstance": version_name(current, app),
            },
        }
    return body


# --- typed views, for the pure functions ---------------------------------------------------------------


def _source(body: Document) -> SourceDocument:
    return SourceDocument(file="memory.yaml", document=1, body=body, directory=Path("."))


def as_application(body: Document) -> Application:
    return Application.from_source(_source(body))


def as_version(body: Document) -> Version:
    return Version.from_source(_source(body))


def as_tenant(body: Document) -> Tenant:
    return tenant_from_source(_source(body), TenantType.CONSUMER)


# --- files and Git ---------------------------------------------------------------------------------------


def file_of(body: Document) -> str:
    """Where a document lives in the source tree, as users lay them out."""
    meta = body["metadata"]
    if body["kind"] == "Domain":
        return f"{meta['namespace']}/domain-{meta['name']}.yaml"
    folder = f"{meta['namespace']}/{body['spec'].get('capApplicationInstance', meta['name'])}"
    if body["kind"] == "CAPApplication":
        return f"{folder}/capapplication.yaml"
    if body["kind"] == "CAPApplicationVersion":
        return f"{folder}/version-{body['spec']['version']}.yaml"
    return f"{folder}/tenants/{meta['name']}.yaml"


def write_tree(root: Path, documents: Iterable[Document]) -> None:
    for body in documents:
        path = root / file_of(body)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")


def bare_remote_with(directory: Path, documents: Iterable[Document]) -> Path:
    """A bare repository (branch main) whose one commit holds `documents`."""
    remote = directory / "remote.git"
    git.Repo.init(remote, bare=True, initial_branch="main")
    seed = git.Repo.init(directory / "seed", initial_branch="main")
    write_tree(directory / "seed", documents)
    seed.git.add(all=True)
    seed.git.commit("-m", "Sources", env=_identity())
    seed.git.push(str(remote), "main:main")
    seed.close()
    return remote


def push_documents(remote: Path, directory: Path, documents: Iterable[Document], message: str) -> None:
    """Another writer (a person) adds or changes documents on the remote."""
    clone = git.Repo.clone_from(str(remote), directory)
    write_tree(directory, documents)
    clone.git.add(all=True)
    clone.git.commit("-m", message, env=_identity())
    clone.git.push("origin", "main")
    clone.close()


def _identity() -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }


def remote_log(remote: Path) -> list[str]:
    """Commit shas of main, newest first."""
    repo = git.Repo(remote)
    try:
        return [c.hexsha for c in repo.iter_commits("main")]
    finally:
        repo.close()
