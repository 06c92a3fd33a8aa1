"""The rendered repo's layout: `clusters/<cluster>/<app>/<kind>-<name>.yaml` + kustomization.yaml
(Argo CD target), or the same files in stage directories `<app>/<NN>-<slug>/` (Flux target).

Where an app directory sits: an app of its own (the BTP operator, a Kyma module, a CAP
application or domain) directly in the cluster directory; an app that belongs to a group of many
(a CAP tenant, grouped by its application) under `tenants/<group>/<shard>/<app>/`, where the shard
is the first two hex digits of the SHA-256 of the app's name (256 shards). A commit that changes
one tenant then rewrites the trees on its path only: the cluster directory's (one entry per app
of its own, and `tenants`), `tenants/` (one entry per group), the group's (at most 256 shards),
its shard's (about 1/256 of the group's tenants) and the tenant's own, instead of a cluster tree
with one entry per tenant. The shard depends on the app's name alone, so adding or removing a
tenant moves no other tenant. `app_path` reads any path back to its app, for either layout.

One file per object gives the clearest diffs. File names are lower-case `<kind>-<name>.yaml`;
when two objects of an app would share a name, the namespace and then the API group are added,
and names too long for a filesystem are shortened with a hash, so every object keeps one stable
file. Objects are sorted by Helm's install order, namespace and name.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from btp_gitops.generator.core.kinds import install_rank
from btp_gitops.generator.core.objects import (
    KubeObject,
    Manifest,
    api_group,
    kind_of,
    name_of,
    namespace_of,
    object_key,
)
from btp_gitops.generator.core.yamlio import dump_object

KUSTOMIZATION = "kustomization.yaml"
TENANTS_DIR = "tenants"  # the grouped apps' directory inside the cluster directory
SHARD_DIGITS = 2  # hex digits of a shard directory's name: 16**2 = 256 shards per group
_SHARD = re.compile(f"[0-9a-f]{{{SHARD_DIGITS}}}")
_MAX_FILE_NAME = 200  # leaves room for editors' swap files under the usual 255-byte limit
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def sort_key(obj: KubeObject) -> tuple[int, str, str, str, str]:
    return (install_rank(kind_of(obj)), kind_of(obj), namespace_of(obj), name_of(obj), api_group(obj))


def sort_manifests(manifests: list[Manifest]) -> list[Manifest]:
    return sorted(manifests, key=lambda m: sort_key(m.body))


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text.lower()).strip("_") or "_"


def _bounded(stem: str) -> str:
    if len(stem) + len(".yaml") <= _MAX_FILE_NAME:
        return stem
    digest = hashlib.sha256(stem.encode()).hexdigest()[:12]
    return f"{stem[: _MAX_FILE_NAME - len('.yaml') - 13]}-{digest}"


_Namer = Callable[[KubeObject], str]


def _by_kind_name(obj: KubeObject) -> str:
    return f"{_safe(kind_of(obj))}-{_safe(name_of(obj))}"


def _by_kind_namespace_name(obj: KubeObject) -> str:
    namespace = namespace_of(obj) or "_cluster"
    return f"{_safe(kind_of(obj))}-{_safe(namespace)}-{_safe(name_of(obj))}"


def _by_group_kind_namespace_name(obj: KubeObject) -> str:
    group = api_group(obj) or "core"
    return (
        f"{_safe(kind_of(obj))}.{_safe(group)}-{_safe(namespace_of(obj) or '_cluster')}-{_safe(name_of(obj))}"
    )


def file_names(objects: list[KubeObject]) -> list[str]:
    """A unique file name per object, as short as uniqueness allows."""
    namers: list[_Namer] = [_by_kind_name, _by_kind_namespace_name, _by_group_kind_namespace_name]
    names = [_by_kind_name(obj) for obj in objects]
    if len(set(names)) == len(names):  # the usual case; same identities would have met here
        return [f"{_bounded(name)}.yaml" for name in names]
    for namer in namers[1:]:
        counts = Counter(names)
        names = [namer(obj) if counts[name] > 1 else name for obj, name in zip(objects, names, strict=True)]
    # Distinct objects can still meet here (names differing in case or in characters we replace,
    # or dashes shared between namespace and name): a short hash of the exact identity separates
    # them, stably. True duplicates (same group, kind, namespace and name) are an error.
    counts = Counter(names)
    identities = Counter(object_key(obj) for obj in objects)
    duplicates = sorted(
        {name for obj, name in zip(objects, names, strict=True) if identities[object_key(obj)] > 1}
    )
    if duplicates:
        raise ValueError(f"objects with the same identity: {', '.join(duplicates)}")
    names = [
        f"{name}-{_identity_hash(obj)}" if counts[name] > 1 else name
        for obj, name in zip(objects, names, strict=True)
    ]
    return [f"{_bounded(name)}.yaml" for name in names]


def _identity_hash(obj: KubeObject) -> str:
    identity = "\0".join((api_group(obj), kind_of(obj), namespace_of(obj), name_of(obj)))
    return hashlib.sha256(identity.encode()).hexdigest()[:8]


_KUSTOMIZATION_HEAD = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
# A name starting with a letter and made of these is a plain YAML scalar that reads back as the
# same string (no number, boolean, null or timestamp starts with a letter and holds a dot).
_PLAIN_FILE_NAME = re.compile(r"^[a-z][a-z0-9_-]*\.[a-z0-9._-]*$")


def kustomization(resources: list[str]) -> str:
    ordered = sorted(resources)
    if ordered and all(_PLAIN_FILE_NAME.match(name) for name in ordered):
        # The bytes dump_object writes for these names, without an emitter per app directory.
        return _KUSTOMIZATION_HEAD + "".join(f"- {name}\n" for name in ordered)
    return dump_object(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": ordered}
    )


def serialized(manifest: Manifest) -> str:
    """The object's YAML, written once per Manifest (`Manifest.text`)."""
    if manifest.text is None:
        manifest.text = dump_object(manifest.body)
    return manifest.text


