"""What the API server refuses to change in place, and what replacing an object costs.

A server-side apply (what Argo CD and Flux do) merges the rendered fields into the live object:
maps key by key, lists of named items item by item, other lists and scalars whole. Fields the
render does not set stay as another manager left them. So a rendered value "changes" a live one
only where the live value does not already cover it (`covers`), and a change of a field the
API server holds immutable makes the apply fail: the object can only be deleted and created
again (Argo CD `Replace=true`, Flux `force: true`), which is what the cutover plan calls
*recreated*. The rules below are the API server's own validation (apps, batch, core, rbac,
apiextensions), each with why it holds; `consequence` says what deleting and creating the kind
does to a running system.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.objects import KubeObject, get_path

# List items that server-side apply merges by a key (the Kubernetes types' merge keys that
# rendered objects use); any other list is replaced whole.
_ITEM_KEYS = ("name", "containerPort", "mountPath", "devicePath", "port", "ip", "topologyKey")


# Fields server-side apply replaces whole (atomic in the Kubernetes types): every LabelSelector
# (`+structType=atomic`: a workload's, a NetworkPolicy's, an affinity term's), a Service's
# selector map (`+mapType=atomic`) and a binding's roleRef. Another manager's keys in them do not
# survive an apply, so they "change" unless they are equal.
ATOMIC_FIELDS = frozenset({"selector", "podSelector", "namespaceSelector", "labelSelector", "roleRef"})


def covers(live: Any, rendered: Any, field: str = "") -> bool:
    """True when applying `rendered` over `live` (the value of `field`) leaves `live` as it is."""
    if rendered is None:
        return True  # in an apply, null means "no opinion"
    if field in ATOMIC_FIELDS:
        return bool(live == rendered)
    if isinstance(rendered, dict):
        if not isinstance(live, dict):
            return False
        return all(covers(live.get(key), value, str(key)) for key, value in rendered.items())
    if isinstance(rendered, list):
        return isinstance(live, list) and _list_covers(live, rendered)
    if isinstance(rendered, bool) or isinstance(live, bool):
        return rendered is live
    if isinstance(rendered, int | float) and isinstance(live, int | float):
        return bool(rendered == live)
    return bool(live == rendered)


def _item_key(item: Any) -> tuple[str, str] | None:
    """The merge key of a list item, as text: a value may itself be a map (an Istio server's
    `port: {number, name, protocol}`), which keys nothing unless written out."""
    if isinstance(item, dict):
        for key in _ITEM_KEYS:
            if key in item:
                return key, json.dumps(item[key], sort_keys=True, default=str)
    return None


def _list_covers(live: list[Any], rendered: list[Any]) -> bool:
    keys = [_item_key(item) for item in rendered]
    if rendered and all(key is not None for key in keys):
        by_key = {_item_key(item): item for item in live}
        return all(
            key in by_key and covers(by_key[key], item) for key, item in zip(keys, rendered, strict=True)
        )
    return len(live) == len(rendered) and all(covers(a, b) for a, b in zip(live, rendered, strict=True))


def secret_data(body: KubeObject) -> dict[str, Any]:
    """A Secret's values as the API server stores them: `stringData` folded into `data` (base64)."""
    data = dict(body.get("data") or {}) if isinstance(body.get("data"), dict) else {}
    string_data = body.get("stringData")
    if isinstance(string_data, dict):
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode("utf-8")).decode("ascii")
    return data


def same_secret_value(live: Any, rendered: Any) -> bool:
    """Base64 texts compared by what they decode to (the server re-encodes what it is given)."""
    try:
        return base64.b64decode(str(live), validate=True) == base64.b64decode(str(rendered), validate=True)
    except (binascii.Error, ValueError):
        return bool(live == rendered)


@dataclass(frozen=True, slots=True)
class ImmutableChange:
    """A field the API server will not change in place, and why."""

    field: str
    reason: str


Rule = Callable[[KubeObject, KubeObject], list[ImmutableChange]]


def _field_rule(*fields: str, reason: str) -> Rule:
    """Each of `fields` (dotted) may not change once set: a rendered value the live one does not cover
    (or, for an atomic field, does not equal)."""

    def check(live: KubeObject, rendered: KubeObject) -> list[ImmutableChange]:
        found = []
        for dotted in fields:
            path = dotted.split(".")
            want, have = get_path(rendered, *path), get_path(live, *path)
            if want is not None and have is not None and not covers(have, want, path[-1]):
                found.append(ImmutableChange(dotted, reason))
        return found

    return check


def _service_rule(live: KubeObject, rendered: KubeObject) -> list[ImmutableChange]:
    want, have = get_path(rendered, "spec", "clusterIP"), get_path(live, "spec", "clusterIP")
    # An empty clusterIP asks for one to be allocated: it keeps the live address.
    if want not in (None, "") and have not in (None, "") and want != have:
        return [ImmutableChange("spec.clusterIP", "a Service's cluster IP cannot change once allocated")]
    return []


def _pvc_rule(live: KubeObject, rendered: KubeObject) -> list[ImmutableChange]:
    found = _field_rule(
        "spec.storageClassName",
        "spec.accessModes",
        "spec.volumeMode",
        "spec.volumeName",
        "spec.selector",
        "spec.dataSource",
        reason="a PersistentVolumeClaim's spec is immutable once created, except its storage request",
    )(live, rendered)
    want = get_path(rendered, "spec", "resources", "requests", "storage")
    have = get_path(live, "spec", "resources", "requests", "storage")
    if want is not None and have is not None and _quantity(want) < _quantity(have):
        found.append(
            ImmutableChange("spec.resources.requests.storage", "a volume claim can grow, never shrink")
        )
    return found


