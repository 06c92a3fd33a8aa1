"""Every CAP object of the sources, with the lookups the rules and the renderers need.

The deprecated `spec.domains` of a CAPApplication is read as CAP Operator's migration reads it: the
primary becomes a Domain `<ca>-primary` in the application's namespace, each secondary a
ClusterDomain named after its host (so applications sharing a secondary share one ClusterDomain),
all with the listed ingress labels and TLS mode Simple. The primary gets DNS entries per subdomain
when `dnsTarget` is given; the operator derived a missing target from the ingress gateway Service,
which a render cannot read, so without it no DNS entry is rendered (a note says so).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import semver

from btp_gitops.generator.core.sources import SourceSet
from btp_gitops.generator.domains.cap.exposures import semantic_version
from btp_gitops.generator.domains.cap.model import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CERTIFICATE_MANAGER_ANNOTATION,
    CLUSTER_DOMAIN,
    DEFAULT_INGRESS_NAMESPACE,
    DNS_MANAGER_ANNOTATION,
    DOMAIN,
    INGRESS_NAMESPACE_ANNOTATION,
    Application,
    CertificateManager,
    DnsManager,
    DnsMode,
    Domain,
    TlsMode,
    Version,
)


@dataclass(frozen=True, slots=True)
class CapCatalog:
    applications: tuple[Application, ...]
    versions: tuple[Version, ...]
    domains: tuple[Domain, ...]  # written and implied, each host once per kind and name
    duplicates: tuple[Domain, ...] = field(default=())  # implied domains merged into an earlier one

    def versions_of(self, app: Application) -> list[Version]:
        return [v for v in self.versions if v.namespace == app.namespace and v.application == app.name]

    def application_of(self, version: Version) -> Application | None:
        return next(
            (
                a
                for a in self.applications
                if a.namespace == version.namespace and a.name == version.application
            ),
            None,
        )

    def domain(self, kind: str, name: str, namespace: str) -> Domain | None:
        wanted_namespace = "" if kind == "ClusterDomain" else namespace
        return next(
            (d for d in self.domains if (d.kind, d.name, d.namespace) == (kind, name, wanted_namespace)),
            None,
        )

    def application_names(self, namespace: str) -> list[str]:
        """The names of the CAPApplications of one namespace (for "did you mean")."""
        return [a.name for a in self.applications if a.namespace == namespace]

    def domain_names(self, kind: str, namespace: str) -> list[str]:
        """The names of the written domains of one kind a CAPApplication in `namespace` may refer to."""
        wanted_namespace = "" if kind == "ClusterDomain" else namespace
        return [
            d.name
            for d in self.domains
            if (d.kind, d.namespace) == (kind, wanted_namespace) and not d.implied
        ]

    def domains_of(self, app: Application) -> list[Domain]:
        """The domains an application is served on: its domainRefs, else its deprecated domains."""
        if app.domain_refs:
            found = [self.domain(ref.kind, ref.name, app.namespace) for ref in app.domain_refs]
            return [d for d in found if d is not None]
        implied = implied_domains(app)
        found = [self.domain(d.kind, d.name, d.namespace) for d in implied]
        return [d for d in found if d is not None]

    def applications_on(self, domain: Domain) -> list[Application]:
        return [a for a in self.applications if domain in self.domains_of(a)]


def _ingress_selector(app: Application) -> dict[str, str]:
    labels = app.legacy_domains.get("istioIngressGatewayLabels") or []
    return {str(label["name"]): str(label["value"]) for label in labels}


def _implied_domain(app: Application, kind: str, name: str, host: str, dns_target: str) -> Domain:
    annotations = app.source.body.get("metadata", {}).get("annotations") or {}
    return Domain(
        kind=kind,
        name=name,
        namespace="" if kind == "ClusterDomain" else app.namespace,
        host=host,
        ingress_selector=_ingress_selector(app),
        tls_mode=TlsMode.SIMPLE,
        dns_mode=DnsMode.SUBDOMAIN if dns_target else DnsMode.NONE,
        dns_templates=(),
        dns_target=dns_target,
        additional_ca_certificate="",
        issuer_ref={},
        certificate_manager=annotations.get(CERTIFICATE_MANAGER_ANNOTATION) or CertificateManager.GARDENER,
        ingress_namespace=annotations.get(INGRESS_NAMESPACE_ANNOTATION) or DEFAULT_INGRESS_NAMESPACE,
        source=app.source,
        field="spec.domains",
        implied=True,
        dns_manager=annotations.get(DNS_MANAGER_ANNOTATION) or DnsManager.GARDENER,
    )


def implied_domains(app: Application) -> list[Domain]:
    """The Domain and ClusterDomains a CAPApplication's deprecated `spec.domains` stands for."""
    legacy = app.legacy_domains
    if not legacy or app.domain_refs:
        return []
    primary_host = str(legacy["primary"])
    primary = _implied_domain(
        app, "Domain", f"{app.name}-primary", primary_host, str(legacy.get("dnsTarget") or "")
    )
    secondaries = [
        _implied_domain(app, "ClusterDomain", str(host), str(host), "")
        for host in legacy.get("secondary") or []
    ]
    return [primary, *secondaries]


def _written_domains(sources: SourceSet) -> Iterator[Domain]:
    for document in [*sources.of_kind(*DOMAIN), *sources.of_kind(*CLUSTER_DOMAIN)]:
        yield Domain.from_source(document)


def first_version(versions: list[Version]) -> Version | None:
    """The oldest version (semantic order; source order where a version does not parse)."""

    def key(version: Version) -> tuple[int, semver.Version | None]:
        try:
            return (0, semantic_version(version.version))
        except ValueError:
            return (1, None)

    parsed = [v for v in versions if key(v)[0] == 0]
    if parsed:
        return min(parsed, key=lambda v: semantic_version(v.version))
    return versions[0] if versions else None


def application_mode(app: Application, versions: list[Version]) -> Application:
    """The application with `services_only` as CAP Operator decides it: with a provider it is
    multi-tenant; without one its first version decides (only Service deployments and Content jobs:
    services-only; anything else: multi-tenant, its consumer tenants provisioned without a provider
    tenant). Versions that differ from the first are refused by the version rules."""
    if app.provider is not None:
        return replace(app, services_only=False)
    first = first_version(versions)
    return replace(app, services_only=first is None or first.services_shaped)


def build_catalog(sources: SourceSet) -> CapCatalog:
    versions = tuple(Version.from_source(d) for d in sources.of_kind(*CAP_APPLICATION_VERSION))
    applications = tuple(
        application_mode(
            app, [v for v in versions if (v.namespace, v.application) == (app.namespace, app.name)]
        )
        for app in (Application.from_source(d) for d in sources.of_kind(*CAP_APPLICATION))
    )
    domains = list(_written_domains(sources))
    duplicates = []
    for app in applications:
        for implied in implied_domains(app):
            # A secondary shared by several applications is one ClusterDomain; the first wins.
            if implied.is_cluster_domain and any(
                d.implied and (d.kind, d.name) == (implied.kind, implied.name) for d in domains
            ):
                duplicates.append(implied)
            else:
                domains.append(implied)
    return CapCatalog(applications, versions, tuple(domains), tuple(duplicates))
