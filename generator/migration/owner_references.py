"""Which live objects the garbage collector would delete with an object the cutover plan tells
the user to delete, among those the cutover keeps.

Kubernetes deletes a dependent once every owner its `ownerReferences` name is gone (a `kubectl
delete` cascades in the background by default). A namespaced owner is looked for in the
dependent's namespace, a cluster-scoped one anywhere, and a reference whose uid is not the
owner's names another object. Controllers write such references on objects the cutover keeps:
cert-manager (`--enable-certificate-owner-ref`) and Gardener cert-management (option `cascade-delete`)
on the TLS Secret a Certificate writes, which the render's Certificate of another name then takes
over under the same name, and an operator on the objects it made. Deleting the operator's old
object as the plan says would then delete what the render is about to adopt, unless the deletion
leaves its dependents (`--cascade=orphan`). The plan says so (migration.plan).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from btp_gitops.generator.core.objects import KubeObject, ObjectKey, get_path, group_of, object_key

MAX_NAMED = 3  # dependents named in one piece of advice; the rest are counted


@dataclass(frozen=True, slots=True)
class _Reference:
    group: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class _Dependent:
    key: ObjectKey
    references: tuple[_Reference, ...]


def _references(body: KubeObject) -> tuple[_Reference, ...]:
    found = get_path(body, "metadata", "ownerReferences")
    if not isinstance(found, list):
        return ()
    references = []
    for ref in found:
        if not isinstance(ref, dict):
            continue
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            continue  # the API server refuses such a reference; a dump may hold anything
        uid = ref.get("uid")
        references.append(_Reference(group_of(api_version), kind, name, uid if isinstance(uid, str) else ""))
    return tuple(references)


class KeptDependents:
    """The objects of `live` that `kept` says the cutover keeps, indexed by the owners they name;
    `stays`: whether an owner of that identity is still there after the cutover (the render
    applies it)."""

    def __init__(
        self,
        live: Iterable[KubeObject],
        kept: Callable[[ObjectKey], bool],
        stays: Callable[[ObjectKey], bool],
    ) -> None:
        self._stays = stays
        self._by_owner: dict[tuple[str, str, str], list[_Dependent]] = defaultdict(list)
        seen: set[ObjectKey] = set()
        for body in live:
            key = object_key(body)
            references = _references(body)
            if key in seen or not references or not kept(key):
                continue
            seen.add(key)
            dependent = _Dependent(key, references)
            for ref in {(ref.group, ref.kind, ref.name) for ref in references}:
                self._by_owner[ref].append(dependent)

    def of(self, owner: KubeObject) -> list[ObjectKey]:
        """The kept objects whose only owners still there after the cutover include `owner`:
        deleting it with the default cascade deletes them."""
        key = object_key(owner)
        uid = get_path(owner, "metadata", "uid")
        found = []
        for dependent in self._by_owner.get((key.group, key.kind, key.name), []):
            if key.namespace and dependent.key.namespace != key.namespace:
                continue  # a namespaced owner is resolved in its dependent's namespace only
            names_it = [
                ref
                for ref in dependent.references
                if (ref.group, ref.kind, ref.name) == (key.group, key.kind, key.name)
                and not (ref.uid and isinstance(uid, str) and uid and ref.uid != uid)
            ]
            if not names_it:
                continue
            others = [ref for ref in dependent.references if ref not in names_it]
            if any(self._owner_stays(ref, dependent.key.namespace) for ref in others):
                continue
            found.append(dependent.key)
        return sorted(found)

    def _owner_stays(self, ref: _Reference, namespace: str) -> bool:
        return self._stays(ObjectKey(ref.group, ref.kind, namespace, ref.name)) or self._stays(
            ObjectKey(ref.group, ref.kind, "", ref.name)
        )


def orphan_advice(dependents: list[ObjectKey]) -> str:
    """What to say about an object to delete that `dependents` (kept) name as their owner."""
    named = ", ".join(key.describe() for key in dependents[:MAX_NAMED])
    more = len(dependents) - MAX_NAMED
    if more > 0:
        named += f" and {more} more"
    which = "it" if len(dependents) == 1 else "them"
    verb = "names" if len(dependents) == 1 else "name"
    return (
        f"{named}, which the cutover keeps, {verb} it as owner: delete it with `kubectl delete "
        f"--cascade=orphan`, or the garbage collector deletes {which} with it"
    )
