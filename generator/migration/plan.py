"""The cutover plan: what applying a render does to the objects CAP Operator, Lifecycle Manager and
BTP Manager left in a cluster. Pure: the live objects come in as `LiveObject`s (io.live_lookup
reads them), the plan goes out as data (migration.plan_report prints it).

Every rendered object is in exactly one class:

    adopted     a live object of the same group, kind, namespace and name exists and the apply
                changes it in place: `changes` names the fields (top level: `metadata.labels`,
                `spec.template`, `data`) whose live value does not already hold the rendered one
    created     nothing of that identity is live
    recreated   the apply cannot change the live object in place (an immutable field changes:
                migration.immutable), or the render gives another name to what an operator made
                (`replaces`: a generateName'd Job, a DNSEntry under another name): the reason,
                and the consequence of deleting and creating it

and every live object an operator made, in the namespaces the render writes to, that the render
does not produce is *left behind*, with what to do about it. Nothing prunes such an object: the
GitOps tool deletes only what it applied.

No value is ever part of the plan: it names objects and field paths, never what a field holds,
so a Secret's data or a private key cannot reach its output.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from btp_gitops.generator.core.errors import InputError, Problem
from btp_gitops.generator.core.objects import KubeObject, ObjectKey, get_path, group_of, object_key
from btp_gitops.generator.migration.immutable import (
    consequence,
    covers,
    immutable_changes,
    same_secret_value,
    secret_data,
)
from btp_gitops.generator.migration.model import LiveObject
from btp_gitops.generator.migration.owner_references import KeptDependents, orphan_advice

# etcd keeps at most 1.5 MiB per object by default: a larger answer is no object it stored.
MAX_LIVE_OBJECT_BYTES = 3 * 1024 * 1024

CAP_OPERATOR = "CAP Operator"
BTP_MANAGER = "BTP Manager"
LIFECYCLE_MANAGER = "Lifecycle Manager"

_CAP_PREFIX = "sme.sap.com/"
_KYMA_PREFIX = "operator.kyma-project.io/"
_MANAGED_BY = "app.kubernetes.io/managed-by"
# What Argo CD and Flux put on what they apply: such an object was applied from Git, not left
# behind by an operator (a cluster part of the way through a cutover).
_GITOPS_MARKERS = ("argocd.argoproj.io/tracking-id", "kustomize.toolkit.fluxcd.io/name")


class Outcome(StrEnum):
    ADOPTED = "adopted"
    CREATED = "created"
    RECREATED = "recreated"
    LEFT_BEHIND = "left-behind"


OUTCOME_ORDER = (Outcome.RECREATED, Outcome.LEFT_BEHIND, Outcome.CREATED, Outcome.ADOPTED)


@dataclass(frozen=True, slots=True)
class RenderedObject:
    """One object of the render in memory: its app and file (relative to the cluster directory)."""

    app: str
    path: str
    body: KubeObject


@dataclass(frozen=True, slots=True)
class PlanEntry:
    app: str
    outcome: Outcome
    subject: str  # "Deployment bookshop/bookshop-1-1-0-srv"
    path: str = ""  # the rendered file; "" for an object left behind
    changes: tuple[str, ...] = ()  # adopted: the fields the apply changes
    reason: str = ""  # recreated: why it cannot be changed in place
    consequence: str = ""  # recreated (and adopted with a pod template change): what it does
    replaces: str = ""  # recreated under another name: the live object it takes the place of
    operator: str = ""  # who made the live object, where one is known
    action: str = ""  # left behind: what to do about it

    def as_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "outcome": self.outcome.value,
            "object": self.subject,
            "path": self.path,
            "changes": list(self.changes),
            "reason": self.reason,
            "consequence": self.consequence,
            "replaces": self.replaces,
            "operator": self.operator,
            "action": self.action,
        }


@dataclass(frozen=True, slots=True)
class CutoverPlan:
    cluster: str
    against: str  # the cluster read, as the reader names it
    entries: tuple[PlanEntry, ...]

    def count(self, outcome: Outcome) -> int:
        return sum(1 for entry in self.entries if entry.outcome is outcome)

    @property
    def unchanged(self) -> bool:
        """Applying the render changes nothing: every object adopted as it is, nothing left behind."""
        return all(entry.outcome is Outcome.ADOPTED and not entry.changes for entry in self.entries)

    def apps(self) -> list[str]:
        return sorted({entry.app for entry in self.entries})


# --- live objects are input ------------------------------------------------------------------------


def check_live(live: LiveObject, expected: ObjectKey | None = None) -> None:
    """Refuse a live object the plan cannot judge: no metadata or name, larger than any object
    etcd keeps, or another object than the one asked for."""
    body: Any = live.body
    if not isinstance(body, dict):
        where = expected.describe() if expected is not None else "an object"
        raise InputError(
            "the cluster answered with something that is not an object",
            [Problem(live.origin, "not an object", object_ref=where)],
        )
    where = expected.describe() if expected is not None else live.describe()
    problems = []
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        problems.append(
            Problem(live.origin, "the object has no metadata", object_ref=where, field_path="metadata")
        )
    elif not isinstance(metadata.get("name"), str) or not metadata["name"]:
        problems.append(
            Problem(live.origin, "the object has no name", object_ref=where, field_path="metadata.name")
        )
    if not isinstance(body.get("kind"), str) or not body.get("kind"):
        problems.append(Problem(live.origin, "the object has no kind", object_ref=where, field_path="kind"))
    size = len(json.dumps(body, separators=(",", ":"), default=str))
    if size > MAX_LIVE_OBJECT_BYTES:
        problems.append(
            Problem(
                live.origin,
                f"{size:,} bytes, over the limit of {MAX_LIVE_OBJECT_BYTES:,}: refused",
                object_ref=where,
            )
        )
    if not problems and expected is not None and _key(body) != expected:
        problems.append(
            Problem(live.origin, f"asked for {expected.describe()}, the answer is {live.describe()}")
        )
    if problems:
        raise InputError("a live object cannot be judged", problems)


def _key(body: KubeObject) -> ObjectKey:
    return object_key(body)


# --- who made a live object ------------------------------------------------------------------------


def operator_of(body: KubeObject) -> str:
    """The operator whose markers a live object carries ("" for none): CAP Operator's `sme.sap.com/`
    labels, annotations or owner references, BTP Manager's `app.kubernetes.io/managed-by: btp-manager`,
    Lifecycle Manager's `operator.kyma-project.io/` labels or owner references (its Manifests)."""
    labels = _string_map(body, "labels")
    annotations = _string_map(body, "annotations")
    if any(marker in labels or marker in annotations for marker in _GITOPS_MARKERS):
        return ""
    owner_groups = {str(ref.get("apiVersion", "")).partition("/")[0] for ref in _owner_references(body)}
    if "sme.sap.com" in owner_groups or any(key.startswith(_CAP_PREFIX) for key in [*labels, *annotations]):
        return CAP_OPERATOR
    if labels.get(_MANAGED_BY) == "btp-manager":
        return BTP_MANAGER
    if "operator.kyma-project.io" in owner_groups or any(key.startswith(_KYMA_PREFIX) for key in labels):
        return LIFECYCLE_MANAGER
    return ""


