"""The BtpOperator's status as BTP Manager reported it: a state and one `Ready` condition (pure).

States and reasons are those of BTP Manager's BtpOperator status
(https://github.com/kyma-project/btp-manager/tree/main/docs) that
still apply when the module is rendered into Git and applied by Argo CD or Flux:

    Ready       ReconcileSucceeded                      the operator Deployment is Available
    Processing  Initialized                             waiting for the GitOps tool's Deployment
    Deleting    HardDeleting, SoftDeleting              deprovisioning ServiceInstances/Bindings
    Warning     ServiceInstancesAndBindingsNotCleaned   deletion blocked (no `force-delete`)
    Warning     MissingSecret                           no `sap-btp-manager` Secret
    Warning     WrongNamespaceOrName                    not kyma-system/btpoperator (the render's
                                                        reason, README "The BTP operator module")
    Error       InvalidSecret                           keys or values missing in that Secret
    Error       ResourceRemovalFailed                   module objects could not all be deleted

The chart installation, consistency, ConfigMap and drift reasons of the table belong to work the
render does now (a broken chart fails the render, not the cluster), and `OlderCRExists` to a
multi-CR mode that BTP Manager itself dropped.

One deviation: `lastTransitionTime` changes when the condition's status *or reason* changes, not
only its status (all non-Ready reasons share status False). So the time a phase started is
readable from the live object, which is what lets a restarted controller keep the hard-delete
timeout instead of starting it again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from btp_gitops.generator.core import Problem

CONDITION_TYPE = "Ready"
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class State(StrEnum):
    READY = "Ready"
    PROCESSING = "Processing"
    WARNING = "Warning"
    ERROR = "Error"
    DELETING = "Deleting"


class Reason(StrEnum):
    RECONCILE_SUCCEEDED = "ReconcileSucceeded"
    INITIALIZED = "Initialized"
    HARD_DELETING = "HardDeleting"
    SOFT_DELETING = "SoftDeleting"
    NOT_CLEANED = "ServiceInstancesAndBindingsNotCleaned"
    MISSING_SECRET = "MissingSecret"
    WRONG_NAMESPACE_OR_NAME = "WrongNamespaceOrName"
    INVALID_SECRET = "InvalidSecret"
    RESOURCE_REMOVAL_FAILED = "ResourceRemovalFailed"


_STATE_OF_REASON = {
    Reason.RECONCILE_SUCCEEDED: State.READY,
    Reason.INITIALIZED: State.PROCESSING,
    Reason.HARD_DELETING: State.DELETING,
    Reason.SOFT_DELETING: State.DELETING,
    Reason.NOT_CLEANED: State.WARNING,
    Reason.MISSING_SECRET: State.WARNING,
    Reason.WRONG_NAMESPACE_OR_NAME: State.WARNING,
    Reason.INVALID_SECRET: State.ERROR,
    Reason.RESOURCE_REMOVAL_FAILED: State.ERROR,
}

# Event types by state: what a user should look at is a Warning.
_WARNING_STATES = frozenset({State.WARNING, State.ERROR})


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the status should say: the reason decides the state and the condition's status."""

    reason: Reason
    message: str

    @property
    def state(self) -> State:
        return _STATE_OF_REASON[self.reason]

    @property
    def ready(self) -> bool:
        return self.state is State.READY

    @property
    def event_type(self) -> str:
        return "Warning" if self.state in _WARNING_STATES else "Normal"


# --- messages (BTP Manager's wording where it had one) --------------------------------------------


def missing_secret(namespace: str, name: str) -> Verdict:
    return Verdict(Reason.MISSING_SECRET, f"{name} Secret in {namespace} namespace not found")


def invalid_secret(problems: tuple[Problem, ...]) -> Verdict:
    """The generator's checks of the required Secret, each problem without its file prefix.

    Problems name keys ("key(s) a, b not found", "missing value(s) for x key(s)"), never values.
    """
    parts = [f"{p.field_path}: {p.message}" if p.field_path else p.message for p in problems]
    return Verdict(Reason.INVALID_SECRET, "; ".join(parts))


def not_cleaned(instances: int, bindings: int) -> Verdict:
    return Verdict(
        Reason.NOT_CLEANED,
        "All service instances and bindings must be removed: "
        f"{instances} instance(s) and {bindings} binding(s)",
    )


def wrong_namespace_or_name(namespace: str, name: str) -> Verdict:
    return Verdict(
        Reason.WRONG_NAMESPACE_OR_NAME,
        f"only the BtpOperator {namespace}/{name} is reconciled; this one is ignored",
    )


def waiting_for_deployment(namespace: str, name: str, exists: bool) -> Verdict:
    if not exists:
        return Verdict(Reason.INITIALIZED, f"Deployment {namespace}/{name} not applied yet (GitOps sync)")
    return Verdict(Reason.INITIALIZED, f"waiting for Deployment {namespace}/{name} to become Available")


def reconcile_succeeded() -> Verdict:
    return Verdict(Reason.RECONCILE_SUCCEEDED, "Module reconciled successfully")


def hard_deleting() -> Verdict:
    return Verdict(Reason.HARD_DELETING, "Deleting all service bindings and instances")


def soft_deleting(why: str) -> Verdict:
    return Verdict(Reason.SOFT_DELETING, f"Hard delete failed ({why}); removing finalizers (soft delete)")


def resource_removal_failed(failures: list[str]) -> Verdict:
    shown = ", ".join(failures[:5]) + (f" and {len(failures) - 5} more" if len(failures) > 5 else "")
    return Verdict(
        Reason.RESOURCE_REMOVAL_FAILED,
        f"Some resources can still be present due to errors while deprovisioning: {shown}",
    )


# --- reading and building the status -------------------------------------------------------------


def format_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime(_TIME_FORMAT)


def parse_time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(text, _TIME_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        return None


def ready_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The object's `Ready` condition, if it has one."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == CONDITION_TYPE:
            return condition
    return None


def current_reason(obj: dict[str, Any]) -> str | None:
    condition = ready_condition(obj)
    return str(condition.get("reason")) if condition and condition.get("reason") else None


def reason_since(obj: dict[str, Any]) -> dt.datetime | None:
    """When the current reason was first recorded (its condition's lastTransitionTime)."""
    condition = ready_condition(obj)
    if condition is None:
        return None
    return parse_time(str(condition.get("lastTransitionTime") or ""))


def status_for(obj: dict[str, Any], verdict: Verdict, now: dt.datetime) -> dict[str, Any]:
    """The status to write for `verdict`: the previous transition time is kept while the
    condition's status and reason stay the same."""
    previous = ready_condition(obj)
    status = "True" if verdict.ready else "False"
    unchanged = previous is not None and (previous.get("status"), previous.get("reason")) == (
        status,
        verdict.reason.value,
    )
    since = str(previous["lastTransitionTime"]) if unchanged and previous else format_time(now)
    condition: dict[str, Any] = {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": verdict.reason.value,
        "message": verdict.message,
        "lastTransitionTime": since,
    }
    generation = (obj.get("metadata") or {}).get("generation")
    if isinstance(generation, int):
        condition["observedGeneration"] = generation
    return {"state": verdict.state.value, "conditions": [condition]}


def status_changes(obj: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether writing `wanted` would change what the object reports."""
    current = obj.get("status") or {}
    return bool(current.get("state") != wanted["state"] or current.get("conditions") != wanted["conditions"])
