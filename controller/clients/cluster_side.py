"""What a subscribe or unsubscribe leaves in the cluster, beside the tenant record in Git.

- Secret `<tenant>-subscription-context` (or the name the record's
  `sme.sap.com/subscription-context-secret` annotation gives), key `subscriptionContext`: the
  request body as received, which the provisioning Job hands to CAP's mtxs. It is never written to
  Git nor logged.
- ConfigMap `btp-gitops-callback-<tenant>`, labels `btp-gitops.io/pending-callback: "true"` and
  `sme.sap.com/btp-tenant-id`, data `operation` (provisioning | deprovisioning), `tenantName`,
  `tenantId`, `subDomain`, `callbackPath`, `deadline` (RFC 3339, UTC), `appUrl`, `application`
  (the CAPApplication's name) and `subscriptionType` (SaaS | SMS): the callback owed to the caller,
  which the completion watcher sends once the tenant's Jobs finished, failed or the deadline passed,
  and which survives restarts of either process.

Both are written with server-side apply, so writing them again is harmless. They are written before
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
from btp_gitops.controller.kube import CONFIG_MAP, SECRET, KubeClient, KubeObject

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


def pending_callback_name(tenant_name: str) -> str:
    return f"{CALLBACK_PREFIX}{tenant_name}"


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
        return pending_callback_name(self.tenant_name)

    def config_map(self) -> KubeObject:
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
        self._kube.apply(SECRET, secret)

    def remove_subscription_context(self, app: AppTarget, secret_name: str) -> None:
        """Undo `store_subscription_context` for a tenant that was not recorded after all."""
        self._kube.delete(SECRET, secret_name, app.namespace)

    def open_callback(self, callback: PendingCallback) -> KubeObject | None:
        """Write the pending callback; the one it replaces, if any, for `withdraw_callback`."""
        previous = self._kube.get(CONFIG_MAP, callback.name, callback.app.namespace)
        self._kube.apply(CONFIG_MAP, callback.config_map())
        return previous

    def withdraw_callback(self, callback: PendingCallback, previous: KubeObject | None) -> None:
        """Undo `open_callback`: put back what it replaced, or delete it."""
        if previous is None:
            self._kube.delete(CONFIG_MAP, callback.name, callback.app.namespace)
            return
        self._kube.apply(CONFIG_MAP, _restorable(previous))


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