def _string_map(body: KubeObject, field: str) -> dict[str, str]:
    found = get_path(body, "metadata", field)
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _owner_references(body: KubeObject) -> list[dict[str, Any]]:
    found = get_path(body, "metadata", "ownerReferences")
    return [ref for ref in found if isinstance(ref, dict)] if isinstance(found, list) else []


# --- what the apply changes ------------------------------------------------------------------------

_NOT_COMPARED = frozenset({"apiVersion", "kind", "status"})
_NESTED = frozenset({"spec"})  # compared one level down: `spec.template`, `spec.replicas`
_METADATA_FIELDS = ("labels", "annotations", "finalizers")
_SECRET_VALUES = frozenset({"data", "stringData"})


def changed_fields(live: KubeObject, rendered: KubeObject) -> tuple[str, ...]:
    """The fields whose live value does not already hold the rendered one, without their values."""
    changed: set[str] = set()
    secret = rendered.get("kind") == "Secret" and rendered.get("apiVersion") == "v1"
    for key, value in rendered.items():
        if key in _NOT_COMPARED or value is None:
            continue
        if key == "metadata" and isinstance(value, dict):
            changed.update(
                f"metadata.{field}"
                for field in _METADATA_FIELDS
                if not covers(get_path(live, "metadata", field), value.get(field))
            )
        elif secret and key in _SECRET_VALUES:
            want, have = secret_data(rendered), secret_data(live)
            if any(k not in have or not same_secret_value(have[k], want[k]) for k in want):
                changed.add("data")
        elif key in _NESTED and isinstance(value, dict):
            changed.update(
                f"{key}.{field}"
                for field, item in value.items()
                if not covers(get_path(live, key, field), item, field)
            )
        elif not covers(live.get(key), value, key):
            changed.add(key)
    return tuple(sorted(changed))


