"""The subscription server's `TenantLedger` on the source Git repository (controller.gitstore and
controller.records).

Lookups answer from the index of the newest commit the clone has seen, built once per commit when
the clone moves to it (`SourceRepo.on_new_head`), without waiting for the clone's lock, which the
writer holds while it commits and pushes: under load, requests would otherwise queue behind every
batch. An unknown application is looked for again after a fetch (it may have been added since). An
unknown tenant is not: a subscribe records it either way, and the write re-checks the remote's
newest tree, where it updates a record that another writer added meanwhile.

Records are written with `records.subscribe_tenant` / `unsubscribe_tenant` through
`SourceRepo`, and `record_*` return once the push carrying the change succeeded.

A change not pushed within `record_timeout` is withdrawn when it is still queued (nothing recorded,
the caller gets an error) and otherwise reported as not confirmed (`OutcomeUnknown`): it may still
land, which a repeated callback then finds in place (records are keyed by tenant id, so nothing is
written twice). The writer reports a push that timed out the same way when it cannot tell whether
the push landed.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from btp_gitops.controller.clients.targets import AppTarget, ServiceRef
from btp_gitops.controller.errors import OutcomeUnknown, TemporaryError
from btp_gitops.controller.gitstore import SourceRepo, TreeChange
from btp_gitops.controller.records import (
    ApplicationRecord,
    SourceIndex,
    Subscription,
    TenantRecord,
    consumer_tenant_name,
    subscribe_tenant,
    unsubscribe_tenant,
)
from btp_gitops.controller.subscription.ledger import SubscriptionEntry, TenantTarget
from btp_gitops.generator.core import get_path
from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION,
    CAP_TENANT,
    PROVIDER_SUFFIX,
    SUBSCRIPTION_GUID,
    TenantType,
    tenant_from_source,
)

T = TypeVar("T")


@dataclass(slots=True)
class _Snapshot:
    """What one commit of the source tree holds, as the server asks for it."""

    head: str
    index: SourceIndex
    apps_by_name: dict[tuple[str, str], AppTarget] = field(default_factory=dict)  # first file wins
    tenants_by_id: dict[str, list[TenantRecord]] = field(default_factory=dict)

    def application(self, identifier_hash: str) -> AppTarget | None:
        record = self.index.application_by_identifier(identifier_hash)
        return self.apps_by_name.get((record.namespace, record.name)) if record else None


class GitTenantLedger:
    """Tenant records in the source repository that `repo` (started) keeps a clone of."""

    def __init__(self, repo: SourceRepo, record_timeout: float = 120.0) -> None:
        self._repo = repo
        self._record_timeout = record_timeout
        self._snapshot: _Snapshot | None = None
        self._snapshot_lock = threading.Lock()
        repo.on_new_head(self._index_new_head)

    def _index_new_head(self, tree: Path, head: str) -> None:
        self._snapshot_of_head(tree, head)

    def _published(self) -> _Snapshot:
        """The index of the newest commit seen (built under the clone's lock only the first time)."""
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        return self._repo.read(self._snapshot_of, refresh=False)

    # --- reading ------------------------------------------------------------------------------------

    def ready(self) -> bool:
        return self.unready_reason() is None

    def unready_reason(self) -> str | None:
        if not self._repo.head:
            return "the tenant records are not available yet"
        return self._repo.remote_health().unready_reason()

    def applications(self) -> list[AppTarget]:
        return self._repo.read(
            lambda tree: list(self._snapshot_of(tree).apps_by_name.values()), refresh=False
        )

    def find_application(self, identifier_hash: str) -> AppTarget | None:
        found = self._published().application(identifier_hash)
        if found is not None:
            return found
        return self._repo.read(
            lambda tree: self._snapshot_of(tree).application(identifier_hash), refresh=True
        )

    def find_tenant(self, app: AppTarget, tenant_id: str) -> TenantTarget | None:
        published = self._published()
        # A miss in the published index is final only if that index is of the clone's head: the
        # writer answers a push's requests before readers re-index, so a DELETE right after the
        # 202 of its PUT may find the index one commit behind and must look under the lock.
        if (
            published.index.tenant(app.namespace, app.name, tenant_id) is None
            and published.head == self._repo.head
        ):
            return None

        def lookup(tree: Path) -> TenantTarget | None:
            snapshot = self._snapshot_of(tree)
            record = snapshot.index.tenant(app.namespace, app.name, tenant_id)
            current = snapshot.apps_by_name.get((app.namespace, app.name))
            return _tenant_target(snapshot.index, record, current) if record and current else None

        return self._repo.read(lookup, refresh=False)

    def find_tenant_by_subscription(self, subscription_guid: str, tenant_id: str) -> TenantTarget | None:
        def lookup(tree: Path) -> TenantTarget | None:
            snapshot = self._snapshot_of(tree)
            for record in snapshot.tenants_by_id.get(tenant_id, []):
                app = snapshot.apps_by_name.get((record.namespace, record.application))
                target = _tenant_target(snapshot.index, record, app) if app else None
                if target is not None and target.subscription_guid == subscription_guid:
                    return target
            return None

        return self._read_fresh_on_miss(lookup)

    def new_tenant_name(self, app: AppTarget, tenant_id: str) -> str:
        if app.provider_tenant_id and tenant_id == app.provider_tenant_id:
            return f"{app.name}{PROVIDER_SUFFIX}"
        return consumer_tenant_name(app.name, tenant_id)

    def subdomain_holder(self, app: AppTarget, sub_domain: str, tenant_id: str) -> str | None:
        for other in self._published().index.tenants_of(app.namespace, app.name):
            if other.sub_domain == sub_domain and other.tenant_id != tenant_id:
                return other.name
        return None

    def _read_fresh_on_miss(self, reader: Callable[[Path], T | None]) -> T | None:
        found = self._repo.read(reader, refresh=False)
        return found if found is not None else self._repo.read(reader, refresh=True)

    def _snapshot_of(self, tree: Path) -> _Snapshot:
        """The index of `tree`, which `SourceRepo.read` guarantees is the remote's commit `head`."""
        return self._snapshot_of_head(tree, self._repo.head)

    def _snapshot_of_head(self, tree: Path, head: str) -> _Snapshot:
        with self._snapshot_lock:
            if self._snapshot is None or self._snapshot.head != head:
                self._snapshot = _build_snapshot(tree, head)
            return self._snapshot

    # --- writing ------------------------------------------------------------------------------------

    def record_subscription(self, entry: SubscriptionEntry) -> None:
        subscription = Subscription(
            namespace=entry.app.namespace,
            application=entry.app.name,
            tenant_id=entry.tenant_id,
            sub_domain=entry.sub_domain,
            subscription_guid=entry.subscription_guid,
            global_account_id=entry.global_account_id,
            subscription_context_secret=entry.subscription_context_secret,
        )
        message = f"Subscribe tenant {entry.tenant_id} to {entry.app.namespace}/{entry.app.name}"
        self._apply(subscribe_tenant(subscription), message)

    def record_unsubscription(self, app: AppTarget, tenant_id: str) -> bool:
        def exists(tree: Path) -> bool:
            return self._snapshot_of(tree).index.tenant(app.namespace, app.name, tenant_id) is not None

        if not self._repo.read(exists, refresh=True):
            return False
        message = f"Unsubscribe tenant {tenant_id} from {app.namespace}/{app.name}"
        self._apply(unsubscribe_tenant(app.namespace, app.name, tenant_id), message)
        return True

    def _apply(self, change: TreeChange, message: str) -> None:
        future = self._repo.submit(change, message)
        try:
            future.result(self._record_timeout)
        except concurrent.futures.TimeoutError:
            if future.cancel():
                raise TemporaryError(
                    f"the source repository did not take the change within {self._record_timeout:.0f}s; "
                    "nothing was recorded"
                ) from None
            raise OutcomeUnknown(
                f"the change was not confirmed pushed within {self._record_timeout:.0f}s; it may still land"
            ) from None


def _build_snapshot(tree: Path, head: str) -> _Snapshot:
    index = SourceIndex.of_tree(tree)
    snapshot = _Snapshot(head, index)
    for record in index.applications:
        snapshot.apps_by_name.setdefault((record.namespace, record.name), _app_target(index, record))
    for tenant in index.tenants:
        snapshot.tenants_by_id.setdefault(tenant.tenant_id, []).append(tenant)
    return snapshot


def _app_target(index: SourceIndex, record: ApplicationRecord) -> AppTarget:
    dependencies = _subscription_dependencies(index, record)
    return AppTarget(
        namespace=record.namespace,
        name=record.name,
        btp_app_name=record.btp_app_name,
        provider_subaccount_id=record.provider_subaccount_id,
        identifier_hash=record.identifier_hash,
        services=tuple(
            ServiceRef(s.name, s.secret, s.service_class, s.name in dependencies) for s in record.services
        ),
        annotations=dict(record.annotations),
        provider_tenant_id=record.provider_tenant_id,
        provider_sub_domain=record.provider_sub_domain,
    )


def _subscription_dependencies(index: SourceIndex, record: ApplicationRecord) -> set[str]:
    """Names of the services with `subscriptionDependency: true` (the records' view leaves the flag out)."""
    document = index.document(record.path, CAP_APPLICATION, record.namespace, record.name)
    services = get_path(document.body, "spec", "btp", "services")
    return {
        str(s.get("name"))
        for s in services or []
        if isinstance(s, dict) and s.get("subscriptionDependency") is True
    }


def _tenant_target(index: SourceIndex, record: TenantRecord, app: AppTarget) -> TenantTarget:
    document = index.document(record.path, CAP_TENANT, record.namespace, record.name)
    tenant = tenant_from_source(document, TenantType.CONSUMER)
    return TenantTarget(
        app=app,
        name=record.name,
        tenant_id=record.tenant_id,
        sub_domain=record.sub_domain,
        subscription_guid=tenant.labels.get(SUBSCRIPTION_GUID, ""),
        subscription_context_secret=tenant.subscription_context_secret,
        marked_for_deletion=record.marked_for_deprovisioning,
    )