def app_files(manifests: list[Manifest]) -> dict[str, str]:
    """File name -> text for one app directory, kustomization.yaml included."""
    ordered = sort_manifests(manifests)
    names = file_names([m.body for m in ordered])
    files = {name: serialized(m) for name, m in zip(names, ordered, strict=True)}
    files[KUSTOMIZATION] = kustomization(names)
    return dict(sorted(files.items()))


def staged_app_files(placed: list[tuple[Manifest, str]]) -> dict[str, str]:
    """`<stage dir>/<file>` -> text for one app laid out in stage directories (the Flux target),
    a kustomization.yaml in each. File names are chosen over the whole app, as `app_files` does,
    so an object keeps its file name whichever target lays it out."""
    ordered = sorted(placed, key=lambda item: sort_key(item[0].body))
    names = file_names([manifest.body for manifest, _ in ordered])
    files: dict[str, str] = {}
    by_stage: dict[str, list[str]] = {}
    for name, (manifest, stage) in zip(names, ordered, strict=True):
        files[f"{stage}/{name}"] = serialized(manifest)
        by_stage.setdefault(stage, []).append(name)
    for stage, stage_names in by_stage.items():
        files[f"{stage}/{KUSTOMIZATION}"] = kustomization(stage_names)
    return dict(sorted(files.items()))


@functools.lru_cache(maxsize=1 << 16)
def shard_of(app: str) -> str:
    """The shard directory of a grouped app: a function of its name only (asked for more than
    once per app in a render: kept)."""
    return hashlib.sha256(app.encode()).hexdigest()[:SHARD_DIGITS]


@functools.lru_cache(maxsize=1 << 16)
def app_directory(app: str, group: str | None = None) -> str:
    """The app's directory relative to the cluster directory: `<app>`, or for an app of a group
    `tenants/<group>/<shard>/<app>` (kept: the layout, the wiring and the held apps of a warm
    render each ask for every app's)."""
    if group is None:
        return app
    return f"{TENANTS_DIR}/{group}/{shard_of(app)}/{app}"


@dataclass(frozen=True, slots=True)
class AppPath:
    """A path of a rendered cluster directory, read back: which app directory it is in."""

    directory: str  # the app directory, relative to the cluster directory ("" at its top)
    app: str  # the app's name: the directory's last part ("" for a file at the top)
    inside: str  # the path inside the app directory

    @property
    def grouped(self) -> bool:
        return self.directory != self.app


def app_of_directory(directory: str) -> str | None:
    """The app whose directory `directory` is (`app_path(directory + "/x").directory` is it),
    None for any other directory: worked out from the count of its parts first, as a listing of
    20,000 app directories asks for each."""
    depth = directory.count("/")
    if depth == 0:
        return directory or None
    if depth == 3 and directory.startswith(TENANTS_DIR + "/"):
        parts = directory.split("/")
        return parts[3] if _SHARD.fullmatch(parts[2]) else None
    return None


def app_path(path: str) -> AppPath:
    """The app directory `path` (relative to the cluster directory) lies in. Paths under
    `tenants/<group>/<shard>/<app>/` belong to `<app>`; any other path to its first directory
    (`.wiring` included); a file at the top belongs to no app. Works on trees of either layout,
    so a tree written before the sharding reads back as the same apps."""
    parts = path.split("/")
    if len(parts) >= 5 and parts[0] == TENANTS_DIR and _SHARD.fullmatch(parts[2]):
        return AppPath("/".join(parts[:4]), parts[3], "/".join(parts[4:]))
    if len(parts) == 1:
        return AppPath("", "", path)
    return AppPath(parts[0], parts[0], "/".join(parts[1:]))
