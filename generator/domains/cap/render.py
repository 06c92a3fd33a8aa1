"""CAP applications: CAPApplication, CAPApplicationVersion, Domain, ClusterDomain -> apps.

What CAP Operator reconciled in the cluster is rendered once per render (https://sap.github.io/cap-operator/docs/usage/resources/):

1. Read every CAP object of the sources, the deprecated `spec.domains` as the domains they stand
   for (catalog), and check every rule, reporting all broken ones at once (validation).
2. Per CAPApplication, the app `cap.<namespace>.<name>`: the CAPApplication and its versions as
   written (the controller works on them in the cluster), each with the controller's deletion
   finalizer, and for every version its workloads
   (workloads, jobs), credentials (credentials), NetworkPolicies, and the service-exposure
   VirtualServices of the current version (exposures). A version removed from the sources leaves
   the app with everything it rendered, and the GitOps tool prunes it.
3. Per Domain and ClusterDomain, its own app (shared by every application on it): the domain as
   written, Gateway, certificate, client CA, the ingress NetworkPolicy of each application
   namespace and DNS entries (networking).
4. Sync stages order it all: content jobs one after another after the workloads, VirtualServices
   last (transforms.ordering).
5. Per tenant (CAPTenant records and the provider tenant), its own app: see `tenants`. The
   application's app gets one gate per version, which the tenants' operation Jobs wait for.
"""

from __future__ import annotations

from collections.abc import Iterable

from btp_gitops.generator.core.errors import InvalidSpec, Problem, raise_if_problems
from btp_gitops.generator.core.objects import KubeObject, Manifest
from btp_gitops.generator.core.report import AppRender, Note
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.domains.cap.catalog import CapCatalog, build_catalog
from btp_gitops.generator.domains.cap.credentials import (
    binding_reader_objects,
    vcap_external_secret,
    workload_credentials,
)
from btp_gitops.generator.domains.cap.exposures import current_version, exposure_virtual_services
from btp_gitops.generator.domains.cap.identity import application_app, domain_app
from btp_gitops.generator.domains.cap.jobs import content_job, content_job_notes
from btp_gitops.generator.domains.cap.model import (
    CAP_APPLICATION_FINALIZER,
    CAP_APPLICATION_VERSION_FINALIZER,
    Application,
    Domain,
    Version,
)
from btp_gitops.generator.domains.cap.network_policies import version_network_policies
from btp_gitops.generator.domains.cap.networking import domain_notes, domain_objects
from btp_gitops.generator.domains.cap.tenants import (
    AppOf,
    TenantCatalog,
    always_make,
    build_tenant_catalog,
    render_cap_tenants,
    tenant_operation_notes,
    tenants_clear_of,
    version_gate_manifests,
)
from btp_gitops.generator.domains.cap.validation import catalog_problems
from btp_gitops.generator.domains.cap.workloads import deployment_objects
from btp_gitops.generator.transforms.metadata import add_finalizer
from btp_gitops.generator.transforms.ordering import Stage, annotate_argocd_stage

ORIGIN = "btp-gitops/cap"


def _tenant_plan_problems(tenants: TenantCatalog, catalog: CapCatalog) -> list[Problem]:
    """The problems of the tenants' plans, which `render_cap_tenants` raises."""
    try:
        render_cap_tenants(tenants, catalog)
    except InvalidSpec as error:
        return list(error.problems)
    return []


def written_resource(document: SourceDocument) -> Manifest:
    """A source object as the user wrote it, minus status and server-set metadata."""
    body: KubeObject = {key: value for key, value in document.body.items() if key != "status"}
    kept = {"name", "labels", "annotations"} | ({"namespace"} if document.kind != "ClusterDomain" else set())
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k in kept}
    return Manifest(body, f"{document.file}#{document.document}")


def _manifests(objects: Iterable[KubeObject], origin: str) -> list[Manifest]:
    return [Manifest(obj, origin) for obj in objects]


