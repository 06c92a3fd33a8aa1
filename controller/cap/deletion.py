"""Abrupt deletion of CAP objects: finalizers hold CAPTenants, CAPApplicationVersions and
CAPApplications until every tenant was deprovisioned, and the controller runs the deprovisioning
itself, from the CRs still in the cluster.

Planned deletion goes through Git: a tenant or application marked for deprovisioning renders its
Jobs, and its records are removed once they completed. Abrupt deletion is what remains: files
removed from Git at once, or an app deleted, and Argo CD or Flux prune the CRs. Without these
finalizers the tenants would stay subscribed in every service, with nothing left to unsubscribe
them.

    CAPTenant              `sme.sap.com/captenant`: released once deprovisioned
    CAPApplicationVersion  `sme.sap.com/capapplicationversion`: released once no tenant uses it
    CAPApplication         `sme.sap.com/capapplication`: deletes its CAPTenants (each deprovisions
                           through its own finalizer), released once none is left

The render writes each finalizer onto the objects (generator.domains.cap), so an object created
and pruned while the controller is down (a rollout, a crash loop) is held from its creation until
the controller has run its deletion. Each reconciler still adds its finalizer to every object of
its kind that is not being deleted: a safety net for objects an older btp-gitops rendered without
it, or written by hand.

A deleted CAPTenant (the version it is deprovisioned on: controller.cap.cluster_models):

1. waits while a Job of another operation of the tenant has not finished: a provisioning that
   ran on after its deprovisioning would leave the tenant subscribed;
2. deletes the tenant's CAPTenantOutputs before it creates the first step's Job, as CAP Operator
   does before each operation, then runs the deprovisioning steps of that version one after
   another: the Job of step n is created
   only once step n - 1 succeeded, or failed with continueOnFailure. The Jobs are the generator's
   (`operation_jobs`: the names, labels and pods a render gives them), so a Job already there,
   e.g. rendered from Git before the prune, is that step and is not created again. The Jobs are
   the record of progress: a controller restarted at any point reads them and goes on;
3. a step that failed keeps the finalizer, with a Warning Event and the status condition saying
   so. The failed Job is kept and nothing is retried: deleting the Job runs the step again, as it
   does for a render;
4. once every step passed, the finalizer goes.

The Jobs the controller creates differ from a render's in three ways, each on purpose:

- no version gate (`<cav>-ready`). A render's tenant Jobs read it so that an upgrade waits for
  its version to be healthy; a deprovisioning runs on a version the tenant ran on (or whose
  provisioning it undoes) and has nothing to wait for, while the gate, in the application's app,
  is pruned with it. Recreating the gate instead would open it for every tenant's upgrade to that
  version, healthy or not. (A Job rendered from Git keeps its gate: if the gate is gone, an Event
  says so; deleting that Job lets the controller create its own.)
- no `ttlSecondsAfterFinished`: the Job is the record that its step passed; a Job removed by its
  TTL would run again.
- an owner reference to the CAPTenant, so that its Jobs go with it and a later tenant of the
  same name never takes them for its own.

What holds an object is in its status, where it survives restarts: a CAPTenant's `status.state`
becomes Deleting and its condition `Deprovisioned` (False while held) has reason Deprovisioning (a
step runs), DeprovisioningStepStuck, WaitingForOperation, DeprovisioningFailed or
DeprovisioningBlocked (its CAPApplication, or the version it is deprovisioned on, is not in the
cluster: the Jobs cannot be built; restore it, or remove the finalizer by hand once the tenant is
known to be gone); a held CAPApplicationVersion or CAPApplication has a condition `Released`
(False) naming the tenants it waits for. An Event is posted when such a condition changes, not on
every look, and never before the effect it reports (a release goes first: an Event is best effort).

The steps need what the version's pods need: its credentials (the `<cav>-<workload>-vcap` Secret
in vcap mode, the binding Secrets otherwise) and images. Where a prune removed them, a step's pods
cannot start; a step that has not finished after `step_warning_after` is reported stuck (Warning).
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from btp_gitops.controller.cap.callbacks import delete_tenant_outputs
from btp_gitops.controller.cap.cluster_models import (
    TENANT_JOBS_SELECTOR,
    CapModels,
    JobState,
    application_of,
    application_tenant_objects,
    being_deleted,
    belongs_to,
    continues_on_failure,
    deprovisioning_target,
    job_state,
    jobs_by_owner,
    jobs_of_tenant,
    owner_hash,
    read_application,
    read_tenant_jobs,
    running_jobs,
    versions_in_use,
)
from btp_gitops.controller.errors import TemporaryError
from btp_gitops.controller.events import NORMAL, WARNING, record_event
from btp_gitops.controller.kube import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    CONFIG_MAP,
    JOB,
    KubeClient,
    KubeObject,
    Resource,
)
from btp_gitops.controller.runtime import DONE, ObjectKey, Outcome, Reconciler, Watch
from btp_gitops.generator.core import get_path
from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION_FINALIZER,
    CAP_APPLICATION_VERSION_FINALIZER,
    CAP_TENANT_FINALIZER,
    OWNER_IDENTIFIER,
    Tenant,
    TenantOperation,
    TenantState,
    Version,
    operation_jobs,
    version_gate_name,
)

# The render puts the same finalizers on the objects it writes (the generator's constants).
TENANT_FINALIZER = CAP_TENANT_FINALIZER
VERSION_FINALIZER = CAP_APPLICATION_VERSION_FINALIZER
APPLICATION_FINALIZER = CAP_APPLICATION_FINALIZER
DEPROVISIONED_CONDITION = "Deprovisioned"  # on a CAPTenant, False while its deprovisioning holds it
RELEASED_CONDITION = "Released"  # on a CAPApplicationVersion or CAPApplication, False while held
_NAMES_SHOWN = 10


@dataclass(frozen=True, slots=True)
class CapDeletionSettings:
    """How often held objects are looked at again, besides the watch events that bring them back."""

    check_interval: float = 30.0  # a running step, a held version or application: looked at again
    blocked_interval: float = 300.0  # a deprovisioning that cannot be built: tried again
    step_warning_after: float = 3600.0  # a step's Job unfinished this long gets a Warning Event


def has_finalizer(obj: KubeObject, finalizer: str) -> bool:
    return finalizer in (get_path(obj, "metadata", "finalizers") or [])


def _name(obj: KubeObject) -> str:
    return str(obj["metadata"]["name"])


def _namespace(obj: KubeObject) -> str:
    return str(obj["metadata"].get("namespace") or "")


def _listed(names: Iterable[str]) -> str:
    shown = sorted(names)
    text = ", ".join(shown[:_NAMES_SHOWN])
    return text + (f" and {len(shown) - _NAMES_SHOWN} more" if len(shown) > _NAMES_SHOWN else "")


def _held_in_deletion(kube: KubeClient, resource: Resource, obj: KubeObject, finalizer: str) -> bool:
    """Add the finalizer to a live object; True when the object is being deleted and the finalizer
    still holds it: the release is ours to do."""
    if not being_deleted(obj):
        # A no-op for what the render wrote (the finalizer is in the manifest); the safety net for
        # objects rendered by older versions, which lacked it.
        kube.add_finalizer(resource, obj, finalizer)
        return False
    return has_finalizer(obj, finalizer)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Held:
    """A condition with status False: the object is held by its finalizer, and why."""

    type: str
    reason: str
    message: str


def write_condition(
    kube: KubeClient, resource: Resource, obj: KubeObject, held: Held, *, state: str | None = None
) -> bool:
    """Set the condition (and `status.state`) when they changed; True when written. The other
    conditions stay; the write is guarded by the resourceVersion read, so that a concurrent status
    writer is never overwritten (409: read again)."""
    status: dict[str, Any] = obj.get("status") or {}
    conditions = list(status.get("conditions") or [])
    previous = next((c for c in conditions if c.get("type") == held.type), None)
    same = previous is not None and (previous.get("reason"), previous.get("message")) == (
        held.reason,
        held.message,
    )
    if same and (state is None or status.get("state") == state):
        return False
    condition = {
        "type": held.type,
        "status": "False",
        "reason": held.reason,
        "message": held.message,
        "lastTransitionTime": (previous or {}).get("lastTransitionTime") or _now(),
        "observedGeneration": int(obj["metadata"].get("generation") or 0),
    }
    written: dict[str, Any] = {
        "conditions": [*(c for c in conditions if c.get("type") != held.type), condition]
    }
    if state is not None:
        written["state"] = state
    patch = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, "status": written}
    obj.update(kube.patch(resource, _name(obj), patch, _namespace(obj) or None, subresource="status"))
    return True


# --- the steps of a deprovisioning -------------------------------------------------------------------------


def controller_job(job: KubeObject, version: Version, owner: KubeObject) -> KubeObject:
    """A render's Job as the controller creates it: without the version gate and TTL, owned by the
    CAPTenant (module docstring)."""
    body = copy.deepcopy(job)
    body["spec"].pop("ttlSecondsAfterFinished", None)
    gate = version_gate_name(version)
    pod = body["spec"]["template"]["spec"]
    for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
        sources = [s for s in container.get("envFrom", []) if get_path(s, "configMapRef", "name") != gate]
        if sources:
            container["envFrom"] = sources
        else:
            container.pop("envFrom", None)
    meta = owner["metadata"]
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": CAP_TENANT.api_version,
            "kind": CAP_TENANT.kind,
            "name": meta["name"],
            "uid": meta["uid"],
        }
    ]
    return body


@dataclass(frozen=True, slots=True)
class Deprovisioning:
    """The Jobs of a tenant's deprovisioning as the controller creates them, in step order."""

    version: Version
    rule: str  # how the version was found (cluster_models)
    jobs: Sequence[KubeObject]


