"""Comparing two rendered cluster trees object by object, for `btp-gitops diff`.

Objects are matched by app and identity (group, kind, namespace, name), not by file, so an
object that moves between files (another layout target, a renamed file) is one change, not an
added and a removed file. Files that hold no object (kustomization.yaml, records such as
`.kyma-modules.json`) are matched by path. Every text a change shows is masked first
(generator.diff.masking).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import yaml

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.objects import KubeObject, describe, object_key
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import dump_object, load_trusted_document, split_documents
from btp_gitops.generator.diff.masking import ABSENT, mask_pair, mask_text_pair

CLUSTER_ROOT = ""  # the "app" of files directly under clusters/<cluster>/


class ChangeKind(StrEnum):
    ADDED = "added"
    CHANGED = "changed"
    REMOVED = "removed"

    @property
    def sign(self) -> str:
        return {"added": "+", "changed": "~", "removed": "-"}[self.value]


_KIND_ORDER = {ChangeKind.ADDED: 0, ChangeKind.CHANGED: 1, ChangeKind.REMOVED: 2}


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One object of a rendered tree, or one file that holds no object."""

    app: str
    path: str
    text: str
    body: KubeObject | None  # None: compared as text

    @property
    def subject(self) -> str:
        return describe(self.body) if self.body is not None else self.path


@dataclass(frozen=True, slots=True)
class Change:
    app: str
    kind: ChangeKind
    subject: str  # "Deployment kyma-system/manager", or the path of a file without objects
    old_path: str | None
    new_path: str | None
    diff: str  # unified diff of the masked texts; "" when the texts only moved or were reformatted
    note: str = ""  # why a change has no diff lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "change": self.kind.value,
            "subject": self.subject,
            "oldPath": self.old_path,
            "newPath": self.new_path,
            "note": self.note,
            "diff": self.diff,
        }


@dataclass(frozen=True, slots=True)
class AppSummary:
    app: str
    added: int
    changed: int
    removed: int


@dataclass(frozen=True, slots=True)
class ClusterDiff:
    changes: tuple[Change, ...]

    @property
    def empty(self) -> bool:
        return not self.changes

    def count(self, kind: ChangeKind) -> int:
        return sum(1 for change in self.changes if change.kind is kind)

    def apps(self) -> list[AppSummary]:
        """Per app with changes, in app order."""
        counts: dict[str, Counter[ChangeKind]] = {}
        for change in self.changes:
            counts.setdefault(change.app, Counter())[change.kind] += 1
        return [
            AppSummary(app, found[ChangeKind.ADDED], found[ChangeKind.CHANGED], found[ChangeKind.REMOVED])
            for app, found in sorted(counts.items())
        ]


def app_of(path: str) -> str:
    """The app a path belongs to, in either layout: a tenant's objects are the same app's in
    `<app>/` and in `tenants/<group>/<shard>/<app>/`, so moving them shows moves."""
    return app_path(path).app or CLUSTER_ROOT


def _decoded(data: str | bytes) -> str:
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def _objects_in(text: str) -> list[tuple[str, KubeObject]] | None:
    """(document text, object) for every document of a file, or None unless each one is a
    Kubernetes object (then the file is compared as text)."""
    try:
        pieces = split_documents(text)
        budget = AliasBudget()  # the alias limit holds for the whole file
        documents = [(piece, load_trusted_document(piece, budget)) for piece in pieces]
    except (yaml.YAMLError, RecursionError):
        return None
    if not documents or not all(_is_object(body) for _, body in documents):
        return None
    return documents


def _is_object(body: Any) -> bool:
    return isinstance(body, dict) and bool(body.get("kind")) and isinstance(body.get("metadata"), dict)


