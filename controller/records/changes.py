"""The change set: every edit the subscription server and the controller make to CAPTenant records
and CAPApplicationVersions, as `TreeChange`s (controller.gitstore).

Each change is a pure function of the tree: it looks its record up anew in the index each time it
is applied (records.index), edits through the one editor (records.editor: only its document is
rewritten, in the generator's YAML style), and returns None when the record already says what it
should, so applying it twice changes nothing. The record format is the README's ("CAP tenants");
a new record goes to `<directory of its CAPApplication's file>/tenants/<tenant>.yaml`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.controller.errors import PermanentError
from btp_gitops.controller.gitstore import TreeChange
from btp_gitops.controller.records.editor import (
    DocumentRef,
    edit_document,
    remove_document,
    write_new_document,
)
from btp_gitops.controller.records.index import SourceIndex
from btp_gitops.controller.records.tree_records import ApplicationRecord, TenantRecord
from btp_gitops.generator.domains.cap import (
    API_VERSION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    DEPROVISION_ANNOTATION,
    PREFIX,
    PROVIDER_SUFFIX,
    SUBSCRIPTION_CONTEXT_ANNOTATION,
    SUBSCRIPTION_GUID,
    TenantOperation,
    TenantState,
    sha1_hex,
)

# CAP Operator's annotation for the subscribing global account.
GLOBAL_ACCOUNT_ANNOTATION = f"{PREFIX}global-account-id"
TENANTS_DIRECTORY = "tenants"
MAX_TENANT_NAME = 63
# CAP Operator's default bound on status.previousCAPApplicationVersions (MAX_TENANT_VERSION_HISTORY):
# past it, the oldest entry goes as a new one is appended. Every entry still in the sources keeps
# its version-affinity routes, so the record keeps what CAP Operator keeps.
MAX_TENANT_VERSION_HISTORY = 10

_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$")


# --- names and places --------------------------------------------------------------------------------


def consumer_tenant_name(application: str, tenant_id: str) -> str:
    """`<application>-consumer-<8 hex of sha1(tenant_id)>`, at most 63 characters.

    Derived from the tenant id alone (never from the subdomain, which a subaccount may change) so
    that the same tenant always gets the same record: a subscription callback the SaaS registry
    repeats, or one applied again after a rejected push, finds the record it wrote rather than
    writing a second one. Tenant ids may hold capitals and underscores, so they are hashed, not
    copied; the application's name is a DNS-1123 name, and cutting it (at most 63 characters keep
    the names derived from the tenant's, such as its VirtualService and Jobs, within Kubernetes'
    limits) and dropping trailing `-`/`.` keeps the whole a valid DNS-1123 name.
    """
    suffix = f"-consumer-{sha1_hex(tenant_id)[:8]}"
    head = application[: MAX_TENANT_NAME - len(suffix)].rstrip("-.")
    return f"{head}{suffix}"


def record_path(app: ApplicationRecord, tenant_name: str) -> Path:
    """Where a new record of `app`'s tenant goes, relative to the tree root."""
    return app.path.parent / TENANTS_DIRECTORY / f"{tenant_name}.yaml"


def _tenant_ref(record: TenantRecord) -> DocumentRef:
    return DocumentRef(record.path, CAP_TENANT, record.namespace, record.name)


def _metadata_map(body: dict[str, Any], field: str) -> dict[str, Any]:
    metadata = body.setdefault("metadata", {})
    if not isinstance(metadata.get(field), dict):
        metadata[field] = {}
    value: dict[str, Any] = metadata[field]
    return value


def _drop_empty_metadata_map(body: dict[str, Any], field: str) -> None:
    if not body["metadata"].get(field):
        body["metadata"].pop(field, None)


# --- subscribe and unsubscribe -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a subscribe request records."""

    namespace: str
    application: str  # the CAPApplication's name
    tenant_id: str
    sub_domain: str
    subscription_guid: str
    global_account_id: str
    subscription_context_secret: str  # name of the cluster Secret holding the payload (never the payload)


def _tenant_application(index: SourceIndex, namespace: str, application: str) -> ApplicationRecord:
    app = index.application(namespace, application)
    if app is None:
        raise PermanentError(f"no CAPApplication {namespace}/{application} in the source repository")
    if index.services_only(app):
        raise PermanentError(f"CAPApplication {namespace}/{application} is services-only: it has no tenants")
    return app


