"""Tenants -> one app per tenant, `cap-tenant.<namespace>.<tenant>`, in sync stages:

    RESOURCES      the CAPTenant (as recorded, without status; the derived provider's from the
                   CAPApplication) and the DNS entries of its subdomain
    RELEASE_JOBS   the Jobs of its pending operation, step n of the operation at step n - 1:
                   strictly one after another
    ROUTING        its VirtualService: switched only once every Job before it succeeded

An app per tenant keeps tenants apart: adding one adds a directory and changes no other file,
and a failed operation holds back only its own tenant's later steps and routing. What a tenant
needs from its application's app (a healthy target version) it waits for through the version
gate its Jobs read (jobs.version_gate), which the application's app creates in its own routing
stage.

Work shared by the tenants of an application (its versions, domains, routing annotations, step
templates) is done once per application, so a render is linear in tenants.

Each tenant's app is had through one function the caller may choose, handed the tenant and
what makes its app: by default every app is made, planned and rendered (`always_make`); a
caller that keeps apps made before passes `TenantRenders.app_of`, which takes the app an earlier
render made from the same record for the same application inputs instead. Every rule across
records ran before, on every record (catalog): how an app was had changes nothing else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.generator.core.errors import InvalidSpec, Problem, raise_if_problems
from btp_gitops.generator.core.objects import KubeObject, Manifest
from btp_gitops.generator.core.report import AppRender, Level, Note
from btp_gitops.generator.core.sources import SourceDocument, SourceSet, problem_at
from btp_gitops.generator.domains.cap.catalog import CapCatalog
from btp_gitops.generator.domains.cap.identity import owner_labels
from btp_gitops.generator.domains.cap.model import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CLUSTER_DOMAIN,
    DOMAIN,
    Application,
    Domain,
    TenantOperation,
    Version,
)
from btp_gitops.generator.domains.cap.tenants.catalog import ApplicationTenants, TenantCatalog
from btp_gitops.generator.domains.cap.tenants.jobs import (
    StepTemplate,
    operation_job,
    step_templates,
    version_gate,
)
from btp_gitops.generator.domains.cap.tenants.model import (
    CAP_TENANT,
    CAP_TENANT_FINALIZER,
    Tenant,
)
from btp_gitops.generator.domains.cap.tenants.names import (
    BTP_TENANT_ID,
    TENANT_TYPE,
    application_labels_for_tenants,
    tenant_app,
    tenant_group,
    tenant_labels,
)
from btp_gitops.generator.domains.cap.tenants.routing import (
    TenantRoutes,
    tenant_dns_entries,
    tenant_virtual_service,
)
from btp_gitops.generator.domains.cap.tenants.selection import (
    TenantPlan,
    VersionIndex,
    plan_tenant,
    previous_versions,
    record_of,
)
from btp_gitops.generator.transforms.ordering import Stage, annotate_argocd_stage, stage_steps

StepKey = tuple[str, TenantOperation]  # (CAPApplicationVersion name, operation)
RecordKey = tuple[str, int]  # a tenant record's file (as shown) and document
ApplicationKey = tuple[str, str]  # (namespace, name) of a CAPApplication


def _canonical(document: SourceDocument) -> list[Any]:
    return [document.file, document.document, document.body]


def application_inputs(sources: SourceSet) -> dict[ApplicationKey, str]:
    """Per CAPApplication, a digest of everything its tenants' render reads besides their own
    record: the CAPApplication, the CAPApplicationVersions of its namespace, every Domain and
    ClusterDomain (each with its file and document, which notes and origins name). An
    application whose documents JSON cannot hold exactly (a map with a non-string key) has none:
    its tenants are always rendered."""
    domains = [_canonical(d) for d in [*sources.of_kind(*DOMAIN), *sources.of_kind(*CLUSTER_DOMAIN)]]
    versions: dict[str, list[list[Any]]] = {}
    for version in sources.of_kind(*CAP_APPLICATION_VERSION):
        versions.setdefault(str(version.body["metadata"].get("namespace", "")), []).append(
            _canonical(version)
        )
    found = {}
    for app in sources.of_kind(*CAP_APPLICATION):
        namespace = str(app.body["metadata"].get("namespace", ""))
        key = (namespace, str(app.body["metadata"].get("name", "")))
        try:
            text = json.dumps(
                [_canonical(app), versions.get(namespace, []), domains], sort_keys=True, allow_nan=False
            )
        except (TypeError, ValueError):
            continue
        found[key] = hashlib.sha256(text.encode()).hexdigest()
    return found


@dataclass(slots=True)
class ApplicationContext:
    """What every tenant of one application shares, computed once."""

    group: ApplicationTenants
    versions: VersionIndex
    domains: tuple[Domain, ...]
    labels: dict[str, str]
    steps: dict[StepKey, tuple[StepTemplate, ...]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def app(self) -> Application:
        return self.group.app

    def steps_of(self, operation: TenantOperation, version: Version) -> tuple[StepTemplate, ...]:
        key = (version.name, operation)
        if key not in self.steps:
            found = step_templates(self.app, version, operation)
            if len(found) > stage_steps(Stage.RELEASE_JOBS):
                self.problems.append(
                    problem_at(
                        version.source,
                        f"spec.tenantOperations.{operation.value}",
                        f"{len(found)} steps; at most {stage_steps(Stage.RELEASE_JOBS)} fit the sync stages",
                    )
                )
                found = ()
            self.steps[key] = found
        return self.steps[key]


def _origin(tenant: Tenant, app: Application) -> str:
    source = record_of(tenant, app)
    return f"{source.file}#{source.document}"


def tenant_object(app: Application, tenant: Tenant, application_labels: dict[str, str]) -> KubeObject:
    """The CAPTenant for the cluster (the controller works on it): the record without its status,
    labelled as CAP Operator labelled tenants, owned by the application, held by the controller's
    deletion finalizer from its creation (a prune while the controller is down waits for the
    deprovisioning)."""
    spec: dict[str, Any] = {
        "capApplicationInstance": tenant.application,
        "subDomain": tenant.sub_domain,
        "tenantId": tenant.tenant_id,
    }
    if tenant.source is not None:
        spec = dict(tenant.source.body["spec"])
    owner, owner_annotations = owner_labels(app.namespace, app.name)
    labels = {
        **tenant.labels,
        **application_labels,
        **owner,
        BTP_TENANT_ID: tenant.tenant_id,
        TENANT_TYPE: tenant.tenant_type.value,
    }
    return {
        "apiVersion": CAP_TENANT[0],
        "kind": CAP_TENANT[1],
        "metadata": {
            "name": tenant.name,
            "namespace": tenant.namespace,
            "labels": labels,
            "annotations": {**tenant.annotations, **owner_annotations},
            "finalizers": [CAP_TENANT_FINALIZER],
        },
        "spec": spec,
    }


def _job_manifests(
    context: ApplicationContext,
    tenant: Tenant,
    plan: TenantPlan,
    identity: tuple[dict[str, str], dict[str, str]],
) -> list[Manifest]:
    if plan.operation is None:
        return []
    origin = _origin(tenant, context.app)
    templates = context.steps_of(plan.operation.operation, plan.operation.version)
    return [
        annotate_argocd_stage(
            Manifest(operation_job(context.app, tenant, identity, template), origin),
            Stage.RELEASE_JOBS,
            index,
        )
        for index, template in enumerate(templates)
    ]


def operation_jobs(
    app: Application, tenant: Tenant, operation: TenantOperation, version: Version
) -> list[KubeObject]:
    """The Jobs of one operation of one tenant on one version, in step order, named and built as a
    render builds them, without the sync-stage annotation (the controller runs a deprovisioning
    itself when a CAPTenant is deleted from the cluster, and must name its Jobs as a render does)."""
    identity = tenant_labels(application_labels_for_tenants(app), tenant)
    return [operation_job(app, tenant, identity, t) for t in step_templates(app, version, operation)]


def render_tenant(context: ApplicationContext, tenant: Tenant, plan: TenantPlan) -> AppRender:
    app = context.app
    origin = _origin(tenant, app)
    identity = tenant_labels(context.labels, tenant)
    manifests = [Manifest(tenant_object(app, tenant, context.labels), origin)]
    if plan.route_to is not None:
        manifests += [Manifest(entry, origin) for entry in tenant_dns_entries(tenant, context.domains)]
    manifests += _job_manifests(context, tenant, plan, identity)
    if plan.route_to is not None:
        routes = TenantRoutes(plan.route_to, previous_versions(tenant, context.versions, plan.route_to))
        service = tenant_virtual_service(tenant, identity, context.domains, routes, context.group.routing)
        manifests.append(annotate_argocd_stage(Manifest(service, origin), Stage.ROUTING))
    notes = (
        [Note(Level.WARNING, "TenantVersionMissing", _subject(tenant, app), plan.warning)]
        if plan.warning
        else []
    )
    return AppRender(
        tenant_app(tenant), manifests, notes + provider_subdomain_notes(app, tenant), tenant_group(tenant)
    )


def provider_subdomain_notes(app: Application, tenant: Tenant) -> list[Note]:
    """The provider's record has another subdomain than `spec.provider.subDomain`: it is served on
    the record's (CAP Operator reconciles the CAPTenant's subDomain; `spec.provider` only created it)."""
    if not tenant.is_provider or app.provider is None or tenant.sub_domain == app.provider.sub_domain:
        return []
    return [
        Note(
            Level.INFO,
            "ProviderSubdomainChanged",
            _subject(tenant, app),
            f"the provider tenant is served on subdomain {tenant.sub_domain} (its CAPTenant), not "
            f"{app.provider.sub_domain} (CAPApplication {app.name} spec.provider.subDomain, which only "
            "created it): routing and DNS follow the CAPTenant; CAPOP_PROVIDER_SUBDOMAIN stays the "
            "application's, as CAP Operator sets it",
        )
    ]


def _subject(tenant: Tenant, app: Application) -> str:
    source = record_of(tenant, app)
    return f"{source.file}: document {source.document} ({tenant.ref})"


def _context(group: ApplicationTenants, catalog: CapCatalog) -> ApplicationContext:
    return ApplicationContext(
        group=group,
        versions=VersionIndex.of(catalog.versions_of(group.app)),
        domains=tuple(catalog.domains_of(group.app)),
        labels=application_labels_for_tenants(group.app),
    )


MakeApp = Callable[[Tenant], AppRender | None]  # plans a tenant of one application, renders its app
AppOf = Callable[[Tenant, MakeApp], AppRender | None]  # how a render has each tenant's app


def always_make(tenant: Tenant, make: MakeApp) -> AppRender | None:
    """Every tenant's app made: planned and rendered."""
    return make(tenant)


