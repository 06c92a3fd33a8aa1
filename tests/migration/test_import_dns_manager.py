"""Which DNS manager the imported domains name. CAP Operator's chart sets DNS_MANAGER to `gardener`
where the cluster serves Gardener's dns.gardener.cloud API and to `kubernetes` elsewhere, and
under `kubernetes` CAP Operator makes no DNS entry for any dnsMode. The import reads Gardener's
DNSEntry CRD by name (beside the two Certificate CRDs, test_import_certificate_manager):

- read: the render's default, Gardener DNS, nothing added;
- not read, cert-manager's Certificate CRD read and Gardener's not (no Gardener cluster):
  `btp-gitops.io/dns-manager: kubernetes`, and the render makes no DNSEntry;
- not read otherwise (Gardener's Certificate CRD read: a Gardener cluster dumped without it; or no
  CRD read at all): the default, and a comment on each domain with a dnsMode saying how to
  choose otherwise.

The CRDs in the dumps are the ones the projects publish (`scripts/fetch-crds.sh`, the pinned
versions) or, where only the name matters, one of that name; the real kube-apiserver cases are in
test_import_certificate_manager (the three CRDs read by name, a 403 on each).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from btp_gitops.generator.migration import LiveObject
from btp_gitops.generator.migration.cap import import_cap
from tests.conftest import RunCli
from tests.migration.result_files import write_result
from tests.migration.test_import_certificate_manager import (
    CERT_MANAGER,
    GARDENER,
    GARDENER_DNS,
    installed_crd,
    published_crd,
    rendered_objects,
)
from tests.migration.test_import_from_dir import operator_dump

ANNOTATION = "btp-gitops.io/dns-manager"


def _objects(*crds: dict[str, Any]) -> list[LiveObject]:
    """The example application as CAP Operator leaves it (its three domains: Wildcard, Custom,
    Wildcard), and the CRDs `crds` in the dumps."""
    return [
        *(LiveObject(body, "dumps/cap.yaml") for body in operator_dump()),
        *(LiveObject(crd, "dumps/crds.yaml") for crd in crds),
    ]


def _domains(objects: list[LiveObject]) -> list[tuple[dict[str, Any], str]]:
    result = import_cap(objects)
    assert not result.skipped
    found = [
        (dict(document.body), "\n".join(document.comment))
        for imported in result.files
        for document in imported.documents
        if document.body["kind"] in ("Domain", "ClusterDomain")
    ]
    assert len(found) == 3
    return found


def test_a_cluster_where_cert_manager_issues_the_certificates_makes_no_dns_entries() -> None:
    for body, comment in _domains(_objects(installed_crd(CERT_MANAGER))):
        assert body["metadata"]["annotations"][ANNOTATION] == "kubernetes"
        assert "set DNS_MANAGER to kubernetes" in comment
        assert f"its dnsMode {body['spec']['dnsMode']} made none" in comment


@pytest.mark.parametrize(
    "installed",
    [(), (GARDENER,), (CERT_MANAGER, GARDENER)],
    ids=["nothing-read", "gardener-certificates", "both-certificate-managers"],
)
def test_without_the_dns_crd_a_gardener_cluster_or_nothing_known_keeps_the_default(
    installed: tuple[str, ...],
) -> None:
    """Gardener's Certificate CRD read and its DNSEntry CRD not: a Gardener cluster dumped without
    the DNSEntry CRD (as the docs said before the import read it) keeps its DNS entries; the
    comment says how to choose otherwise. Likewise when no CRD was read at all."""
    for body, comment in _domains(_objects(*(installed_crd(name) for name in installed))):
        assert ANNOTATION not in body["metadata"].get("annotations", {})
        assert "Gardener's DNSEntry CRD was not among the objects read" in comment
        assert f"annotate {ANNOTATION}: kubernetes" in comment


@pytest.mark.crds
def test_dumps_of_a_gardener_cluster_keep_the_gardener_default(run_cli: RunCli, tmp_path: Path) -> None:
    """The DNSEntry CRD as the pinned release of Gardener's DNS controller publishes it, dumped
    with `kubectl get crd`: the domains keep their DNS entries, as CAP Operator made them."""
    objects = _objects(*(published_crd(name) for name in (GARDENER_DNS, GARDENER)))
    for body, comment in _domains(objects):
        assert ANNOTATION not in body["metadata"].get("annotations", {})
        assert "DNS_MANAGER" not in comment
    write_result(import_cap(objects), tmp_path / "sources")
    kinds = [o["kind"] for o in rendered_objects(run_cli, tmp_path, "cap-*domain*")]
    assert kinds.count("DNSEntry") >= 3  # a wildcard per Wildcard domain, the Custom one's templates


@pytest.mark.crds
def test_imported_domains_of_a_cluster_without_gardener_dns_render_no_dns_entries(
    run_cli: RunCli, tmp_path: Path
) -> None:
    objects = _objects(published_crd(CERT_MANAGER))
    write_result(import_cap(objects), tmp_path / "sources")
    rendered = rendered_objects(run_cli, tmp_path, "cap*")
    kinds = {o["kind"] for o in rendered}
    assert "DNSEntry" not in kinds
    assert {"Gateway", "Certificate", "Deployment"} <= kinds  # the rest of the domains and the application


def test_a_domain_without_a_dns_mode_gets_no_remark_when_nothing_is_known() -> None:
    objects = _objects()
    for live in objects:
        if live.body["kind"] in ("Domain", "ClusterDomain"):
            live.body["spec"].pop("dnsMode")
            live.body["spec"].pop("dnsTemplates", None)
    for body, comment in _domains(objects):
        assert ANNOTATION not in body["metadata"].get("annotations", {})
        assert "DNS manager" not in comment


def test_a_domain_that_names_its_dns_manager_keeps_it() -> None:
    objects = _objects(installed_crd(CERT_MANAGER))
    for live in objects:
        if live.body["kind"] in ("Domain", "ClusterDomain"):
            live.body["metadata"]["annotations"][ANNOTATION] = "gardener"
    for body, comment in _domains(objects):
        assert body["metadata"]["annotations"][ANNOTATION] == "gardener"
        assert "DNS_MANAGER" not in comment