class StepAction(StrEnum):
    CREATE = "create"  # the step's Job does not exist yet, and every step before it passed
    WAIT = "wait"  # the step's Job has not finished
    FAILED = "failed"  # the step's Job failed, and the step may not fail
    DONE = "done"  # every step passed


@dataclass(frozen=True, slots=True)
class NextStep:
    action: StepAction
    number: int = 0  # 1-based
    job: KubeObject | None = None  # the Job to create (CREATE), the live one (WAIT, FAILED); None when DONE


def next_step(planned: Sequence[KubeObject], existing: Mapping[str, KubeObject]) -> NextStep:
    """What the deprovisioning needs next, from the Jobs in the cluster: steps strictly in order."""
    for number, job in enumerate(planned, start=1):
        live = existing.get(_name(job))
        if live is None:
            return NextStep(StepAction.CREATE, number, job)
        state = job_state(live)
        if state == JobState.RUNNING:
            return NextStep(StepAction.WAIT, number, live)
        if state == JobState.FAILED and not continues_on_failure(job):
            return NextStep(StepAction.FAILED, number, live)
    return NextStep(StepAction.DONE, len(planned))


def _age_seconds(obj: KubeObject) -> float:
    text = get_path(obj, "metadata", "creationTimestamp")
    if not text:
        return 0.0
    created = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return (dt.datetime.now(dt.UTC) - created).total_seconds()


