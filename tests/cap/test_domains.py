"""Domains and ClusterDomains: Gateway, certificate and DNS entries per DNS mode and certificate manager.

Covers: a snapshot of one domain per DNS mode (None, Wildcard, Subdomain, Custom) across Gardener
and cert-manager certificates, TLS modes and ingress namespaces, plus the Domain and ClusterDomain
a deprecated `spec.domains` stands for; Subdomain and Custom records follow the subdomains the
applications expose; the client CA of Mutual TLS is rendered as Istio's `-cacert` Secret (DNS
templates: test_dns_templates). Real pipeline in process; nothing is faked.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.sources import SourceSet
from btp_gitops.generator.domains.cap.catalog import build_catalog
from btp_gitops.generator.domains.cap.dns import DnsRecord, dns_records
from btp_gitops.generator.domains.cap.model import Domain
from btp_gitops.generator.io.sources import load_sources
from tests.cap.conftest import DATA, objects_of, render_result
from tests.conftest import tree_as_yaml

SOURCE = DATA / "domains"


def test_a_domain_per_dns_mode_and_certificate_manager_matches_snapshot(yaml_snapshot: object) -> None:
    files = render_result(SOURCE).files
    domains = {path: text for path, text in files.items() if path.startswith("cap-")}
    assert sorted({path.split("/")[0] for path in domains}) == [
        "cap-clusterdomain.legacy.example.org",
        "cap-clusterdomain.per-subdomain",
        "cap-clusterdomain.templated",
        "cap-domain.shop.legacy-primary",
        "cap-domain.shop.plain",
        "cap-domain.shop.wildcard",
    ]
    assert tree_as_yaml(dict(domains)) == yaml_snapshot


def _dns_names(objects: dict[str, dict[str, object]], app: str) -> list[str]:
    return sorted(
        obj["spec"]["dnsName"]  # type: ignore[index]
        for path, obj in objects.items()
        if app_path(path).app == app and obj["kind"] == "DNSEntry"
    )


def test_dns_entries_follow_the_mode_and_the_exposed_subdomains() -> None:
    objects = objects_of(render_result(SOURCE).files)
    assert _dns_names(objects, "cap-domain.shop.plain") == []
    assert _dns_names(objects, "cap-domain.shop.wildcard") == ["*.wildcard.example.com"]
    assert _dns_names(objects, "cap-clusterdomain.per-subdomain") == [
        "api.sub.example.net",
        "docs.sub.example.net",
    ]
    assert _dns_names(objects, "cap-clusterdomain.templated") == [
        "*.templated.example.net",
        "api.eu.templated.example.net",
        "docs.eu.templated.example.net",
    ]
    # the deprecated primary domain: a record per subdomain served on it (none: no version yet)
    assert _dns_names(objects, "cap-domain.shop.legacy-primary") == []


def test_gateways_and_certificates_sit_where_istio_reads_them() -> None:
    objects = objects_of(render_result(SOURCE).files)
    gateway = objects["cap-clusterdomain.per-subdomain/gateway-per-subdomain.yaml"]
    certificate = objects[
        "cap-clusterdomain.per-subdomain/certificate-cap-operator-system--per-subdomain.yaml"
    ]
    assert gateway["metadata"]["namespace"] == "istio-ingress"
    assert gateway["spec"]["servers"][0]["hosts"] == ["*/*.sub.example.net"]
    assert certificate["metadata"]["namespace"] == "istio-ingress"
    assert certificate["spec"]["secretRef"] == {
        "name": "cap-operator-system--per-subdomain-gardener",
        "namespace": "istio-ingress",
    }
    domain_gateway = objects["cap-domain.shop.wildcard/gateway-wildcard.yaml"]
    assert domain_gateway["metadata"]["namespace"] == "shop"
    assert domain_gateway["spec"]["servers"][0]["hosts"] == ["./*.wildcard.example.com"]
    assert domain_gateway["spec"]["servers"][0]["tls"] == {
        "mode": "MUTUAL",
        "credentialName": "shop--wildcard-cert-manager",
    }
    assert (
        objects["cap-domain.shop.wildcard/certificate-shop--wildcard.yaml"]["metadata"]["namespace"]
        == "istio-system"
    )


def test_the_client_ca_of_mutual_tls_is_rendered_where_istio_reads_it() -> None:
    result = render_result(SOURCE)
    assert [n.reason for app in result.apps for n in app.notes if "CACertificate" in n.reason] == []
    secret = objects_of(result.files)[
        "cap-domain.shop.wildcard/secret-shop--wildcard-cert-manager-cacert.yaml"
    ]
    assert secret["metadata"]["namespace"] == "istio-system"
    assert list(secret["data"]) == ["ca.crt"]
    written = yaml.safe_load(result.files["cap-domain.shop.wildcard/domain-wildcard.yaml"])
    ca = written["spec"]["certConfig"]["additionalCACertificate"]
    assert base64.b64decode(secret["data"]["ca.crt"]).decode() == ca


def test_exposure_virtual_services_use_every_domain_of_the_application() -> None:
    objects = objects_of(render_result(SOURCE).files)
    service = objects["cap.shop.shop/virtualservice-shop-docs.yaml"]
    assert service["spec"]["gateways"] == [
        "shop/plain",
        "shop/wildcard",
        "istio-ingress/per-subdomain",
        "istio-system/templated",
    ]
    assert service["spec"]["hosts"] == [
        "docs.plain.example.com",
        "docs.wildcard.example.com",
        "docs.sub.example.net",
        "docs.templated.example.net",
    ]


def test_records_per_mode() -> None:
    catalog = build_catalog(SourceSet.of(load_sources((SOURCE,))))
    by_name: dict[str, Domain] = {d.name: d for d in catalog.domains}
    assert dns_records(by_name["per-subdomain"], ["b", "a", "a"]) == [
        DnsRecord("a.sub.example.net", "public-lb.example.net"),
        DnsRecord("b.sub.example.net", "public-lb.example.net"),
    ]
    assert dns_records(by_name["wildcard"], ["a"]) == [DnsRecord("*.wildcard.example.com", "lb.example.com")]
    assert dns_records(by_name["templated"], []) == [DnsRecord("*.templated.example.net", "lb.example.net")]
    assert dns_records(by_name["plain"], ["a"]) == []


LEGACY_VERSION = """\
---
apiVersion: sme.sap.com/v1alpha1
kind: CAPApplicationVersion
metadata: {name: legacy-1, namespace: shop}
spec:
  capApplicationInstance: legacy
  version: 1.0.0
  workloads:
    - name: api
      deploymentDefinition: {type: Service, image: api, ports: [{name: http, port: 8080}]}
  serviceExposures:
    - subDomain: api
      routes: [{workloadName: api, port: 8080}]
"""


@pytest.mark.parametrize(("dns_target", "records"), [(True, ["api.legacy.example.com"]), (False, [])])
def test_a_deprecated_primary_domain_has_dns_entries_only_with_a_dns_target(
    tmp_path: Path, dns_target: bool, records: list[str]
) -> None:
    source = tmp_path / "source"
    shutil.copytree(SOURCE, source)
    path = source / "application.yaml"
    text = path.read_text() + LEGACY_VERSION
    path.write_text(text if dns_target else text.replace("    dnsTarget: lb.example.com\n", ""))

    result = render_result(source)

    assert _dns_names(objects_of(result.files), "cap-domain.shop.legacy-primary") == records
    notes = [(n.level, n.reason, n.subject.rsplit(": ", 1)[1]) for app in result.apps for n in app.notes]
    assert (("info", "NoDnsTarget", "spec.domains.dnsTarget") in notes) is not dns_target