def _check_subscription(subscription: Subscription, app: ApplicationRecord) -> None:
    """Values that would make a record the render refuses, or a label Kubernetes refuses."""
    if subscription.subscription_guid and not _LABEL_VALUE.match(subscription.subscription_guid):
        raise PermanentError(
            f"subscription GUID {subscription.subscription_guid!r} is not a valid label value"
        )
    secret = subscription.subscription_context_secret
    if secret and not _DNS_SUBDOMAIN.match(secret):
        raise PermanentError(f"subscription context Secret name {secret!r} is not a valid object name")


class SubdomainTaken(PermanentError):
    """The subdomain is another tenant's (or the provider's) of the same application: a conflict."""

    reason = "SubdomainTaken"


def _check_subdomain_free(subscription: Subscription, app: ApplicationRecord, index: SourceIndex) -> None:
    """A subdomain is one host per domain, so one tenant of the application: a second would make
    the render refuse the whole application, every other tenant with it."""
    wanted = subscription.sub_domain
    # The provider holds `spec.provider.subDomain` until its record says otherwise (a record's
    # subdomain wins, as in CAP Operator: the provider may move, freeing the old one).
    provider_derived = (
        app.has_provider and index.tenant(app.namespace, app.name, app.provider_tenant_id) is None
    )
    if (
        subscription.tenant_id != app.provider_tenant_id
        and provider_derived
        and wanted == app.provider_sub_domain
    ):
        raise SubdomainTaken(f"subdomain {wanted} is CAPApplication {app.namespace}/{app.name}'s provider's")
    for other in index.tenants_with_subdomain(app.namespace, app.name, wanted):
        if other.tenant_id != subscription.tenant_id:
            raise SubdomainTaken(f"subdomain {wanted} is taken by CAPTenant {other.namespace}/{other.name}")


def _apply_subscription(body: dict[str, Any], subscription: Subscription) -> None:
    """The fields a subscribe owns; a re-subscribe also calls off a pending deprovisioning mark."""
    body["spec"]["subDomain"] = subscription.sub_domain
    labels = _metadata_map(body, "labels")
    if subscription.subscription_guid:
        labels[SUBSCRIPTION_GUID] = subscription.subscription_guid
    annotations = _metadata_map(body, "annotations")
    if subscription.subscription_guid:  # CAP Operator sets the GUID as a label and an annotation
        annotations[SUBSCRIPTION_GUID] = subscription.subscription_guid
    if subscription.subscription_context_secret:
        annotations[SUBSCRIPTION_CONTEXT_ANNOTATION] = subscription.subscription_context_secret
    if subscription.global_account_id:
        annotations[GLOBAL_ACCOUNT_ANNOTATION] = subscription.global_account_id
    annotations.pop(DEPROVISION_ANNOTATION, None)
    _drop_empty_metadata_map(body, "labels")
    _drop_empty_metadata_map(body, "annotations")


def _new_record(
    namespace: str, name: str, application: str, tenant_id: str, sub_domain: str
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": CAP_TENANT[1],
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"capApplicationInstance": application, "subDomain": sub_domain, "tenantId": tenant_id},
    }


def _create_record(tree: Path, index: SourceIndex, app: ApplicationRecord, body: dict[str, Any]) -> Path:
    """Write a new record of `app`'s tenant at its conventional place; refuse a taken name."""
    name = body["metadata"]["name"]
    taken = index.tenant_named(app.namespace, name)
    if taken is not None:
        raise PermanentError(
            f"CAPTenant {app.namespace}/{name} already exists for tenant {taken.tenant_id} ({taken.path})"
        )
    path = record_path(app, name)
    write_new_document(tree, path, body)
    return path


@dataclass(frozen=True, slots=True)
class _Subscribe:
    subscription: Subscription

    def __call__(self, tree: Path) -> str | None:
        s = self.subscription
        index = SourceIndex.of_tree(tree)
        app = _tenant_application(index, s.namespace, s.application)
        _check_subscription(s, app)
        _check_subdomain_free(s, app, index)
        record = index.tenant(s.namespace, s.application, s.tenant_id)
        if record is None:
            provider = s.tenant_id == app.provider_tenant_id
            name = app.provider_tenant_name if provider else consumer_tenant_name(app.name, s.tenant_id)
            body = _new_record(s.namespace, name, app.name, s.tenant_id, s.sub_domain)
            _apply_subscription(body, s)
            _create_record(tree, index, app, body)
            return (
                f"CAPTenant {s.namespace}/{name}: tenant {s.tenant_id} subscribed (subdomain {s.sub_domain})"
            )
        ref = _tenant_ref(record)
        if not edit_document(tree, ref, lambda body: _apply_subscription(body, s)):
            return None
        again = " again" if record.marked_for_deprovisioning else ""
        return f"{ref}: tenant {s.tenant_id} subscribed{again} (subdomain {s.sub_domain})"


