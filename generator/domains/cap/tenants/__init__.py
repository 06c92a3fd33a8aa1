"""CAP tenants: CAPTenant records -> each tenant's app (VirtualService, DNS entries, the Jobs of
its pending provisioning, upgrade or deprovisioning), plus the version gates in the application's
app that those Jobs wait for.

    model      the record (spec, recorded status) and the provider tenant an application implies
    catalog    every tenant grouped by application, and the rules about records
    selection  which operation a tenant needs on which version, where its traffic goes
    jobs       one Job per operation step, CAP Operator's environment; the version gates
    routing    the tenant's VirtualService (version affinity, headers) and DNS entries
    names      names, labels and app directories
    render     the tenant apps, in sync stages
"""

from btp_gitops.generator.domains.cap.tenants.catalog import (
    TenantCatalog,
    build_tenant_catalog,
    tenants_clear_of,
)
from btp_gitops.generator.domains.cap.tenants.jobs import StepTemplate, step_templates
from btp_gitops.generator.domains.cap.tenants.model import (
    CAP_TENANT,
    CAP_TENANT_FINALIZER,
    DEPROVISION_ANNOTATION,
    PROVIDER_SUFFIX,
    SUBSCRIPTION_CONTEXT_ANNOTATION,
    Tenant,
    TenantDetails,
    TenantState,
    TenantStatus,
    TenantType,
    derived_provider_tenant,
    tenant_from_source,
)
from btp_gitops.generator.domains.cap.tenants.names import (
    BTP_TENANT_ID,
    CONTINUE_ON_FAILURE_ANNOTATION,
    SUBSCRIPTION_GUID,
    TENANT_OPERATION_TYPE,
    operation_job_name,
    version_gate_name,
)
from btp_gitops.generator.domains.cap.tenants.render import (
    AppOf,
    MakeApp,
    RecordKey,
    always_make,
    application_inputs,
    operation_jobs,
    render_cap_tenants,
    tenant_operation_notes,
    version_gate_manifests,
)
from btp_gitops.generator.domains.cap.tenants.selection import (
    PlannedOperation,
    VersionIndex,
    desired_version,
    plan_tenant,
)

__all__ = [
    "BTP_TENANT_ID",
    "CAP_TENANT",
    "CAP_TENANT_FINALIZER",
    "CONTINUE_ON_FAILURE_ANNOTATION",
    "DEPROVISION_ANNOTATION",
    "PROVIDER_SUFFIX",
    "SUBSCRIPTION_CONTEXT_ANNOTATION",
    "SUBSCRIPTION_GUID",
    "TENANT_OPERATION_TYPE",
    "AppOf",
    "MakeApp",
    "PlannedOperation",
    "RecordKey",
    "StepTemplate",
    "Tenant",
    "TenantCatalog",
    "TenantDetails",
    "TenantState",
    "TenantStatus",
    "TenantType",
    "VersionIndex",
    "always_make",
    "application_inputs",
    "build_tenant_catalog",
    "derived_provider_tenant",
    "desired_version",
    "operation_job_name",
    "operation_jobs",
    "plan_tenant",
    "render_cap_tenants",
    "step_templates",
    "tenant_from_source",
    "tenant_operation_notes",
    "tenants_clear_of",
    "version_gate_manifests",
    "version_gate_name",
]
