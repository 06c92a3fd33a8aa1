"""Every tenant of the sources, grouped by application, and the rules about their records.

Grouping is one pass over the records (a dictionary per application), so that the render is
linear in tenants. An application's provider tenant is its record whose `tenantId` is the
provider's, else derived from `spec.provider` (model.derived_provider_tenant); a multi-tenant
application without provider (absent or empty `spec.provider`) has its consumer tenants only.
Rules checked here, each problem at its record's field: the application exists and has tenants
(not services-only); names are unique per namespace and tenant ids per application; a provider record is named
`<ca>-provider` (its subdomain may differ from `spec.provider.subDomain`: the record's wins, as
in CAP Operator); the deprovision annotation says "true" or
"false" (on a record, and on a CAPApplication, where it marks the application for retirement); a
subdomain serves one tenant or exposure per domain (domains may be shared by applications); the
application's routing annotations are well-formed. Every rule runs over every record of the
sources, each read as a `Tenant`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.sources import SourceDocument, SourceSet, problem_at
from btp_gitops.generator.core.suggestions import did_you_mean
from btp_gitops.generator.domains.cap.catalog import CapCatalog
from btp_gitops.generator.domains.cap.exposures import current_version
from btp_gitops.generator.domains.cap.model import Application, Provider
from btp_gitops.generator.domains.cap.tenants.model import (
    CAP_TENANT,
    DEPROVISION_ANNOTATION,
    Tenant,
    TenantType,
    derived_provider_tenant,
    provider_tenant_name,
    tenant_from_source,
    tenant_of_record,
)
from btp_gitops.generator.domains.cap.tenants.routing import (
    RoutingSettings,
    logout_endpoint_problems,
    routing_settings,
)
from btp_gitops.generator.domains.cap.tenants.selection import record_of

ApplicationKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True, slots=True)
class ApplicationTenants:
    """The tenants of one multi-tenant application, the provider first."""

    app: Application
    tenants: tuple[Tenant, ...]
    routing: RoutingSettings


@dataclass(frozen=True, slots=True)
class TenantCatalog:
    applications: tuple[ApplicationTenants, ...]
    problems: tuple[Problem, ...] = field(default=())


def _orphan_problem(
    tenant: Tenant, source: SourceDocument, app: Application | None, catalog: CapCatalog
) -> Problem:
    """The record names no application of the sources (None), or one without tenants."""
    if app is None:
        return problem_at(
            source,
            "spec.capApplicationInstance",
            f"no CAPApplication {tenant.application} in namespace {tenant.namespace} in the sources"
            + did_you_mean(tenant.application, catalog.application_names(tenant.namespace)),
        )
    return problem_at(
        source,
        "spec.capApplicationInstance",
        f"CAPApplication {app.name} is services-only (no spec.provider, and its first version has only "
        "Service deployments and Content jobs): it has no tenants",
    )


def _with_provider(
    app: Application, provider: Provider, records: list[Tenant]
) -> tuple[list[Tenant], list[Problem]]:
    """The application's tenants with its provider first: its record, or one derived from the spec."""
    found = next((t for t in records if t.tenant_id == provider.tenant_id and t.source), None)
    if found is None or found.source is None:
        return [derived_provider_tenant(app, provider), *records], []
    recorded = tenant_from_source(found.source, TenantType.PROVIDER)
    problems = []
    if recorded.name != provider_tenant_name(app):
        problems.append(
            problem_at(
                found.source,
                "metadata.name",
                f"the provider tenant's record must be named {provider_tenant_name(app)} "
                f"(tenantId {provider.tenant_id} is CAPApplication {app.name}'s provider)",
            )
        )
    # A recorded subdomain other than spec.provider.subDomain is a change of the provider's
    # subdomain: CAP Operator creates the provider CAPTenant from spec.provider once and from then
    # on serves the CAPTenant's subDomain, so the record wins (routing and DNS follow it; the
    # render report says so: render.provider_subdomain_notes).
    return [recorded, *(t for t in records if t is not found)], problems


def _tenant_id_problems(app: Application, tenants: list[Tenant]) -> Iterator[Problem]:
    """A subaccount subscribes to an application once (subdomains: `_subdomain_problems`)."""
    first: dict[str, Tenant] = {}
    for tenant in tenants:
        other = first.setdefault(tenant.tenant_id, tenant)
        if other is not tenant:
            yield problem_at(
                record_of(tenant, app),
                "spec.tenantId",
                f"tenant {tenant.tenant_id} is also {other.ref} of CAPApplication {app.name}",
            )


def _annotation_problems(tenant: Tenant, app: Application) -> Iterator[Problem]:
    yield from _deprovision_mark_problems(record_of(tenant, app), tenant.annotations)


def _deprovision_mark_problems(source: SourceDocument, annotations: dict[str, str]) -> Iterator[Problem]:
    value = annotations.get(DEPROVISION_ANNOTATION)
    if value is not None and value not in ("true", "false"):
        yield problem_at(
            source, f"metadata.annotations.{DEPROVISION_ANNOTATION}", 'must be "true" or "false"'
        )


