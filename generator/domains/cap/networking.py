"""What a Domain or ClusterDomain renders into: Istio Gateway, certificate, client CA, DNS entries.

    Gateway        networking.istio.io/v1, selecting the ingress pods; one HTTPS server on 443 for
                   `./*.<domain>` (a Domain: VirtualServices of its namespace) or `*/*.<domain>` (a
                   ClusterDomain: of any namespace); TLS mode SIMPLE, MUTUAL or OPTIONAL_MUTUAL with
                   credentialName `<certificate>-<certificate manager>` (identity.credential_name).
                   In the Domain's namespace; a ClusterDomain's in the ingress namespace.
    Certificate    for `*.<domain>`, as the annotation `btp-gitops.io/certificate-manager` chooses:
                   Gardener cert-management (next to the Gateway, `secretRef` into the ingress
                   namespace: Gardener writes across namespaces) or cert-manager (in the ingress
                   namespace, which cert-manager's `secretName` cannot leave). cert-manager's has
                   a `commonName` only when the annotation `sme.sap.com/cert-manager-common-name`
                   gives one, and the issuer `certConfig.certManager.issuerRef` (kind `Issuer` and
                   group `cert-manager.io` when left out, as cert-manager reads them), else the
                   ClusterIssuer `cluster-ca`.
    client CA      `certConfig.additionalCACertificate` (mTLS): a Secret `<credentialName>-cacert`
                   with the PEM under `ca.crt`, in the ingress namespace, where Istio looks for the
                   CA of a credentialName. Certificates are public: the output guard lets a Secret
                   through when every value is PEM certificates and nothing else.
    NetworkPolicy  per namespace of the applications on the domain (network_policies).
    DNSEntry       dns.gardener.cloud/v1alpha1, class `garden`, one per record of the DNS mode
                   (domains.cap.dns), next to the Gateway; none when the annotation
                   `btp-gitops.io/dns-manager` is `kubernetes` (CAP Operator's DNS_MANAGER
                   where Gardener's DNS API is not served: it ignores dnsMode then).

The ingress namespace is `istio-system` unless the annotation `btp-gitops.io/ingress-namespace`
names another: CAP Operator found it by looking up the ingress pods, which a render cannot.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.domains.cap.dns import DnsRecord, dns_records
from btp_gitops.generator.domains.cap.identity import (
    DNS_NAME_HASH,
    certificate_name,
    client_ca_secret_name,
    credential_name,
    dns_entry_name,
    domain_labels,
    gateway_name,
    gateway_namespace,
    sha1_hex,
)
from btp_gitops.generator.domains.cap.model import (
    DNS_MANAGER_ANNOTATION,
    CertificateManager,
    DnsMode,
    Domain,
    TlsMode,
)
from btp_gitops.generator.domains.cap.network_policies import domain_network_policies

GATEWAY_TLS_MODES = {
    TlsMode.SIMPLE: "SIMPLE",
    TlsMode.MUTUAL: "MUTUAL",
    TlsMode.OPTIONAL_MUTUAL: "OPTIONAL_MUTUAL",
}
DEFAULT_ISSUER = {"name": "cluster-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
ISSUER_DEFAULTS = {"kind": "Issuer", "group": "cert-manager.io"}  # cert-manager's, for a given issuerRef
CLIENT_CA_KEY = "ca.crt"
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
                        "credentialName": credential_name(domain),
                    },
                }
            ],
        },
    }


def issuer_ref(domain: Domain) -> dict[str, str]:
    if not domain.issuer_ref:
        return dict(DEFAULT_ISSUER)
    given = {key: value for key, value in domain.issuer_ref.items() if value}
    return {
        "name": given["name"],
        "kind": given.get("kind") or ISSUER_DEFAULTS["kind"],
        "group": given.get("group") or ISSUER_DEFAULTS["group"],
    }


def certificate(domain: Domain) -> KubeObject:
    name, secret = certificate_name(domain), credential_name(domain)
    if domain.certificate_manager == CertificateManager.CERT_MANAGER:
        namespace = domain.ingress_namespace
        spec: dict[str, Any] = {"dnsNames": [wildcard(domain)], "secretName": secret}
        if domain.common_name:
            spec["commonName"] = domain.common_name
        spec["issuerRef"] = issuer_ref(domain)
        api_version = "cert-manager.io/v1"
    else:
        namespace = gateway_namespace(domain)
        spec = {
            "dnsNames": [wildcard(domain)],
            "secretRef": {"name": secret, "namespace": domain.ingress_namespace},
        }
        api_version = "cert.gardener.cloud/v1alpha1"
    return {
        "apiVersion": api_version,
        "kind": "Certificate",
        "metadata": _meta(domain, name, namespace),
        "spec": spec,
    }


def client_ca_secret(domain: Domain) -> KubeObject | None:
    """The client CA for Istio (public certificates, never a key), or None without one."""
    if not domain.additional_ca_certificate:
        return None
    pem = domain.additional_ca_certificate.strip() + "\n"
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(domain, client_ca_secret_name(domain), domain.ingress_namespace),
        "type": "Opaque",
        "data": {CLIENT_CA_KEY: base64.b64encode(pem.encode("utf-8")).decode("ascii")},
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


def domain_objects(domain: Domain, subdomains: Iterable[str], namespaces: Iterable[str]) -> list[KubeObject]:
    """Everything a domain renders; `namespaces`: those of the applications on it."""
    client_ca = client_ca_secret(domain)
    return [
        gateway(domain),
        certificate(domain),
        *([client_ca] if client_ca is not None else []),
        *domain_network_policies(domain, namespaces),
        *dns_entries(domain, subdomains),
    ]


def domain_notes(domain: Domain) -> list[Note]:
    where = f"{domain.source.file}: document {domain.source.document} ({domain.source.ref})"
    notes = []
    if not domain.makes_dns_entries:
        if domain.dns_mode != DnsMode.NONE:
            notes.append(
                Note(
                    Level.INFO,
                    "DnsModeIgnored",
                    # An implied domain has no dnsMode: its dnsTarget asks for the entries.
                    f"{where}: {domain.field_path('dnsTarget' if domain.implied else 'dnsMode')}",
                    f"no DNS entries for {domain.host}: {DNS_MANAGER_ANNOTATION} is "
                    f"{domain.dns_manager}, under which CAP Operator ignores dnsMode too",
                )
            )
        return notes
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
