"""Render-time rules across CAPApplications, their versions and domains.

CAP Operator enforced these in its webhooks and controller; here one render reports every broken
rule of every document at once, each at the field to fix. Version rules are in `version_rules`.
"""

from __future__ import annotations

import re
from collections import defaultdict

import semver

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.keys import is_certificate_bundle
from btp_gitops.generator.core.sources import SourceDocument, problem_at
from btp_gitops.generator.core.suggestions import did_you_mean
from btp_gitops.generator.domains.cap.catalog import CapCatalog
from btp_gitops.generator.domains.cap.dns import template_values, uses_subdomain
from btp_gitops.generator.domains.cap.exposures import current_version, semantic_version
from btp_gitops.generator.domains.cap.model import (
    CAP_OPERATOR_GENERATION_ANNOTATION,
    CAP_OPERATOR_NAMESPACE_ANNOTATION,
    CERTIFICATE_MANAGER_ANNOTATION,
    COMMON_NAME_ANNOTATION,
    CREDENTIALS_ANNOTATION,
    DNS_MANAGER_ANNOTATION,
    INGRESS_NAMESPACE_ANNOTATION,
    Application,
    CertificateManager,
    CredentialsMode,
    DnsManager,
    DnsMode,
    Domain,
    Version,
)
from btp_gitops.generator.domains.cap.templates import TemplateError
from btp_gitops.generator.domains.cap.templates import render as render_template
from btp_gitops.generator.domains.cap.version_rules import VersionRules, is_label_value

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_SUBDOMAIN = 63  # a subdomain is one DNS label
MAX_COMMON_NAME = 64  # RFC 5280's upper bound, which cert-manager enforces
GENERATION = re.compile(r"^[1-9][0-9]*$")
MAX_GENERATION = 2**63 - 1  # metadata.generation is an int64


def _annotation_path(key: str) -> str:
    return f"metadata.annotations.{key}"


# --- applications ---------------------------------------------------------------------------------


def application_problems(app: Application, catalog: CapCatalog) -> list[Problem]:
    problems = []
    if not is_label_value(app.btp_app_name):
        problems.append(
            problem_at(
                app.source,
                "spec.btpAppName",
                "is the `app` label of every workload: at most 63 characters of A-Z, a-z, 0-9, '-', '_' "
                "and '.', beginning and ending with a letter or digit",
            )
        )
    if not app.account:
        problems.append(
            problem_at(
                app.source,
                "spec.providerSubaccountId",
                "required (or the deprecated globalAccountId): with btpAppName it identifies the application",
            )
        )
    if app.credentials_mode not in set(CredentialsMode):
        choices = ", ".join(repr(str(m)) for m in CredentialsMode)
        problems.append(
            problem_at(app.source, _annotation_path(CREDENTIALS_ANNOTATION), f"must be one of {choices}")
        )
    provider = app.source.body.get("spec", {}).get("provider")
    if isinstance(provider, dict) and app.provider is not None:
        problems += [
            problem_at(
                app.source,
                f"spec.provider.{key}",
                "required with the provider's other field (or leave spec.provider empty: no provider tenant)",
            )
            for key in ("subDomain", "tenantId")
            if not provider.get(key)
        ]
    names = [s.name for s in app.services]
    problems += [
        problem_at(app.source, f"spec.btp.services[{i}].name", f"duplicate service name {name!r}")
        for i, name in enumerate(names)
        if name in names[:i]
    ]
    return problems + _domain_reference_problems(app, catalog)


def _domain_reference_problems(app: Application, catalog: CapCatalog) -> list[Problem]:
    problems = []
    if app.domain_refs and app.legacy_domains:
        problems.append(
            problem_at(
                app.source,
                "spec.domains",
                "domainRefs is set too: the deprecated domains are ignored; drop them",
            )
        )
    seen = set()
    for index, ref in enumerate(app.domain_refs):
        where = f"spec.domainRefs[{index}]"
        if (ref.kind, ref.name) in seen:
            problems.append(problem_at(app.source, where, f"{ref.kind} {ref.name} is listed twice"))
        seen.add((ref.kind, ref.name))
        if catalog.domain(ref.kind, ref.name, app.namespace) is None:
            scope = "" if ref.kind == "ClusterDomain" else f" in namespace {app.namespace}"
            guess = did_you_mean(ref.name, catalog.domain_names(ref.kind, app.namespace))
            problems.append(
                problem_at(
                    app.source, f"{where}.name", f"no {ref.kind} {ref.name}{scope} in the sources{guess}"
                )
            )
    if not app.services_only and not app.domain_refs and not app.legacy_domains:
        problems.append(
            problem_at(
                app.source,
                "spec.domainRefs",
                "a multi-tenant application needs a domain to serve its tenants on",
            )
        )
    return problems