def _application_mark_problems(app: Application) -> Iterator[Problem]:
    annotations = app.source.body.get("metadata", {}).get("annotations") or {}
    yield from _deprovision_mark_problems(app.source, {str(k): str(v) for k, v in annotations.items()})


def _name_problems(groups: list[ApplicationTenants]) -> Iterator[Problem]:
    """A tenant's name is its app directory and its objects' names: one per namespace."""
    first: dict[tuple[str, str], Tenant] = {}
    for group in groups:
        for tenant in group.tenants:
            other = first.setdefault((tenant.namespace, tenant.name), tenant)
            if other is tenant:
                continue
            if other.source is None:
                taken = f"the name of CAPApplication {other.application}'s provider tenant"
            elif other.application != tenant.application:
                taken = f"also a tenant of CAPApplication {other.application}"
            else:
                taken = f"recorded twice (also in {other.source.file})"
            yield problem_at(record_of(tenant, group.app), "metadata.name", f"{tenant.name} is {taken}")


def _subdomain_problems(catalog: CapCatalog, groups: list[ApplicationTenants]) -> Iterator[Problem]:
    """A host is one VirtualService: a subdomain of a domain serves one tenant or one exposure."""
    served: dict[tuple[str, str], str | Tenant] = {}  # (domain host, subdomain) -> what serves it
    for app in catalog.applications:
        current = current_version(catalog.versions_of(app))
        for domain in catalog.domains_of(app):
            for exposure in current.service_exposures if current else ():
                served.setdefault(
                    (domain.host, exposure.sub_domain), f"an exposure of CAPApplication {app.name}"
                )
    for group in groups:
        for domain in catalog.domains_of(group.app):
            for tenant in group.tenants:
                # The tenant itself until another claims the host (its ref, a new string per
                # call, only then: this runs once per tenant and domain).
                owner = served.setdefault((domain.host, tenant.sub_domain), tenant)
                if owner is not tenant and (owner if isinstance(owner, str) else owner.ref) != tenant.ref:
                    shown = owner if isinstance(owner, str) else owner.ref
                    yield problem_at(
                        record_of(tenant, group.app),
                        "spec.subDomain",
                        f"{tenant.sub_domain}.{domain.host} is also served by {shown}",
                    )


def build_tenant_catalog(sources: SourceSet, catalog: CapCatalog) -> TenantCatalog:
    """Every tenant, grouped by application, and every problem of the rules above."""
    apps = {(a.namespace, a.name): a for a in catalog.applications}
    records: dict[ApplicationKey, list[Tenant]] = defaultdict(list)
    problems: list[Problem] = []
    for document in sources.of_kind(*CAP_TENANT):
        tenant = tenant_of_record(document, TenantType.CONSUMER)
        key = (tenant.namespace, tenant.application)
        app = apps.get(key)
        if app is None or app.services_only:
            problems.append(_orphan_problem(tenant, document, app, catalog))
        else:
            records[key].append(tenant)
    groups = []
    for app in catalog.applications:
        problems += _application_mark_problems(app)
        if app.services_only:
            continue
        written = records.get((app.namespace, app.name), [])
        # Without a provider (absent or empty spec.provider) CAP Operator creates no provider
        # tenant and provisions the consumer tenants alone.
        tenants, provider_problems = (
            _with_provider(app, app.provider, written) if app.provider is not None else (written, [])
        )
        settings, routing_problems = routing_settings(app)
        problems += provider_problems + routing_problems
        if settings.version_affinity:
            problems += logout_endpoint_problems(catalog.versions_of(app))
        problems += _tenant_id_problems(app, tenants)
        problems += [
            p
            for t in tenants
            if t.deprovision_mark not in (None, "true", "false")
            for p in _annotation_problems(t, app)
        ]
        groups.append(ApplicationTenants(app, tuple(tenants), settings))
    problems += _name_problems(groups)
    problems += _subdomain_problems(catalog, groups)
    return TenantCatalog(tuple(groups), tuple(problems))


def tenants_clear_of(problems: list[Problem], tenants: TenantCatalog, catalog: CapCatalog) -> TenantCatalog:
    """The tenants none of `problems` is about: not their record, nor their application, its
    versions or domains. Their plans can still be checked while the render fails (one run reports
    every problem); the others are checked once those problems are fixed."""
    failed = {(p.file, p.document) for p in problems if p.document is not None}

    def clear(source: SourceDocument) -> bool:
        return (source.file, source.document) not in failed

    groups = []
    for group in tenants.applications:
        app = group.app
        needed = [app.source, *(v.source for v in catalog.versions_of(app))]
        needed += [d.source for d in catalog.domains_of(app)]
        if all(clear(source) for source in needed):
            kept = tuple(t for t in group.tenants if t.source is None or clear(t.source))
            groups.append(replace(group, tenants=kept))
    return TenantCatalog(tuple(groups))