_POD_TEMPLATE_OWNERS = frozenset({"Deployment", "StatefulSet", "DaemonSet"})


def _adopt_consequence(group: str, kind: str, changes: tuple[str, ...]) -> str:
    if group == "apps" and kind in _POD_TEMPLATE_OWNERS and "spec.template" in changes:
        return "a rolling update: the pod template changes, so its pods are replaced one by one"
    return ""


# --- renamed objects -------------------------------------------------------------------------------

# The labels that say what a CAP workload object is for, whatever its name: those CAP Operator
# puts on its Deployments, Services and Jobs (its tenant operation Jobs carry no tenant id or
# version label, so two tenants' Jobs of one step share a role and pair with nothing).
_CAP_ROLE_LABELS = tuple(
    f"{_CAP_PREFIX}{name}"
    for name in (
        "workload-name",
        "workload-type",
        "category",
        "tenant-operation-type",
        "tenant-operation-step",
    )
)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def role_of(body: KubeObject) -> tuple[str, ...] | None:
    """What an object does, independent of its name, where that is clear: two objects of one
    kind and namespace with the same role, one live and one rendered, are one object renamed."""
    kind = str(body.get("kind", ""))
    found = body.get("spec")
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    if kind == "DNSEntry" and spec.get("dnsName"):
        return ("dnsName", str(spec["dnsName"]))
    if kind == "Certificate":
        names = spec.get("dnsNames") or ([spec["commonName"]] if spec.get("commonName") else [])
        return ("dnsNames", _canonical(sorted(map(str, names)))) if names else None
    if kind in ("VirtualService", "Gateway"):
        hosts = spec.get("hosts") or [
            h for s in spec.get("servers") or [] if isinstance(s, dict) for h in s.get("hosts") or []
        ]
        return ("hosts", _canonical(sorted(map(str, hosts)))) if hosts else None
    if kind == "NetworkPolicy" and "podSelector" in spec:
        return ("podSelector", _canonical(spec.get("podSelector")), _canonical(spec.get("policyTypes")))
    labels = _string_map(body, "labels")
    if f"{_CAP_PREFIX}workload-name" in labels:
        return ("labels", *(labels.get(key, "") for key in _CAP_ROLE_LABELS))
    return None


def _pair_renamed(created: list[RenderedObject], left: list[LiveObject]) -> dict[int, LiveObject]:
    """Rendered objects (by index in `created`) that take the place of a live one under another name:
    one of each side with the same kind, namespace and role; an ambiguous role pairs nothing."""
    rendered_by_role: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for index, item in enumerate(created):
        role = role_of(item.body)
        if role is not None:
            key = object_key(item.body)
            rendered_by_role[(key.group, key.kind, key.namespace, role)].append(index)
    live_by_role: dict[tuple[Any, ...], list[LiveObject]] = defaultdict(list)
    for live in left:
        role = role_of(live.body)
        if role is not None:
            key = object_key(live.body)
            live_by_role[(key.group, key.kind, key.namespace, role)].append(live)
    pairs = {}
    for role, indexes in rendered_by_role.items():
        candidates = live_by_role.get(role, [])
        if len(indexes) == 1 and len(candidates) == 1:
            pairs[indexes[0]] = candidates[0]
    return pairs