def _config_maps_read(job: KubeObject) -> set[str]:
    pod = get_path(job, "spec", "template", "spec") or {}
    containers = [*pod.get("initContainers", []), *pod.get("containers", [])]
    return {
        str(get_path(source, "configMapRef", "name"))
        for container in containers
        for source in container.get("envFrom", [])
        if get_path(source, "configMapRef", "name")
    }


# --- CAPTenant --------------------------------------------------------------------------------------------


def tenant_keys_of_job(job: KubeObject) -> tuple[ObjectKey, ...]:
    """A tenant operation Job -> its CAPTenant, from `sme.sap.com/owner-identifier` (`<ns>.<tenant>`)."""
    namespace = str(get_path(job, "metadata", "namespace") or "")
    owner = str(get_path(job, "metadata", "annotations", OWNER_IDENTIFIER) or "")
    prefix = f"{namespace}."
    return (ObjectKey(namespace, owner.removeprefix(prefix)),) if owner.startswith(prefix) else ()


class CapTenantFinalizer:
    """Deprovisions a deleted CAPTenant, then releases it (module docstring)."""

    name = "cap-tenant-deletion"

    def __init__(self, kube: KubeClient, settings: CapDeletionSettings | None = None) -> None:
        self._kube = kube
        self._settings = settings or CapDeletionSettings()

    @property
    def watches(self) -> Sequence[Watch]:
        return (
            Watch(CAP_TENANT),
            Watch(JOB, label_selector=TENANT_JOBS_SELECTOR, to_keys=tenant_keys_of_job),
        )

    def reconcile(self, key: ObjectKey) -> Outcome:
        obj = self._kube.get(CAP_TENANT, key.name, key.namespace)
        if obj is None or not _held_in_deletion(self._kube, CAP_TENANT, obj, TENANT_FINALIZER):
            return DONE
        # Only this tenant: a mass deletion must not read every tenant once per tenant.
        obj.setdefault("apiVersion", CAP_TENANT.api_version)
        obj.setdefault("kind", CAP_TENANT.kind)
        models = read_application(self._kube, key.namespace, application_of(obj), tenants=[obj])
        if models is None:
            return self._blocked(
                obj, f"CAPApplication {key.namespace}/{application_of(obj)} is not in the cluster"
            )
        tenant = models.tenants.get(key.name)
        if tenant is None:
            return self._blocked(obj, f"CAPApplication {models.app.name} has no tenants (services-only)")
        return self._deprovision(obj, models, tenant)

    def _deprovision(self, obj: KubeObject, models: CapModels, tenant: Tenant) -> Outcome:
        jobs = read_tenant_jobs(self._kube, tenant, obj)
        busy = running_jobs(jobs, except_operation=TenantOperation.DEPROVISIONING)
        if busy:
            message = f"the deprovisioning waits for Jobs of another operation to finish: {_listed(busy)}"
            self._report(obj, "WaitingForOperation", message, NORMAL)
            return Outcome(requeue_after=self._settings.check_interval)
        target = deprovisioning_target(models, tenant, jobs)
        if target.retired:
            return self._release(obj, "deprovisioned before (status.lastCompletedOperation): released")
        if target.version is None:
            return self._blocked(obj, target.problem)
        version = target.version
        planned = [
            controller_job(job, version, obj)
            for job in operation_jobs(models.app, tenant, TenantOperation.DEPROVISIONING, version)
        ]
        if not planned:
            return self._blocked(obj, f"CAPApplicationVersion {version.name} has no deprovisioning step")
        return self._run(obj, tenant, Deprovisioning(version, target.rule, planned), jobs)

    def _run(
        self, obj: KubeObject, tenant: Tenant, plan: Deprovisioning, jobs: Mapping[str, KubeObject]
    ) -> Outcome:
        step = next_step(plan.jobs, jobs)
        on = f"on {plan.version.name} (from {plan.rule})"
        if step.job is None:
            return self._release(obj, f"deprovisioned {on}: {len(plan.jobs)} step(s) passed; released")
        job_name = _name(step.job)
        where = f"step {step.number} of {len(plan.jobs)} of the deprovisioning {on}"
        if step.action == StepAction.FAILED:
            message = f"{where} failed: Job {job_name}; delete the Job to run the step again"
            self._report(obj, "DeprovisioningFailed", message, WARNING)
            return DONE  # the Job watch brings the tenant back once someone deletes the Job
        if step.action == StepAction.CREATE:
            if step.number == 1:
                # CAP Operator deletes a tenant's CAPTenantOutputs before it starts an operation.
                delete_tenant_outputs(self._kube, _namespace(obj), tenant.tenant_id)
            self._create_step(obj, tenant, step.job)
            record_event(self._kube, obj, NORMAL, "DeprovisioningStep", f"{where}: created Job {job_name}")
            stuck = ""
        else:
            stuck = self._why_stuck(obj, step.job, plan.version)
        if stuck:
            self._report(obj, "DeprovisioningStepStuck", f"{where}: Job {job_name} {stuck}", WARNING)
        else:
            self._report(obj, "Deprovisioning", f"{where}: Job {job_name} runs", None)
        return Outcome(requeue_after=self._settings.check_interval)

    def _create_step(self, owner: KubeObject, tenant: Tenant, job: KubeObject) -> None:
        namespace, name = _namespace(owner), _name(job)
        existing = self._kube.get(JOB, name, namespace)
        if existing is None:
            self._kube.create(JOB, job, namespace)
            return
        if being_deleted(existing):
            raise TemporaryError(f"Job {namespace}/{name} is being deleted; its step waits", delay=2.0)
        if belongs_to(existing, tenant, owner):
            raise TemporaryError(f"Job {namespace}/{name} appeared meanwhile; reading again", delay=0.5)
        # A Job left behind by an earlier tenant of the same name: it is not this tenant's step.
        self._kube.delete(JOB, name, namespace)
        raise TemporaryError(f"Job {namespace}/{name} belonged to an earlier CAPTenant: deleted", delay=1.0)

    def _why_stuck(self, obj: KubeObject, job: KubeObject, version: Version) -> str:
        """Why a step's Job may never finish, as far as the controller can tell ("" when it cannot)."""
        gate = version_gate_name(version)
        if gate in _config_maps_read(job) and self._kube.get(CONFIG_MAP, gate, _namespace(obj)) is None:
            return (
                f"(rendered from Git) waits for ConfigMap {gate}, which is gone; delete the Job to let the "
                "controller run the step without it"
            )
        if _age_seconds(job) > self._settings.step_warning_after:
            return (
                f"has not finished after {self._settings.step_warning_after:.0f}s; its pods may lack the "
                "version's credentials Secret or image"
            )
        return ""

    def _blocked(self, obj: KubeObject, problem: str) -> Outcome:
        message = (
            f"cannot deprovision: {problem}; restore it, or remove the finalizer {TENANT_FINALIZER} by hand"
        )
        self._report(obj, "DeprovisioningBlocked", message, WARNING)
        return Outcome(requeue_after=self._settings.blocked_interval)

    def _release(self, obj: KubeObject, message: str) -> Outcome:
        # The release first: an Event is best effort and must never stand in its way.
        self._kube.remove_finalizer(CAP_TENANT, obj, TENANT_FINALIZER)
        record_event(self._kube, obj, NORMAL, "Deprovisioned", message)
        return DONE

    def _report(self, obj: KubeObject, reason: str, message: str, event_type: str | None) -> None:
        """State Deleting and the `Deprovisioned` condition; an Event of `event_type` when they change."""
        held = Held(DEPROVISIONED_CONDITION, reason, message)
        if (
            write_condition(self._kube, CAP_TENANT, obj, held, state=TenantState.DELETING.value)
            and event_type
        ):
            record_event(self._kube, obj, event_type, reason, message)


