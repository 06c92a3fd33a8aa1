"""`btp-gitops.io/dns-manager: kubernetes` on a domain: no DNS entries, whatever its dnsMode.

CAP Operator's chart sets DNS_MANAGER to `kubernetes` where the cluster does not serve Gardener's
dns.gardener.cloud API, and CAP Operator then creates no DNSEntry for any domain or tenant (its
`handleDnsEntries` returns at once). A render of such a domain must not add DNSEntries the cluster
does not serve. Everything else a domain renders is the same under either DNS manager.

Covers: the example domains (every dnsMode, implied domains too) rendered under each DNS manager,
the difference being exactly the DNSEntries, and a snapshot; the notes; a tenant's app on a
Subdomain-mode domain; `dnsTarget` not needed without DNS entries. Real pipeline in process.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.cap.conftest import DATA, objects_of, render_result
from tests.cap_tenants.conftest import SHOP, tenant_objects, tenant_record, write_tenants
from tests.cap_tenants.conftest import render_files as render_tenants
from tests.conftest import tree_as_yaml

SOURCE = DATA / "domains"
ANNOTATION = "btp-gitops.io/dns-manager"
DOMAIN_KINDS = ("Domain", "ClusterDomain", "CAPApplication")  # an application implies domains


def _with_dns_manager(source: Path, target: Path, manager: str) -> Path:
    """A copy of `source` whose domains (and applications, for the domains they imply) name `manager`."""
    shutil.copytree(source, target)
    for path in sorted(target.rglob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        for document in documents:
            if document.get("kind") in DOMAIN_KINDS:
                document["metadata"].setdefault("annotations", {})[ANNOTATION] = manager
        path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return target


def _objects(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        path: body for path, body in objects_of(files).items() if not path.endswith("/kustomization.yaml")
    }


def test_the_kubernetes_dns_manager_renders_every_domain_without_its_dns_entries(tmp_path: Path) -> None:
    gardener = _objects(render_result(_with_dns_manager(SOURCE, tmp_path / "gardener", "gardener")).files)
    kubernetes = _objects(
        render_result(_with_dns_manager(SOURCE, tmp_path / "kubernetes", "kubernetes")).files
    )
    entries = {path for path, body in gardener.items() if body["kind"] == "DNSEntry"}
    assert len(entries) >= 5  # Wildcard, Subdomain and Custom domains all have some
    assert not any(body["kind"] == "DNSEntry" for body in kubernetes.values())
    without = {path: body for path, body in gardener.items() if path not in entries}

    def unannotated(objects: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        # The annotation itself is on the rendered Domain objects: it is the only other difference.
        for body in objects.values():
            body["metadata"].get("annotations", {}).pop(ANNOTATION, None)
        return objects

    assert unannotated(kubernetes) == unannotated(without)


def test_domains_under_the_kubernetes_dns_manager_match_snapshot(
    tmp_path: Path, yaml_snapshot: object
) -> None:
    files = render_result(_with_dns_manager(SOURCE, tmp_path / "source", "kubernetes")).files
    domains = {path: text for path, text in files.items() if path.startswith("cap-")}
    assert tree_as_yaml(domains) == yaml_snapshot


def test_a_domain_whose_dns_mode_is_ignored_says_so(tmp_path: Path) -> None:
    result = render_result(_with_dns_manager(SOURCE, tmp_path / "source", "kubernetes"))
    notes = sorted(
        (note.reason, note.subject.rsplit(": ", 1)[1]) for app in result.apps for note in app.notes
    )
    ignored = [field for reason, field in notes if reason == "DnsModeIgnored"]
    # wildcard, per-subdomain, templated (not plain), and the primary domain of the application,
    # whose deprecated spec.domains.dnsTarget asks for entries
    assert ignored == ["spec.dnsMode"] * 3 + ["spec.domains.dnsTarget"]
    assert not any(reason == "NoDnsTarget" for reason, _ in notes)  # no entry needs a target


def test_no_dns_target_is_needed_without_dns_entries(tmp_path: Path) -> None:
    source = _with_dns_manager(SOURCE, tmp_path / "source", "kubernetes")
    path = source / "domains.yaml"
    path.write_text(path.read_text().replace("  dnsTarget: lb.example.com\n", "", 1))
    objects = _objects(render_result(source).files)
    assert any(
        body["kind"] == "Gateway" and body["metadata"]["name"] == "wildcard" for body in objects.values()
    )


def test_a_tenant_on_a_subdomain_domain_gets_no_dns_entry_under_kubernetes(tmp_path: Path) -> None:
    records = [tenant_record("acme")]
    gardener = write_tenants(_with_dns_manager(SHOP, tmp_path / "gardener", "gardener"), records)
    kubernetes = write_tenants(_with_dns_manager(SHOP, tmp_path / "kubernetes", "kubernetes"), records)
    kinds = {body["kind"] for body in tenant_objects(render_tenants(gardener), "acme").values()}
    assert "DNSEntry" in kinds
    kinds_without = {body["kind"] for body in tenant_objects(render_tenants(kubernetes), "acme").values()}
    assert kinds_without == kinds - {"DNSEntry"}