def version_problems(version: Version, catalog: CapCatalog) -> list[Problem]:
    app = catalog.application_of(version)
    if app is None:
        return [
            problem_at(
                version.source,
                "spec.capApplicationInstance",
                f"no CAPApplication {version.application} in namespace {version.namespace} in the sources"
                + did_you_mean(version.application, catalog.application_names(version.namespace)),
            )
        ]
    rules = VersionRules(version, app.services_only, app.credentials_mode, {s.name for s in app.services})
    problems = rules.all() + _generation_problems(version)
    if version.service_exposures and not catalog.domains_of(app):
        problems.append(
            problem_at(
                version.source,
                "spec.serviceExposures",
                f"CAPApplication {app.name} has no domain to expose them on",
            )
        )
    return problems


def _generation_problems(version: Version) -> list[Problem]:
    """The generation CAP Operator created the version's Deployments at: it becomes a label value
    in their pod selectors, so anything but a positive integer would select no pod it made."""
    annotations = version.source.body.get("metadata", {}).get("annotations")
    if not isinstance(annotations, dict) or CAP_OPERATOR_GENERATION_ANNOTATION not in annotations:
        return []
    value = annotations[CAP_OPERATOR_GENERATION_ANNOTATION]
    if isinstance(value, str) and GENERATION.match(value) and int(value) <= MAX_GENERATION:
        return []
    shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
    return [
        problem_at(
            version.source,
            _annotation_path(CAP_OPERATOR_GENERATION_ANNOTATION),
            f"must be a positive integer, as a string (the version's metadata.generation when CAP "
            f'Operator created its Deployments, e.g. "1"); got {shown}',
        )
    ]


def _where(source: SourceDocument) -> str:
    return f"{source.file}: document {source.document}"


def version_uniqueness_problems(catalog: CapCatalog) -> list[Problem]:
    """Versions of one application must differ as semantic versions: CAP Operator orders them so."""
    first: dict[tuple[str, str, semver.Version], Version] = {}
    problems = []
    for version in catalog.versions:
        key = (version.namespace, version.application, semantic_version(version.version))
        if key in first:
            other = first[key]
            problems.append(
                problem_at(
                    version.source,
                    "spec.version",
                    f"{version.version} is also the version of CAPApplicationVersion "
                    f"{other.namespace}/{other.name} ({_where(other.source)})",
                )
            )
        else:
            first[key] = version
    return problems


# --- domains --------------------------------------------------------------------------------------


def domain_problems(domain: Domain) -> list[Problem]:
    problems = _dns_problems(domain) + _certificate_problems(domain)
    if domain.implied:
        return problems
    for annotation, namespace in (
        (INGRESS_NAMESPACE_ANNOTATION, domain.ingress_namespace),
        (CAP_OPERATOR_NAMESPACE_ANNOTATION, domain.cap_operator_namespace),
    ):
        if not DNS_LABEL.match(namespace) or len(namespace) > 63:
            problems.append(
                problem_at(domain.source, _annotation_path(annotation), "must be a namespace name")
            )
    return problems


def _dns_problems(domain: Domain) -> list[Problem]:
    problems = []
    if domain.dns_manager not in set(DnsManager):
        choices = ", ".join(repr(str(m)) for m in DnsManager)
        guess = did_you_mean(domain.dns_manager, list(DnsManager))
        where = _annotation_path(DNS_MANAGER_ANNOTATION)
        problems.append(problem_at(domain.source, where, f"must be one of {choices}{guess}"))
    # Without Gardener's DNS controller no record is made, so nothing needs the target.
    needs_target = domain.makes_dns_entries and domain.dns_mode != DnsMode.NONE
    if needs_target and not domain.dns_target and not domain.implied:
        problems.append(
            problem_at(
                domain.source,
                domain.field_path("dnsTarget"),
                f"required for dnsMode {domain.dns_mode}: CAP Operator read it from the ingress gateway's "
                "Service, which a render cannot",
            )
        )
    if domain.dns_mode == DnsMode.CUSTOM and not domain.dns_templates:
        problems.append(
            problem_at(domain.source, domain.field_path("dnsTemplates"), "required for dnsMode Custom")
        )
    if domain.dns_templates and domain.dns_mode != DnsMode.CUSTOM:
        problems.append(
            problem_at(domain.source, domain.field_path("dnsTemplates"), "only used with dnsMode Custom")
        )
    # Rendered once with the domain's values and the longest subdomain there is: what a template
    # refuses (a function or action outside the subset, a wrong argument, a value past the size
    # bound) does not depend on which subdomain it gets.
    values = template_values(domain, "x" * MAX_SUBDOMAIN)
    for index, template in enumerate(domain.dns_templates):
        where = domain.field_path(f"dnsTemplates[{index}]")
        refused = [
            problem_at(domain.source, f"{where}.{field}", f"Go template: {error}")
            for field, error in _template_errors(template.name, template.target, values)
        ]
        problems += refused
        if not refused and uses_subdomain(template.target) and not uses_subdomain(template.name):
            problems.append(
                problem_at(
                    domain.source,
                    f"{where}.target",
                    "uses {{.subDomain}}, which only a name with {{.subDomain}} sets",
                )
            )
    return problems


