"""Pending subscription callbacks: what to report for a tenant's operation, and delivering it.

A pending callback is the ConfigMap `btp-gitops-callback-<tenant>-<operation>` the subscription
server opens when it records a subscribe or unsubscribe (controller.clients.cluster_side): the
callback path, the deadline, the subscription URL and the operation the caller waits for. A tenant
may owe one callback per operation at once (a subscribe's, undelivered, then an unsubscribe's);
the one-per-tenant `btp-gitops-callback-<tenant>` of earlier releases is still read and delivered.
Its life:

    open ──verdict──> decided ──attempt stored, PUT answered 2xx──> deleted
                        │  PUT failed: retried after a backoff
                        └─ attempts exhausted: labelled `btp-gitops.io/pending-callback: failed`,
                           a Warning Event, and kept for people to look at (relabel "true" to retry)

A tenant's callbacks go out in the order they were opened: one whose verdict is stored but not yet
delivered (waiting for its next attempt) holds back the later ones, whose verdicts are still
stored when reached. One without a verdict holds nothing back: its own outcome cannot be known
before the later one's (an unsubscribe before the provisioning ended) and it may wait for its
deadline.

Verdicts, CAP Operator's messages (`decide`):

    provisioning     SUCCEEDED once the tenant's record says it runs on a version; FAILED once the
                     record says ProvisioningError
    deprovisioning   SUCCEEDED once the record is gone (removed after its deprovisioning
                     completed) or records the deprovisioning; FAILED when its Jobs failed
    either           FAILED at the deadline (`callbackTimeoutMillis`) when neither came

The record is read from Git after the outcome was recorded there, so a SUCCEEDED callback never
overtakes the Git write that makes it true. The verdict is stored on the ConfigMap (annotation
`btp-gitops.io/callback-delivery`) before the first attempt, so every retry, also after a restart,
reports the same thing even if the tenant changed meanwhile (a late success after a FAILED at the
deadline). The stored state carries a fingerprint of the callback it belongs to: when the server
opens a new callback under the same name (a repeated subscribe), the old state is ignored.

Delivery is at least once: the PUT and the ConfigMap's deletion cannot be one step, so a crash
between them sends the callback again after the restart (the SaaS registry takes a repeated
status of an operation). Marking "sent" before the PUT instead would lose the callback on a crash.
Each attempt is counted on the ConfigMap (with the time of the next one) before its PUT, never
after: a crash after the PUT then loses at most the knowledge of how that attempt went, and the
number of PUTs never exceeds `max_attempts` (an attempt that was stored but whose outcome is
unknown counts as made).

`additionalOutput` (provisioning only, as CAP Operator sends it): the CAPApplication's
`sme.sap.com/saas-additional-output` annotation, a JSON object, and over it, key by key, the
`spec.subscriptionCallbackData` (a JSON object) of every CAPTenantOutput in the tenant's namespace
labelled `sme.sap.com/btp-tenant-id: <tenant id>`, in the order of their names (a later one wins a
key), when the provisioning SUCCEEDED: what an onboarding produced is reported with it. What is
not a JSON object is left out with a warning naming where it is (CAP Operator's docs show
`{foo: bar}`, a YAML flow mapping: that is read too). Without the CAPTenantOutput CRD in the
cluster there are none. Before each operation of a tenant its earlier CAPTenantOutputs are
deleted, as CAP Operator deletes them before it creates a CAPTenantOperation
(`delete_tenant_outputs`; when: tenant_operations and deletion), so that a callback carries only
what its own operation produced. `subscriptionUrl` (`applicationUrl` for the subscription manager)
is the callback's `appUrl`. No token, client secret or payload is ever logged.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from btp_gitops.controller.clients.cluster_side import PENDING_CALLBACK_LABEL, Operation, rfc3339
from btp_gitops.controller.clients.credentials import (
    CredentialReader,
    CredentialsUnavailable,
    ServiceNotBound,
)
from btp_gitops.controller.clients.saas_client import (
    CallbackFailed,
    CallbackStatus,
    CallbackTarget,
    SaasCallbackClient,
)
from btp_gitops.controller.clients.targets import AppTarget, ServiceRef
from btp_gitops.controller.errors import ConfigurationError, ControllerError, PermanentError
from btp_gitops.controller.events import NORMAL, WARNING, record_event
from btp_gitops.controller.kube import (
    CAP_TENANT_OUTPUT,
    CONFIG_MAP,
    Conflict,
    KubeClient,
    KubeObject,
    NotFound,
)
from btp_gitops.controller.records import ApplicationRecord
from btp_gitops.generator.domains.cap import TenantOperation, TenantState, TenantStatus

log = logging.getLogger("btp_gitops.controller.cap.callbacks")

DELIVERY_ANNOTATION = "btp-gitops.io/callback-delivery"
ADDITIONAL_OUTPUT_ANNOTATION = "sme.sap.com/saas-additional-output"
TENANT_ID_LABEL = "sme.sap.com/btp-tenant-id"
PENDING = "true"
ABANDONED = "failed"
SUBSCRIPTION_MANAGER = "SMS"

# CAP Operator's callback messages; a failure gets its reason appended.
MESSAGES = {
    (Operation.PROVISIONING, True): "Provisioning successful",
    (Operation.PROVISIONING, False): "Provisioning failed",
    (Operation.DEPROVISIONING, True): "Deprovisioning successful",
    (Operation.DEPROVISIONING, False): "Deprovisioning failed",
}

# What keeps one attempt from delivering: counted, backed off, finally given up. A cluster that
# does not answer (KubeUnavailable) is not the callback's fault: the runtime retries that.
_DELIVERY_ERRORS = (
    CallbackFailed,
    CredentialsUnavailable,
    ServiceNotBound,
    ConfigurationError,
    PermanentError,
)


_DELETE_ATTEMPTS = 3


class InvalidCallback(PermanentError):
    """A pending-callback ConfigMap that lacks what a callback needs; it is set aside, not retried."""

    reason = "InvalidCallback"


@dataclass(frozen=True, slots=True)
class CallbackSettings:
    max_attempts: int = 10
    backoff_initial: float = 10.0  # seconds before the second attempt, doubled per attempt
    backoff_max: float = 900.0


@dataclass(frozen=True, slots=True)
class Verdict:
    succeeded: bool
    message: str


@dataclass(frozen=True, slots=True)
class DeliveryState:
    """What is stored on the ConfigMap once a verdict is reached."""

    fingerprint: str
    verdict: Verdict
    attempts: int = 0
    retry_at: dt.datetime | None = None
    last_error: str = ""

    def encode(self) -> str:
        return json.dumps(
            {
                "for": self.fingerprint,
                "status": "SUCCEEDED" if self.verdict.succeeded else "FAILED",
                "message": self.verdict.message,
                "attempts": self.attempts,
                "retryAt": self.retry_at.astimezone(dt.UTC).isoformat() if self.retry_at else "",
                "lastError": self.last_error,
            },
            sort_keys=True,
        )

    @classmethod
    def decode(cls, text: str) -> DeliveryState | None:
        """None for anything unreadable: the verdict is then reached again."""
        try:
            data = json.loads(text)
            retry_at = parse_time(data["retryAt"]) if data.get("retryAt") else None
            verdict = Verdict(data["status"] == "SUCCEEDED", str(data["message"]))
            return cls(
                str(data["for"]), verdict, int(data["attempts"]), retry_at, str(data.get("lastError", ""))
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def parse_time(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class PendingCallback:
    """A pending-callback ConfigMap, read."""

    namespace: str
    config_map: str
    tenant_name: str
    tenant_id: str
    operation: Operation
    callback_path: str
    deadline: dt.datetime
    app_url: str
    application: str
    subscription_type: str
    state: DeliveryState | None  # None until a verdict is stored for this very callback
    opened_at: dt.datetime | None = None  # None for the one-per-tenant ConfigMap of old releases

    @property
    def fingerprint(self) -> str:
        parts = (self.operation.value, self.tenant_id, self.callback_path, rfc3339(self.deadline))
        return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]

    @classmethod
    def of(cls, obj: KubeObject) -> PendingCallback:
        meta = obj.get("metadata") or {}
        data: Mapping[str, str] = obj.get("data") or {}
        where = f"ConfigMap {meta.get('namespace')}/{meta.get('name')}"
        missing = [k for k in ("operation", "tenantName", "callbackPath", "deadline") if not data.get(k)]
        if missing:
            raise InvalidCallback(f"{where} lacks {', '.join(missing)}")
        try:
            operation, deadline = Operation(data["operation"]), parse_time(data["deadline"])
        except ValueError as error:
            raise InvalidCallback(f"{where}: operation or deadline is not readable") from error
        callback = cls(
            namespace=str(meta.get("namespace") or ""),
            config_map=str(meta.get("name") or ""),
            tenant_name=data["tenantName"],
            tenant_id=data.get("tenantId", ""),
            operation=operation,
            callback_path=data["callbackPath"],
            deadline=deadline,
            app_url=data.get("appUrl", ""),
            application=data.get("application", ""),
            subscription_type=data.get("subscriptionType", ""),
            state=None,
            opened_at=_opened_at(data.get("openedAt", "")),
        )
        stored = DeliveryState.decode((meta.get("annotations") or {}).get(DELIVERY_ANNOTATION, ""))
        if stored is not None and stored.fingerprint == callback.fingerprint:
            callback = replace(callback, state=stored)
        return callback

    def describe(self) -> str:
        return f"{self.operation.value} callback of tenant {self.namespace}/{self.tenant_name}"

    @property
    def order(self) -> dt.datetime:
        """When it was opened; an old-format ConfigMap (no `openedAt`) predates every new one."""
        return self.opened_at or dt.datetime.min.replace(tzinfo=dt.UTC)


def _opened_at(text: str) -> dt.datetime | None:
    # Only an order is read from it: a value that cannot be read sorts first, like an old one.
    try:
        return parse_time(text) if text else None
    except ValueError:
        return None


def is_pending(obj: KubeObject | None) -> bool:
    return (
        obj is not None
        and ((obj.get("metadata") or {}).get("labels") or {}).get(PENDING_CALLBACK_LABEL) == PENDING
    )


@dataclass(frozen=True, slots=True)
class TenantFacts:
    """What the source tree (and the tenant's Jobs) say about the tenant a callback waits for."""

    recorded: bool  # a record of the tenant (or its derived provider) is in the tree
    status: TenantStatus
    failure: str = ""  # why the operation the callback waits for failed, from its Jobs ("" if not)


def _provisioned(status: TenantStatus) -> bool:
    done = status.last_completed
    return bool(status.current_instance) and not (done and done.operation == TenantOperation.DEPROVISIONING)


def _deprovisioned(facts: TenantFacts) -> bool:
    done = facts.status.last_completed
    return not facts.recorded or (done is not None and done.operation == TenantOperation.DEPROVISIONING)


def _failed(operation: Operation, reason: str) -> Verdict:
    base = MESSAGES[(operation, False)]
    return Verdict(False, f"{base}: {reason}" if reason else base)


def decide(callback: PendingCallback, facts: TenantFacts, now: dt.datetime) -> Verdict | None:
    """The callback's verdict, or None while the tenant's operation may still end either way."""
    operation = callback.operation
    if operation == Operation.PROVISIONING:
        if facts.recorded and _provisioned(facts.status):
            return Verdict(True, MESSAGES[(operation, True)])
        if facts.recorded and facts.status.state == TenantState.PROVISIONING_ERROR:
            return _failed(operation, facts.failure)
    else:
        if _deprovisioned(facts):
            return Verdict(True, MESSAGES[(operation, True)])
        if facts.failure:
            return _failed(operation, facts.failure)
    if now >= callback.deadline:
        return _failed(operation, f"not completed by the deadline {rfc3339(callback.deadline)}")
    return None


def app_target(app: ApplicationRecord) -> AppTarget:
    """The application as the credential reader and the SaaS client know it."""
    return AppTarget(
        namespace=app.namespace,
        name=app.name,
        btp_app_name=app.btp_app_name,
        provider_subaccount_id=app.provider_subaccount_id,
        identifier_hash=app.identifier_hash,
        services=tuple(ServiceRef(s.name, s.secret, s.service_class) for s in app.services),
        annotations=dict(app.annotations),
    )


def additional_output(app: ApplicationRecord) -> dict[str, Any] | None:
    text = app.annotations.get(ADDITIONAL_OUTPUT_ANNOTATION)
    if not text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        log.warning(
            "CAPApplication %s/%s: %s is not a JSON object; the callback goes without additionalOutput",
            app.namespace,
            app.name,
            ADDITIONAL_OUTPUT_ANNOTATION,
        )
        return None
    return value


def _json_object(text: str) -> dict[str, Any] | None:
    """A JSON object, or a YAML flow mapping of plain values (`{foo: bar}`), else None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        try:
            value = yaml.safe_load(text)
            json.dumps(value)  # only what JSON can carry (no dates, no binary)
        except (yaml.YAMLError, TypeError, ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def tenant_outputs(kube: KubeClient, namespace: str, tenant_id: str) -> dict[str, Any]:
    """The merged `subscriptionCallbackData` of the tenant's CAPTenantOutputs, by name."""
    if not tenant_id:
        return {}
    try:
        found = kube.list(CAP_TENANT_OUTPUT, namespace, label_selector=f"{TENANT_ID_LABEL}={tenant_id}")
    except NotFound:  # the CRD is not installed: nobody can have created one
        return {}
    merged: dict[str, Any] = {}
    for output in sorted(found, key=lambda o: str((o.get("metadata") or {}).get("name", ""))):
        name = (output.get("metadata") or {}).get("name")
        text = (output.get("spec") or {}).get("subscriptionCallbackData")
        if text in (None, ""):
            continue
        value = _json_object(text) if isinstance(text, str) else None
        if value is None:
            log.warning(
                "CAPTenantOutput %s/%s: spec.subscriptionCallbackData is not a JSON object; left out of "
                "the callback's additionalOutput",
                namespace,
                name,
            )
            continue
        merged.update(value)
    return merged


def _created(obj: KubeObject) -> dt.datetime | None:
    text = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        return dt.datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def delete_tenant_outputs(
    kube: KubeClient, namespace: str, tenant_id: str, *, created_before: dt.datetime | None = None
) -> list[str]:
    """Delete the tenant's CAPTenantOutputs (label `sme.sap.com/btp-tenant-id`) before one of its
    operations starts, as CAP Operator does, so that a callback carries only what that operation
    produced: every one, or with `created_before` (the operation's first Job) those created
    earlier. The API server stamps creation to the second: an output of the same second as the
    Job is kept, taken for the operation's own. Names of the deleted ones, in order."""
    if not tenant_id:
        return []
    try:
        found = kube.list(CAP_TENANT_OUTPUT, namespace, label_selector=f"{TENANT_ID_LABEL}={tenant_id}")
    except NotFound:  # the CRD is not installed: nobody can have created one
        return []
    deleted: list[str] = []
    for output in sorted(found, key=lambda o: str((o.get("metadata") or {}).get("name", ""))):
        created = _created(output)
        if created_before is not None and (created is None or created >= created_before):
            continue
        name = str((output.get("metadata") or {}).get("name", ""))
        try:
            gone = kube.delete(CAP_TENANT_OUTPUT, name, namespace, preconditions=output)
        except Conflict:  # replaced since it was read: a new one, not an earlier operation's
            continue
        if gone:
            deleted.append(name)
    return deleted


def operation_started(jobs: Iterable[KubeObject]) -> dt.datetime | None:
    """When an operation started: the creation of its earliest Job (None without any)."""
    times = [t for t in (_created(job) for job in jobs) if t is not None]
    return min(times) if times else None


def _uid(obj: KubeObject) -> object:
    return (obj.get("metadata") or {}).get("uid")


def _fingerprint(obj: KubeObject) -> str | None:
    """The fingerprint of the callback `obj` holds; None when it cannot be read."""
    try:
        return PendingCallback.of(obj).fingerprint
    except InvalidCallback:
        return None


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CallbackDelivery:
    """Stores verdicts on pending callbacks and sends them, with bounded retries."""

    def __init__(
        self,
        kube: KubeClient,
        settings: CallbackSettings = CallbackSettings(),
        *,
        client: SaasCallbackClient | None = None,
        count_callback: Callable[[str], None] | None = None,
        clock: Callable[[], dt.datetime] = _utcnow,
    ) -> None:
        self._kube = kube
        self._settings = settings
        self._client = client or SaasCallbackClient()
        self._credentials = CredentialReader(kube)
        self._count = count_callback
        self._clock = clock

    def now(self) -> dt.datetime:
        return self._clock()

    def settle(
        self, callback: PendingCallback, verdict: Verdict | None, app: ApplicationRecord | None
    ) -> float | None:
        """Store `verdict` (unless one is stored) and deliver it when due. The seconds until this
        callback needs another look, or None when it is done with (sent, or given up)."""
        now = self.now()
        state = callback.state
        if state is None:
            if verdict is None:
                return max((callback.deadline - now).total_seconds(), 0.0) + 1.0
            # Not stored on its own: the attempt below stores it together with its count.
            state = DeliveryState(callback.fingerprint, verdict)
            log.info("%s: %s (%s)", callback.describe(), _status(verdict), verdict.message)
        if state.retry_at is not None and state.retry_at > now:
            return (state.retry_at - now).total_seconds()
        if state.attempts >= self._settings.max_attempts:
            # The last attempt was stored but how it went was not (the process stopped during its
            # PUT): it counts as made, and no attempt beyond the limit is sent.
            self._give_up(callback, state, state.last_error or "the outcome of the last attempt is unknown")
            return None
        attempts = state.attempts + 1
        started = replace(
            state, attempts=attempts, retry_at=now + dt.timedelta(seconds=self._backoff(attempts))
        )
        if not self._store(callback, started):
            return None
        try:
            self._send(callback, state.verdict, app)
        except _DELIVERY_ERRORS as error:
            return self._attempt_failed(callback, started, error)
        self._sent(callback, state.verdict)
        return None

    def hold(self, callback: PendingCallback, verdict: Verdict | None) -> None:
        """Store `verdict` (unless one is stored) without sending: an earlier callback of the tenant
        is still to be delivered. Stored now, so the verdict is the one reached now, not a FAILED
        at a deadline that passes while the earlier one is retried."""
        if callback.state is not None or verdict is None:
            return
        if self._store(callback, DeliveryState(callback.fingerprint, verdict)):
            log.info(
                "%s: %s (%s), waiting for an earlier callback",
                callback.describe(),
                _status(verdict),
                verdict.message,
            )

    def set_aside(self, obj: KubeObject, error: ControllerError) -> None:
        """A pending callback that cannot be read: labelled failed, with a Warning Event."""
        meta = obj.get("metadata") or {}
        log.error(
            "pending callback %s/%s set aside: %s", meta.get("namespace"), meta.get("name"), error.message
        )
        uid = meta.get("uid")
        # Only the very ConfigMap that could not be read: one the server opened under its name
        # since (a new subscription) is a new callback, owed its own delivery.
        self._abandon(
            str(meta.get("namespace")), str(meta.get("name")), {}, lambda current: _uid(current) == uid
        )
        record_event(self._kube, obj, WARNING, "CallbackInvalid", error.message)

    # --- delivery -------------------------------------------------------------------------------

    def _send(self, callback: PendingCallback, verdict: Verdict, app: ApplicationRecord | None) -> None:
        if app is None:
            raise PermanentError(
                f"CAPApplication {callback.namespace}/{callback.application} is not in the source "
                "repository: its credentials cannot be found"
            )
        target_app = app_target(app)
        if callback.subscription_type == SUBSCRIPTION_MANAGER:
            target = CallbackTarget.of_subscription_manager(
                self._credentials.subscription_manager(target_app)
            )
        else:
            target = CallbackTarget.of_saas_registry(self._credentials.saas_registry(target_app))
        output = None
        if callback.operation == Operation.PROVISIONING:
            base = additional_output(app)
            # what the tenant's operation produced: only an onboarded tenant has any to report
            extra = (
                tenant_outputs(self._kube, callback.namespace, callback.tenant_id)
                if verdict.succeeded
                else {}
            )
            output = {**(base or {}), **extra} if base is not None or extra else None
        status = CallbackStatus(verdict.succeeded, verdict.message, callback.app_url, output)
        self._client.send_status(target, callback.callback_path, status)

    def _sent(self, callback: PendingCallback, verdict: Verdict) -> None:
        log.info("%s: %s delivered", callback.describe(), _status(verdict))
        self._counted("succeeded" if verdict.succeeded else "failed")
        current = self._kube.get(CONFIG_MAP, callback.config_map, callback.namespace)
        if current is None:
            return
        record_event(self._kube, current, NORMAL, "CallbackSent", f"{_status(verdict)}: {verdict.message}")
        # Only this callback goes: a new one the server opened under the same name meanwhile stays.
        # The delete is conditional on the version just checked, so one opened between the check
        # and the delete survives too (Conflict: look again).
        for _ in range(_DELETE_ATTEMPTS):
            if current is None or not is_pending(current):
                return
            if PendingCallback.of(current).fingerprint != callback.fingerprint:
                return
            try:
                self._kube.delete(CONFIG_MAP, callback.config_map, callback.namespace, preconditions=current)
                return
            except Conflict:
                current = self._kube.get(CONFIG_MAP, callback.config_map, callback.namespace)

    def _attempt_failed(
        self, callback: PendingCallback, started: DeliveryState, error: ControllerError
    ) -> float | None:
        """`started`: the attempt that failed, already counted on the ConfigMap."""
        self._counted("error")
        attempts = started.attempts
        if attempts >= self._settings.max_attempts:
            self._give_up(callback, started, error.message)
            return None
        delay = self._backoff(attempts)
        log.warning(
            "%s: attempt %d failed (%s); next attempt in %.1fs",
            callback.describe(),
            attempts,
            error.message,
            delay,
        )
        # The backoff counts from the failure, not from the start of the attempt stored before it.
        retry_at = self.now() + dt.timedelta(seconds=delay)
        if not self._store(callback, replace(started, retry_at=retry_at, last_error=error.message)):
            return None
        self._event(callback, WARNING, "CallbackFailed", f"attempt {attempts}: {error.message}")
        return delay

    def _give_up(self, callback: PendingCallback, state: DeliveryState, reason: str) -> None:
        attempts = state.attempts
        log.error("%s: given up after %d attempts: %s", callback.describe(), attempts, reason)
        abandoned = replace(state, retry_at=None, last_error=reason)
        # Only this callback is given up: the server may have replaced the ConfigMap with a new one
        # (a new subscription, a new deadline) while the last attempt was being sent.
        self._abandon(
            callback.namespace,
            callback.config_map,
            {DELIVERY_ANNOTATION: abandoned.encode()},
            lambda current: _fingerprint(current) == callback.fingerprint,
        )
        self._event(callback, WARNING, "CallbackAbandoned", f"given up after {attempts} attempts: {reason}")

    def _backoff(self, attempts: int) -> float:
        """Seconds after attempt number `attempts` before the next one."""
        return float(min(self._settings.backoff_max, self._settings.backoff_initial * 2 ** (attempts - 1)))

    # --- the ConfigMap --------------------------------------------------------------------------

    def _store(self, callback: PendingCallback, state: DeliveryState) -> bool:
        """False when the ConfigMap is gone (withdrawn by the server): nothing is owed any more."""
        patch = {"metadata": {"annotations": {DELIVERY_ANNOTATION: state.encode()}}}
        try:
            self._kube.patch(CONFIG_MAP, callback.config_map, patch, callback.namespace)
        except NotFound:
            log.info("%s: withdrawn meanwhile", callback.describe())
            return False
        return True

    def _abandon(
        self,
        namespace: str,
        name: str,
        annotations: dict[str, str],
        is_ours: Callable[[KubeObject], bool],
    ) -> None:
        """Label the pending ConfigMap failed, when it still is the one `is_ours` recognises. The
        patch carries the resourceVersion just checked, so a ConfigMap replaced between the check
        and the patch is left alone too (Conflict: look again)."""
        for _ in range(_DELETE_ATTEMPTS):
            current = self._kube.get(CONFIG_MAP, name, namespace)
            if current is None or not is_pending(current) or not is_ours(current):
                return
            version = (current.get("metadata") or {}).get("resourceVersion")
            patch: dict[str, Any] = {
                "metadata": {"labels": {PENDING_CALLBACK_LABEL: ABANDONED}, "resourceVersion": version}
            }
            if annotations:
                patch["metadata"]["annotations"] = annotations
            try:
                self._kube.patch(CONFIG_MAP, name, patch, namespace)
                return
            except NotFound:
                return
            except Conflict:
                continue

    def _event(self, callback: PendingCallback, kind: str, reason: str, message: str) -> None:
        current = self._kube.get(CONFIG_MAP, callback.config_map, callback.namespace)
        if current is not None:
            record_event(self._kube, current, kind, reason, message)

    def _counted(self, outcome: str) -> None:
        if self._count is not None:
            self._count(outcome)


def _status(verdict: Verdict) -> str:
    return "SUCCEEDED" if verdict.succeeded else "FAILED"
