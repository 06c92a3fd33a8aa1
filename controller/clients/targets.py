"""The application as the clients see it: which services it binds and where their Secrets are.

The subscription server reads it from the tenant records (subscription.ledger), the CAP
reconcilers from the same records; the clients (binding credentials, the SaaS registry callback,
the cluster side of a subscription) take it as their argument, so they depend on no caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

XSUAA_CLASS = "xsuaa"
SAAS_REGISTRY_CLASS = "saas-registry"
SUBSCRIPTION_MANAGER_CLASS = "subscription-manager"
PRIMARY_XSUAA_ANNOTATION = "sme.sap.com/primary-xsuaa"
SUBSCRIPTION_DOMAIN_ANNOTATION = "sme.sap.com/subscription-domain"


@dataclass(frozen=True, slots=True)
class ServiceRef:
    """One entry of the application's `spec.btp.services`: its binding Secret lives in the app's namespace."""

    name: str
    secret: str
    service_class: str
    subscription_dependency: str = "Auto"  # Always | Auto | Never (clients.dependencies)


@dataclass(frozen=True, slots=True)
class AppTarget:
    """A CAPApplication as the server sees it: where it lives and which services it binds."""

    namespace: str
    name: str
    btp_app_name: str
    provider_subaccount_id: str
    identifier_hash: str
    services: tuple[ServiceRef, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    provider_tenant_id: str = ""  # "" without a provider tenant
    provider_sub_domain: str = ""
    multi_tenant: bool = False  # has tenants (SourceIndex.services_only decides; callbacks need not know)

    def services_of_class(self, service_class: str) -> tuple[ServiceRef, ...]:
        return tuple(s for s in self.services if s.service_class == service_class)

    @property
    def subscription_domain(self) -> str:
        return self.annotations.get(SUBSCRIPTION_DOMAIN_ANNOTATION, "")
