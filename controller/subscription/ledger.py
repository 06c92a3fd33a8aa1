"""What the subscription server needs from the tenant records, as a small interface.

The server never touches Git itself: it asks a `TenantLedger` which application a callback is for,
which tenant record a tenant id has, and to record a subscription or an unsubscription durably.
`git_ledger.GitTenantLedger` implements it on the source repository; the values here are the
server's own view of the records, so the HTTP layer does not depend on how they are stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from btp_gitops.controller.clients.targets import AppTarget
from btp_gitops.controller.subscription.domains import ApplicationDomains

DEFAULT_CONTEXT_SECRET_SUFFIX = "-subscription-context"


@dataclass(frozen=True, slots=True)
class TenantTarget:
    """An existing CAPTenant record of an application."""

    app: AppTarget
    name: str
    tenant_id: str
    sub_domain: str
    subscription_guid: str = ""
    subscription_context_secret: str = ""
    marked_for_deletion: bool = False

    @property
    def context_secret_name(self) -> str:
        return self.subscription_context_secret or f"{self.name}{DEFAULT_CONTEXT_SECRET_SUFFIX}"


@dataclass(frozen=True, slots=True)
class SubscriptionEntry:
    """What a subscribe writes into the tenant's record (never the payload: it stays in the cluster)."""

    app: AppTarget
    tenant_id: str
    sub_domain: str
    subscription_guid: str
    global_account_id: str
    subscription_context_secret: str


class TenantLedger(Protocol):
    """The tenant records of every application the server answers for.

    `record_*` return only once the change is durable (pushed); they raise a `BtpGitopsError`
    (`TemporaryError`, `GitError`, ...) when it could not be recorded, and then nothing was recorded,
    except `OutcomeUnknown`: the change may still land (a push timed out), so nothing made for it
    may be undone.
    """

    def ready(self) -> bool:
        """True once the records can be read (the source repository is available)."""
        ...

    def unready_reason(self) -> str | None:
        """None when `ready`, else why not (the records not read yet, the remote unreachable or
        hung), without credentials."""
        ...

    def applications(self) -> Sequence[AppTarget]: ...

    def find_application(self, identifier_hash: str) -> AppTarget | None: ...

    def find_tenant(self, app: AppTarget, tenant_id: str) -> TenantTarget | None: ...

    def application_domains(self, app: AppTarget) -> ApplicationDomains:
        """The hosts of the Domains and ClusterDomains `app` uses, as the records have them."""
        ...

    def find_tenant_by_subscription(self, subscription_guid: str, tenant_id: str) -> TenantTarget | None:
        """The tenant with this subscription GUID and tenant id, in any application."""
        ...

    def new_tenant_name(self, app: AppTarget, tenant_id: str) -> str:
        """The record name a subscribe of an unknown tenant creates."""
        ...

    def subdomain_holder(self, app: AppTarget, sub_domain: str, tenant_id: str) -> str | None:
        """The name of the record of another tenant of `app` with this subdomain, if the records
        seen so far have one (the write checks again, on the newest records)."""
        ...

    def record_subscription(self, entry: SubscriptionEntry) -> None: ...

    def record_unsubscription(self, app: AppTarget, tenant_id: str) -> bool:
        """Mark the tenant for deprovisioning; False when the application has no such tenant."""
        ...
