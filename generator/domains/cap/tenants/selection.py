"""Which operation a tenant needs, on which version, and where its traffic goes.

A pure function of the tenant's record (spec, annotations, recorded status) and the versions of
its application in the sources:

- desired version: `spec.version` when set; otherwise the newest version, except that
  `versionUpgradeStrategy: never` keeps a provisioned tenant on its current version.
- deprovisioning, on the current version, for a tenant marked for it (`btp-gitops.io/deprovision:
  "true"`, or state Deleting), and for every tenant of an application marked for retirement (the
  same annotation on the CAPApplication: the provider too, and no tenant gets anything else); a
  tenant with no current version is deprovisioned on the version its provisioning targeted (it
  may have run, or half run, before the controller recorded it). Once `lastCompletedOperation`
  records the deprovisioning the tenant renders nothing. A deprovisioning whose version is no
  longer in the sources waits, with a warning.
- provisioning, on the desired version, for a tenant with no current version (state Provisioning,
  ProvisioningError, or no status at all).
- upgrade, to the desired version, when it differs from the current one. A lower desired version
  is refused: CAP Operator never downgrades a tenant.
- nothing, when the tenant runs on its desired version, or when the operation is exactly the one
  `lastCompletedOperation` records: a completed operation is never rendered again.

Other states (Upgrading, UpgradeError, Ready) need nothing of their own: an upgrade that failed is
rendered again under the same Job names, so nothing re-runs until someone deletes the failed Job.
The tenant's VirtualService routes to the desired version and leaves with deprovisioning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import semver

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.sources import SourceDocument, problem_at
from btp_gitops.generator.core.suggestions import did_you_mean
from btp_gitops.generator.domains.cap.exposures import semantic_version
from btp_gitops.generator.domains.cap.model import Application, TenantOperation, Version
from btp_gitops.generator.domains.cap.tenants.model import (
    DEPROVISION_ANNOTATION,
    Tenant,
    UpgradeStrategy,
)


@dataclass(frozen=True, slots=True)
class VersionIndex:
    """One application's versions, oldest first, with the lookups every tenant needs (O(1) each)."""

    ordered: tuple[Version, ...]
    by_name: Mapping[str, Version]
    by_semver: Mapping[semver.Version, Version]
    rank: Mapping[str, int]  # CAPApplicationVersion name -> position in `ordered`

    @classmethod
    def of(cls, versions: list[Version]) -> VersionIndex:
        keyed = sorted(((semantic_version(v.version), v) for v in versions), key=lambda item: item[0])
        return cls(
            ordered=tuple(v for _, v in keyed),
            by_name={v.name: v for _, v in keyed},
            by_semver=dict(keyed),
            rank={v.name: position for position, (_, v) in enumerate(keyed)},
        )

    @property
    def newest(self) -> Version | None:
        return self.ordered[-1] if self.ordered else None

    def named(self, name: str) -> Version | None:
        return self.by_name.get(name)

    def with_version(self, text: str) -> Version | None:
        try:
            return self.by_semver.get(semantic_version(text))
        except ValueError:
            return None

    def precedes(self, older: Version, newer: Version) -> bool:
        return self.rank[older.name] < self.rank[newer.name]


@dataclass(frozen=True, slots=True)
class PlannedOperation:
    operation: TenantOperation
    version: Version


@dataclass(frozen=True, slots=True)
class TenantPlan:
    """What a tenant renders: an operation (or none) and the version its traffic goes to."""

    operation: PlannedOperation | None = None
    route_to: Version | None = None  # None: no VirtualService (deprovisioning, or nothing to serve)
    retired: bool = False  # deprovisioned and marked: nothing at all
    problems: tuple[Problem, ...] = field(default=())
    warning: str = ""  # what a reviewer should know: the tenant waits, or runs on a version now gone


def record_of(tenant: Tenant, app: Application) -> SourceDocument:
    """Where problems about a tenant point: its record, or the CAPApplication for a derived provider."""
    return tenant.source if tenant.source is not None else app.source


def _problem(tenant: Tenant, app: Application, field_path: str, message: str) -> Problem:
    return problem_at(record_of(tenant, app), field_path, message)


def _known(versions: VersionIndex) -> str:
    return ", ".join(v.version for v in versions.ordered) or "none"