_RENAMED_CONSEQUENCES = {
    "Deployment": "new pods start beside the operator's, which serve until their Deployment is deleted",
    "StatefulSet": "new pods and new volumes start beside the operator's: data does not move to them",
    "Job": "the Job runs again under the new name",
    "DNSEntry": "two entries for one DNS name until the old one is deleted: a provider may refuse one",
    "Certificate": "the certificate is issued again under the new name: a new key and an order at the issuer",
    "Secret": "a second Secret: pods read the new one only once they restart with it",
}


def _renamed_consequence(kind: str) -> str:
    return _RENAMED_CONSEQUENCES.get(kind, "a second object beside the operator's until that one is deleted")


# --- the plan --------------------------------------------------------------------------------------


def plan_cutover(
    cluster: str,
    against: str,
    rendered: Sequence[RenderedObject],
    live: Mapping[ObjectKey, LiveObject],
    owned: Sequence[LiveObject] = (),
    *,
    unserved: Collection[tuple[str, str]] = (),
) -> CutoverPlan:
    """Classify every rendered object against the live object of its identity (`live`, absent when
    there is none) and list what operators made (`owned`: live objects of the namespaces and kinds
    the render touches; those without an operator's markers are not the plan's business).
    `unserved`: (apiVersion, kind) the cluster does not serve yet: what it holds is created once its
    CustomResourceDefinition is."""
    for key, answer in live.items():
        check_live(answer, key)
    for listed in owned:
        check_live(listed)
    rendered_keys = {object_key(item.body) for item in rendered}
    entries: list[PlanEntry] = []
    created: list[RenderedObject] = []
    for item in rendered:
        key = object_key(item.body)
        counterpart = live.get(key)
        if counterpart is None:
            created.append(item)
        else:
            entries.append(_judge(item, key, counterpart))
    candidates = sorted(
        (
            found
            for found in _unique(owned)
            if _key(found.body) not in rendered_keys and operator_of(found.body)
        ),
        key=lambda found: _key(found.body),
    )
    pairs = _pair_renamed(created, candidates)
    writers = secret_writers(rendered)
    apps = _Apps(rendered)
    dependents = KeptDependents(
        [*(found.body for found in live.values()), *(found.body for found in owned)],
        kept=lambda key: (
            key in rendered_keys
            or ((key.group, key.kind) == ("", "Secret") and (key.namespace, key.name) in writers)
        ),
        stays=lambda key: key in rendered_keys,
    )
    replaced_by: dict[ObjectKey, RenderedObject] = {}
    for index, item in enumerate(created):
        old = pairs.get(index)
        if old is None:
            key = object_key(item.body)
            entries.append(
                PlanEntry(
                    item.app, Outcome.CREATED, key.describe(), item.path, consequence=_created(item, unserved)
                )
            )
            continue
        replaced_by[_key(old.body)] = item
        entries.append(_renamed(item, old))
    entries.extend(
        _left_behind(
            found, replaced_by.get(_key(found.body)), apps, rendered_keys, writers, dependents=dependents
        )
        for found in candidates
    )
    order = {outcome: index for index, outcome in enumerate(OUTCOME_ORDER)}
    entries.sort(key=lambda e: (e.app, order[e.outcome], e.subject, e.path))
    return CutoverPlan(cluster, against, tuple(entries))


def _created(item: RenderedObject, unserved: Collection[tuple[str, str]]) -> str:
    api_version, kind = str(item.body.get("apiVersion", "")), str(item.body.get("kind", ""))
    if (api_version, kind) in unserved:
        return (
            f"the cluster does not serve {kind} in {api_version} yet: it can be applied once its "
            "CustomResourceDefinition is"
        )
    return "the Job runs when it is applied" if (group_of(api_version), kind) == ("batch", "Job") else ""