def subscribe_tenant(subscription: Subscription) -> TreeChange:
    """Record a subscription: a new record named `consumer_tenant_name` (`<ca>-provider` for the
    application's provider tenant), or the existing record of the tenant updated (subdomain,
    subscription GUID label and annotation, subscription context and global account annotations;
    a deprovisioning mark is cleared: a re-subscribe). An existing record's status is kept."""
    return _Subscribe(subscription)


def _mark_for_deprovisioning(body: dict[str, Any]) -> None:
    _metadata_map(body, "annotations")[DEPROVISION_ANNOTATION] = "true"


@dataclass(frozen=True, slots=True)
class _Unsubscribe:
    namespace: str
    application: str
    tenant_id: str

    def __call__(self, tree: Path) -> str | None:
        record = SourceIndex.of_tree(tree).tenant(self.namespace, self.application, self.tenant_id)
        if record is None:
            return None
        ref = _tenant_ref(record)
        if not edit_document(tree, ref, _mark_for_deprovisioning):
            return None
        return f"{ref}: tenant {self.tenant_id} unsubscribed, to be deprovisioned"


def unsubscribe_tenant(namespace: str, application: str, tenant_id: str) -> TreeChange:
    """Mark the tenant's record for deprovisioning (`btp-gitops.io/deprovision: "true"`). None when
    there is no record (the caller answers 404; look it up with `SourceIndex.tenant` first to tell
    that from an unsubscribe already recorded) or it is marked already."""
    return _Unsubscribe(namespace, application, tenant_id)


# --- what the controller records -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OperationOutcome:
    operation: TenantOperation
    version_instance: str  # the CAPApplicationVersion the operation ran on
    succeeded: bool


# The state a failed operation leaves its record in (tenant_operations reads a failure as
# recorded when the record shows it).
FAILURE_STATES = {
    TenantOperation.PROVISIONING: TenantState.PROVISIONING_ERROR,
    TenantOperation.UPGRADE: TenantState.UPGRADE_ERROR,
    # A failed deprovisioning is retried, never called off: Deleting holds on even if a
    # re-subscribe clears the mark (the render deprovisions a tenant in state Deleting).
    TenantOperation.DEPROVISIONING: TenantState.DELETING,
}


def _completed(status: dict[str, Any], outcome: OperationOutcome) -> bool:
    last = status.get("lastCompletedOperation")
    return (
        isinstance(last, dict)
        and last.get("operation") == outcome.operation.value
        and last.get("capApplicationVersionInstance") == outcome.version_instance
    )


def _record_failure(status: dict[str, Any], outcome: OperationOutcome) -> None:
    if _completed(status, outcome):
        return  # a late report of a failed attempt of an operation that has completed since
    if status.get("state") == TenantState.DELETING and outcome.operation != TenantOperation.DEPROVISIONING:
        return  # deletion is never called off
    status["state"] = FAILURE_STATES[outcome.operation].value


def _record_success(status: dict[str, Any], outcome: OperationOutcome) -> None:
    completed = {
        "operation": outcome.operation.value,
        "capApplicationVersionInstance": outcome.version_instance,
    }
    status["lastCompletedOperation"] = completed
    if outcome.operation == TenantOperation.DEPROVISIONING:
        # The tenant is gone from CAP's point of view; a Deleting state left behind would turn a
        # later re-subscribe into another deprovisioning.
        status.pop("state", None)
        return
    current = str(status.get("currentCAPApplicationVersionInstance") or "")
    previous = [
        str(v) for v in status.get("previousCAPApplicationVersions") or [] if v != outcome.version_instance
    ]
    if current and current != outcome.version_instance and current not in previous:
        previous.append(current)  # oldest first: the version it ran on until now goes last
        if len(previous) > MAX_TENANT_VERSION_HISTORY:
            del previous[0]
    if previous or "previousCAPApplicationVersions" in status:
        status["previousCAPApplicationVersions"] = previous
    status["currentCAPApplicationVersionInstance"] = outcome.version_instance
    if status.get("state") != TenantState.DELETING:
        status["state"] = TenantState.READY.value


def _apply_outcome(body: dict[str, Any], outcome: OperationOutcome) -> None:
    if not isinstance(body.get("status"), dict):
        body["status"] = {}
    if outcome.succeeded:
        _record_success(body["status"], outcome)
    else:
        _record_failure(body["status"], outcome)
    if not body["status"]:
        del body["status"]


