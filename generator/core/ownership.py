"""Which files of a cluster directory btp-gitops owns, and which renders would empty it.

A render replaces `clusters/<cluster>/` as a whole, so it must know what in there is its own.
The writer keeps an ownership manifest, `clusters/<cluster>/.btp-gitops-files`: the sorted paths
of every file the last render wrote, one per line. Anything else found in the directory was put
there by someone else, and the render refuses to run until it is moved away (it is never deleted
silently). The manifest has no YAML or JSON extension, so neither kubectl, kustomize, Argo CD's
directory apps nor Flux's generated kustomizations take it for a manifest; `diff` leaves it out.

A cluster directory written before the manifest existed is migrated once: a file is ours when a
`kustomization.yaml` in its directory has exactly the shape btp-gitops writes (apiVersion, kind,
and a `resources` list of plain names, nothing else) and lists it, or when it is such a
kustomization itself, or a record the domains document (`.kyma-modules.json`). A file a person
added beside the rendered ones is listed by no such kustomization, so it is found and refused.

The removal guard: a render that would leave a populated cluster directory without most of its
objects is more likely a wrong path or an empty glob than an intent, and with `--commit` Argo CD
or Flux would prune everything. See `removal_refusal` for the exact rule.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from btp_gitops.generator.core.layout import app_path

MANIFEST_FILE = ".btp-gitops-files"
_MANIFEST_HEAD = (
    "# Written by `btp-gitops render`: the files of this cluster directory it owns, one per line.\n"
    "# The next render replaces exactly these; it refuses to run over any other file. Do not edit.\n"
)
# Written into the manifests of cluster directories whose CAP tenants sit in shard directories
# (core.layout.app_directory). A directory rendered before the sharding has no such line and keeps
# its flat layout until a render with --migrate-layout: moving every tenant at once is only safe
# once the GitOps controller knows the new directories (docs/gitops/index.md).
SHARDED_LAYOUT_LINE = "# Layout: tenant apps in shard directories (tenants/<group>/<shard>/<app>).\n"
_KUSTOMIZATION = "kustomization.yaml"
_KUSTOMIZATION_HEAD = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"


def manifest_text(paths: Iterable[str], *, sharded: bool = True) -> str:
    """The manifest for a cluster directory holding `paths` (the manifest itself left out)."""
    listed = sorted(path for path in set(paths) if path != MANIFEST_FILE)
    head = _MANIFEST_HEAD + (SHARDED_LAYOUT_LINE if sharded else "")
    return head + "".join(f"{path}\n" for path in listed)


def shards_tenants(manifest: str | None, previous: Collection[str], migrate: bool) -> bool:
    """Whether a render puts tenant apps into shard directories: always in a new or empty cluster
    directory (`previous`: the paths it holds), in one already sharded (its manifest says so, or
    it holds a shard directory), or when asked to migrate (`--migrate-layout`); a populated
    directory rendered before the sharding keeps its flat layout."""
    if migrate or not previous or any(app_path(path).grouped for path in previous):
        return True
    if manifest is None:
        return False
    head = itertools.takewhile(lambda line: line.startswith("#"), manifest.splitlines())
    return SHARDED_LAYOUT_LINE.rstrip("\n") in head


def parse_manifest(text: str) -> set[str]:
    return {line for line in text.splitlines() if line and not line.startswith("#")}


def _listed_resources(text: str) -> list[str] | None:
    """The resources of a kustomization.yaml as btp-gitops writes it; None for any other file."""
    if not text.startswith(_KUSTOMIZATION_HEAD):
        return None
    names = []
    for line in text[len(_KUSTOMIZATION_HEAD) :].splitlines():
        if not line.startswith("- "):
            return None
        name = line[2:]
        if len(name) >= 2 and name[0] == name[-1] == "'":
            name = name[1:-1].replace("''", "'")
        if not name or "/" in name or name in (".", ".."):
            return None
        names.append(name)
    return names


def owned_without_manifest(files: Mapping[str, bytes], records: Collection[str]) -> set[str]:
    """The files an older btp-gitops (no manifest yet) wrote, recognised by their kustomizations."""
    owned = {path for path in files if path in records}
    for path, data in files.items():
        directory, _, name = path.rpartition("/")
        if name != _KUSTOMIZATION:
            continue
        try:
            listed = _listed_resources(data.decode("utf-8"))
        except UnicodeDecodeError:
            listed = None
        if listed is None:
            continue
        owned.add(path)
        owned.update(f"{directory}/{entry}" if directory else entry for entry in listed)
    return owned & set(files)


def owned_files(files: Mapping[str, bytes], records: Collection[str]) -> set[str]:
    """The files of a cluster directory btp-gitops wrote: the manifest's, or the migration rule's."""
    manifest = files.get(MANIFEST_FILE)
    if manifest is None:
        return owned_without_manifest(files, records)
    listed = parse_manifest(manifest.decode("utf-8", errors="replace"))
    return (listed & set(files)) | {MANIFEST_FILE}


def object_counts(paths: Iterable[str]) -> dict[str, int]:
    """App -> how many object files it has: files in an app directory, kustomizations left out.
    Apps are read from the paths of either layout (core.layout.app_path), so moving a tenant into
    its shard directory keeps its objects."""
    counts: dict[str, int] = {}
    for path in paths:
        where = app_path(path)
        if not where.app or where.app.startswith(".") or where.inside.rpartition("/")[2] == _KUSTOMIZATION:
            continue
        counts[where.app] = counts.get(where.app, 0) + 1
    return counts


@dataclass(frozen=True, slots=True)
class Removal:
    """What a render removes from a populated cluster directory, by app."""

    previous_objects: int
    removed_apps: tuple[str, ...]
    removed_objects: int
    kept_apps: int

    def describe(self) -> str:
        shown = ", ".join(self.removed_apps[:5]) + (" ..." if len(self.removed_apps) > 5 else "")
        return (
            f"it would remove {len(self.removed_apps)} app(s) ({shown}) holding {self.removed_objects} "
            f"of the {self.previous_objects} objects there"
        )


def removal_refusal(previous: Iterable[str], new: Iterable[str]) -> Removal | None:
    """The removal a render must not do without `--allow-empty`, or None.

    Refused when the cluster directory holds at least one object and the new render either keeps
    none of its apps, or drops apps that held more than half of its objects. Counting whole apps
    (not files) keeps layout changes such as `--target flux` out of it: an app that stays keeps its
    objects, wherever its files move.
    """
    before = object_counts(previous)
    after = object_counts(new)
    total = sum(before.values())
    if total == 0:
        return None
    removed = tuple(sorted(app for app in before if app not in after))
    removed_objects = sum(before[app] for app in removed)
    kept = len(before) - len(removed)
    if kept == 0 or 2 * removed_objects > total:
        return Removal(total, removed, removed_objects, kept)
    return None
