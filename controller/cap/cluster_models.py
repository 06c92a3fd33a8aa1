"""The CAP custom resources in the cluster, read as the generator's models, and what the cluster
shows about the version each tenant runs on.

The controller builds a tenant's operation Jobs exactly as a render does (same names, labels, pod
templates), so it reads the CAPApplication, CAPApplicationVersions and CAPTenants that Git put in
the cluster through the generator's own readers: each CR body becomes a `SourceDocument` whose
file is `cluster:<Kind>/<namespace>/<name>` (so a problem points at the object), then
`build_catalog` and `build_tenant_catalog` make the models (the provider tenant is typed as a
render types it).

Which version a tenant runs on, as the cluster shows it (`running_version`), first rule that
applies:

    1. `status.currentCAPApplicationVersionInstance` of the CAPTenant in the cluster;
    2. the newest version on which a provisioning or upgrade of the tenant completed: its last
       step's Job (named as a render names it) succeeded, or failed with continueOnFailure;
    3. the newest version a provisioning Job of the tenant targeted (it may have half run);
    4. `spec.version`, else the newest version of the application in the cluster.

Only Jobs of this tenant count (labels `sme.sap.com/owner-identifier-hash` and `btp-tenant-id`),
created since the CAPTenant was: a Job older than the CAPTenant belongs to an earlier tenant of the
same name. The version a deleted tenant is deprovisioned on (`deprovisioning_target`) follows the
generator's rule (README, "CAP tenants": on the current version, else on the one its provisioning
targeted), with two rules before it: a `lastCompletedOperation` that is a deprovisioning means
there is nothing left to do, and a deprovisioning that already started (its Jobs exist) goes on
on its version, so the Jobs are the record of a decision once it had effects. For a deleted
tenant, rule 4 takes the newest version even when it is being deleted, so that the choice stays
put while versions go away (the version is held for the tenant by its own finalizer, see
controller.cap.deletion).

The versions a tenant needs (`versions_in_use`, what holds a deleted version): a deleted tenant's
deprovisioning version; for a tenant that stays, the version it runs on and the one it is headed
for, where rule 4 and "headed for" take the newest version not being deleted (Git dropped the
others; a render would not move the tenant there); and the version of any unfinished Job.

What the cluster cannot show: the CAPTenants a render writes have no status, so rule 1 applies
only where a controller records the status in the cluster; and once an operation is recorded as
completed in Git its Jobs leave the render, and the cluster. A tenant in that steady state is
taken to run on `spec.version` or the newest version, which is where a render keeps a tenant that
follows the newest version (`versionUpgradeStrategy: never` on an older one is the exception).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from btp_gitops.controller.kube import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    JOB,
    KubeClient,
    KubeObject,
)
from btp_gitops.generator.core import SourceDocument, SourceSet, get_path
from btp_gitops.generator.domains.cap import (
    BTP_TENANT_ID,
    CAV_VERSION,
    CONTINUE_ON_FAILURE_ANNOTATION,
    OWNER_IDENTIFIER_HASH,
    TENANT_OPERATION_TYPE,
    Application,
    Tenant,
    TenantOperation,
    Version,
    VersionIndex,
    build_catalog,
    build_tenant_catalog,
    operation_jobs,
    owner_labels,
)

CLUSTER_SOURCE_PREFIX = "cluster:"
# Every tenant operation Job carries this label, whoever created it: the selector of such Jobs.
TENANT_JOBS_SELECTOR = TENANT_OPERATION_TYPE


# --- CRs as models -----------------------------------------------------------------------------------


def cluster_source(obj: KubeObject) -> SourceDocument:
    """A CR from the cluster as a source document, named where problems about it should point."""
    meta = obj.get("metadata") or {}
    where = "/".join(part for part in (meta.get("namespace"), meta.get("name")) if part)
    return SourceDocument(
        file=f"{CLUSTER_SOURCE_PREFIX}{obj.get('kind', '')}/{where}", document=1, body=obj, directory=Path()
    )


def being_deleted(obj: KubeObject) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def application_of(obj: KubeObject) -> str:
    """`spec.capApplicationInstance` of a CAPApplicationVersion or CAPTenant."""
    return str(get_path(obj, "spec", "capApplicationInstance") or "")


@dataclass(frozen=True, slots=True)
class CapModels:
    """One CAPApplication as the cluster holds it: its versions (all, and those not being deleted)
    and its CAPTenants, each as the generator's model and as the live object."""

    app: Application
    versions: VersionIndex
    live_versions: VersionIndex
    tenants: Mapping[str, Tenant]
    tenant_objects: Mapping[str, KubeObject]


