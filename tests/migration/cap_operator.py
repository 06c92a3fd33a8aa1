"""CAP objects as CAP Operator leaves them in a cluster, made from source documents.

Our own data, shaped by what CAP Operator's docs and tests show it sets: finalizers on every kind
it reconciles, identity labels and annotations (owner and application identifiers and their
SHA-1 hashes, the owner's generation, a tenant's id and type), owner references from versions and
tenants to their application, `spec.version` and `versionUpgradeStrategy: always` on every
tenant, and statuses with conditions and `observedGeneration`. `server_metadata` adds what the API
server adds, for dumps written without one.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

PREFIX = "sme.sap.com/"
FINALIZERS = {
    "CAPApplication": "sme.sap.com/capapplication",
    "CAPApplicationVersion": "sme.sap.com/capapplicationversion",
    "CAPTenant": "sme.sap.com/captenant",
    "Domain": "sme.sap.com/domain",
    "ClusterDomain": "sme.sap.com/domain",
}


def sha1(*parts: str) -> str:
    return hashlib.sha1("".join(parts).encode(), usedforsecurity=False).hexdigest()


def _ready(message: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Reconciled",
            "message": message,
            "observedGeneration": 1,
        }
    ]


def _owner(application: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPApplication",
        "name": application["metadata"]["name"],
        "uid": "5f0c3f0e-6c3a-4b8e-9d1f-0a1b2c3d4e5f",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def as_left_by_operator(
    sources: Sequence[Mapping[str, Any]], tenant_status: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The sources' CAP objects with CAP Operator's metadata and statuses (`tenant_status` by
    tenant name, the provider's included; CAP Operator's status, without lastCompletedOperation)."""
    applications = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d
        for d in sources
        if d["kind"] == "CAPApplication"
    }
    versions = {d["metadata"]["name"]: d for d in sources if d["kind"] == "CAPApplicationVersion"}
    objects = []
    for source in sources:
        body = copy.deepcopy(dict(source))
        body.pop("status", None)
        metadata = body["metadata"]
        kind = body["kind"]
        metadata["finalizers"] = [FINALIZERS[kind]]
        labels = metadata.setdefault("labels", {})
        annotations = metadata.setdefault("annotations", {})
        annotations["kubectl.kubernetes.io/last-applied-configuration"] = (
            '{"apiVersion":"sme.sap.com/v1alpha1"}'
        )
        if kind == "CAPApplication":
            spec = body["spec"]
            labels[f"{PREFIX}btp-app-identifier-hash"] = sha1(
                spec["providerSubaccountId"], spec["btpAppName"]
            )
            annotations[f"{PREFIX}btp-app-identifier"] = (
                f"{spec['providerSubaccountId']}.{spec['btpAppName']}"
            )
            body["status"] = {"state": "Consistent", "observedGeneration": 1, "conditions": _ready("ok")}
        elif kind in ("CAPApplicationVersion", "CAPTenant"):
            namespace = metadata["namespace"]
            application = applications[(namespace, body["spec"]["capApplicationInstance"])]
            app_spec = application["spec"]
            labels[f"{PREFIX}btp-app-identifier-hash"] = sha1(
                app_spec["providerSubaccountId"], app_spec["btpAppName"]
            )
            labels[f"{PREFIX}owner-identifier-hash"] = sha1(namespace, application["metadata"]["name"])
            labels[f"{PREFIX}owner-generation"] = "1"
            annotations[f"{PREFIX}owner-identifier"] = f"{namespace}.{application['metadata']['name']}"
            annotations[f"{PREFIX}btp-app-identifier"] = (
                f"{app_spec['providerSubaccountId']}.{app_spec['btpAppName']}"
            )
            metadata["ownerReferences"] = [_owner(application)]
            if kind == "CAPApplicationVersion":
                body["status"] = {
                    "state": "Ready",
                    "observedGeneration": 1,
                    "conditions": _ready("version ready"),
                }
            else:
                provider = app_spec.get("provider", {}).get("tenantId") == body["spec"]["tenantId"]
                labels[f"{PREFIX}btp-tenant-id"] = body["spec"]["tenantId"]
                labels[f"{PREFIX}tenant-type"] = "provider" if provider else "consumer"
                status = dict(tenant_status.get(metadata["name"], {}))
                current = status.get("currentCAPApplicationVersionInstance")
                if current:
                    body["spec"]["version"] = versions[current]["spec"]["version"]
                body["spec"].setdefault("versionUpgradeStrategy", "always")
                if status:
                    body["status"] = {**status, "observedGeneration": 1, "conditions": _ready("tenant ready")}
        else:
            body["status"] = {"state": "Ready", "observedGeneration": 1, "conditions": _ready("domain ready")}
        objects.append(body)
    return objects


def server_metadata(objects: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What the API server adds to every object: what a `kubectl get -o yaml` dump holds."""
    stamped = []
    for number, source in enumerate(objects, start=1):
        body = copy.deepcopy(dict(source))
        metadata = body["metadata"]
        metadata["uid"] = f"00000000-0000-4000-8000-{number:012d}"
        metadata["resourceVersion"] = str(1000 + number)
        metadata["generation"] = 1
        metadata["creationTimestamp"] = "2026-01-05T08:00:00Z"
        metadata["managedFields"] = [
            {"manager": "cap-operator", "operation": "Update", "apiVersion": "sme.sap.com/v1alpha1"}
        ]
        stamped.append(body)
    return stamped
