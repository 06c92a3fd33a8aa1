"""What a Domain or ClusterDomain renders into: Istio Gateway, certificate and DNS entries.

    Gateway      networking.istio.io/v1, selecting the ingress pods; one HTTPS server on 443 for
                 `./*.<domain>` (a Domain: VirtualServices of its namespace) or `*/*.<domain>` (a
                 ClusterDomain: of any namespace); TLS mode SIMPLE, MUTUAL or OPTIONAL_MUTUAL with
                 the certificate's Secret as credentialName. In the Domain's namespace; a
                 ClusterDomain's in the ingress namespace.
    Certificate  for `*.<domain>`, in the ingress namespace (Istio reads credentialName there):
                 Gardener cert-management (`secretRef`, the default issuer) or cert-manager
                 (`secretName`, issuer `certConfig.certManager.issuerRef`, default ClusterIssuer
                 `cluster-ca`), as the annotation `btp-gitops.io/certificate-manager` chooses.
    DNSEntry     dns.gardener.cloud/v1alpha1, class `garden`, one per record of the DNS mode
                 (domains.cap.dns), next to the Gateway.

The ingress namespace is `istio-system` unless the annotation `btp-gitops.io/ingress-namespace`
names another: CAP Operator found it by looking up the ingress pods, which a render cannot.
`certConfig.additionalCACertificate` is not rendered: Istio reads client CAs from a Secret, and
no Secret with data goes to Git (a note says what to provide).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.domains.cap.dns import DnsRecord, dns_records
from btp_gitops.generator.domains.cap.identity import (
    DNS_NAME_HASH,
    certificate_name,
    dns_entry_name,
    domain_labels,
    gateway_name,
    gateway_namespace,
    sha1_hex,
)
from btp_gitops.generator.domains.cap.model import CertificateManager, Domain, TlsMode

GATEWAY_TLS_MODES = {
    TlsMode.SIMPLE: "SIMPLE",
    TlsMode.MUTUAL: "MUTUAL",
    TlsMode.OPTIONAL_MUTUAL: "OPTIONAL_MUTUAL",
}
DEFAULT_ISSUER = {"name": "cluster-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
MAX_COMMON_NAME = 64
DNS_CLASS_ANNOTATION = "dns.gardener.cloud/class"
DNS_TTL = 600
CNAME_LOOKUP_INTERVAL = 30


def _meta(domain: Domain, name: str, namespace: str, **extra_labels: str) -> dict[str, Any]:
    labels, annotations = domain_labels(domain)
    return {"name": name, "namespace": namespace, "labels": labels | extra_labels, "annotations": annotations}


def wildcard(domain: Domain) -> str:
    return f"*.{domain.host}"


def gateway(domain: Domain) -> KubeObject:
    scope = "*" if domain.is_cluster_domain else "."
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "Gateway",
        "metadata": _meta(domain, gateway_name(domain), gateway_namespace(domain)),
        "spec": {
            "selector": dict(sorted(domain.ingress_selector.items())),
            "servers": [
                {
                    "hosts": [f"{scope}/{wildcard(domain)}"],
                    "port": {"name": "https", "number": 443, "protocol": "HTTPS"},
                    "tls": {
                        "mode": GATEWAY_TLS_MODES[TlsMode(domain.tls_mode)],
                        "credentialName": certificate_name(domain),
                    },
                }
            ],
        },
    }


def certificate(domain: Domain) -> KubeObject:
    name, namespace = certificate_name(domain), domain.ingress_namespace
    if domain.certificate_manager == CertificateManager.CERT_MANAGER:
        spec: dict[str, Any] = {"dnsNames": [wildcard(domain)], "secretName": name}
        if len(wildcard(domain)) <= MAX_COMMON_NAME:
            spec["commonName"] = wildcard(domain)
        spec["issuerRef"] = (
            {**DEFAULT_ISSUER, **domain.issuer_ref} if domain.issuer_ref else dict(DEFAULT_ISSUER)
        )
        api_version = "cert-manager.io/v1"
    else:
        spec = {"dnsNames": [wildcard(domain)], "secretRef": {"name": name, "namespace": namespace}}
        api_version = "cert.gardener.cloud/v1alpha1"
    return {
        "apiVersion": api_version,
        "kind": "Certificate",
        "metadata": _meta(domain, name, namespace),
        "spec": spec,
    }


def dns_entry(domain: Domain, record: DnsRecord) -> KubeObject:
    meta = _meta(domain, dns_entry_name(domain, record.name), gateway_namespace(domain))
    meta["labels"][DNS_NAME_HASH] = sha1_hex(record.name)
    meta["annotations"][DNS_CLASS_ANNOTATION] = "garden"
    return {
        "apiVersion": "dns.gardener.cloud/v1alpha1",
        "kind": "DNSEntry",
        "metadata": meta,
        "spec": {
            "dnsName": record.name,
            "targets": [record.target],
            "ttl": DNS_TTL,
            "cnameLookupInterval": CNAME_LOOKUP_INTERVAL,
        },
    }


def dns_entries(domain: Domain, subdomains: Iterable[str]) -> list[KubeObject]:
    return [dns_entry(domain, record) for record in dns_records(domain, subdomains)]


def domain_objects(domain: Domain, subdomains: Iterable[str]) -> list[KubeObject]:
    return [gateway(domain), certificate(domain), *dns_entries(domain, subdomains)]


def domain_notes(domain: Domain) -> list[Note]:
    where = f"{domain.source.file}: document {domain.source.document} ({domain.source.ref})"
    notes = []
    if domain.additional_ca_certificate:
        notes.append(
            Note(
                Level.WARNING,
                "AdditionalCACertificateNotRendered",
                f"{where}: {domain.field_path('certConfig.additionalCACertificate')}",
                f"provide the client CA as Secret {domain.ingress_namespace}/"
                f"{certificate_name(domain)}-cacert (key cacert) in the cluster, e.g. through an "
                "ExternalSecret or SealedSecret: no Secret with data is written to Git",
            )
        )
    if domain.implied and not domain.is_cluster_domain and not domain.dns_target:
        notes.append(
            Note(
                Level.INFO,
                "NoDnsTarget",
                f"{where}: {domain.field_path('dnsTarget')}",
                f"no DNS entries for {domain.host}: set dnsTarget (CAP Operator read it from the ingress "
                "gateway's Service, which a render cannot)",
            )
        )
    return notes
