"""What a subscribe or unsubscribe leaves in the cluster, beside the tenant record in Git.

- Secret `<tenant>-subscription-context` (or the name the record's
  `sme.sap.com/subscription-context-secret` annotation gives), key `subscriptionContext`: the
  request body as received, which the provisioning Job hands to CAP's mtxs. It is never written to
  Git nor logged.
- ConfigMap `btp-gitops-callback-<tenant>-<operation>` (operation: provisioning |
  deprovisioning), labels `btp-gitops.io/pending-callback: "true"` and `sme.sap.com/btp-tenant-id`,
  data `operation`, `tenantName`, `tenantId`, `subDomain`, `callbackPath`, `deadline` (RFC 3339,
  UTC), `appUrl`, `application` (the CAPApplication's name), `subscriptionType` (SaaS | SMS) and
  `openedAt` (RFC 3339 with microseconds, UTC): the callback owed to the caller, which the
  completion watcher sends once the tenant's Jobs finished, failed or the deadline passed, and which
  survives restarts of either process.

One ConfigMap per tenant and operation, not one per tenant: an unsubscribe that follows a subscribe
whose callback is decided but not yet delivered (the SaaS registry was down, say) must not
overwrite it, or that callback is never sent. Separate objects rather than one ConfigMap holding a
list keyed by operation, because then the server's writes stay one apply or delete of its own
object (no read-modify-write racing the controller's delivery-state patches on a shared object),
and each callback keeps its own delivery state, `failed` label, Events and conditional delete.
A repeated request of the same operation replaces that operation's callback, as the caller now
waits for the newer one. `openedAt` orders the callbacks of a tenant: the watcher delivers them in
the order they were opened.

Releases before this one wrote `btp-gitops-callback-<tenant>` (no operation in the name, no
`openedAt`). The watcher still reads and delivers those (as the oldest of the tenant's callbacks);
nothing writes them any more.

Both are created (under the controller's field manager) and, when they exist already, written
with server-side apply, so writing them again is harmless; a create costs the API server less than
an apply, and the callback's create needs no read of the one it might replace. They are written before
the record goes to Git: a crash in between leaves a callback whose tenant never comes, which the
watcher reports FAILED at its deadline (the caller, which got no 202, already counts it as failed).
When the record cannot be written the server withdraws the callback it opened (restoring the one
it replaced, if any), since its error answer already tells the caller the outcome.
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from btp_gitops.controller.clients.targets import AppTarget
from btp_gitops.controller.kube import CONFIG_MAP, SECRET, Conflict, KubeClient, KubeObject

PENDING_CALLBACK_LABEL = "btp-gitops.io/pending-callback"
TENANT_ID_LABEL = "sme.sap.com/btp-tenant-id"
SUBSCRIPTION_GUID_LABEL = "sme.sap.com/subscription-guid"
APP_IDENTIFIER_HASH_LABEL = "sme.sap.com/btp-app-identifier-hash"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "btp-gitops"
CONTEXT_KEY = "subscriptionContext"
CALLBACK_PREFIX = "btp-gitops-callback-"


class Operation(StrEnum):
    PROVISIONING = "provisioning"
    DEPROVISIONING = "deprovisioning"


def pending_callback_name(tenant_name: str, operation: Operation) -> str:
    """The ConfigMap of the callback owed for `operation` of the tenant (tenant names have at
    most 63 characters, so this stays far below the 253 a ConfigMap's name may have)."""
    return f"{CALLBACK_PREFIX}{tenant_name}-{operation.value}"


def legacy_callback_name(tenant_name: str) -> str:
    """The one-per-tenant ConfigMap earlier releases wrote; read (and delivered), never written."""
    return f"{CALLBACK_PREFIX}{tenant_name}"


def callback_names(tenant_name: str) -> tuple[str, ...]:
    """Every ConfigMap name a pending callback of the tenant may have, in either format."""
    return (
        legacy_callback_name(tenant_name),
        *(pending_callback_name(tenant_name, operation) for operation in Operation),
    )


def rfc3339(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class PendingCallback:
    """A status callback owed to the SaaS registry or subscription manager for one tenant operation."""

    app: AppTarget
    tenant_name: str
    tenant_id: str
    sub_domain: str
    operation: Operation
    callback_path: str
    deadline: dt.datetime
    app_url: str
    subscription_type: str

    @property
    def name(self) -> str:
        return pending_callback_name(self.tenant_name, self.operation)

    def config_map(self, opened_at: dt.datetime) -> KubeObject:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.app.namespace,
                "labels": {
                    PENDING_CALLBACK_LABEL: "true",
                    TENANT_ID_LABEL: self.tenant_id,
                    MANAGED_BY_LABEL: MANAGED_BY,
                },
            },
            "data": {
                "operation": str(self.operation),
                "tenantName": self.tenant_name,
                "tenantId": self.tenant_id,
                "subDomain": self.sub_domain,
                "callbackPath": self.callback_path,
                "deadline": rfc3339(self.deadline),
                "appUrl": self.app_url,
                "application": self.app.name,
                "subscriptionType": self.subscription_type,
                "openedAt": opened_at.astimezone(dt.UTC).isoformat(),
            },
        }


