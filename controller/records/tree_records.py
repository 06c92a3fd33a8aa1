"""The records of the source tree: what its CAPApplication, CAPApplicationVersion and CAPTenant
documents say, as the index (records.index) answers it.

A record is made from a document that passed its schema (`application_record`, `tenant_record`,
`version_record`), through the CAP domain's own models where there is one, and names its file:
the index hands out the document itself by that place (`SourceIndex.document`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.generator.core import SourceDocument, get_path
from btp_gitops.generator.domains.cap import (
    PROVIDER_SUFFIX,
    Application,
    BtpService,
    TenantStatus,
    TenantType,
    sha1_hex,
    tenant_from_source,
)

# A spec.btp.services entry: name, secret, class (`service_class`); the generator's own view.
ServiceBinding = BtpService


@dataclass(frozen=True, slots=True)
class ApplicationRecord:
    """A CAPApplication found in the source tree."""

    namespace: str
    name: str
    btp_app_name: str
    provider_subaccount_id: str
    path: Path  # its file, relative to the tree root
    services: tuple[ServiceBinding, ...]  # spec.btp.services
    annotations: dict[str, str]
    provider_sub_domain: str  # "" for services-only
    provider_tenant_id: str  # "" for services-only
    global_account_id: str = ""  # the deprecated account half of the identity

    @property
    def identifier_hash(self) -> str:
        """`sme.sap.com/app-identifier-hash`, as generator.domains.cap.identity.app_identifier_hash
        computes it: the account is providerSubaccountId, else the deprecated globalAccountId."""
        return sha1_hex(self.provider_subaccount_id or self.global_account_id, self.btp_app_name)

    @property
    def has_provider(self) -> bool:
        """Whether `spec.provider` names a provider tenant (an application without one may still
        have consumer tenants: SourceIndex.services_only decides that)."""
        return bool(self.provider_tenant_id)

    @property
    def provider_tenant_name(self) -> str:
        return f"{self.name}{PROVIDER_SUFFIX}"


@dataclass(frozen=True, slots=True)
class TenantRecord:
    """A CAPTenant record found in the tree."""

    path: Path  # relative to the tree root
    namespace: str
    name: str
    application: str
    tenant_id: str
    sub_domain: str
    marked_for_deprovisioning: bool
    status: TenantStatus


@dataclass(frozen=True, slots=True)
class VersionRecord:
    """A CAPApplicationVersion found in the tree."""

    path: Path  # relative to the tree root
    namespace: str
    name: str
    application: str
    version: str


def _string_map(body: Any, *path: str) -> dict[str, str]:
    value = get_path(body, *path)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def application_record(document: SourceDocument, path: Path) -> ApplicationRecord:
    app = Application.from_source(document)
    return ApplicationRecord(
        namespace=app.namespace,
        name=app.name,
        btp_app_name=app.btp_app_name,
        provider_subaccount_id=app.provider_subaccount_id,
        path=path,
        services=app.services,
        annotations=_string_map(document.body, "metadata", "annotations"),
        provider_sub_domain=app.provider.sub_domain if app.provider else "",
        provider_tenant_id=app.provider.tenant_id if app.provider else "",
        global_account_id=app.global_account_id,
    )


def tenant_record(document: SourceDocument, path: Path) -> TenantRecord:
    tenant = tenant_from_source(document, TenantType.CONSUMER)
    return TenantRecord(
        path=path,
        namespace=tenant.namespace,
        name=tenant.name,
        application=tenant.application,
        tenant_id=tenant.tenant_id,
        sub_domain=tenant.sub_domain,
        marked_for_deprovisioning=tenant.marked_for_deprovisioning,
        status=tenant.status,
    )


def version_record(document: SourceDocument, path: Path) -> VersionRecord:
    spec = document.body.get("spec") or {}
    return VersionRecord(
        path=path,
        namespace=str(get_path(document.body, "metadata", "namespace") or ""),
        name=str(get_path(document.body, "metadata", "name") or ""),
        application=str(spec.get("capApplicationInstance") or ""),
        version=str(spec.get("version") or ""),
    )
