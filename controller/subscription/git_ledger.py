"""The subscription server's `TenantLedger` on the source Git repository (controller.gitstore and
controller.records).

Lookups answer from the index of the newest commit the clone has seen, built once per commit when
the clone moves to it (`SourceRepo.on_new_head`), or for our own commits while their push is in
flight (`on_commit`, published by `on_pushed`: the writer applies the next batch on top of a
commit before its push has landed), without waiting for the clone's lock, which the writer holds
while it commits and pushes: under load, requests would otherwise queue behind every batch.

Several replicas share the remote, and a replica's clone moves only when it pushes or fetches, so
its index can miss what another replica recorded. Two bounds keep the replicas in agreement
(`_Refresher`; the guarantee is documented in docs/subscription-server.md, "Replicas"):

- a miss (an unknown tenant or application) is final only after a fetch that started after the
  question was asked: no replica answers 404, or "created" to a re-subscribe, for a tenant whose
  record was pushed before the request arrived;
- a hit comes from an index fetched at most `max_staleness` seconds before the question.

A look at the remote is `git ls-remote` (no lock); only a head the clone has not seen costs a
fetch. Looks are shared: callers waiting for a fresh index wait for one, and looks start at most
once per `min_refresh_interval`, so a flood of misses costs one per interval, not one each.

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
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from btp_gitops.controller.clients.targets import AppTarget, ServiceRef
from btp_gitops.controller.errors import OutcomeUnknown, TemporaryError, UnreadableSource
from btp_gitops.controller.gitstore import SourceRepo, TreeChange
from btp_gitops.controller.records import (
    ApplicationRecord,
    SourceIndex,
    Subscription,
    TenantRecord,
    WorkingIndex,
    consumer_tenant_name,
    subscribe_tenant,
    unsubscribe_tenant,
)
from btp_gitops.controller.subscription.domains import ApplicationDomains, resolve_domains
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

log = logging.getLogger(__name__)

T = TypeVar("T")

# How long a lookup waits for this replica's own push in flight before it fetches instead.
_OWN_PUSH_WAIT = 2.0


@dataclass(slots=True)
class _Snapshot:
    """What one commit of the source tree holds, as the server asks for it."""

    head: str
    index: SourceIndex
    apps_by_name: dict[tuple[str, str], AppTarget] = field(default_factory=dict)  # first file wins
    _tenants_by_id: dict[str, list[TenantRecord]] | None = None  # made when first asked

    def application(self, identifier_hash: str) -> AppTarget | None:
        record = self.index.application_by_identifier(identifier_hash)
        return self.apps_by_name.get((record.namespace, record.name)) if record else None

    def tenants_with_id(self, tenant_id: str) -> list[TenantRecord]:
        """Every tenant record with this tenant id, whatever its application, in path order
        (only subscription manager unsubscribes ask: made on the first question, not per commit;
        two threads asking at once both make the same table)."""
        by_id = self._tenants_by_id
        if by_id is None:
            by_id = {}
            for tenant in self.index.tenants:
                by_id.setdefault(tenant.tenant_id, []).append(tenant)
            self._tenants_by_id = by_id
        return by_id.get(tenant_id, [])


class _Refresher:
    """Fetches of the remote on demand, shared: `refresh(since)` returns once a fetch that started at
    `since` or later has ended, running one only when none is running or has ended since. Fetches
    start at most once per `min_interval` seconds (callers wait for the next slot), so however many
    callers ask, the remote sees one fetch per interval."""

    def __init__(
        self,
        fetch: Callable[[], None],
        min_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._min_interval = min_interval
        self._clock = clock
        self._changed = threading.Condition()
        self._running = False
        self._last_started = -math.inf  # of the newest fetch, running or ended
        self._ended_started = -math.inf  # when the newest ended fetch started
        self._ended_error: BaseException | None = None  # how it ended
        self._ended_at = -math.inf  # when it ended
        self._fresh_as_of = -math.inf  # when the newest successful fetch started

    @property
    def fresh_as_of(self) -> float:
        """The clock's time at which the newest successful fetch started (-inf before any)."""
        return self._fresh_as_of

    def refresh(self, since: float) -> None:
        """Return once a fetch started at `since` or later ended; raise its error when it failed
        while this caller waited (a caller asking after it ended gets a fetch of its own, in the
        next slot: a failure is never served from memory, or the remote's recovery would go
        unnoticed for as long as `since` reaches back)."""
        asked = self._clock()
        with self._changed:
            while True:
                if self._fresh_as_of >= since:
                    return
                ended_error = self._ended_error
                if ended_error is not None and self._ended_started >= since and self._ended_at >= asked:
                    raise ended_error
                if self._running:
                    self._changed.wait()
                    continue
                delay = self._last_started + self._min_interval - self._clock()
                if delay > 0:
                    self._changed.wait(delay)
                    continue
                started = self._last_started = self._clock()
                self._running = True
                break
        error: BaseException | None = None
        try:
            self._fetch()
        except BaseException as failure:
            error = failure
            raise
        finally:
            with self._changed:
                self._running = False
                self._ended_started, self._ended_error = started, error
                self._ended_at = self._clock()
                if error is None:
                    self._fresh_as_of = max(self._fresh_as_of, started)
                self._changed.notify_all()