def application_models(
    application: KubeObject, versions: Sequence[KubeObject], tenants: Sequence[KubeObject]
) -> CapModels:
    """The models of one application from its CRs (versions and tenants of other applications are
    the caller's to leave out)."""
    sources = SourceSet.of(cluster_source(obj) for obj in (application, *versions, *tenants))
    catalog = build_catalog(sources)
    app = catalog.applications[0]
    grouped = build_tenant_catalog(sources, catalog)
    # A provider tenant without a CR is derived by the catalog; only CRs in the cluster count here.
    recorded = {t.name: t for group in grouped.applications for t in group.tenants if t.source is not None}
    all_versions = catalog.versions_of(app)
    return CapModels(
        app=app,
        versions=VersionIndex.of(all_versions),
        live_versions=VersionIndex.of([v for v in all_versions if not being_deleted(v.source.body)]),
        tenants=recorded,
        tenant_objects={str(obj["metadata"]["name"]): obj for obj in tenants},
    )


def application_tenant_objects(kube: KubeClient, namespace: str, application: str) -> list[KubeObject]:
    return [t for t in kube.list(CAP_TENANT, namespace) if application_of(t) == application]


def read_application(
    kube: KubeClient, namespace: str, name: str, tenants: Sequence[KubeObject] | None = None
) -> CapModels | None:
    """The application's models from the cluster, with the given CAPTenants (default: all of
    them); None when its CAPApplication is not there."""
    application = kube.get(CAP_APPLICATION, name, namespace)
    if application is None:
        return None
    application.setdefault("apiVersion", CAP_APPLICATION.api_version)
    application.setdefault("kind", CAP_APPLICATION.kind)
    versions = [v for v in kube.list(CAP_APPLICATION_VERSION, namespace) if application_of(v) == name]
    if tenants is None:
        tenants = application_tenant_objects(kube, namespace, name)
    return application_models(application, versions, tenants)


# --- tenant operation Jobs -------------------------------------------------------------------------------


class JobState(StrEnum):
    RUNNING = "running"  # no terminal condition yet (or not even started)
    SUCCEEDED = "succeeded"
    FAILED = "failed"