def desired_version(tenant: Tenant, app: Application, versions: VersionIndex) -> Version | Problem:
    if tenant.version:
        found = versions.with_version(tenant.version)
        if found is None:
            return _problem(
                tenant,
                app,
                "spec.version",
                f"no CAPApplicationVersion of {app.name} has version {tenant.version} "
                f"(versions in the sources: {_known(versions)})"
                + did_you_mean(tenant.version, [v.version for v in versions.ordered]),
            )
        return found
    current = tenant.status.current_instance
    if tenant.upgrade_strategy == UpgradeStrategy.NEVER and current:
        kept = versions.named(current)
        if kept is None:
            return _problem(
                tenant,
                app,
                "status.currentCAPApplicationVersionInstance",
                f"{current} is not in the sources, and versionUpgradeStrategy never keeps the tenant on it",
            )
        return kept
    newest = versions.newest
    if newest is None:  # the caller renders no plan for an application without versions
        raise ValueError(f"CAPApplication {app.name} has no version")
    return newest


def _completed(tenant: Tenant, operation: PlannedOperation) -> bool:
    done = tenant.status.last_completed
    return (
        done is not None
        and done.operation == operation.operation
        and done.version_instance == operation.version.name
    )


def _deprovisioning_plan(tenant: Tenant, app: Application, versions: VersionIndex) -> TenantPlan:
    status = tenant.status
    done = status.last_completed
    if done is not None and done.operation == TenantOperation.DEPROVISIONING:
        return TenantPlan(retired=True)
    if status.current_instance:
        current = versions.named(status.current_instance)
        if current is None:
            # Nothing can run without the version's workload definitions; the tenant keeps its
            # record and waits rather than failing the whole render.
            return TenantPlan(
                warning=f"deprovisioning waits: the tenant runs on {status.current_instance}, which is not "
                "in the sources; restore that CAPApplicationVersion until the tenant is gone"
            )
        return TenantPlan(PlannedOperation(TenantOperation.DEPROVISIONING, current))
    # Never provisioned as far as the record knows, but a provisioning may have run (or started)
    # before the controller recorded it: undo it on the version it targeted.
    target = desired_version(tenant, app, versions)
    if isinstance(target, Problem):
        return TenantPlan(problems=(target,))
    return TenantPlan(PlannedOperation(TenantOperation.DEPROVISIONING, target))


def _serving_plan(tenant: Tenant, app: Application, versions: VersionIndex) -> TenantPlan:
    desired = desired_version(tenant, app, versions)
    if isinstance(desired, Problem):
        return TenantPlan(problems=(desired,))
    status = tenant.status
    done = status.last_completed
    resubscribed = done is not None and done.operation == TenantOperation.DEPROVISIONING
    if not status.current_instance or resubscribed:
        planned: PlannedOperation | None = PlannedOperation(TenantOperation.PROVISIONING, desired)
    elif status.current_instance == desired.name:
        planned = None
    else:
        current = versions.named(status.current_instance)
        if current is not None and versions.precedes(desired, current):
            problem = _problem(
                tenant,
                app,
                "spec.version" if tenant.version else "status.currentCAPApplicationVersionInstance",
                f"the tenant runs on {current.version} ({current.name}); CAP Operator never downgrades a "
                f"tenant to {desired.version}",
            )
            return TenantPlan(problems=(problem,))
        planned = PlannedOperation(TenantOperation.UPGRADE, desired)
    if planned is not None and _completed(tenant, planned):
        planned = None
    warning = ""
    if status.current_instance and not resubscribed and versions.named(status.current_instance) is None:
        warning = (
            f"the tenant runs on {status.current_instance}, which is not in the sources: its routing "
            f"leads nowhere until the upgrade to {desired.name} completes"
        )
    return TenantPlan(planned, route_to=desired, warning=warning)


def application_retiring(app: Application) -> bool:
    """The CAPApplication is marked for deletion (`btp-gitops.io/deprovision: "true"`): its tenants
    are deprovisioned, then the controller removes its files from the sources."""
    annotations = app.source.body.get("metadata", {}).get("annotations") or {}
    return annotations.get(DEPROVISION_ANNOTATION) == "true"


def plan_tenant(tenant: Tenant, app: Application, versions: VersionIndex) -> TenantPlan:
    """The tenant's operation and routing; problems instead when its record cannot be honoured."""
    if versions.newest is None:
        return TenantPlan()  # no version to run on yet: only the record is rendered
    if tenant.deleting or application_retiring(app):
        return _deprovisioning_plan(tenant, app, versions)
    return _serving_plan(tenant, app, versions)


def previous_versions(tenant: Tenant, versions: VersionIndex, route_to: Version) -> tuple[Version, ...]:
    """The versions the tenant's users may still have sessions on (version affinity), oldest first,
    as CAP Operator keeps them: every version of the tenant's history (its recorded previous
    versions, then its recorded current one while an upgrade to `route_to` renders) that is still
    in the sources, each once, `route_to` itself left out."""
    history = [*tenant.status.previous_instances, tenant.status.current_instance]
    seen = {route_to.name, ""}
    found = []
    for name in history:
        if name in seen:
            continue
        seen.add(name)
        version = versions.named(name)
        if version is not None:
            found.append(version)
    return tuple(found)