class ClusterSide:
    """Writes the subscription context and the pending callbacks through the controller's KubeClient."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube

    def store_subscription_context(
        self, app: AppTarget, secret_name: str, tenant_id: str, subscription_guid: str, context: str
    ) -> None:
        labels = {
            TENANT_ID_LABEL: tenant_id,
            APP_IDENTIFIER_HASH_LABEL: app.identifier_hash,
            MANAGED_BY_LABEL: MANAGED_BY,
        }
        if subscription_guid:
            labels[SUBSCRIPTION_GUID_LABEL] = subscription_guid
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": secret_name, "namespace": app.namespace, "labels": labels},
            "data": {CONTEXT_KEY: base64.b64encode(context.encode("utf-8")).decode("ascii")},
        }
        # Usually a new tenant: one create, which costs the API server much less than an apply.
        # A repeated subscribe finds it (`Conflict`) and replaces it whole: the create's fields
        # belong to an Update entry of our manager, which an apply would not remove, so a label
        # the new context lacks (a subscription GUID) would outlive it.
        try:
            self._kube.create(SECRET, secret, app.namespace, owned=True)
        except Conflict:
            self._kube.replace(SECRET, secret)

    def remove_subscription_context(self, app: AppTarget, secret_name: str) -> None:
        """Undo `store_subscription_context` for a tenant that was not recorded after all."""
        self._kube.delete(SECRET, secret_name, app.namespace)

    def open_callback(self, callback: PendingCallback) -> KubeObject | None:
        """Write the pending callback; the one it replaces, if any, for `withdraw_callback`.

        Usually there is none (a new tenant, or the callback of the last operation delivered):
        one create, no read. When one exists (`Conflict`), it is read and replaced by an apply."""
        # The wall clock: only the order of a tenant's callbacks matters, and an unsubscribe that
        # follows a subscribe comes after the subscribe's 202, which waited for a Git push.
        config_map = callback.config_map(dt.datetime.now(dt.UTC))
        try:
            self._kube.create(CONFIG_MAP, config_map, callback.app.namespace, owned=True)
            return None
        except Conflict:
            pass
        previous = self._kube.get(CONFIG_MAP, callback.name, callback.app.namespace)
        self._kube.replace(CONFIG_MAP, config_map)  # whole, as for the Secret above
        return previous

    def withdraw_callback(self, callback: PendingCallback, previous: KubeObject | None) -> None:
        """Undo `open_callback`: put back what it replaced, or delete it."""
        if previous is None:
            self._kube.delete(CONFIG_MAP, callback.name, callback.app.namespace)
            return
        self._kube.replace(CONFIG_MAP, _restorable(previous))


def _restorable(previous: KubeObject) -> dict[str, Any]:
    meta = previous.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "labels": meta.get("labels") or {},
        },
        "data": previous.get("data") or {},
    }