def job_state(job: KubeObject) -> JobState:
    """From the terminal conditions only: Complete or Failed with status True."""
    for condition in get_path(job, "status", "conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return JobState.SUCCEEDED
        if condition.get("type") == "Failed":
            return JobState.FAILED
    return JobState.RUNNING


def continues_on_failure(job: KubeObject) -> bool:
    return bool(get_path(job, "metadata", "annotations", CONTINUE_ON_FAILURE_ANNOTATION) == "true")


def step_passed(job: KubeObject) -> bool:
    """The operation may go on after this step: it succeeded, or failed where that is allowed."""
    state = job_state(job)
    return state == JobState.SUCCEEDED or (state == JobState.FAILED and continues_on_failure(job))


def job_operation(job: KubeObject) -> str:
    return str(get_path(job, "metadata", "labels", TENANT_OPERATION_TYPE) or "")


def job_version(job: KubeObject) -> str:
    return str(get_path(job, "metadata", "labels", CAV_VERSION) or "")


def owner_hash(tenant: Tenant) -> str:
    """`sme.sap.com/owner-identifier-hash` of the tenant's objects (its Jobs among them)."""
    return owner_labels(tenant.namespace, tenant.name)[0][OWNER_IDENTIFIER_HASH]


def tenant_jobs_selector(tenant: Tenant) -> str:
    return f"{OWNER_IDENTIFIER_HASH}={owner_hash(tenant)},{BTP_TENANT_ID}={tenant.tenant_id}"


def _timestamp(obj: KubeObject) -> dt.datetime | None:
    text = get_path(obj, "metadata", "creationTimestamp")
    return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None


def belongs_to(job: KubeObject, tenant: Tenant, tenant_object: KubeObject) -> bool:
    """The Job is an operation of this tenant, and of this CAPTenant rather than an earlier one of
    the same name (timestamps have whole seconds: a Job of the same second counts as this one's)."""
    labels = get_path(job, "metadata", "labels") or {}
    if (labels.get(OWNER_IDENTIFIER_HASH), labels.get(BTP_TENANT_ID)) != (
        owner_hash(tenant),
        tenant.tenant_id,
    ):
        return False
    created, tenant_created = _timestamp(job), _timestamp(tenant_object)
    return created is None or tenant_created is None or created >= tenant_created


def jobs_of_tenant(
    jobs: Iterable[KubeObject], tenant: Tenant, tenant_object: KubeObject
) -> dict[str, KubeObject]:
    """The tenant's operation Jobs by name, leaving out Jobs on their way out."""
    return {
        str(job["metadata"]["name"]): job
        for job in jobs
        if belongs_to(job, tenant, tenant_object) and not being_deleted(job)
    }


def jobs_by_owner(jobs: Iterable[KubeObject]) -> dict[str, list[KubeObject]]:
    """Tenant Jobs grouped by `sme.sap.com/owner-identifier-hash`, to look each tenant's up at once."""
    grouped: dict[str, list[KubeObject]] = {}
    for job in jobs:
        owner = str(get_path(job, "metadata", "labels", OWNER_IDENTIFIER_HASH) or "")
        grouped.setdefault(owner, []).append(job)
    return grouped


def read_tenant_jobs(kube: KubeClient, tenant: Tenant, tenant_object: KubeObject) -> dict[str, KubeObject]:
    listed = kube.list(JOB, tenant.namespace, label_selector=tenant_jobs_selector(tenant))
    return jobs_of_tenant(listed, tenant, tenant_object)


def running_jobs(jobs: Mapping[str, KubeObject], *, except_operation: TenantOperation) -> list[str]:
    """Names of the tenant's Jobs of other operations that have not finished, sorted."""
    return sorted(
        name
        for name, job in jobs.items()
        if job_operation(job) != except_operation.value and job_state(job) == JobState.RUNNING
    )


# --- which version a tenant runs on ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resolved:
    """A version the cluster points at (or why none can be used), and the rule that found it."""

    version: Version | None
    rule: str
    problem: str = ""  # set when `version` is None: what is missing
    retired: bool = False  # the deprovisioning already completed: nothing to run


def _named(models: CapModels, name: str, rule: str) -> Resolved:
    found = models.versions.named(name)
    if found is None:
        return Resolved(None, rule, f"{rule} is {name}, which is not in the cluster")
    return Resolved(found, rule)


def _operation_completed(
    models: CapModels,
    tenant: Tenant,
    operation: TenantOperation,
    version: Version,
    jobs: Mapping[str, KubeObject],
) -> bool:
    """Steps run strictly in order, so the operation completed when its last step passed."""
    planned = operation_jobs(models.app, tenant, operation, version)
    last = jobs.get(str(planned[-1]["metadata"]["name"])) if planned else None
    return last is not None and step_passed(last)


def _versions_of_jobs(
    models: CapModels, jobs: Mapping[str, KubeObject], operations: set[str]
) -> list[tuple[TenantOperation, Version]]:
    """(operation, version) pairs of the given operations among the Jobs, newest version first."""
    pairs: dict[tuple[str, str], tuple[TenantOperation, Version]] = {}
    for job in jobs.values():
        version = models.versions.with_version(job_version(job))
        if version is not None and job_operation(job) in operations:
            pairs[(job_operation(job), version.name)] = (TenantOperation(job_operation(job)), version)
    return sorted(pairs.values(), key=lambda pair: models.versions.rank[pair[1].name], reverse=True)


def _completed_version(models: CapModels, tenant: Tenant, jobs: Mapping[str, KubeObject]) -> Version | None:
    serving = {TenantOperation.PROVISIONING.value, TenantOperation.UPGRADE.value}
    for operation, version in _versions_of_jobs(models, jobs, serving):
        if _operation_completed(models, tenant, operation, version, jobs):
            return version
    return None


def _desired(models: CapModels, tenant: Tenant, candidates: VersionIndex) -> Resolved:
    if tenant.version:
        found = models.versions.with_version(tenant.version)
        if found is None:
            return Resolved(None, "spec.version", f"no CAPApplicationVersion has version {tenant.version}")
        return Resolved(found, "spec.version")
    newest = candidates.newest
    if newest is None:
        return Resolved(
            None, "newest version", f"CAPApplication {models.app.name} has no version in the cluster"
        )
    return Resolved(newest, "newest version")


def running_version(
    models: CapModels, tenant: Tenant, jobs: Mapping[str, KubeObject], newest_of: VersionIndex
) -> Resolved:
    """Rules 1 to 4 of the module docstring; rule 4 takes the newest of `newest_of`."""
    current = tenant.status.current_instance
    if current:
        return _named(models, current, "status.currentCAPApplicationVersionInstance")
    completed = _completed_version(models, tenant, jobs)
    if completed is not None:
        return Resolved(completed, "completed operation Jobs")
    provisioning = _versions_of_jobs(models, jobs, {TenantOperation.PROVISIONING.value})
    if provisioning:
        return Resolved(provisioning[0][1], "provisioning Jobs")
    return _desired(models, tenant, newest_of)


def deprovisioning_target(models: CapModels, tenant: Tenant, jobs: Mapping[str, KubeObject]) -> Resolved:
    """The version a deleted tenant is deprovisioned on (module docstring)."""
    done = tenant.status.last_completed
    if done is not None and done.operation == TenantOperation.DEPROVISIONING:
        return Resolved(None, "status.lastCompletedOperation", retired=True)
    started = sorted(
        (job for job in jobs.values() if job_operation(job) == TenantOperation.DEPROVISIONING.value),
        key=lambda job: (str(get_path(job, "metadata", "creationTimestamp") or ""), job["metadata"]["name"]),
    )
    if started:
        text = job_version(started[0])
        found = models.versions.with_version(text)
        if found is None:
            return Resolved(
                None,
                "deprovisioning Jobs",
                f"the deprovisioning started on version {text}, "
                "whose CAPApplicationVersion is not in the cluster",
            )
        return Resolved(found, "deprovisioning Jobs")
    return running_version(models, tenant, jobs, models.versions)


def versions_in_use(models: CapModels, tenant: Tenant, jobs: Mapping[str, KubeObject]) -> set[str]:
    """CAPApplicationVersions the tenant needs: the one it is deprovisioned on when deleted; else
    the one it runs on and the one it is headed for (`spec.version`, else the newest version not
    being deleted); and any version an unfinished Job of the tenant runs on."""
    tenant_object = models.tenant_objects[tenant.name]
    if being_deleted(tenant_object):
        resolved = [deprovisioning_target(models, tenant, jobs)]
    else:
        resolved = [
            running_version(models, tenant, jobs, models.live_versions),
            _desired(models, tenant, models.live_versions),
        ]
    names = {r.version.name for r in resolved if r.version is not None}
    for job in jobs.values():
        version = models.versions.with_version(job_version(job))
        if version is not None and job_state(job) == JobState.RUNNING:
            names.add(version.name)
    return names