@dataclass(slots=True)
class _TenantApps:
    """Makes the apps of one application's tenants."""

    context: ApplicationContext
    problems: list[Problem]  # the render's: where the problems of a tenant's plan go

    def make(self, tenant: Tenant) -> AppRender | None:
        """Plan the tenant and render its app; None when it renders nothing (deprovisioned), or
        when its plan has problems (the render fails with them)."""
        context = self.context
        plan = plan_tenant(tenant, context.app, context.versions)
        if plan.problems:
            self.problems += plan.problems
            return None
        if plan.retired:
            return None
        return render_tenant(context, tenant, plan)


def render_cap_tenants(
    tenants: TenantCatalog, catalog: CapCatalog, app_of: AppOf = always_make
) -> list[AppRender]:
    """An app per tenant that has anything left to render, each had through `app_of`, which is
    handed the tenant and what makes its app; every problem of every tenant at once."""
    apps = []
    problems: list[Problem] = []
    for group in tenants.applications:
        context = _context(group, catalog)
        make = _TenantApps(context, problems).make
        for tenant in group.tenants:
            app = app_of(tenant, make)
            if app is not None:
                apps.append(app)
        problems += context.problems
    raise_if_problems(InvalidSpec, "invalid CAP tenants", problems)
    return apps


def version_gate_manifests(app: Application, versions: list[Version], origin: str) -> list[Manifest]:
    """The gates of a multi-tenant application's versions, for its own app (routing stage)."""
    if app.services_only:
        return []
    gates = [Manifest(version_gate(app, version), origin) for version in versions]
    return [annotate_argocd_stage(gate, Stage.ROUTING) for gate in gates]


