"""What every part of the import shares: live objects in, source files and skips out.

A translator (one per operator) takes every live object read, picks the kinds it knows, and
returns an `ImportResult`: the source files it would write, relative to the output directory, and
the objects it read but cannot express, each with the reason. Nothing is dropped silently: an
object a translator picks is either in a file or in `skipped`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.objects import KubeObject


@dataclass(frozen=True, slots=True)
class LiveObject:
    """An object as the API server (or a dump of it) gave it, and where it was read.

    `origin` names the place for messages and for the comment above the imported document:
    `cluster (context kind-prod)` or `dumps/cap.yaml: document 3`.
    """

    body: KubeObject
    origin: str

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def namespace(self) -> str:
        metadata = self.body.get("metadata")
        return str(metadata.get("namespace", "")) if isinstance(metadata, dict) else ""

    @property
    def name(self) -> str:
        metadata = self.body.get("metadata")
        return str(metadata.get("name", "")) if isinstance(metadata, dict) else ""

    def describe(self) -> str:
        """`Kind namespace/name`, or `Kind name` for a cluster-scoped object."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


@dataclass(frozen=True, slots=True)
class ImportedDocument:
    """One source document: its body (never a Secret value) and the comment written above it.

    `comment` is plain text, one line per entry, without `#`: where the object came from and
    what was left out of it.
    """

    body: Mapping[str, Any]
    comment: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ImportedFile:
    """A source file to write: a relative POSIX path (checked by the writer) and its documents."""

    path: str
    documents: tuple[ImportedDocument, ...]


@dataclass(frozen=True, slots=True)
class Skipped:
    """An object read but not expressed in any source file, and why."""

    object: str  # LiveObject.describe()
    origin: str
    reason: str


@dataclass(frozen=True, slots=True)
class FollowUp:
    """An object imported, with something the user must do before the sources render."""

    object: str  # LiveObject.describe()
    origin: str
    action: str


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What a translator, or the whole import, produced."""

    files: tuple[ImportedFile, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    follow_ups: tuple[FollowUp, ...] = ()


def merge_results(results: Iterable[ImportResult]) -> ImportResult:
    """The translators' results as one, files sorted by path and skips by object.

    Two translators writing the same path is a programming error, not an input problem: each
    writes under its own directories.
    """
    files: dict[str, ImportedFile] = {}
    skipped: list[Skipped] = []
    follow_ups: list[FollowUp] = []
    for result in results:
        for imported in result.files:
            if imported.path in files:
                raise ValueError(f"two translators write {imported.path}")
            files[imported.path] = imported
        skipped.extend(result.skipped)
        follow_ups.extend(result.follow_ups)
    return ImportResult(
        files=tuple(files[path] for path in sorted(files)),
        skipped=tuple(sorted(skipped, key=lambda skip: (skip.object, skip.origin, skip.reason))),
        follow_ups=tuple(sorted(follow_ups, key=lambda item: (item.object, item.origin, item.action))),
    )