def _provider_application(index: SourceIndex, namespace: str, name: str) -> ApplicationRecord | None:
    """The application whose provider tenant `name` is, when it has no record yet."""
    if not name.endswith(PROVIDER_SUFFIX):
        return None
    app = index.application(namespace, name.removesuffix(PROVIDER_SUFFIX))
    return app if app is not None and app.has_provider else None


@dataclass(frozen=True, slots=True)
class _RecordOutcome:
    namespace: str
    name: str
    outcome: OperationOutcome

    def __call__(self, tree: Path) -> str | None:
        index = SourceIndex.of_tree(tree)
        record = index.tenant_named(self.namespace, self.name)
        what = self._summary()
        if record is not None:
            changed = edit_document(
                tree, _tenant_ref(record), lambda body: _apply_outcome(body, self.outcome)
            )
            return what if changed else None
        app = _provider_application(index, self.namespace, self.name)
        if app is None:
            raise PermanentError(
                f"no record of CAPTenant {self.namespace}/{self.name} in the source repository"
            )
        # The provider tenant is derived from its application until its status is first recorded.
        body = _new_record(
            self.namespace, self.name, app.name, app.provider_tenant_id, app.provider_sub_domain
        )
        _apply_outcome(body, self.outcome)
        _create_record(tree, index, app, body)
        return what

    def _summary(self) -> str:
        result = "succeeded" if self.outcome.succeeded else "failed"
        return (
            f"CAPTenant {self.namespace}/{self.name}: {self.outcome.operation.value} on "
            f"{self.outcome.version_instance} {result}"
        )


def record_operation_outcome(namespace: str, name: str, outcome: OperationOutcome) -> TreeChange:
    """Record how the tenant's operation ended, as README "CAP tenants" reads the status.

    Success of a provisioning or upgrade: state Ready, the version becomes current (the one before
    goes to previousCAPApplicationVersions, oldest first, no duplicates, at most 10 as CAP Operator
    keeps them), lastCompletedOperation
    says so. Success of a deprovisioning: lastCompletedOperation says so (the record then renders
    nothing) and the state is dropped. Failure: state ProvisioningError / UpgradeError / Deleting,
    nothing else; a failure reported after the same operation completed changes nothing, and a
    tenant in state Deleting stays there. The provider tenant `<ca>-provider` gets its record
    written here when it has none yet. Other missing records: PermanentError."""
    return _RecordOutcome(namespace, name, outcome)


# --- removing records and versions ------------------------------------------------------------------


def _deprovisioned(record: TenantRecord) -> bool:
    done = record.status.last_completed
    return (
        record.marked_for_deprovisioning
        and done is not None
        and done.operation == TenantOperation.DEPROVISIONING
        and record.status.state != TenantState.DELETING
    )


@dataclass(frozen=True, slots=True)
class _RemoveTenant:
    namespace: str
    name: str
    only_if_deprovisioned: bool

    def __call__(self, tree: Path) -> str | None:
        record = SourceIndex.of_tree(tree).tenant_named(self.namespace, self.name)
        if record is None or (self.only_if_deprovisioned and not _deprovisioned(record)):
            return None
        remove_document(tree, _tenant_ref(record))
        return f"CAPTenant {self.namespace}/{self.name}: record removed (tenant {record.tenant_id})"


def remove_tenant_record(namespace: str, name: str, *, only_if_deprovisioned: bool = False) -> TreeChange:
    """Delete the tenant's record: its file when that holds only the record, else the record's
    document. None when there is no record. With `only_if_deprovisioned`, only a record still
    marked for deprovisioning whose deprovisioning completed goes: applied again after the remote
    moved on, the removal must not take a record that a re-subscribe has just revived."""
    return _RemoveTenant(namespace, name, only_if_deprovisioned)


@dataclass(frozen=True, slots=True)
class _RemoveVersion:
    namespace: str
    name: str

    def __call__(self, tree: Path) -> str | None:
        version = SourceIndex.of_tree(tree).version_named(self.namespace, self.name)
        if version is None:
            return None
        remove_document(tree, DocumentRef(version.path, CAP_APPLICATION_VERSION, self.namespace, self.name))
        return f"CAPApplicationVersion {self.namespace}/{self.name}: removed (version {version.version})"


def remove_version(namespace: str, name: str) -> TreeChange:
    """Delete the CAPApplicationVersion's document (its file when that holds only it), for version
    cleanup. None when it is not in the tree."""
    return _RemoveVersion(namespace, name)
