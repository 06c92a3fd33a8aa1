"""Tenant operation outcomes: read a tenant's operation Jobs, record how the operation ended in
its record in Git, then answer the subscription callback that waits for it.

Key: a tenant, (namespace, tenant name). Watched: the tenant operation Jobs the generator renders
(mapped to their tenant by the `sme.sap.com/owner-identifier` annotation, `<namespace>.<tenant>`)
and the pending-callback ConfigMaps (by their `tenantName`). The runtime's resync lists both again
now and then; a callback still waiting asks to be looked at again by its deadline.

    source tree (SourceSnapshots)   the tenant's record, or the provider tenant its application
                                    implies; the operation the generator renders for it
                                    (selection.plan_tenant) and that operation's Job names
                                    (jobs.step_templates, names.operation_job_name): the render's
                                    own functions, so the names are the rendered ones
    the Jobs (cluster)              every step Complete, or Failed with continueOnFailure
                                    (`btp-gitops.io/continue-on-failure: "true"`) -> succeeded; a
                                    step Failed otherwise -> failed; anything else -> running
    Git (blocks until pushed)       the outcome in the record's status, so the generator stops
                                    rendering a completed operation; a consumer's completed
                                    deprovisioning also removes its record, in the same commit
    CAPTenantOutputs (cluster)      once the operation's first Job exists, the tenant's outputs
                                    created before it are deleted (CAP Operator deletes them when
                                    it starts an operation): the callback carries this one's only
    the callback (callbacks.py)     decided from the tree as it is after that push

Nothing lives only in memory: the outcome is in Git, the callback and its delivery state on the
ConfigMap, the operation's progress on the Jobs. A reconcile after a restart at any point reads
them again and does what is left; writing an outcome twice changes nothing (no commit).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from btp_gitops.controller.cap.callbacks import (
    CallbackDelivery,
    InvalidCallback,
    PendingCallback,
    TenantFacts,
    Verdict,
    decide,
    delete_tenant_outputs,
    is_pending,
    operation_started,
)
from btp_gitops.controller.clients.cluster_side import PENDING_CALLBACK_LABEL, callback_names
from btp_gitops.controller.errors import PermanentError, TemporaryError
from btp_gitops.controller.events import NORMAL, WARNING, record_event
from btp_gitops.controller.gitstore import SourceRepo, TreeChange
from btp_gitops.controller.kube import CONFIG_MAP, JOB, KubeClient, KubeObject
from btp_gitops.controller.records import (
    FAILURE_STATES,
    ApplicationRecord,
    OperationOutcome,
    SourceIndex,
    TenantRecord,
    record_operation_outcome,
    remove_tenant_record,
)
from btp_gitops.controller.runtime import DONE, ObjectKey, Outcome, Watch
from btp_gitops.generator.core import GitError
from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    CONTINUE_ON_FAILURE_ANNOTATION,
    DEPROVISION_ANNOTATION,
    OWNER_IDENTIFIER,
    TENANT_OPERATION_TYPE,
    Application,
    PlannedOperation,
    StepTemplate,
    Tenant,
    TenantOperation,
    TenantStatus,
    TenantType,
    Version,
    VersionIndex,
    derived_provider_tenant,
    operation_job_name,
    plan_tenant,
    step_templates,
    tenant_from_source,
)

log = logging.getLogger("btp_gitops.controller.cap.tenant_operations")

T = TypeVar("T")


class SourceUnavailable(TemporaryError):
    """The source repository could not be read or written now."""

    reason = "SourceUnavailable"


@dataclass(frozen=True, slots=True)
class TenantOperationSettings:
    callback_poll: float = 60.0  # a waiting callback is looked at again at least this often
    git_timeout: float = 120.0  # seconds to wait for a Git write to be pushed


# --- the source tree, one snapshot per commit --------------------------------------------------------


@dataclass(slots=True)
class ApplicationModels:
    app: Application
    versions: VersionIndex
    steps: dict[tuple[str, TenantOperation], tuple[StepTemplate, ...]] = field(default_factory=dict)

    def steps_of(self, operation: PlannedOperation) -> tuple[StepTemplate, ...]:
        key = (operation.version.name, operation.operation)
        if key not in self.steps:
            self.steps[key] = step_templates(self.app, operation.version, operation.operation)
        return self.steps[key]


class Snapshot:
    """The source tree at one commit: the index of records, and the models built so far from the
    index's documents (the tree is not read again)."""

    def __init__(self, commit: str, index: SourceIndex) -> None:
        self.commit = commit
        self.index = index
        self._models: dict[tuple[str, str], ApplicationModels] = {}

    def models(self, app: ApplicationRecord) -> ApplicationModels:
        key = (app.namespace, app.name)
        if key not in self._models:
            index = self.index
            application = Application.from_source(
                index.document(app.path, CAP_APPLICATION, app.namespace, app.name)
            )
            versions = [
                Version.from_source(index.document(v.path, CAP_APPLICATION_VERSION, v.namespace, v.name))
                for v in index.versions_of(app.namespace, app.name)
            ]
            self._models[key] = ApplicationModels(application, VersionIndex.of(versions))
        return self._models[key]


