"""CAP applications: CAP Operator's CAPApplication, CAPApplicationVersion, CAPTenant, Domain and
ClusterDomain.

    model            typed views of the CAP sources (Application, Version, Workload, ...)
    catalog          every application and version of the sources, by application
    validation       the rules across documents
    version_rules    the rules about versions and their workloads
    identity         names, owner labels and hashes CAP Operator derives
    exposures        which version serves traffic, semantic versions
    dns, templates   DNS records per mode; the Go template subset (with Sprig functions) of
                     Custom DNS templates
    render           the application and version apps
    post_render      which objects of a Helm stream are CAP sources, and the order of the apps'
                     hooks in one release
    dependents       which documents cannot be checked while others are skipped
    tenants/         the CAPTenant records and their apps (its own face, re-exported here)

This face lists what other packages (pipeline, controller) may use.
"""

from btp_gitops.generator.domains.cap.catalog import application_mode, build_catalog
from btp_gitops.generator.domains.cap.dependents import unchecked_dependents
from btp_gitops.generator.domains.cap.exposures import semantic_version
from btp_gitops.generator.domains.cap.identity import (
    CAV_VERSION,
    OWNER_IDENTIFIER,
    OWNER_IDENTIFIER_HASH,
    PREFIX,
    owner_labels,
    service_name,
    sha1_hex,
)
from btp_gitops.generator.domains.cap.model import (
    API_VERSION,
    CAP_APPLICATION,
    CAP_APPLICATION_FINALIZER,
    CAP_APPLICATION_VERSION,
    CAP_APPLICATION_VERSION_FINALIZER,
    CLUSTER_DOMAIN,
    DOMAIN,
    Application,
    BtpService,
    TenantOperation,
    Version,
    Workload,
)
from btp_gitops.generator.domains.cap.post_render import (
    CLUSTER_SCOPED_KINDS,
    SOURCE_KINDS,
    is_cap_source,
    release_tier,
)
from btp_gitops.generator.domains.cap.render import render_cap_applications
from btp_gitops.generator.domains.cap.tenants import (
    BTP_TENANT_ID,
    CAP_TENANT,
    CAP_TENANT_FINALIZER,
    CONTINUE_ON_FAILURE_ANNOTATION,
    DEPROVISION_ANNOTATION,
    PROVIDER_SUFFIX,
    SUBSCRIPTION_CONTEXT_ANNOTATION,
    SUBSCRIPTION_GUID,
    TENANT_OPERATION_TYPE,
    AppOf,
    MakeApp,
    PlannedOperation,
    RecordKey,
    StepTemplate,
    Tenant,
    TenantCatalog,
    TenantState,
    TenantStatus,
    TenantType,
    VersionIndex,
    always_make,
    application_inputs,
    build_tenant_catalog,
    derived_provider_tenant,
    desired_version,
    operation_job_name,
    operation_jobs,
    plan_tenant,
    render_cap_tenants,
    step_templates,
    tenant_from_source,
    tenant_operation_notes,
    version_gate_manifests,
    version_gate_name,
)

__all__ = [
    "API_VERSION",
    "BTP_TENANT_ID",
    "CAP_APPLICATION",
    "CAP_APPLICATION_FINALIZER",
    "CAP_APPLICATION_VERSION",
    "CAP_APPLICATION_VERSION_FINALIZER",
    "CAP_TENANT",
    "CAP_TENANT_FINALIZER",
    "CAV_VERSION",
    "CLUSTER_DOMAIN",
    "CLUSTER_SCOPED_KINDS",
    "CONTINUE_ON_FAILURE_ANNOTATION",
    "DEPROVISION_ANNOTATION",
    "DOMAIN",
    "OWNER_IDENTIFIER",
    "OWNER_IDENTIFIER_HASH",
    "PREFIX",
    "PROVIDER_SUFFIX",
    "SOURCE_KINDS",
    "SUBSCRIPTION_CONTEXT_ANNOTATION",
    "SUBSCRIPTION_GUID",
    "TENANT_OPERATION_TYPE",
    "AppOf",
    "Application",
    "BtpService",
    "MakeApp",
    "PlannedOperation",
    "RecordKey",
    "StepTemplate",
    "Tenant",
    "TenantCatalog",
    "TenantOperation",
    "TenantState",
    "TenantStatus",
    "TenantType",
    "Version",
    "VersionIndex",
    "Workload",
    "always_make",
    "application_inputs",
    "application_mode",
    "build_catalog",
    "build_tenant_catalog",
    "derived_provider_tenant",
    "desired_version",
    "is_cap_source",
    "operation_job_name",
    "operation_jobs",
    "owner_labels",
    "plan_tenant",
    "release_tier",
    "render_cap_applications",
    "render_cap_tenants",
    "semantic_version",
    "service_name",
    "sha1_hex",
    "step_templates",
    "tenant_from_source",
    "tenant_operation_notes",
    "unchecked_dependents",
    "version_gate_manifests",
    "version_gate_name",
]