def _template_errors(name: str, target: str, values: dict[str, str]) -> list[tuple[str, TemplateError]]:
    errors = []
    for field, text in (("name", name), ("target", target)):
        try:
            render_template(text, values)
        except TemplateError as error:
            errors.append((field, error))
    return errors


def _certificate_problems(domain: Domain) -> list[Problem]:
    if domain.certificate_manager not in set(CertificateManager):
        choices = ", ".join(repr(str(m)) for m in CertificateManager)
        where = _annotation_path(CERTIFICATE_MANAGER_ANNOTATION)
        return [problem_at(domain.source, where, f"must be one of {choices}")]
    problems = []
    if domain.issuer_ref and domain.certificate_manager == CertificateManager.GARDENER:
        problems.append(
            problem_at(
                domain.source,
                domain.field_path("certConfig.certManager"),
                f"configures cert-manager, but {CERTIFICATE_MANAGER_ANNOTATION} chooses gardener",
            )
        )
    if len(domain.common_name) > MAX_COMMON_NAME:
        problems.append(
            problem_at(
                domain.source,
                _annotation_path(COMMON_NAME_ANNOTATION),
                f"is {len(domain.common_name)} characters long; a certificate's commonName has at most "
                f"{MAX_COMMON_NAME}",
            )
        )
    if domain.additional_ca_certificate and not is_certificate_bundle(domain.additional_ca_certificate):
        # Never quoted: a private key pasted here must not reach a log either.
        problems.append(
            problem_at(
                domain.source,
                domain.field_path("certConfig.additionalCACertificate"),
                "must be PEM certificates (-----BEGIN CERTIFICATE----- blocks) and nothing else: it "
                "becomes a Secret in Git, which only public certificates may",
            )
        )
    return problems


def domain_host_problems(catalog: CapCatalog) -> list[Problem]:
    """One Gateway per host: two domains on the same host would fight over it."""
    by_host: dict[str, list[Domain]] = defaultdict(list)
    for domain in catalog.domains:
        by_host[domain.host].append(domain)
    problems = []
    for domains in by_host.values():
        first = domains[0]
        problems += [
            problem_at(
                other.source,
                other.field_path("domain") if not other.implied else other.field,
                f"{other.host} is also the domain of {first.ref} ({_where(first.source)})",
            )
            for other in domains[1:]
        ]
    for duplicate in catalog.duplicates:
        kept = catalog.domain(duplicate.kind, duplicate.name, duplicate.namespace)
        if kept is not None and dict(kept.ingress_selector) != dict(duplicate.ingress_selector):
            problems.append(
                problem_at(
                    duplicate.source,
                    "spec.domains.istioIngressGatewayLabels",
                    f"differ from those {kept.source.ref} gives the shared secondary domain {duplicate.host}",
                )
            )
    return problems


def shared_subdomain_problems(catalog: CapCatalog) -> list[Problem]:
    """Applications sharing a domain must expose different subdomains: one host, one VirtualService."""
    problems = []
    for domain in catalog.domains:
        exposed_by: dict[str, Application] = {}
        for app in catalog.applications_on(domain):
            current = current_version(catalog.versions_of(app))
            if current is None:
                continue
            for exposure in current.service_exposures:
                other = exposed_by.setdefault(exposure.sub_domain, app)
                if other is not app:
                    problems.append(
                        problem_at(
                            current.source,
                            f"spec.serviceExposures[{exposure.index}].subDomain",
                            f"{exposure.sub_domain}.{domain.host} is also exposed by CAPApplication "
                            f"{other.namespace}/{other.name}",
                        )
                    )
    return problems


def catalog_problems(catalog: CapCatalog) -> list[Problem]:
    """Every broken rule of every CAP document of the sources."""
    problems = [p for app in catalog.applications for p in application_problems(app, catalog)]
    problems += [p for version in catalog.versions for p in version_problems(version, catalog)]
    problems += version_uniqueness_problems(catalog)
    problems += [p for domain in catalog.domains for p in domain_problems(domain)]
    return problems + domain_host_problems(catalog) + shared_subdomain_problems(catalog)