class SourceSnapshots:
    """Reads of the source repository shared by the CAP reconcilers: a snapshot per commit, and a
    fetch at most every `max_age` seconds, unless a decision needs the remote's newest commit
    (`fresh`: one that rests on a record's absence). A tree older than that is still a pushed
    commit, so what it shows was true; it may only lack what came since."""

    def __init__(self, repo: SourceRepo, max_age: float = 10.0) -> None:
        self._repo = repo
        self._max_age = max_age
        self._lock = threading.Lock()
        self._fetched_at = float("-inf")
        self._latest: Snapshot | None = None

    def read(self, reader: Callable[[Snapshot], T], *, fresh: bool = False) -> T:
        """`reader`'s answer on the snapshot of the clone's commit (the remote's newest with
        `fresh`). Readers get the index, not the tree: what they decide on is what it checked."""
        started = time.monotonic()
        with self._lock:
            refresh = fresh or started - self._fetched_at > self._max_age
        try:
            result = self._repo.read(lambda tree: reader(self._snapshot(tree)), refresh=refresh)
        except GitError as error:
            raise SourceUnavailable(error.message) from error
        if refresh:
            with self._lock:
                self._fetched_at = max(self._fetched_at, started)
        return result

    def _snapshot(self, tree: Path) -> Snapshot:
        commit = self._repo.head  # inside `read`, the tree is checked out at this commit
        latest = self._latest  # only replaced under the repository's lock, which `read` holds here
        if latest is None or latest.commit != commit:
            latest = Snapshot(commit, SourceIndex.of_tree(tree))
            self._latest = latest
        return latest

    def write(self, change: TreeChange, message: str, timeout: float) -> str | None:
        """Apply `change` and wait until it is pushed; the commit, or None when nothing changed."""
        try:
            return self._repo.apply(change, message, timeout).commit
        except concurrent.futures.TimeoutError as error:
            raise SourceUnavailable(f"the Git write '{message}' is not pushed yet", delay=5.0) from error
        except GitError as error:
            raise SourceUnavailable(error.message) from error


# --- what the tree says about one tenant -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExpectedJob:
    name: str
    step: int
    workload: str