def tree_entries(files: Mapping[str, str | bytes]) -> dict[tuple[str, ...], TreeEntry]:
    """Entries of a tree (paths relative to the cluster directory) by identity."""
    entries: dict[tuple[str, ...], TreeEntry] = {}
    for path in sorted(files):
        text = _decoded(files[path])
        app = app_of(path)
        documents = _objects_in(text) if path.endswith((".yaml", ".yml")) else None
        if documents is None:
            entries[("file", path)] = TreeEntry(app, path, text, None)
            continue
        for piece, body in documents:
            identity = ("object", app, *object_key(body))
            # The same object twice in one app (a hand-edited tree): the later one as a file.
            key = identity if identity not in entries else ("file", path)
            entries[key] = TreeEntry(app, path, piece if len(documents) > 1 else text, body)
    return entries


def compare_trees(
    old: Mapping[str, str | bytes], new: Mapping[str, str | bytes], prefix: str = ""
) -> ClusterDiff:
    """Every added, changed and removed object or file from `old` to `new`; `prefix` (e.g.
    `clusters/demo/`) is put before paths in diff headers."""
    before, after = tree_entries(old), tree_entries(new)
    changes = []
    for identity in sorted(before.keys() | after.keys()):
        change = _change(before.get(identity), after.get(identity), prefix)
        if change is not None:
            changes.append(change)
    changes.sort(key=lambda c: (c.app, _KIND_ORDER[c.kind], c.subject, c.new_path or c.old_path or ""))
    return ClusterDiff(tuple(changes))


def changed_apps(
    old: Mapping[str, str | bytes],
    new: Mapping[str, str],
    unchanged: Callable[[str, str], bool],
    same: AbstractSet[str] = frozenset(),
) -> list[str]:
    """The paths of `old` in the apps where some file differs from `new` (added, removed, or not
    `unchanged`: holding other bytes than the new text's UTF-8): the files a comparison must read.
    `same`: paths known to hold their new text already (by blob id), not asked about again."""
    old_paths = set(old)
    differing = {
        path for path in set(new).difference(same) if path not in old_paths or not unchanged(path, new[path])
    }
    differing.update(old_paths.difference(new))
    return paths_in_apps(old, {_app_of(path) for path in differing})


def paths_in_apps(paths: Iterable[str], apps: AbstractSet[str]) -> list[str]:
    """The paths, in their order, whose app (`app_of`) is one of `apps`. For a few apps, found
    by a search in C over the paths joined by NULs (none holds one): a path of app `a` begins
    with `a/` or holds `/a/` (core.layout.app_path), so the paths holding either are all the
    candidates, and each candidate is checked; for many, path by path. (A path's app is its
    first part, or the fourth under `tenants/`: CLUSTER_ROOT when that part is empty.)"""
    ordered = paths if isinstance(paths, list) else list(paths)
    if not apps:
        return []
    if len(apps) > _FEW_APPS:
        return [path for path in ordered if _app_of(path) in apps]
    joined = "\0" + "\0".join(ordered) + "\0"
    if joined.count("\0") != len(ordered) + 1:  # a path holding a NUL: none does, by the rules
        return [path for path in ordered if _app_of(path) in apps]
    # A name found where a part begins (after a NUL or a slash): matches elsewhere are passed
    # over, and hide none (a name holds neither). The literal search is what runs in C.
    names = sorted(app for app in apps if app != CLUSTER_ROOT)
    found = re.finditer("(?:" + "|".join(re.escape(name) for name in names) + ")/", joined) if names else ()
    starts = {joined.rfind("\0", 0, at.start()) for at in found if joined[at.start() - 1] in "\0/"}
    if CLUSTER_ROOT in apps:  # paths without a slash, or with an empty part (`/a`, `a//b`)
        starts.update(at.start() for at in _TOP_LEVEL.finditer(joined))
        starts.update(joined.rfind("\0", 0, at.start() + 1) for at in _EMPTY_PART.finditer(joined))
    picked = (joined[start + 1 : joined.index("\0", start + 1)] for start in sorted(starts))
    return [path for path in picked if _app_of(path) in apps]


