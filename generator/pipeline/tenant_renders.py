"""Tenant apps by record, kept across renders: the render cache's one seam with the CAP domain.

The domain has each tenant's app through a function it is handed (`cap.AppOf`); by default it
plans and renders every tenant (`cap.always_make`). A render with the cache hands it
`TenantRenders.app_of` instead, which takes the app an earlier render made from the same record
bytes for the same application inputs, and keeps each app it makes for the cache to write
(`pipeline.cached_sources` reads and writes them). The domain's rules never learn which records
were cached: they ran on every record first (`cap.build_tenant_catalog`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.domains.cap import MakeApp, RecordKey, Tenant

__all__ = ["TenantRenders"]


@dataclass(slots=True)
class TenantRenders:
    """Tenant apps by record, which a caller keeps across renders (the pipeline's render cache,
    pipeline.cached_sources, which reads and writes them: the domain does no I/O).

    `known` holds apps an earlier render made from the same record bytes for the same
    application inputs (`application_inputs`): `app_of` takes such an app instead of planning
    and rendering the tenant again, and puts each app it makes (None: nothing to render) into
    `rendered`. A tenant's plan reads only its record and those inputs, so it would be the same
    again; the rules across records are not the plan's: they ran on every record before
    (catalog.build_tenant_catalog), whether its app is known or not.
    """

    known: Mapping[RecordKey, AppRender] = field(default_factory=dict)
    rendered: dict[RecordKey, AppRender | None] = field(default_factory=dict)

    def app_of(self, tenant: Tenant, make: MakeApp) -> AppRender | None:
        source = tenant.source
        if source is None:  # a provider derived from its CAPApplication
            return make(tenant)
        key = (source.file, source.document)
        known = self.known.get(key)
        if known is not None:
            return known
        app = self.rendered[key] = make(tenant)
        return app