# --- CAPApplicationVersion ------------------------------------------------------------------------------


def tenants_using(kube: KubeClient, version: KubeObject) -> list[str]:
    """CAPTenants that run on the version, are headed for it, or are deprovisioned on it
    (`versions_in_use`); without their CAPApplication that cannot be told, so then every tenant
    of the application that may still run a Job counts."""
    namespace, application = _namespace(version), application_of(version)
    models = read_application(kube, namespace, application)
    if models is None:
        tenants = application_tenant_objects(kube, namespace, application)
        return [_name(t) for t in tenants if not being_deleted(t) or has_finalizer(t, TENANT_FINALIZER)]
    grouped = jobs_by_owner(kube.list(JOB, namespace, label_selector=TENANT_JOBS_SELECTOR))
    users = []
    for name, tenant in models.tenants.items():
        obj = models.tenant_objects[name]
        if being_deleted(obj) and not has_finalizer(obj, TENANT_FINALIZER):
            continue  # on its way out, and no deprovisioning of ours to run
        jobs = jobs_of_tenant(grouped.get(owner_hash(tenant), []), tenant, obj)
        if _name(version) in versions_in_use(models, tenant, jobs):
            users.append(name)
    return users


class CapVersionFinalizer:
    """Holds a deleted CAPApplicationVersion while a tenant still needs it."""

    name = "cap-version-deletion"

    def __init__(self, kube: KubeClient, settings: CapDeletionSettings | None = None) -> None:
        self._kube = kube
        self._settings = settings or CapDeletionSettings()

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch(CAP_APPLICATION_VERSION),)

    def reconcile(self, key: ObjectKey) -> Outcome:
        obj = self._kube.get(CAP_APPLICATION_VERSION, key.name, key.namespace)
        if obj is None or not _held_in_deletion(self._kube, CAP_APPLICATION_VERSION, obj, VERSION_FINALIZER):
            return DONE
        users = tenants_using(self._kube, obj)
        if users:
            message = f"held while CAPTenants run on it or are deprovisioned on it: {_listed(users)}"
            held = Held(RELEASED_CONDITION, "InUse", message)
            if write_condition(self._kube, CAP_APPLICATION_VERSION, obj, held):
                record_event(self._kube, obj, NORMAL, "VersionInUse", message)
            return Outcome(requeue_after=self._settings.check_interval)
        self._kube.remove_finalizer(CAP_APPLICATION_VERSION, obj, VERSION_FINALIZER)
        return DONE


