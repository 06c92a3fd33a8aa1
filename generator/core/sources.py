"""Source documents: the custom resources a user keeps in Git, as parsed from their files."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.objects import KubeObject, describe


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """One object from a source file, with what is needed to point at it in an error."""

    file: str  # as shown to the user
    document: int  # 1-based index within the file
    body: KubeObject
    directory: Path  # the file's directory: relative paths inside the object resolve from here

    def path_of(self, named: str) -> Path:
        """A file this document names, relative to its directory (or absolute): joined and
        normalised as text, links left unresolved. Whether it may be read is for the I/O layer to
        decide (generator.io.containment), which also names the link when one leads out."""
        return Path(os.path.normpath(self.directory / named))

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def ref(self) -> str:
        return describe(self.body)


def problem_at(source: SourceDocument, field_path: str | None, message: str) -> Problem:
    """A problem located at a field of a source document (file, document, object, field)."""
    return Problem(
        file=source.file,
        document=source.document,
        object_ref=source.ref,
        field_path=field_path,
        message=message,
    )


@dataclass(frozen=True, slots=True)
class SourceSet:
    """Every validated source document, with lookups by kind."""

    documents: tuple[SourceDocument, ...]
    # (apiVersion, kind) -> documents in source order: every domain asks for a few kinds, and a
    # pass over 20,000 tenant records per question would cost more than the questions
    by_kind: dict[tuple[str, str], list[SourceDocument]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for document in self.documents:
            body = document.body  # api_version and kind, without two property calls per document
            kind = (str(body.get("apiVersion", "")), str(body.get("kind", "")))
            self.by_kind.setdefault(kind, []).append(document)

    def of_kind(self, api_version: str, kind: str) -> list[SourceDocument]:
        return list(self.by_kind.get((api_version, kind), ()))

    def kinds(self) -> set[tuple[str, str]]:
        return set(self.by_kind)

    @classmethod
    def of(cls, documents: Iterable[SourceDocument]) -> SourceSet:
        return cls(tuple(documents))