def _unique(objects: Sequence[LiveObject]) -> list[LiveObject]:
    """One entry per identity (two listings may both return an object)."""
    seen: dict[ObjectKey, LiveObject] = {}
    for found in objects:
        seen.setdefault(_key(found.body), found)
    return list(seen.values())


def _judge(item: RenderedObject, key: ObjectKey, found: LiveObject) -> PlanEntry:
    operator = operator_of(found.body)
    immutable = immutable_changes(key.group, key.kind, found.body, item.body)
    if immutable:
        fields = sorted({change.field for change in immutable})
        reasons = "; ".join(sorted({change.reason for change in immutable}))
        return PlanEntry(
            item.app,
            Outcome.RECREATED,
            key.describe(),
            item.path,
            changes=tuple(fields),
            reason=f"{', '.join(fields)} would change: {reasons}",
            consequence=consequence(key.group, key.kind),
            operator=operator,
        )
    changes = changed_fields(found.body, item.body)
    return PlanEntry(
        item.app,
        Outcome.ADOPTED,
        key.describe(),
        item.path,
        changes=changes,
        consequence=_adopt_consequence(key.group, key.kind, changes),
        operator=operator,
    )


def _renamed(item: RenderedObject, old: LiveObject) -> PlanEntry:
    operator = operator_of(old.body)
    key = object_key(item.body)
    generated = get_path(old.body, "metadata", "generateName")
    how = f" from generateName {generated!r}" if isinstance(generated, str) and generated else ""
    return PlanEntry(
        item.app,
        Outcome.RECREATED,
        key.describe(),
        item.path,
        reason=f"{operator} named it {old.name}{how}; the render names it {key.name}",
        consequence=_renamed_consequence(key.kind),
        replaces=old.describe(),
        operator=operator,
    )


def _left_behind(
    found: LiveObject,
    replacement: RenderedObject | None,
    apps: _Apps,
    rendered_keys: set[ObjectKey],
    writers: Mapping[tuple[str, str], RenderedObject],
    *,
    dependents: KeptDependents,
) -> PlanEntry:
    body = found.body
    key = _key(body)
    app = replacement.app if replacement is not None else apps.app_for(body)
    writer = writers.get((key.namespace, key.name)) if (key.group, key.kind) == ("", "Secret") else None
    if replacement is not None:
        new = object_key(replacement.body).name
        action = f"replaced by {new}: delete it once {new} is ready"
    elif writer is not None:
        app = writer.app
        action = _taken_over_action(writer)
    else:
        action = _unreplaced_action(body, rendered_keys)
    kept = dependents.of(body)
    if kept:
        action += f"; {orphan_advice(kept)}"
    finalizers = get_path(body, "metadata", "finalizers")
    if isinstance(finalizers, list) and finalizers:
        names = ", ".join(sorted(map(str, finalizers)))
        action += f"; it carries the finalizer {names}: with the operator stopped, remove it when deleting"
    return PlanEntry(app, Outcome.LEFT_BEHIND, key.describe(), operator=operator_of(body), action=action)


def secret_writers(rendered: Sequence[RenderedObject]) -> dict[tuple[str, str], RenderedObject]:
    """(namespace, name) of each Secret a rendered object has its controller write: a cert-manager
    or Gardener Certificate's, an ExternalSecret's target."""
    writers: dict[tuple[str, str], RenderedObject] = {}
    for item in sorted(rendered, key=lambda item: object_key(item.body)):
        key = object_key(item.body)
        spec = item.body.get("spec")
        if not isinstance(spec, dict):
            continue
        target: Any = None
        namespace = key.namespace
        if (key.group, key.kind) == ("cert-manager.io", "Certificate"):
            target = spec.get("secretName")
        elif (key.group, key.kind) == ("cert.gardener.cloud", "Certificate"):
            target = get_path(spec, "secretRef", "name") or spec.get("secretName")
            namespace = str(get_path(spec, "secretRef", "namespace") or namespace)
        elif (key.group, key.kind) == ("external-secrets.io", "ExternalSecret"):
            target = get_path(spec, "target", "name") or key.name
        if isinstance(target, str) and target:
            writers.setdefault((namespace, target), item)
    return writers