# --- CAPApplication -------------------------------------------------------------------------------------


def application_keys_of_tenant(tenant: KubeObject) -> tuple[ObjectKey, ...]:
    application = application_of(tenant)
    return (ObjectKey(_namespace(tenant), application),) if application else ()


class CapApplicationFinalizer:
    """Deletes a deleted CAPApplication's CAPTenants and holds it until they are gone."""

    name = "cap-application-deletion"

    def __init__(self, kube: KubeClient, settings: CapDeletionSettings | None = None) -> None:
        self._kube = kube
        self._settings = settings or CapDeletionSettings()

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch(CAP_APPLICATION), Watch(CAP_TENANT, to_keys=application_keys_of_tenant))

    def reconcile(self, key: ObjectKey) -> Outcome:
        obj = self._kube.get(CAP_APPLICATION, key.name, key.namespace)
        if obj is None or not _held_in_deletion(self._kube, CAP_APPLICATION, obj, APPLICATION_FINALIZER):
            return DONE
        tenants = application_tenant_objects(self._kube, key.namespace, key.name)
        for tenant in tenants:
            if not being_deleted(tenant):
                # Its own reconciler may not have seen it yet: without the finalizer it would go
                # at once, undeprovisioned.
                self._kube.add_finalizer(CAP_TENANT, tenant, TENANT_FINALIZER)
                self._kube.delete(CAP_TENANT, _name(tenant), key.namespace)
        if tenants:
            names = [_name(t) for t in tenants]
            message = f"waiting for {len(names)} CAPTenant(s) to be deprovisioned: {_listed(names)}"
            held = Held(RELEASED_CONDITION, "DeprovisioningTenants", message)
            if write_condition(self._kube, CAP_APPLICATION, obj, held):
                record_event(self._kube, obj, NORMAL, "DeprovisioningTenants", message)
            return Outcome(requeue_after=self._settings.check_interval)
        self._kube.remove_finalizer(CAP_APPLICATION, obj, APPLICATION_FINALIZER)
        return DONE


def cap_deletion_reconcilers(
    kube: KubeClient, settings: CapDeletionSettings | None = None
) -> list[Reconciler]:
    """The three finalizer reconcilers, for a `Manager`."""
    return [
        CapTenantFinalizer(kube, settings),
        CapVersionFinalizer(kube, settings),
        CapApplicationFinalizer(kube, settings),
    ]
