"""Names, labels and app directories of everything a tenant renders into.

Every name depends only on the tenant, its application and the version involved, never on other
tenants, so that adding a tenant adds files and changes none:

    tenant app directory     `cap-tenant.<namespace>.<tenant>`: the tenant's own Argo CD
                             Application (or Flux Kustomizations), in the group
                             `<namespace>.<ca>` of its application (laid out as
                             `tenants/<namespace>.<ca>/<shard>/cap-tenant.<namespace>.<tenant>/`)
    CAPTenant, VirtualService  `<tenant>` (CAP Operator's name for the tenant's VirtualService)
    operation Job            `<tenant>-<operation>-<version>-<step>` cut to 54 characters, then
                             `-<first 8 hex of sha1(namespace, tenant, operation, cav, step,
                             workload)>`: at most 63 characters (the Job name is a pod label
                             value), one name per (tenant, operation, version, step)
    DNSEntry                 `<domain name>-<first 10 hex of sha1(dnsName)>`, as the domain's own
    version gate             `<cav>-ready`: a ConfigMap with no data in the application's app that
                             tenant operation Jobs of that version read (tenants.gates)
    subscription context     the record's `sme.sap.com/subscription-context-secret`, else
                             `<tenant>-subscription-context`

Operation steps are numbered from 1 in `sme.sap.com/tenant-operation-step`, as CAP Operator
counts the steps of a CAPTenantOperation.
"""

from __future__ import annotations

import re

from btp_gitops.generator.domains.cap.identity import (
    APP_IDENTIFIER_HASH,
    APP_LABEL,
    PREFIX,
    app_identifier_hash,
    owner_labels,
    sha1_hex,
)
from btp_gitops.generator.domains.cap.model import Application, TenantOperation, Version, Workload
from btp_gitops.generator.domains.cap.tenants.model import Tenant

BTP_TENANT_ID = f"{PREFIX}btp-tenant-id"
TENANT_TYPE = f"{PREFIX}tenant-type"
TENANT_OPERATION_TYPE = f"{PREFIX}tenant-operation-type"
TENANT_OPERATION_STEP = f"{PREFIX}tenant-operation-step"
SUBSCRIPTION_GUID = f"{PREFIX}subscription-guid"
CONTINUE_ON_FAILURE_ANNOTATION = "btp-gitops.io/continue-on-failure"

MAX_JOB_NAME = 63
_HASH_LENGTH = 8
_UNSAFE = re.compile(r"[^a-z0-9-]+")


TENANT_APP_PREFIX = "cap-tenant."


def tenant_app(tenant: Tenant) -> str:
    return f"{TENANT_APP_PREFIX}{tenant.namespace}.{tenant.name}"


def tenant_group(tenant: Tenant) -> str:
    """The group of a tenant's app directory: its application's (core.layout shards it)."""
    return f"{tenant.namespace}.{tenant.application}"


def version_gate_name(version: Version) -> str:
    return f"{version.name}-ready"


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", text.lower()).strip("-")


def operation_job_name(
    tenant: Tenant, operation: TenantOperation, version: Version, step: int, workload: Workload
) -> str:
    """Readable and unique: the hash keeps names apart that the cut or the slug would merge."""
    digest = sha1_hex(tenant.namespace, tenant.name, operation.value, version.name, str(step), workload.name)
    head = f"{tenant.name}-{operation.value}-{_slug(version.version)}-{step}"
    head = head[: MAX_JOB_NAME - _HASH_LENGTH - 1].rstrip("-.")
    return f"{head}-{digest[:_HASH_LENGTH]}"


def application_labels_for_tenants(app: Application) -> dict[str, str]:
    """The application's part of every tenant object's labels, computed once per application."""
    return {APP_LABEL: app.btp_app_name, APP_IDENTIFIER_HASH: app_identifier_hash(app)}


def tenant_labels(
    application_labels: dict[str, str], tenant: Tenant
) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) of every object of a tenant: its application, owner and BTP identity."""
    owner, owner_annotations = owner_labels(tenant.namespace, tenant.name)
    labels = {
        **application_labels,
        **owner,
        BTP_TENANT_ID: tenant.tenant_id,
        TENANT_TYPE: tenant.tenant_type.value,
    }
    guid = tenant.labels.get(SUBSCRIPTION_GUID)
    if guid:
        labels[SUBSCRIPTION_GUID] = guid
    return labels, owner_annotations
