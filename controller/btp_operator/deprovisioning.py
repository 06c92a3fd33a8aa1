"""Deprovisioning behind the BtpOperator's finalizer: BTP Manager's steps 1-11, from live state.

    not started ──(no instances/bindings, or label force-delete: "true")──> hard delete
         │ else: Warning ServiceInstancesAndBindingsNotCleaned, poll
    hard delete: delete every ServiceBinding, then every ServiceInstance, in all namespaces; the
         │       service operator clears their finalizers. Poll until none is left.
         │ timeout (20m from the HardDeleting transition) or a refused delete
         v
    soft delete: delete the operator Deployment and the webhook configurations (nothing may block
         │       or undo what follows), then per binding: delete its Secret, delete it, clear its
         │       finalizers; verify none left; the same for instances (no Secrets); verify.
         v
    module resources: delete every object labelled `app.kubernetes.io/managed-by=btp-manager` of
         │            every kind in `apply/`, `delete/` and the kinds the render adds; CRDs last.
         │            Any failure: Error ResourceRemovalFailed, retried.
         v
    release the finalizer: the BtpOperator goes away.

Which phase a reconcile is in is read from the status (the condition's reason, recorded before a
phase's first action), and when hard delete started from that condition's transition time; objects
that already carry a deletionTimestamp are not deleted again. So a controller killed anywhere
resumes at the same step, keeps the same deadline and issues nothing twice.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from btp_gitops.controller.btp_operator import status
from btp_gitops.controller.btp_operator.module_resources import (
    MODULE_SELECTOR,
    RENDER_ADDED_KINDS,
    deletion_order,
    load_module_resources,
)
from btp_gitops.controller.btp_operator.settings import FINALIZER, FORCE_DELETE_LABEL, BtpOperatorSettings
from btp_gitops.controller.errors import ControllerError, KubeRequestRefused, TemporaryError
from btp_gitops.controller.kube import (
    BTP_OPERATOR,
    DEPLOYMENT,
    JSON_PATCH,
    MUTATING_WEBHOOK,
    SECRET,
    SERVICE_BINDING,
    SERVICE_INSTANCE,
    VALIDATING_WEBHOOK,
    KubeClient,
    KubeObject,
    NotFound,
    Resource,
)
from btp_gitops.controller.runtime import DONE, Outcome
from btp_gitops.generator.domains.btp_operator import labels_on

log = logging.getLogger("btp_gitops.controller.btp_operator")

RecordStatus = Callable[[KubeObject, status.Verdict], KubeObject]
Clock = Callable[[], dt.datetime]


class Phase(Enum):
    NOT_STARTED = "not started"
    HARD_DELETE = "hard delete"
    SOFT_DELETE = "soft delete"
    REMOVAL = "module resource removal"


_PHASE_OF_REASON = {
    status.Reason.HARD_DELETING.value: Phase.HARD_DELETE,
    status.Reason.SOFT_DELETING.value: Phase.SOFT_DELETE,
    status.Reason.RESOURCE_REMOVAL_FAILED.value: Phase.REMOVAL,
}


def phase_of(obj: KubeObject) -> Phase:
    return _PHASE_OF_REASON.get(status.current_reason(obj) or "", Phase.NOT_STARTED)


def force_delete_requested(obj: KubeObject) -> bool:
    return labels_on(obj).get(FORCE_DELETE_LABEL) == "true"


def _meta(obj: KubeObject) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _terminating(obj: KubeObject) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _describe(resource: Resource, obj: KubeObject) -> str:
    namespace, name = _meta(obj)
    return resource.describe(namespace or None, name)


@dataclass(frozen=True, slots=True)
class Leftovers:
    """ServiceInstances and ServiceBindings still in the cluster, in every namespace."""

    instances: list[KubeObject]
    bindings: list[KubeObject]

    def __bool__(self) -> bool:
        return bool(self.instances or self.bindings)

    def counts(self) -> str:
        return f"{len(self.instances)} instance(s) and {len(self.bindings)} binding(s)"


class Deprovisioning:
    """One step of deprovisioning per call of `advance`, for a BtpOperator being deleted."""

    def __init__(
        self, kube: KubeClient, settings: BtpOperatorSettings, record: RecordStatus, clock: Clock
    ) -> None:
        self._kube = kube
        self._settings = settings
        self._record = record
        self._clock = clock

    def advance(self, obj: KubeObject) -> Outcome:
        where = _describe(BTP_OPERATOR, obj)
        leftovers = self._leftovers()
        phase = phase_of(obj)
        if phase is Phase.NOT_STARTED:
            if leftovers and not force_delete_requested(obj):
                log.info("%s: deletion blocked by %s (no %s)", where, leftovers.counts(), FORCE_DELETE_LABEL)
                self._record(obj, status.not_cleaned(len(leftovers.instances), len(leftovers.bindings)))
                return Outcome(requeue_after=self._settings.blocked_check_interval)
            log.info("%s: hard delete of %s started", where, leftovers.counts())
            obj = self._record(obj, status.hard_deleting())
            phase = Phase.HARD_DELETE
        if phase is Phase.HARD_DELETE and leftovers:
            waited_or_failure = self._hard_delete(obj, leftovers)
            if isinstance(waited_or_failure, Outcome):
                return waited_or_failure
            log.warning("%s: hard delete failed (%s): soft delete", where, waited_or_failure)
            obj = self._record(obj, status.soft_deleting(waited_or_failure))
            phase = Phase.SOFT_DELETE
        if phase is not Phase.HARD_DELETE and leftovers:
            self._soft_delete()
        self._remove_module_resources(obj)
        log.info("%s: deprovisioned; releasing finalizer %s", where, FINALIZER)
        self._kube.remove_finalizer(BTP_OPERATOR, obj, FINALIZER)
        return DONE

    # -- what is left

    def _list_everywhere(self, resource: Resource) -> list[KubeObject]:
        try:
            return self._kube.list(resource)
        except NotFound:  # the kind is not served (its CRD is gone): nothing of it is left
            return []

    def _leftovers(self) -> Leftovers:
        return Leftovers(self._list_everywhere(SERVICE_INSTANCE), self._list_everywhere(SERVICE_BINDING))

    # -- hard delete

    def _hard_delete(self, obj: KubeObject, leftovers: Leftovers) -> Outcome | str:
        """Issue the deletes not issued yet and poll; or why hard delete failed."""
        now = self._clock()
        started = status.reason_since(obj) or now
        elapsed = (now - started).total_seconds()
        timeout = self._settings.hard_delete_timeout
        if elapsed >= timeout:
            return f"{leftovers.counts()} left after {timeout:.0f}s"
        try:
            for binding in leftovers.bindings:
                self._delete_once(SERVICE_BINDING, binding)
            for instance in leftovers.instances:
                self._delete_once(SERVICE_INSTANCE, instance)
        except KubeRequestRefused as error:
            return error.message
        log.info("%s: waiting for %s to be deleted", _describe(BTP_OPERATOR, obj), leftovers.counts())
        return Outcome(requeue_after=min(self._settings.hard_delete_check_interval, timeout - elapsed))

    def _delete_once(self, resource: Resource, obj: KubeObject) -> None:
        if _terminating(obj):
            return
        namespace, name = _meta(obj)
        if self._kube.delete(resource, name, namespace or None):
            log.info("deleted %s", _describe(resource, obj))

    # -- soft delete

    def _soft_delete(self) -> None:
        """BTP Manager's steps 5-9; any failure is temporary: the next reconcile starts them again."""
        try:
            self._soft_delete_steps()
        except KubeRequestRefused as error:
            delay = self._settings.hard_delete_check_interval
            raise TemporaryError(f"soft delete: {error.message}", delay) from error

    def _soft_delete_steps(self) -> None:
        self._delete_operator()
        for binding in self._list_everywhere(SERVICE_BINDING):
            self._delete_binding_secret(binding)
            self._delete_without_finalizers(SERVICE_BINDING, binding)
        self._verify_none_left(SERVICE_BINDING)
        for instance in self._list_everywhere(SERVICE_INSTANCE):
            self._delete_without_finalizers(SERVICE_INSTANCE, instance)
        self._verify_none_left(SERVICE_INSTANCE)

    def _delete_operator(self) -> None:
        """Without the operator and its webhooks nothing re-adds a finalizer or refuses the patches."""
        namespace, name = self._settings.namespace, self._settings.operator_deployment
        if self._kube.delete(DEPLOYMENT, name, namespace):
            log.info("soft delete: deleted Deployment %s/%s", namespace, name)
        for resource in (MUTATING_WEBHOOK, VALIDATING_WEBHOOK):
            for webhook in self._kube.list(resource, label_selector=MODULE_SELECTOR):
                self._delete_once(resource, webhook)

    def _delete_binding_secret(self, binding: KubeObject) -> None:
        namespace, name = _meta(binding)
        secret = str((binding.get("spec") or {}).get("secretName") or name)
        if self._kube.delete(SECRET, secret, namespace):
            log.info("soft delete: deleted Secret %s/%s of ServiceBinding %s", namespace, secret, name)

    def _delete_without_finalizers(self, resource: Resource, obj: KubeObject) -> None:
        self._delete_once(resource, obj)
        finalizers = (obj.get("metadata") or {}).get("finalizers") or []
        if not finalizers:
            return
        namespace, name = _meta(obj)
        # Guarded by a test of the list as read: a finalizer added meanwhile fails the patch (422).
        patch = [
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "remove", "path": "/metadata/finalizers"},
        ]
        try:
            self._kube.patch(resource, name, patch, namespace or None, content_type=JSON_PATCH)
        except NotFound:
            return
        except KubeRequestRefused as error:
            message = f"soft delete: cannot clear finalizers of {_describe(resource, obj)}: {error.message}"
            raise TemporaryError(message) from error
        log.info("soft delete: cleared finalizers %s of %s", ", ".join(finalizers), _describe(resource, obj))

    def _verify_none_left(self, resource: Resource) -> None:
        left = self._list_everywhere(resource)
        if left:
            message = f"soft delete: {len(left)} {resource.kind}(s) still present"
            raise TemporaryError(message, self._settings.hard_delete_check_interval)

    # -- module resources

    def _remove_module_resources(self, obj: KubeObject) -> None:
        module = load_module_resources(self._settings.module_resources_dir)
        failures: list[str] = []
        for resource in deletion_order((*RENDER_ADDED_KINDS, *module.kinds)):
            try:
                objects = self._kube.list(resource, label_selector=MODULE_SELECTOR)
            except NotFound:
                continue  # the kind is not served in this cluster
            except ControllerError as error:
                failures.append(f"list {resource.plural}: {error.message}")
                continue
            for item in objects:
                try:
                    self._delete_once(resource, item)
                except ControllerError as error:
                    failures.append(_describe(resource, item))
                    log.warning("module resource removal: %s", error.message)
        if failures:
            self._record(obj, status.resource_removal_failed(failures))
            raise TemporaryError(f"{len(failures)} module resource(s) could not be deleted", 5.0)
