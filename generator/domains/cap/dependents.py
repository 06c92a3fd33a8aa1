"""Which CAP documents cannot be checked while others are skipped.

When a document fails an earlier stage (its schema, its name), the render skips it and checks the
rest, so that one run reports every problem (core.collected_problems). A CAP document that refers
to a skipped one would then fail for the wrong reason ("no CAPApplication ... in the sources"), so
it is skipped as well, and reported once the document it needs is fixed:

    CAPApplication          with a domainRef to a skipped Domain or ClusterDomain, or with a
                            skipped version (its first version decides whether it is services-only,
                            and the rules compare its versions)
    CAPApplicationVersion   of a skipped CAPApplication
    CAPTenant               of a skipped CAPApplication

Only names are read here, defensively: a skipped document need not match its schema. Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap.model import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CLUSTER_DOMAIN,
    DOMAIN,
)
from btp_gitops.generator.domains.cap.tenants.model import CAP_TENANT

DocumentKey = tuple[str, int]  # (file as shown, 1-based document index)


def _key(document: SourceDocument) -> DocumentKey:
    return (document.file, document.document)


def _field(body: Any, *path: str) -> str:
    for name in path:
        body = body.get(name) if isinstance(body, dict) else None
    return body if isinstance(body, str) else ""


def _gvk(document: SourceDocument) -> tuple[str, str]:
    return (document.api_version, document.kind)


def _application_of(document: SourceDocument) -> tuple[str, str]:
    return (
        _field(document.body, "metadata", "namespace"),
        _field(document.body, "spec", "capApplicationInstance"),
    )


def _names(document: SourceDocument) -> tuple[str, str]:
    return (_field(document.body, "metadata", "namespace"), _field(document.body, "metadata", "name"))


def _refers_to_skipped_domain(app: SourceDocument, domains: set[tuple[str, str, str]]) -> bool:
    spec = app.body.get("spec")
    refs = spec.get("domainRefs") if isinstance(spec, dict) else None
    namespace = _field(app.body, "metadata", "namespace")
    for ref in refs if isinstance(refs, list) else []:
        kind, name = _field(ref, "kind"), _field(ref, "name")
        if (kind, "" if kind == CLUSTER_DOMAIN[1] else namespace, name) in domains:
            return True
    return False


def unchecked_dependents(
    documents: Iterable[SourceDocument], skipped: Collection[DocumentKey]
) -> set[DocumentKey]:
    """The CAP documents among `documents` that need one in `skipped` to be checked (see above)."""
    by_kind: dict[tuple[str, str], list[SourceDocument]] = {}
    for document in documents:
        by_kind.setdefault(_gvk(document), []).append(document)
    dependents: set[DocumentKey] = set()

    def out(document: SourceDocument) -> bool:
        return _key(document) in skipped or _key(document) in dependents

    domains = {
        (d.kind, "" if _gvk(d) == CLUSTER_DOMAIN else _names(d)[0], _names(d)[1])
        for d in [*by_kind.get(DOMAIN, []), *by_kind.get(CLUSTER_DOMAIN, [])]
        if out(d)
    }
    versions = by_kind.get(CAP_APPLICATION_VERSION, [])
    incomplete = {_application_of(version) for version in versions if out(version)}
    for app in by_kind.get(CAP_APPLICATION, []):
        if not out(app) and (_refers_to_skipped_domain(app, domains) or _names(app) in incomplete):
            dependents.add(_key(app))
    applications = {_names(app) for app in by_kind.get(CAP_APPLICATION, []) if out(app)}
    dependents |= {
        _key(document)
        for document in [*versions, *by_kind.get(CAP_TENANT, [])]
        if not out(document) and _application_of(document) in applications
    }
    return dependents