_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def _quantity(value: Any) -> float:
    """A storage quantity in bytes (`1Gi`, `500M`, `1e9`); an unreadable one as infinity, so it is
    never taken for a shrink."""
    text = str(value).strip()
    for suffixes in (_BINARY_SUFFIXES, _DECIMAL_SUFFIXES):
        for suffix, factor in suffixes.items():
            if text.endswith(suffix):
                text, scale = text[: -len(suffix)], factor
                break
        else:
            continue
        break
    else:
        scale = 1
    try:
        return float(text) * scale
    except ValueError:
        return float("inf")


def _frozen_data_rule(live: KubeObject, rendered: KubeObject) -> list[ImmutableChange]:
    """An `immutable: true` ConfigMap or Secret keeps its data, and stays immutable."""
    if live.get("immutable") is not True:
        return []
    reason = f"the live {live.get('kind')} is `immutable: true`: its data cannot change"
    found = []
    if rendered.get("immutable") is False:
        found.append(ImmutableChange("immutable", reason))
    if live.get("kind") == "Secret":
        want, have = secret_data(rendered), secret_data(live)
        if set(want) != set(have) or not all(same_secret_value(have[k], want[k]) for k in want):
            found.append(ImmutableChange("data", reason))
        return found
    for field in ("data", "binaryData"):
        want = rendered.get(field) or {}
        if want != (live.get(field) or {}):
            found.append(ImmutableChange(field, reason))
    return found


_SELECTOR = "a workload's spec.selector is immutable (apps/v1)"
_RULES: dict[tuple[str, str], Rule] = {
    ("apps", "Deployment"): _field_rule("spec.selector", reason=_SELECTOR),
    ("apps", "ReplicaSet"): _field_rule("spec.selector", reason=_SELECTOR),
    ("apps", "DaemonSet"): _field_rule("spec.selector", reason=_SELECTOR),
    ("apps", "StatefulSet"): _field_rule(
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
        "spec.podManagementPolicy",
        reason="a StatefulSet may change only replicas, template, update strategy and retention",
    ),
    ("batch", "Job"): _field_rule(
        "spec.selector",
        "spec.template",
        "spec.completionMode",
        reason="a Job's selector and pod template are immutable",
    ),
    ("", "Service"): _service_rule,
    ("", "PersistentVolumeClaim"): _pvc_rule,
    ("", "ConfigMap"): _frozen_data_rule,
    ("", "Secret"): _frozen_data_rule,
    ("rbac.authorization.k8s.io", "RoleBinding"): _field_rule(
        "roleRef", reason="a binding's roleRef is immutable"
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _field_rule(
        "roleRef", reason="a binding's roleRef is immutable"
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _field_rule(
        "spec.scope", reason="a CustomResourceDefinition's scope cannot change"
    ),
}


def immutable_changes(group: str, kind: str, live: KubeObject, rendered: KubeObject) -> list[ImmutableChange]:
    rule = _RULES.get((group, kind))
    return sorted(rule(live, rendered), key=lambda change: change.field) if rule else []


_WORKLOADS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"})
_CONSEQUENCES: dict[tuple[str, str], str] = {
    ("batch", "Job"): "the Job runs again (new pods; the old run's pods and logs are deleted with it)",
    (
        "",
        "Service",
    ): "a new cluster IP: clients holding the old address fail until they resolve the name again",
    ("", "PersistentVolumeClaim"): (
        "the volume's data is lost unless its PersistentVolume is retained and bound to the new claim"
    ),
    (
        "",
        "ConfigMap",
    ): "pods that mount it keep the old copy until they restart; between delete and create it is missing",
    (
        "",
        "Secret",
    ): "pods that mount it keep the old copy until they restart; between delete and create it is missing",
    (
        "rbac.authorization.k8s.io",
        "RoleBinding",
    ): "the permissions it grants are gone between delete and create",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (
        "the permissions it grants are gone between delete and create"
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        "every custom resource of the kind is deleted with it, in every namespace"
    ),
    ("dns.gardener.cloud", "DNSEntry"): (
        "the DNS record is deleted and created again: resolvers cache the missing name for up to its TTL"
    ),
    ("cert.gardener.cloud", "Certificate"): (
        "the certificate is issued again: a new key and a new order at the issuer (rate limits apply)"
    ),
    ("cert-manager.io", "Certificate"): (
        "the certificate is issued again: a new key and a new order at the issuer (rate limits apply)"
    ),
    ("networking.istio.io", "VirtualService"): "its hosts have no route between delete and create",
    ("networking.istio.io", "Gateway"): "the hosts it serves are unreachable between delete and create",
    ("networking.istio.io", "DestinationRule"): "session stickiness is lost: sessions move between pods",
    (
        "networking.k8s.io",
        "NetworkPolicy",
    ): "the traffic it allows or denies is not controlled between delete and create",
    (
        "sme.sap.com",
        "CAPTenant",
    ): "the tenant is deprovisioned: its data is deleted (never recreate a tenant)",
}


def consequence(group: str, kind: str) -> str:
    """What deleting and creating an object of this kind does to the running system."""
    if group == "apps" and kind in _WORKLOADS:
        return (
            "its pods are deleted with it and started again: the workload is down until the new pods are "
            "ready, unless another version serves meanwhile"
        )
    return _CONSEQUENCES.get((group, kind), "the object is missing between delete and create")