def version_manifests(app: Application, version: Version, catalog: CapCatalog) -> list[Manifest]:
    """Everything one version renders into, content jobs at their step of `Stage.RELEASE_JOBS`."""
    origin = f"{version.source.file}#{version.source.document}"
    objects: list[KubeObject] = []
    for workload in version.workloads:
        external_secret = vcap_external_secret(app, version, workload)
        if external_secret is not None:
            objects.append(external_secret)
        if workload.is_deployment:
            objects += deployment_objects(
                app, version, workload, workload_credentials(app, version, workload)
            )
    objects += version_network_policies(app, version)
    manifests = _manifests(objects, origin)
    for step, workload in enumerate(version.content_jobs_in_order()):
        job = Manifest(
            content_job(app, version, workload, workload_credentials(app, version, workload)), origin
        )
        manifests.append(annotate_argocd_stage(job, Stage.RELEASE_JOBS, step))
    return manifests


def render_application(app: Application, catalog: CapCatalog) -> AppRender:
    versions = catalog.versions_of(app)
    # With the controller's finalizers from the start, a prune while the controller is down waits
    # for it (controller.cap.deletion) instead of dropping the tenants' deprovisioning.
    manifests = [
        add_finalizer(written_resource(app.source), CAP_APPLICATION_FINALIZER),
        *(add_finalizer(written_resource(v.source), CAP_APPLICATION_VERSION_FINALIZER) for v in versions),
    ]
    workloads = [w for v in versions for w in v.workloads]
    manifests += _manifests(binding_reader_objects(app, workloads), ORIGIN)
    notes: list[Note] = []
    for version in versions:
        manifests += version_manifests(app, version, catalog)
        notes += content_job_notes(version) + tenant_operation_notes(app, version)
    current = current_version(versions)
    if current is not None:
        routes = exposure_virtual_services(app, current, catalog.domains_of(app))
        manifests += [annotate_argocd_stage(m, Stage.ROUTING) for m in _manifests(routes, ORIGIN)]
    manifests += version_gate_manifests(app, versions, ORIGIN)
    return AppRender(application_app(app), manifests, notes)


def served_subdomains(domain: Domain, catalog: CapCatalog) -> set[str]:
    """Subdomains served on a domain: the exposures of each application's current version.

    Tenant subdomains are not among them: each tenant's DNS entries are in its own app.
    """
    found = set()
    for app in catalog.applications_on(domain):
        current = current_version(catalog.versions_of(app))
        if current is not None:
            found |= {exposure.sub_domain for exposure in current.service_exposures}
    return found


def render_domain(domain: Domain, catalog: CapCatalog) -> AppRender:
    manifests = [] if domain.implied else [written_resource(domain.source)]
    namespaces = {app.namespace for app in catalog.applications_on(domain)}
    objects = domain_objects(domain, served_subdomains(domain, catalog), namespaces)
    manifests += _manifests(objects, ORIGIN)
    return AppRender(domain_app(domain), manifests, domain_notes(domain))


def render_cap_applications(sources: SourceSet, tenant_app_of: AppOf = always_make) -> list[AppRender]:
    """Every CAP application and domain of the sources, or nothing when there is none; each
    tenant's app had through `tenant_app_of` (`always_make`, or the render cache's
    `pipeline.tenant_renders.TenantRenders.app_of`)."""
    catalog = build_catalog(sources)
    tenants = build_tenant_catalog(sources, catalog)
    problems = catalog_problems(catalog) + list(tenants.problems)
    if problems:
        # The tenants whose application, versions, domains and record broke no rule are still
        # planned, so that their problems are reported in the same run (docs/errors.md).
        problems += _tenant_plan_problems(tenants_clear_of(problems, tenants, catalog), catalog)
        raise_if_problems(InvalidSpec, "invalid CAP applications", problems)
    apps = [render_application(app, catalog) for app in catalog.applications]
    apps += [render_domain(domain, catalog) for domain in catalog.domains]
    return apps + render_cap_tenants(tenants, catalog, tenant_app_of)
