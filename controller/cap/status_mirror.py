"""The status recorded in Git, mirrored onto the CAPTenant in the cluster.

A render writes CAPTenants without status (Git holds it, in the record). Mirroring it onto the
cluster object's status subresource gives `kubectl get captenants` its State and Version columns,
and gives the deletion finalizers (controller.cap.deletion) the version a tenant runs on after its
operation Jobs are gone, which they need when the files are pruned from Git at once. Git stays
the truth: the mirror only copies the record's status, and a tenant without a record is left as it
is (its deletion is the finalizer's business).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from btp_gitops.controller.cap.tenant_operations import Snapshot, SourceSnapshots
from btp_gitops.controller.kube import CAP_TENANT, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey, Outcome, Watch
from btp_gitops.generator.domains.cap import TenantStatus

log = logging.getLogger("btp_gitops.controller.cap.status")


def status_document(status: TenantStatus) -> dict[str, Any]:
    """The record's status as the CRD's status block (the same fields, empty ones left out)."""
    document: dict[str, Any] = {}
    if status.state is not None:
        document["state"] = status.state.value
    if status.current_instance:
        document["currentCAPApplicationVersionInstance"] = status.current_instance
    if status.previous_instances:
        document["previousCAPApplicationVersions"] = list(status.previous_instances)
    if status.last_completed is not None:
        document["lastCompletedOperation"] = {
            "operation": status.last_completed.operation.value,
            "capApplicationVersionInstance": status.last_completed.version_instance,
        }
    return document


_MIRRORED = (
    "state",
    "currentCAPApplicationVersionInstance",
    "previousCAPApplicationVersions",
    "lastCompletedOperation",
)


def status_patch(live: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any] | None:
    """A merge patch that makes the live status show the recorded one (None: it already does).
    Fields the record lacks are removed (null), other status fields (conditions) are kept."""
    patch: dict[str, Any] = {}
    for field in _MIRRORED:
        if live.get(field) != recorded.get(field):
            patch[field] = recorded.get(field)
    return patch or None


def _deprovisioned(live: dict[str, Any]) -> bool:
    completed = (live.get("status") or {}).get("lastCompletedOperation") or {}
    return completed.get("operation") == "deprovisioning"


class TenantStatusMirror:
    """Copies each recorded tenant's status onto its CAPTenant in the cluster."""

    name = "cap-tenant-status"

    def __init__(self, kube: KubeClient, snapshots: SourceSnapshots) -> None:
        self._kube = kube
        self._snapshots = snapshots

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch(CAP_TENANT),)

    def reconcile(self, key: ObjectKey) -> Outcome:
        self.mirror(key)
        return DONE

    def mirror(self, key: ObjectKey, *, fresh: bool = False) -> None:
        """Copy the record's status (from the remote's newest commit when `fresh`, e.g. right
        after the tenant operations reconciler recorded an outcome)."""
        live = self._kube.get(CAP_TENANT, key.name, key.namespace)
        if live is None or (live.get("metadata") or {}).get("deletionTimestamp"):
            return

        def recorded(snapshot: Snapshot) -> tuple[TenantStatus, bool] | None:
            record = snapshot.index.tenant_named(key.namespace, key.name)
            return (record.status, record.marked_for_deprovisioning) if record is not None else None

        found = self._snapshots.read(recorded, fresh=fresh)
        if found is None:
            return
        status, marked = found
        if marked and _deprovisioned(live):
            # The tenant operations reconciler marked the deprovisioning done here just before the
            # commit that records it (and removes the record) is pushed; the record in our
            # snapshot predates it. Copying it back would make the finalizer deprovision again.
            return
        patch = status_patch(live.get("status") or {}, status_document(status))
        if patch is not None:
            self._kube.patch_status(CAP_TENANT, key.name, patch, key.namespace)
            log.info("tenant %s: status %s mirrored from Git", key, status_document(status).get("state", "-"))


def mark_deprovisioned(kube: KubeClient, key: ObjectKey, version_instance: str) -> None:
    """Record a completed deprovisioning on the cluster's CAPTenant (its Git record is about to go)."""
    if kube.get(CAP_TENANT, key.name, key.namespace) is None:
        return
    completed = {"operation": "deprovisioning", "capApplicationVersionInstance": version_instance}
    kube.patch_status(CAP_TENANT, key.name, {"lastCompletedOperation": completed}, key.namespace)
    log.info("tenant %s: deprovisioning on %s recorded on the cluster object", key, version_instance)