def _taken_over_action(writer: RenderedObject) -> str:
    key = object_key(writer.body)
    if key.kind == "ExternalSecret":
        return (
            f"the render's ExternalSecret {key.name} writes a Secret of this name: delete this one when the "
            "ExternalSecret is applied, so that external-secrets creates it as its own"
        )
    return (
        f"the render's {key.kind} {key.name} writes this Secret: the certificate is issued again into it "
        "(a new key); keep it until then"
    )


def _unreplaced_action(body: KubeObject, rendered_keys: set[ObjectKey]) -> str:
    for ref in _owner_references(body):
        if ref.get("controller") is not True:
            continue
        owner_group = group_of(str(ref.get("apiVersion", "")))
        owner = f"{ref.get('kind')} {ref.get('name')}"
        owner_key = ObjectKey(
            owner_group, str(ref.get("kind", "")), _key(body).namespace, str(ref.get("name", ""))
        )
        if owner_key in rendered_keys:
            return (
                f"nothing rendered takes its place, and its owner {owner} stays (the render keeps it), so "
                "the garbage collector never removes it: delete it once the cutover is done"
            )
        return f"nothing rendered takes its place; the garbage collector deletes it with its owner {owner}"
    if body.get("kind") == "Job":
        return "an operator's Job: nothing runs it again; delete it once its logs are not needed"
    return "nothing rendered takes its place and nothing prunes it: delete it once the cutover is done"


class _Apps:
    """Which app a left-behind object is listed under, from indexes built once: its owner's (an
    owner reference, or CAP Operator's `owner-identifier` annotation, naming a rendered object),
    else the app rendering the most objects of its `app` label in its namespace (an
    application's, not a tenant's), else the app rendering the most objects in its namespace,
    else the cluster's."""

    def __init__(self, rendered: Sequence[RenderedObject]) -> None:
        self._by_name: dict[tuple[str, str, str], list[str]] = defaultdict(list)  # (ns, kind, name)
        self._cap_by_name: dict[tuple[str, str], list[str]] = defaultdict(list)  # (ns, name): sme.sap.com
        labelled: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        in_namespace: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for item in rendered:
            key = object_key(item.body)
            self._by_name[(key.namespace, key.kind, key.name)].append(item.app)
            if key.group == "sme.sap.com":
                self._cap_by_name[(key.namespace, key.name)].append(item.app)
            app_label = _string_map(item.body, "labels").get("app")
            if app_label:
                labelled[(key.namespace, app_label)][item.app] += 1
            in_namespace[key.namespace][item.app] += 1
        self._labelled = {where: _most(counts) for where, counts in labelled.items()}
        self._in_namespace = {
            namespace: _most(counts) for namespace, counts in in_namespace.items() if namespace
        }

    def app_for(self, body: KubeObject) -> str:
        key = _key(body)
        owned_by = [
            app
            for ref in _owner_references(body)
            for app in self._by_name.get(
                (key.namespace, str(ref.get("kind", "")), str(ref.get("name", ""))), []
            )
        ]
        identifier = _string_map(body, "annotations").get(f"{_CAP_PREFIX}owner-identifier", "")
        if identifier.startswith(f"{key.namespace}."):
            owned_by += self._cap_by_name.get((key.namespace, identifier.partition(".")[2]), [])
        if owned_by:
            return min(owned_by)
        app_label = _string_map(body, "labels").get("app")
        if app_label and (key.namespace, app_label) in self._labelled:
            return self._labelled[(key.namespace, app_label)]
        return self._in_namespace.get(key.namespace, "")


def _most(counts: Mapping[str, int]) -> str:
    return min(counts, key=lambda app: (-counts[app], app))