@dataclass(frozen=True, slots=True)
class TenantView:
    record: TenantRecord | None
    tenant: Tenant | None  # None: no record, and not a provider its application implies
    app: ApplicationRecord | None  # the tenant's application (or the callback's, for a gone record)
    operation: PlannedOperation | None = None
    jobs: tuple[ExpectedJob, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def recorded(self) -> bool:
        """The tree knows the tenant: a record, or the provider its application implies."""
        return self.record is not None or self.tenant is not None

    @property
    def status(self) -> TenantStatus:
        if self.tenant is not None:
            return self.tenant.status
        return self.record.status if self.record is not None else TenantStatus()


def _provider_application(index: SourceIndex, namespace: str, name: str) -> ApplicationRecord | None:
    """The application whose provider tenant `name` is while the provider has no record."""
    for app in index.applications:
        if (
            app.namespace == namespace
            and app.has_provider
            and app.provider_tenant_name == name
            and index.tenant(namespace, app.name, app.provider_tenant_id) is None
        ):
            return app
    return None


def _tenant_model(index: SourceIndex, record: TenantRecord, app: ApplicationRecord) -> Tenant:
    document = index.document(record.path, CAP_TENANT, record.namespace, record.name)
    provider = record.tenant_id == app.provider_tenant_id
    return tenant_from_source(document, TenantType.PROVIDER if provider else TenantType.CONSUMER)


def _locate(
    snapshot: Snapshot, namespace: str, name: str
) -> tuple[ApplicationRecord, ApplicationModels, Tenant] | None:
    """The tenant's application and model: its record's, or the provider its application implies."""
    index = snapshot.index
    record = index.tenant_named(namespace, name)
    app = (
        index.application(namespace, record.application)
        if record
        else _provider_application(index, namespace, name)
    )
    if app is None:
        return None
    models = snapshot.models(app)
    if record is not None:
        return app, models, _tenant_model(index, record, app)
    provider = models.app.provider
    return (app, models, derived_provider_tenant(models.app, provider)) if provider else None


def tenant_view(snapshot: Snapshot, namespace: str, name: str, application_hint: str = "") -> TenantView:
    """The tenant `namespace/name` as the render sees it at this commit; `application_hint` names
    the application to report when the tenant has no record (left, or never written)."""
    record = snapshot.index.tenant_named(namespace, name)
    located = _locate(snapshot, namespace, name)
    if located is None:
        hinted = snapshot.index.application(namespace, application_hint) if application_hint else None
        problems = (f"no CAPApplication {record.application} for its record",) if record else ()
        return TenantView(record, None, hinted, problems=problems)
    app, models, tenant = located
    plan = plan_tenant(tenant, models.app, models.versions)
    if plan.problems:
        return TenantView(record, tenant, app, problems=tuple(p.render() for p in plan.problems))
    if plan.operation is None:
        return TenantView(record, tenant, app)
    jobs = tuple(
        ExpectedJob(
            operation_job_name(tenant, step.operation, step.version, step.number, step.workload),
            step.number,
            step.workload.name,
        )
        for step in models.steps_of(plan.operation)
    )
    return TenantView(record, tenant, app, plan.operation, jobs)


# --- the Jobs ----------------------------------------------------------------------------------------


class Progress(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class OperationResult:
    progress: Progress
    detail: str  # what failed, or what the operation waits for
    job: KubeObject | None = None  # the Job that decided it (Events go there)

    @property
    def decided(self) -> bool:
        return self.progress != Progress.RUNNING


def _condition(job: KubeObject, kind: str) -> dict[str, str] | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return {str(k): str(v) for k, v in condition.items()}
    return None


def _continues_on_failure(job: KubeObject) -> bool:
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    return annotations.get(CONTINUE_ON_FAILURE_ANNOTATION) == "true"


def operation_result(steps: Sequence[tuple[ExpectedJob, KubeObject | None]]) -> OperationResult:
    """How the operation stands, from its steps' Jobs (in step order; None: not created yet)."""
    waiting: list[str] = []
    last: KubeObject | None = None
    for expected, job in steps:
        if job is None:
            waiting.append(f"step {expected.step} (Job {expected.name} not created yet)")
            continue
        failed = _condition(job, "Failed")
        if failed is not None and not _continues_on_failure(job):
            reason = failed.get("reason") or "Failed"
            message = failed.get("message") or ""
            detail = f"step {expected.step} ({expected.workload}, Job {expected.name}) failed: {reason}"
            return OperationResult(Progress.FAILED, f"{detail} ({message})" if message else detail, job)
        if failed is None and _condition(job, "Complete") is None:
            waiting.append(f"step {expected.step} (Job {expected.name} running)")
        last = job
    if waiting:
        return OperationResult(Progress.RUNNING, "waiting for " + ", ".join(waiting))
    return OperationResult(Progress.SUCCEEDED, "every step completed", last)


def tenant_of_job(job: KubeObject) -> Iterable[ObjectKey]:
    """The tenant a rendered tenant operation Job runs for (`<namespace>.<tenant>` annotation)."""
    meta = job.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    owner = str((meta.get("annotations") or {}).get(OWNER_IDENTIFIER) or "")
    if namespace and owner.startswith(f"{namespace}."):
        return (ObjectKey(namespace, owner.removeprefix(f"{namespace}.")),)
    return ()


def tenant_of_callback(config_map: KubeObject) -> Iterable[ObjectKey]:
    meta = config_map.get("metadata") or {}
    tenant = str((config_map.get("data") or {}).get("tenantName") or "")
    return (ObjectKey(str(meta.get("namespace") or ""), tenant),) if tenant else ()


# --- recording in Git --------------------------------------------------------------------------------


def _retiring(app: ApplicationRecord | None) -> bool:
    return app is not None and app.annotations.get(DEPROVISION_ANNOTATION) == "true"


@dataclass(frozen=True, slots=True)
class CompleteDeprovisioning:
    """The deprovisioning of `namespace/name` on `version_instance` succeeded: record it, and drop
    the record of a consumer still marked for it (or of a retiring application) in the same
    commit. A provider's record stays: without it the provider would be derived again from its
    application, and deprovisioned again; the application's retirement removes it."""

    namespace: str
    name: str
    version_instance: str

    def __call__(self, tree: Path) -> str | None:
        before = SourceIndex.of_tree(tree)
        known = before.tenant_named(self.namespace, self.name) is not None
        if not known and _provider_application(before, self.namespace, self.name) is None:
            return None  # removed already (this change ran before, or someone removed it)
        outcome = OperationOutcome(TenantOperation.DEPROVISIONING, self.version_instance, True)
        recorded = record_operation_outcome(self.namespace, self.name, outcome)(tree)
        index = SourceIndex.of_tree(tree)
        record = index.tenant_named(self.namespace, self.name)
        app = index.application(self.namespace, record.application) if record else None
        if record is None or app is None or record.tenant_id == app.provider_tenant_id:
            return recorded
        if not (record.marked_for_deprovisioning or _retiring(app)):
            return recorded  # subscribed again meanwhile: the record stays and renders provisioning
        removed = remove_tenant_record(self.namespace, self.name)(tree)
        if removed is None:
            return recorded
        return f"CAPTenant {self.namespace}/{self.name}: deprovisioned on {self.version_instance}, removed"


def _already_recorded(view: TenantView, operation: PlannedOperation, result: OperationResult) -> bool:
    """A failure the record shows already (a completed operation is no longer planned at all)."""
    return result.progress == Progress.FAILED and view.status.state == FAILURE_STATES[operation.operation]


def _change_for(view: TenantView, operation: PlannedOperation, result: OperationResult) -> TreeChange:
    tenant = view.tenant
    if tenant is None:  # tenant_view plans an operation only for a tenant it located
        raise PermanentError(f"an operation on {operation.version.name} is planned without a tenant")
    succeeded = result.progress == Progress.SUCCEEDED
    if succeeded and operation.operation == TenantOperation.DEPROVISIONING:
        return CompleteDeprovisioning(tenant.namespace, tenant.name, operation.version.name)
    outcome = OperationOutcome(operation.operation, operation.version.name, succeeded)
    return record_operation_outcome(tenant.namespace, tenant.name, outcome)


# --- the reconciler ----------------------------------------------------------------------------------


class TenantOperationsReconciler:
    """Records tenant operation outcomes in Git and answers the callbacks waiting for them."""

    name = "cap-tenant-operations"

    def __init__(
        self,
        kube: KubeClient,
        snapshots: SourceSnapshots,
        delivery: CallbackDelivery,
        settings: TenantOperationSettings = TenantOperationSettings(),
        *,
        on_recorded: Callable[[ObjectKey], None] | None = None,
        on_deprovisioned: Callable[[ObjectKey, str], None] | None = None,
    ) -> None:
        self._kube = kube
        self._snapshots = snapshots
        self._delivery = delivery
        self._settings = settings
        # Told about every outcome written to Git (the status mirror copies it to the cluster).
        self._on_recorded = on_recorded
        # Told before a completed deprovisioning is written to Git, which removes a consumer's
        # record: the cluster's CAPTenant must say so first, or its finalizer, finding neither a
        # record nor the pruned Jobs, would deprovision the tenant again.
        self._on_deprovisioned = on_deprovisioned

    @property
    def watches(self) -> Sequence[Watch]:
        return (
            Watch(JOB, label_selector=TENANT_OPERATION_TYPE, to_keys=tenant_of_job),
            Watch(CONFIG_MAP, label_selector=f"{PENDING_CALLBACK_LABEL}=true", to_keys=tenant_of_callback),
        )

    def reconcile(self, key: ObjectKey) -> Outcome:
        self.record_operation(key)
        delay = self.answer_callback(key)
        return Outcome(requeue_after=delay) if delay is not None else DONE

    def record_operation(self, key: ObjectKey) -> None:
        """Record the tenant's operation in Git once its Jobs decided it (blocks until pushed)."""
        view = self._view(key, fresh=False)
        if view.operation is None:
            # Our clone may predate the change that started an operation (the subscription server
            # marks a deprovisioning on the remote): a Job or callback event means look again.
            view = self._view(key, fresh=True)
        if view.operation is None:
            return
        steps = self._jobs(key.namespace, view.jobs)
        self._clear_earlier_outputs(key, view, [job for _, job in steps if job is not None])
        result = operation_result(steps)
        if result.decided and not _already_recorded(view, view.operation, result):
            self._record(key, view, view.operation, result)
            if self._on_recorded is not None:
                self._on_recorded(key)

    def answer_callback(self, key: ObjectKey) -> float | None:
        """Decide and deliver the tenant's pending callbacks, oldest first; when to look again."""
        delays: list[float] = []
        waiting = False  # an earlier callback's verdict is stored but not delivered yet
        for callback in self._pending_callbacks(key):
            view, verdict = self._verdict(key, callback)
            if waiting:
                # Its turn comes when the earlier one is sent or given up: that one's delay (or its
                # ConfigMap's deletion, which the watch sees) brings the tenant back.
                self._delivery.hold(callback, verdict)
                continue
            delay = self._delivery.settle(callback, verdict, view.app)
            if delay is not None:
                delays.append(delay)
                waiting = callback.state is not None or verdict is not None
        return min((*delays, self._settings.callback_poll)) if delays else None

    def _pending_callbacks(self, key: ObjectKey) -> list[PendingCallback]:
        """The tenant's pending callbacks in both ConfigMap formats, in the order they were opened."""
        found: list[PendingCallback] = []
        for name in callback_names(key.name):
            config_map = self._kube.get(CONFIG_MAP, name, key.namespace)
            if config_map is None or not is_pending(config_map):
                continue
            # The old format's name of a tenant `x-provisioning` is the new format's of tenant `x`.
            owner = (config_map.get("data") or {}).get("tenantName")
            if owner and owner != key.name:
                continue
            try:
                found.append(PendingCallback.of(config_map))
            except InvalidCallback as error:
                self._delivery.set_aside(config_map, error)
        return sorted(found, key=lambda callback: callback.order)

    def _verdict(self, key: ObjectKey, callback: PendingCallback) -> tuple[TenantView, Verdict | None]:
        view = self._view(key, fresh=False, application_hint=callback.application)
        if callback.state is not None:
            return view, None
        verdict = decide(callback, self._facts(key, view, callback), self._delivery.now())
        if verdict is not None:
            # A verdict is final and may rest on an absence (no record, not provisioned by the
            # deadline): confirm it on the remote's newest commit, which alone can say that.
            view = self._view(key, fresh=True, application_hint=callback.application)
            verdict = decide(callback, self._facts(key, view, callback), self._delivery.now())
        return view, verdict

    # --- steps ----------------------------------------------------------------------------------

    def _view(self, key: ObjectKey, *, fresh: bool, application_hint: str = "") -> TenantView:
        def read(snapshot: Snapshot) -> TenantView:
            return tenant_view(snapshot, key.namespace, key.name, application_hint)

        view = self._snapshots.read(read, fresh=fresh)
        if not view.recorded and not fresh:
            view = self._snapshots.read(read, fresh=True)  # our clone may predate the record
        for problem in view.problems:
            log.warning("tenant %s: %s", key, problem)
        return view

    def _jobs(
        self, namespace: str, jobs: Sequence[ExpectedJob]
    ) -> list[tuple[ExpectedJob, KubeObject | None]]:
        return [(expected, self._kube.get(JOB, expected.name, namespace)) for expected in jobs]

    def _result(self, namespace: str, jobs: Sequence[ExpectedJob]) -> OperationResult:
        return operation_result(self._jobs(namespace, jobs))

    def _clear_earlier_outputs(self, key: ObjectKey, view: TenantView, jobs: Sequence[KubeObject]) -> None:
        """Once the operation's first Job exists, delete the CAPTenantOutputs of earlier operations,
        as CAP Operator deletes them when it creates an operation: its callback then carries only
        what this one produced (callbacks.delete_tenant_outputs)."""
        started = operation_started(jobs)
        if started is None or view.tenant is None or view.operation is None:
            return
        deleted = delete_tenant_outputs(
            self._kube, key.namespace, view.tenant.tenant_id, created_before=started
        )
        if deleted:
            log.info(
                "tenant %s: deleted CAPTenantOutput(s) %s of earlier operations, before its %s on %s",
                key,
                ", ".join(deleted),
                view.operation.operation.value,
                view.operation.version.name,
            )

    def _record(
        self, key: ObjectKey, view: TenantView, operation: PlannedOperation, result: OperationResult
    ) -> None:
        verb = "succeeded" if result.progress == Progress.SUCCEEDED else "failed"
        message = f"Tenant {key}: {operation.operation.value} on {operation.version.name} {verb}"
        if (
            self._on_deprovisioned is not None
            and operation.operation == TenantOperation.DEPROVISIONING
            and result.progress == Progress.SUCCEEDED
        ):
            self._on_deprovisioned(key, operation.version.name)
        commit = self._snapshots.write(
            _change_for(view, operation, result), message, self._settings.git_timeout
        )
        log.info(
            "%s (%s)%s", message, result.detail, f", commit {commit[:12]}" if commit else ", already recorded"
        )
        if result.job is not None:
            kind, reason = (
                (NORMAL, "TenantOperationSucceeded")
                if verb == "succeeded"
                else (WARNING, "TenantOperationFailed")
            )
            record_event(self._kube, result.job, kind, reason, f"{message}: {result.detail}; recorded in Git")

    def _facts(self, key: ObjectKey, view: TenantView, callback: PendingCallback) -> TenantFacts:
        failure = ""
        operation = view.operation
        # A failure counts once the record shows it: the callback never overtakes the Git write.
        if (
            operation is not None
            and operation.operation.value == callback.operation.value
            and view.status.state == FAILURE_STATES[operation.operation]
        ):
            result = self._result(key.namespace, view.jobs)
            if result.progress == Progress.FAILED:
                failure = result.detail
        return TenantFacts(recorded=view.recorded, status=view.status, failure=failure)