def tenant_operation_notes(app: Application, version: Version) -> list[Note]:
    """A tenant Job removed by its TTL before the controller recorded the operation would run again;
    a Content job named among the steps is skipped, as CAP Operator skips it."""
    if app.services_only:
        return []
    used = {step.workload for op in TenantOperation for step in version.tenant_operation_steps(op)}
    where = f"{version.source.file}: document {version.source.document} ({version.source.ref})"
    skipped = [
        Note(
            Level.WARNING,
            "ContentJobNotATenantOperation",
            f"{where}: spec.tenantOperations.{operation.value}[{step.index}].workloadName",
            f"{step.workload} is a Content job: it runs once for the version, not per tenant, so "
            f"{operation.value} leaves this step out (as CAP Operator does); remove it from the list",
        )
        for operation, step in version.ignored_content_steps()
    ]
    return skipped + [
        Note(
            Level.WARNING,
            "JobRecreatedAfterTtl",
            f"{where}: {workload.definition_path('ttlSecondsAfterFinished')}",
            f"tenant operation Jobs of {workload.name} are deleted "
            f"{workload.definition['ttlSecondsAfterFinished']}s after they finish; until the controller "
            "records the operation as completed, Argo CD and Flux see such a Job missing and run it again: "
            "leave ttlSecondsAfterFinished unset for tenant operations",
        )
        for workload in version.workloads
        if workload.name in used and "ttlSecondsAfterFinished" in workload.definition
    ]
