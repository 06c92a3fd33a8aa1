"""Typed views of CAPTenant records: the spec the subscription server wrote, the status the
controller recorded, and the provider tenant every multi-tenant CAPApplication implies.

A record is one file holding one CAPTenant (the format is in the README, "CAP tenants"). The
document has passed schemas/captenant.sme.sap.com.v1alpha1.json, so the views only read fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap.model import API_VERSION, Application, Provider, TenantOperation

CAP_TENANT = (API_VERSION, "CAPTenant")
# The controller's deletion finalizer (controller.cap.deletion), rendered onto every CAPTenant so
# that one pruned while the controller is down waits for its deprovisioning (see cap.model).
CAP_TENANT_FINALIZER = "sme.sap.com/captenant"

# Set by the subscription server when a tenant unsubscribes: deprovision it, then drop its record.
DEPROVISION_ANNOTATION = "btp-gitops.io/deprovision"
# CAP Operator's annotation naming the Secret that holds the tenant's subscription payload.
SUBSCRIPTION_CONTEXT_ANNOTATION = "sme.sap.com/subscription-context-secret"
SUBSCRIPTION_CONTEXT_KEY = "subscriptionContext"
PROVIDER_SUFFIX = "-provider"  # CAP Operator names the provider tenant `<ca>-provider`


class TenantType(StrEnum):
    PROVIDER = "provider"
    CONSUMER = "consumer"


class TenantState(StrEnum):
    """`status.state`, as the controller records it (CAP Operator's states)."""

    PROVISIONING = "Provisioning"
    PROVISIONING_ERROR = "ProvisioningError"
    UPGRADING = "Upgrading"
    UPGRADE_ERROR = "UpgradeError"
    READY = "Ready"
    DELETING = "Deleting"


class UpgradeStrategy(StrEnum):
    ALWAYS = "always"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class CompletedOperation:
    """`status.lastCompletedOperation`: an operation on a version that is done and never re-run."""

    operation: TenantOperation
    version_instance: str  # CAPApplicationVersion name


@dataclass(frozen=True, slots=True)
class TenantStatus:
    state: TenantState | None = None
    current_instance: str = ""  # status.currentCAPApplicationVersionInstance; "" before provisioning
    previous_instances: tuple[str, ...] = ()
    last_completed: CompletedOperation | None = None


@dataclass(frozen=True, slots=True)
class TenantDetails:
    """What a tenant's own plan and app read of its record, besides what identifies it."""

    version: str  # spec.version, "" when unset
    upgrade_strategy: UpgradeStrategy
    marked_for_deprovisioning: bool
    subscription_context_secret: str
    labels: dict[str, str]
    annotations: dict[str, str]
    status: TenantStatus


@dataclass(frozen=True, slots=True)
class Tenant:
    """One tenant of one application; `source` is None for a provider tenant without a record.

    What identifies the tenant (name, namespace, application, subdomain, tenant id: all that the
    rules across records read) is read when it is made; the rest of its record (`details`) when
    first asked for, so that the rules over 20,000 records do not read 20,000 statuses for the
    few tenants a render plans. A provider tenant without a record has the details of an empty
    one: no version, always upgraded, not marked, no labels, annotations or status."""

    name: str
    namespace: str
    application: str  # spec.capApplicationInstance
    sub_domain: str
    tenant_id: str
    tenant_type: TenantType
    source: SourceDocument | None
    _details: TenantDetails | None = field(default=None, compare=False, repr=False)

    @property
    def details(self) -> TenantDetails:
        return self._details or self._read_details()

    def _read_details(self) -> TenantDetails:
        details = _details_of(self.source.body if self.source is not None else {}, self.name)
        object.__setattr__(self, "_details", details)  # frozen: set once, always to the same
        return details

    @property
    def version(self) -> str:
        return (self._details or self._read_details()).version

    @property
    def upgrade_strategy(self) -> UpgradeStrategy:
        return (self._details or self._read_details()).upgrade_strategy

    @property
    def marked_for_deprovisioning(self) -> bool:
        return (self._details or self._read_details()).marked_for_deprovisioning

    @property
    def subscription_context_secret(self) -> str:
        return (self._details or self._read_details()).subscription_context_secret

    @property
    def labels(self) -> dict[str, str]:
        return (self._details or self._read_details()).labels

    @property
    def annotations(self) -> dict[str, str]:
        return (self._details or self._read_details()).annotations

    @property
    def status(self) -> TenantStatus:
        return (self._details or self._read_details()).status

    @property
    def is_provider(self) -> bool:
        return self.tenant_type == TenantType.PROVIDER

    @property
    def deleting(self) -> bool:
        """Marked for deprovisioning, or already deprovisioning (which is never called off)."""
        return self.marked_for_deprovisioning or self.status.state == TenantState.DELETING

    @property
    def ref(self) -> str:
        return f"CAPTenant {self.namespace}/{self.name}"

    @property
    def deprovision_mark(self) -> str | None:
        """The record's deprovision annotation as written (`annotations`' value), read without
        the rest of the details: a rule over every record checks it."""
        if self._details is not None or self.source is None:
            return self.annotations.get(DEPROVISION_ANNOTATION)
        metadata = self.source.body.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        value = annotations.get(DEPROVISION_ANNOTATION) if isinstance(annotations, dict) else None
        return None if value is None else str(value)


def _text(mapping: Any, key: str) -> str:
    """`mapping[key]` as text, "" when absent (a step a render takes 20,000 times: no get_path)."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return str(value) if value is not None else ""


def _string_map(mapping: Any, key: str) -> dict[str, str]:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


# Dictionaries before the enums' own lookups (20,000 records a render); the same members, and
# the enum's error for a value that is none of them.
_STATES = {state.value: state for state in TenantState}
_STRATEGIES = {strategy.value: strategy for strategy in UpgradeStrategy}
_OPERATIONS = {operation.value: operation for operation in TenantOperation}
_NO_STATUS = TenantStatus()
_SHARED_MAX = 1024
_SHARED_STATUSES: dict[tuple[str | None, str | None, str, str], TenantStatus] = {}


def _status(body: Any) -> TenantStatus:
    status = body.get("status")
    if not isinstance(status, dict):
        return _NO_STATUS
    completed = status.get("lastCompletedOperation")
    state = status.get("state")
    current = status.get("currentCAPApplicationVersionInstance")
    previous = status.get("previousCAPApplicationVersions")
    # Most records of an application say the same (Ready on the current version): a status
    # whose fields are plain strings (or absent) is made once per distinct value and shared
    # (it is frozen); any other shape is made afresh, with the same conversions and errors.
    if (
        (type(state) is str or state is None)
        and (type(current) is str or current is None)
        and previous is None
        and isinstance(completed, dict)
        and type(operation := completed.get("operation")) is str
        and type(instance := completed.get("capApplicationVersionInstance")) is str
    ):
        shared = (state, current, operation, instance)
        found = _SHARED_STATUSES.get(shared)
        if found is None:
            if len(_SHARED_STATUSES) >= _SHARED_MAX:  # a long-lived process (the controller)
                _SHARED_STATUSES.clear()
            found = _SHARED_STATUSES[shared] = _new_status(status, state, completed)
        return found
    return _new_status(status, state, completed)


def _new_status(status: dict[str, Any], state: Any, completed: Any) -> TenantStatus:
    return TenantStatus(
        state=(_STATES.get(state) or TenantState(state)) if state else None,
        current_instance=_text(status, "currentCAPApplicationVersionInstance"),
        previous_instances=tuple(str(v) for v in status.get("previousCAPApplicationVersions") or []),
        last_completed=(
            CompletedOperation(
                _OPERATIONS.get(completed["operation"]) or TenantOperation(completed["operation"]),
                str(completed["capApplicationVersionInstance"]),
            )
            if isinstance(completed, dict)
            else None
        ),
    )


def subscription_context_secret_name(tenant_name: str) -> str:
    """The Secret a tenant's subscription payload is in, unless its record's annotation names one."""
    return f"{tenant_name}-subscription-context"


def _str(value: Any) -> str:
    """`_text` of a value already got."""
    return value if type(value) is str else "" if value is None else str(value)


def tenant_from_source(source: SourceDocument, tenant_type: TenantType) -> Tenant:
    """The tenant a record holds, every field read now (a value none of the enums has raises
    ValueError here)."""
    tenant = tenant_of_record(source, tenant_type)
    tenant._read_details()
    return tenant


def tenant_of_record(source: SourceDocument, tenant_type: TenantType) -> Tenant:
    """The tenant a record holds, what identifies it read now and its details on first use: for
    the rules over every record of a render, which read only the former."""
    body = source.body
    spec = body.get("spec")
    metadata = body.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    fields = spec if isinstance(spec, dict) else {}
    return Tenant(
        _str(metadata.get("name")),
        _str(metadata.get("namespace")),
        _str(fields.get("capApplicationInstance")),
        _str(fields.get("subDomain")),
        _str(fields.get("tenantId")),
        tenant_type,
        source,
    )


def _details_of(body: Any, name: str) -> TenantDetails:
    spec = body.get("spec") or {}
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    fields = spec if isinstance(spec, dict) else {}
    annotations = _string_map(metadata, "annotations")
    strategy = spec.get("versionUpgradeStrategy") or UpgradeStrategy.ALWAYS
    return TenantDetails(
        _str(fields.get("version")),
        _STRATEGIES.get(strategy) or UpgradeStrategy(strategy),
        annotations.get(DEPROVISION_ANNOTATION) == "true",
        annotations.get(SUBSCRIPTION_CONTEXT_ANNOTATION) or subscription_context_secret_name(name),
        _string_map(metadata, "labels") if "labels" in metadata else {},
        annotations,
        _status(body),
    )


def provider_tenant_name(app: Application) -> str:
    return f"{app.name}{PROVIDER_SUFFIX}"


def derived_provider_tenant(app: Application, provider: Provider) -> Tenant:
    """The provider tenant CAP Operator created for a multi-tenant application (`provider` is its
    `spec.provider`), before any record of it exists: not provisioned yet, on the newest version."""
    name = provider_tenant_name(app)
    return Tenant(
        name=name,
        namespace=app.namespace,
        application=app.name,
        sub_domain=provider.sub_domain,
        tenant_id=provider.tenant_id,
        tenant_type=TenantType.PROVIDER,
        source=None,
    )