_FEW_APPS = 16  # more apps than this: path by path (an alternation of many names is slower)
_TOP_LEVEL = re.compile("\0(?=[^\0/]*\0)")
_EMPTY_PART = re.compile("(?:\0|/)/")


def _app_of(path: str) -> str:
    """`app_of(path)`, worked out once per directory: a path's app depends on its directory only
    (core.layout.app_path), and 80,000 paths lie in 20,000 directories."""
    return _app_of_directory(path.rpartition("/")[0])


@functools.lru_cache(maxsize=1 << 17)
def _app_of_directory(directory: str) -> str:
    return app_of(f"{directory}/-") if directory else CLUSTER_ROOT


def compare_changed_apps(
    old: Mapping[str, str | bytes],
    new: Mapping[str, str | bytes],
    narrowed: list[str],
    prefix: str = "",
    new_paths: list[str] | None = None,
) -> ClusterDiff:
    """`compare_trees(old, new)`, reading only the apps `narrowed` (`changed_apps`) names and those
    of the files `new` adds. An app's entries come from its own files only (an object's identity
    holds its app), and an app none of whose files differ has the same entries on both sides, so
    leaving it out changes nothing in the result. `new_paths`: `compared_new_paths`, when known."""
    old_kept = {path: old[path] for path in narrowed}
    if new_paths is None:
        new_paths = compared_new_paths(old, new, narrowed)
    new_kept = {path: new[path] for path in new_paths}
    return compare_trees(old_kept, new_kept, prefix)


def compared_new_paths(
    old: Mapping[str, object], new: Mapping[str, object], narrowed: list[str]
) -> list[str]:
    """The paths of `new` that `compare_changed_apps` reads: those of the apps `narrowed` names
    and of the apps `new` adds files to."""
    apps = {_app_of(path) for path in narrowed}
    apps.update(_app_of(path) for path in set(new).difference(old))
    return paths_in_apps(new, apps)


def _change_kind(before: TreeEntry | None, after: TreeEntry | None) -> ChangeKind | None:
    if before is None:
        return None if after is None else ChangeKind.ADDED
    if after is None:
        return ChangeKind.REMOVED
    same = before.text == after.text and before.path == after.path
    return None if same else ChangeKind.CHANGED


def _change(before: TreeEntry | None, after: TreeEntry | None, prefix: str) -> Change | None:
    kind = _change_kind(before, after)
    entry = after or before
    if kind is None or entry is None:
        return None
    diff = _unified_diff(before, after, prefix)
    return Change(
        app=entry.app,
        kind=kind,
        subject=entry.subject,
        old_path=before.path if before else None,
        new_path=after.path if after else None,
        diff=diff,
        note=_note(before, after) if not diff else "",
    )


def _note(before: TreeEntry | None, after: TreeEntry | None) -> str:
    if before is not None and after is not None and before.path != after.path:
        return f"moved from {before.path}" + (" and reformatted" if before.text != after.text else "")
    return "reformatted (same content)"


def _masked_texts(before: TreeEntry | None, after: TreeEntry | None) -> tuple[str, str]:
    if (before is None or before.body is not None) and (after is None or after.body is not None):
        old, new = mask_pair(before.body if before else ABSENT, after.body if after else ABSENT)
        return (dump_object(old) if before else "", dump_object(new) if after else "")
    # A file without objects on at least one side: compared as text.
    return mask_text_pair(before.text if before else "", after.text if after else "")


def _unified_diff(before: TreeEntry | None, after: TreeEntry | None, prefix: str) -> str:
    old_text, new_text = _masked_texts(before, after)
    lines = difflib.unified_diff(
        _lines(old_text),
        _lines(new_text),
        fromfile=f"a/{prefix}{before.path}" if before else "/dev/null",
        tofile=f"b/{prefix}{after.path}" if after else "/dev/null",
    )
    return "".join(lines)


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"  # a missing final newline is not worth a diff line of its own
    return lines
