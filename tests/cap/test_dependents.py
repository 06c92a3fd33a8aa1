"""domains.cap.unchecked_dependents: what a render skips with a CAP document that failed its schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap import unchecked_dependents

API = "sme.sap.com/v1alpha1"


def _doc(file: str, kind: str, name: str, **spec: Any) -> SourceDocument:
    body = {"apiVersion": API, "kind": kind, "metadata": {"name": name, "namespace": "ns"}, "spec": spec}
    return SourceDocument(file, 1, body, Path())


DOMAIN = _doc("domain.yaml", "Domain", "primary")
APP = _doc("app.yaml", "CAPApplication", "shop", domainRefs=[{"kind": "Domain", "name": "primary"}])
OTHER_APP = _doc("other.yaml", "CAPApplication", "other")
VERSION = _doc("v1.yaml", "CAPApplicationVersion", "shop-1", capApplicationInstance="shop")
OTHER_VERSION = _doc("ov1.yaml", "CAPApplicationVersion", "other-1", capApplicationInstance="other")
TENANT = _doc("t.yaml", "CAPTenant", "t", capApplicationInstance="shop")
OTHER_TENANT = _doc("ot.yaml", "CAPTenant", "ot", capApplicationInstance="other")
ALL = [DOMAIN, APP, OTHER_APP, VERSION, OTHER_VERSION, TENANT, OTHER_TENANT]


def _keys(*documents: SourceDocument) -> set[tuple[str, int]]:
    return {(d.file, d.document) for d in documents}


def test_a_skipped_domain_takes_its_applications_their_versions_and_tenants() -> None:
    assert unchecked_dependents(ALL, _keys(DOMAIN)) == _keys(APP, VERSION, TENANT)


def test_a_skipped_version_takes_its_application_with_its_other_versions_and_tenants() -> None:
    """Without its first version, whether an application is services-only is not known."""
    second = _doc("ov2.yaml", "CAPApplicationVersion", "other-2", capApplicationInstance="other")
    assert unchecked_dependents([*ALL, second], _keys(OTHER_VERSION)) == _keys(
        OTHER_APP, second, OTHER_TENANT
    )


def test_a_skipped_tenant_takes_nothing() -> None:
    assert unchecked_dependents(ALL, _keys(TENANT)) == set()


def test_names_are_read_from_documents_that_need_not_match_their_schema() -> None:
    broken = SourceDocument(
        "b.yaml", 1, {"apiVersion": API, "kind": "CAPApplication", "metadata": [], "spec": 3}, Path()
    )
    odd_refs = _doc("odd.yaml", "CAPApplication", "odd", domainRefs="primary")
    assert unchecked_dependents([broken, odd_refs, *ALL], _keys(broken, DOMAIN)) == _keys(
        APP, VERSION, TENANT
    )
