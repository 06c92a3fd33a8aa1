"""Planned deletion of a CAP application through Git: once the tenants of an application marked
`btp-gitops.io/deprovision: "true"` are all deprovisioned, its files leave the source repository.

The mark makes the generator render deprovisioning for every tenant of the application, the
provider included (generator.domains.cap.tenants.selection.application_retiring), and
tenant_operations records each outcome: a consumer's record is removed, the provider's records the
deprovisioning (its record is created if it had none). Then, in one commit, this removes

    the CAPApplication's document    (its file when that holds nothing else: a Domain beside it stays)
    its CAPApplicationVersions       (idem)
    its tenant records               (the provider's, and any other left), and `tenants/` if emptied

and the GitOps tool prunes everything they rendered. It waits while a tenant is not done, and while
a callback is pending for the application (its delivery needs the application's credentials,
which are found through the CAPApplication in Git).

Key: a namespace, `ObjectKey("", <namespace>)`, the Namespace's own key: the Namespace watch makes
the runtime look at every namespace at start and at every resync, so a retirement due after a
restart is found even when nothing else happens there. Tenant operation Jobs and pending-callback
ConfigMaps queue their namespace too, so the retirement follows the last tenant promptly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from btp_gitops.controller.cap.tenant_operations import Snapshot, SourceSnapshots
from btp_gitops.controller.clients.cluster_side import PENDING_CALLBACK_LABEL
from btp_gitops.controller.clone_files import remove_empty_directory_beneath
from btp_gitops.controller.kube import CONFIG_MAP, JOB, NAMESPACE, KubeClient, KubeObject
from btp_gitops.controller.records import (
    TENANTS_DIRECTORY,
    ApplicationRecord,
    DocumentRef,
    SourceIndex,
    TenantRecord,
    remove_document,
    remove_tenant_record,
    remove_version,
)
from btp_gitops.controller.runtime import DONE, ObjectKey, Outcome, Watch
from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION,
    DEPROVISION_ANNOTATION,
    TENANT_OPERATION_TYPE,
    TenantOperation,
    TenantState,
)

log = logging.getLogger("btp_gitops.controller.cap.application_retirement")


@dataclass(frozen=True, slots=True)
class RetirementSettings:
    poll_interval: float = 60.0  # a retiring application is looked at again this often
    git_timeout: float = 120.0


def marked_for_retirement(app: ApplicationRecord) -> bool:
    return app.annotations.get(DEPROVISION_ANNOTATION) == "true"


def _deprovisioned(record: TenantRecord) -> bool:
    done = record.status.last_completed
    return (
        done is not None
        and done.operation == TenantOperation.DEPROVISIONING
        and record.status.state != TenantState.DELETING
    )


def waiting_for(index: SourceIndex, app: ApplicationRecord) -> list[str]:
    """The tenants whose deprovisioning the application's retirement still waits for."""
    waiting = [r.name for r in index.tenants_of(app.namespace, app.name) if not _deprovisioned(r)]
    provider_recorded = index.tenant(app.namespace, app.name, app.provider_tenant_id) is not None
    if app.has_provider and not provider_recorded:
        waiting.append(app.provider_tenant_name)  # derived, never recorded: not deprovisioned yet
    return sorted(waiting)


# --- the change and the reconciler -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetireApplication:
    """Remove the application's CAPApplication, versions and tenant records, if it is (still) marked
    and every tenant is deprovisioned on the tree this is applied to."""

    namespace: str
    name: str

    def __call__(self, tree: Path) -> str | None:
        index = SourceIndex.of_tree(tree)
        app = index.application(self.namespace, self.name)
        if app is None or not marked_for_retirement(app) or waiting_for(index, app):
            return None
        tenants = index.tenants_of(self.namespace, self.name)
        versions = index.versions_of(self.namespace, self.name)
        for tenant in tenants:
            remove_tenant_record(self.namespace, tenant.name)(tree)
        for version in versions:
            remove_version(self.namespace, version.name)(tree)
        remove_document(tree, DocumentRef(app.path, CAP_APPLICATION, self.namespace, self.name))
        remove_empty_directory_beneath(tree, app.path.parent / TENANTS_DIRECTORY)  # never a link
        return (
            f"CAPApplication {self.namespace}/{self.name}: retired, removed with {len(versions)} "
            f"version(s) and {len(tenants)} tenant record(s)"
        )


def _namespace_key(obj: KubeObject) -> Iterable[ObjectKey]:
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    return (ObjectKey("", namespace),) if namespace else ()


def _own_key(obj: KubeObject) -> Iterable[ObjectKey]:
    return (ObjectKey("", str((obj.get("metadata") or {}).get("name") or "")),)


@dataclass(frozen=True, slots=True)
class ReadNamespace:
    """The marked applications of one namespace, and what each still waits for."""

    namespace: str

    def __call__(self, snapshot: Snapshot) -> list[tuple[ApplicationRecord, list[str]]]:
        index = snapshot.index
        return [
            (app, waiting_for(index, app))
            for app in index.applications
            if app.namespace == self.namespace and marked_for_retirement(app)
        ]


class ApplicationRetirementReconciler:
    """Removes retired CAP applications from the source repository, one namespace per key."""

    name = "cap-application-retirement"

    def __init__(
        self,
        kube: KubeClient,
        snapshots: SourceSnapshots,
        settings: RetirementSettings = RetirementSettings(),
    ) -> None:
        self._kube = kube
        self._snapshots = snapshots
        self._settings = settings

    @property
    def watches(self) -> Sequence[Watch]:
        return (
            Watch(NAMESPACE, to_keys=_own_key),
            Watch(
                JOB,
                label_selector=f"{TENANT_OPERATION_TYPE}={TenantOperation.DEPROVISIONING.value}",
                to_keys=_namespace_key,
            ),
            Watch(CONFIG_MAP, label_selector=f"{PENDING_CALLBACK_LABEL}=true", to_keys=_namespace_key),
        )

    def reconcile(self, key: ObjectKey) -> Outcome:
        namespace = key.name
        if not self._snapshots.read(ReadNamespace(namespace)):
            return DONE
        # Due or not, decide on the remote's newest commit: the last tenant may have just gone.
        remaining = False
        for app, waiting in self._snapshots.read(ReadNamespace(namespace), fresh=True):
            remaining = True
            if waiting:
                log.info(
                    "CAPApplication %s/%s retires once %s are deprovisioned",
                    namespace,
                    app.name,
                    ", ".join(waiting),
                )
                continue
            pending = self._pending_callbacks(app)
            if pending:
                log.info(
                    "CAPApplication %s/%s retires once callbacks of %s are sent",
                    namespace,
                    app.name,
                    ", ".join(pending),
                )
                continue
            message = f"Retire CAPApplication {namespace}/{app.name}: every tenant is deprovisioned"
            commit = self._snapshots.write(
                RetireApplication(namespace, app.name), message, self._settings.git_timeout
            )
            log.info("%s%s", message, f" (commit {commit[:12]})" if commit else " (nothing left to remove)")
        return Outcome(requeue_after=self._settings.poll_interval) if remaining else DONE

    def _pending_callbacks(self, app: ApplicationRecord) -> list[str]:
        found = self._kube.list(CONFIG_MAP, app.namespace, label_selector=f"{PENDING_CALLBACK_LABEL}=true")
        return sorted(
            str((c.get("data") or {}).get("tenantName") or "")
            for c in found
            if (c.get("data") or {}).get("application") == app.name
        )