class GitTenantLedger:
    """Tenant records in the source repository that `repo` (started) keeps a clone of.

    `min_refresh_interval`: the least time between two fetches a lookup starts; `max_staleness`:
    the oldest fetch a hit may be answered from (module docstring)."""

    def __init__(
        self,
        repo: SourceRepo,
        record_timeout: float = 120.0,
        *,
        min_refresh_interval: float = 0.1,
        max_staleness: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repo = repo
        self._record_timeout = record_timeout
        self._max_staleness = max_staleness
        self._clock = clock
        self._snapshot: _Snapshot | None = None
        self._snapshot_lock = threading.Lock()
        self._indexed = threading.Condition()  # notified when the published index moves
        self._refresher = _Refresher(self._catch_up, min_refresh_interval, clock)
        self._pending: _Snapshot | None = None  # of our commit whose push is in flight
        repo.track_tree(WorkingIndex())  # one index per batch, updated in place
        repo.on_commit(self._index_commit)
        repo.on_pushed(self._index_pushed)
        repo.on_new_head(self._index_new_head)

    def _catch_up(self) -> None:
        """Bring the clone to the remote's newest commit. Usually the remote is where this replica
        last pushed or fetched: then a look at its head (no lock) is enough, and requests do not
        queue behind the writer's batch for a fetch that would bring nothing."""
        seen = self._repo.remote_head()
        if seen == self._repo.head:
            return
        # The remote is at a commit the clone holds already: this replica's own, its push in
        # flight (or one the writer's fetch just brought). The clone's next commit is that one or
        # a descendant (the clone moves under its lock, one step at a time, and pushes never
        # rewind the remote), so the next index will do; waiting for it costs less than queueing
        # for the writer's lock behind the rest of its cycle.
        if self._repo.has_commit(seen) and self._wait_for_index(seen, _OWN_PUSH_WAIT):
            return
        # A read with refresh fetches (unless a fetch began after it was called) and moves the tree
        # and the published index to the remote's newest commit.
        self._repo.read(lambda _tree: None, refresh=True)

    def _index_new_head(self, tree: Path, head: str) -> None:
        try:
            self._snapshot_of_head(tree, head)
        except UnreadableSource as error:
            # A commit anyone can push: the server keeps serving (each request that needs the
            # records answers 503 and logs why) until a commit repairs the tree.
            log.warning("the tenant records at %s cannot be read: %s", head[:12], error.message)

    def _index_commit(self, tree: Path, commit: str) -> None:
        """Index our commit while its push is in flight; published once it landed."""
        with self._snapshot_lock:
            previous = self._pending or self._snapshot
        snapshot = _build_snapshot(tree, commit, previous)
        with self._snapshot_lock:
            self._pending = snapshot

    def _index_pushed(self, head: str) -> None:
        """Our push made `head` the remote's commit, and the tree has moved on to the next batch:
        publish the index made of it before."""
        with self._snapshot_lock:
            pending = self._pending
            if pending is None or pending.head != head:
                return  # looked up under the lock when asked (`_current`)
            self._snapshot = pending
        with self._indexed:
            self._indexed.notify_all()

    def _wait_for_index(self, head: str, timeout: float) -> bool:
        """Wait until the clone is at `head` or the next index is published; False after
        `timeout` seconds (the push failed, or the index had moved just before: the caller
        fetches instead). Called once the clone holds `head`, so every index published from now
        on is of `head` or a descendant: the clone moves under its lock, after our push announced
        its commit, and pushes never rewind the remote."""
        with self._indexed:
            indexed = self._snapshot.head if self._snapshot else ""

            def moved() -> bool:
                current = self._snapshot.head if self._snapshot else ""
                return self._repo.head == head or current != indexed

            return self._indexed.wait_for(moved, timeout)

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
        return self._find(lambda snapshot: snapshot.application(identifier_hash))

    def find_tenant(self, app: AppTarget, tenant_id: str) -> TenantTarget | None:
        def lookup(snapshot: _Snapshot) -> TenantTarget | None:
            record = snapshot.index.tenant(app.namespace, app.name, tenant_id)
            current = snapshot.apps_by_name.get((app.namespace, app.name))
            return _tenant_target(snapshot.index, record, current) if record and current else None

        return self._find(lookup)

    def application_domains(self, app: AppTarget) -> ApplicationDomains:
        # As fresh as a hit of the other lookups: a Domain added since is seen within that time.
        self._refresher.refresh(self._clock() - self._max_staleness)
        index = self._current().index
        record = index.application(app.namespace, app.name)
        if record is None:
            return ApplicationDomains()
        body = index.document(record.path, CAP_APPLICATION, record.namespace, record.name).body
        candidates = [*index.documents_of_namespace(app.namespace), *index.documents_of_namespace("")]
        return resolve_domains(body, candidates)

    def find_tenant_by_subscription(self, subscription_guid: str, tenant_id: str) -> TenantTarget | None:
        def lookup(snapshot: _Snapshot) -> TenantTarget | None:
            for record in snapshot.tenants_with_id(tenant_id):
                app = snapshot.apps_by_name.get((record.namespace, record.application))
                target = _tenant_target(snapshot.index, record, app) if app else None
                if target is not None and target.subscription_guid == subscription_guid:
                    return target
            return None

        return self._find(lookup)

    def new_tenant_name(self, app: AppTarget, tenant_id: str) -> str:
        if app.provider_tenant_id and tenant_id == app.provider_tenant_id:
            return f"{app.name}{PROVIDER_SUFFIX}"
        return consumer_tenant_name(app.name, tenant_id)

    def subdomain_holder(self, app: AppTarget, sub_domain: str, tenant_id: str) -> str | None:
        # Only a hit needs to be fresh: on a miss, the write checks the remote's newest tree.
        self._refresher.refresh(self._clock() - self._max_staleness)
        for other in self._current().index.tenants_with_subdomain(app.namespace, app.name, sub_domain):
            if other.tenant_id != tenant_id:
                return other.name
        return None

    def _find(self, lookup: Callable[[_Snapshot], T | None]) -> T | None:
        """`lookup` on an index at most `max_staleness` old; on a miss, again on an index fetched
        after this call (another replica may have recorded it since this one last fetched)."""
        asked = self._clock()
        self._refresher.refresh(asked - self._max_staleness)
        found = lookup(self._current())
        if found is not None:
            return found
        self._refresher.refresh(asked)
        return lookup(self._current())

    def _current(self) -> _Snapshot:
        """The index of the clone's head: the published one. When the writer has moved the head and
        not yet published its index (it answers a push's requests first, then publishes, still
        holding the clone's lock), wait for that publication rather than for the lock: the writer
        takes the lock again at once for its next batch, and a lookup queued on it would wait for
        that whole batch, push included. Built under the clone's lock only when nothing is
        published within `_OWN_PUSH_WAIT` (the head moved by a fetch of the writer's, say)."""
        published = self._published()
        if published.head == self._repo.head:
            return published
        with self._indexed:
            if self._indexed.wait_for(self._published_is_head, _OWN_PUSH_WAIT):
                snapshot = self._snapshot
                assert snapshot is not None  # _published_is_head
                return snapshot
        return self._repo.read(self._snapshot_of, refresh=False)

    def _published_is_head(self) -> bool:
        snapshot = self._snapshot
        return snapshot is not None and snapshot.head == self._repo.head

    def _snapshot_of(self, tree: Path) -> _Snapshot:
        """The index of `tree`, which `SourceRepo.read` guarantees is the remote's commit `head`."""
        return self._snapshot_of_head(tree, self._repo.head)

    def _snapshot_of_head(self, tree: Path, head: str) -> _Snapshot:
        with self._snapshot_lock:
            snapshot = self._snapshot
            if snapshot is not None and snapshot.head == head:
                return snapshot
            pending = self._pending
            snapshot = self._snapshot = (
                pending
                if pending and pending.head == head
                else _build_snapshot(tree, head, pending or snapshot)
            )
        with self._indexed:  # lookups waiting for the index of the new head (`_current`)
            self._indexed.notify_all()
        return snapshot

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


def _build_snapshot(tree: Path, head: str, previous: _Snapshot | None = None) -> _Snapshot:
    """The snapshot of `tree` at commit `head`; `previous`, a snapshot of the same clone at an
    earlier commit, lends the records of every file that did not change since (a commit of a
    batch costs a walk of the tree and the files the batch wrote, not an index of every record)."""
    index = SourceIndex.of_tree(tree, previous.index if previous is not None else None)
    snapshot = _Snapshot(head, index)
    for record in index.applications:
        snapshot.apps_by_name.setdefault((record.namespace, record.name), _app_target(index, record))
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
            ServiceRef(s.name, s.secret, s.service_class, dependencies.get(s.name, "Auto"))
            for s in record.services
        ),
        annotations=dict(record.annotations),
        provider_tenant_id=record.provider_tenant_id,
        provider_sub_domain=record.provider_sub_domain,
        multi_tenant=not index.services_only(record),
    )


def _subscription_dependencies(index: SourceIndex, record: ApplicationRecord) -> dict[str, str]:
    """Each service's `subscriptionDependency` as written (the records' view leaves it out)."""
    document = index.document(record.path, CAP_APPLICATION, record.namespace, record.name)
    services = get_path(document.body, "spec", "btp", "services")
    return {
        str(s.get("name")): str(s["subscriptionDependency"])
        for s in services or []
        if isinstance(s, dict) and isinstance(s.get("subscriptionDependency"), str)
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
