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

from btp_gitops.generator.domains.cap.tenants.catalog import TenantCatalog, build_tenant_catalog
from btp_gitops.generator.domains.cap.tenants.render import (
    render_cap_tenants,
    tenant_operation_notes,
    version_gate_manifests,
)

__all__ = [
    "TenantCatalog",
    "build_tenant_catalog",
    "render_cap_tenants",
    "tenant_operation_notes",
    "version_gate_manifests",
]
