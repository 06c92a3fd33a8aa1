"""The one editor of source files: one YAML document of a (multi-document) file replaced or removed,
or a new file written, everything else in the file kept byte for byte.

A file is cut at its `---` lines into pieces holding at most one document each; an edit rewrites
only its piece (the comments heading the document and the column-0 comments after it stay, the
document itself is written in the generator's YAML style, `generator.core.yamlio`).

One policy for a file whose pieces do not line up with its documents (a `---` inside a block
scalar, directives, a piece holding two documents...): it is refused (UnreadableSource) and
nothing is written. Writing such a file back from its parsed documents would also work, but it
drops every comment in the file, the user's own notes on their sources, in a commit nobody
reviews; refusing says what is wrong and leaves the file to its owner. Every document written is
checked against its schema first: the controller never writes a document the render refuses.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.controller.clone_files import RefusedPath, remove_beneath, write_beneath
from btp_gitops.controller.errors import PermanentError
from btp_gitops.controller.records.parsed_files import source_schemas
from btp_gitops.controller.records.source_files import read_source
from btp_gitops.controller.records.unreadable import MAX_PROBLEMS_SHOWN, unreadable_source, unwritable
from btp_gitops.controller.records.working_index import note_written
from btp_gitops.generator.core import (
    SourceDocument,
    SourceSyntaxProblem,
    dump_object,
    get_path,
    load_source_documents,
    problems_in,
)

_SEPARATOR_LINE = re.compile(r"---[ \t]*(?:#[^\n]*)?\r?\n?")


@dataclass(frozen=True, slots=True)
class DocumentRef:
    """Where one document is: its file (relative to the tree root), kind, namespace and name."""

    path: Path
    kind: tuple[str, str]
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind[1]} {self.namespace}/{self.name}"


@dataclass(slots=True)
class _Piece:
    """A stretch of a YAML file: the `---` line opening it ("" for the first) and what follows."""

    separator: str
    text: str
    body: dict[str, Any] | None


def _is_comment_or_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _head_comments(text: str) -> str:
    lines = text.splitlines(keepends=True)
    count = next((i for i, line in enumerate(lines) if not _is_comment_or_blank(line)), len(lines))
    return "".join(lines[:count])


def _tail_comments(text: str) -> str:
    """Comment lines at column 0 after a document's last line: they are about what follows."""
    lines = text.splitlines(keepends=True)
    count = 0
    for line in reversed(lines):
        if not _is_comment_or_blank(line) or (line.strip() and not line.startswith("#")):
            break
        count += 1
    return "".join(lines[len(lines) - count :]) if count else ""


def _split(text: str) -> list[tuple[str, str]]:
    pieces: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines(keepends=True):
        if _SEPARATOR_LINE.fullmatch(line):
            pieces.append((line, []))
        else:
            pieces[-1][1].append(line)
    return [(separator, "".join(lines)) for separator, lines in pieces]


def _documents(text: str, shown: str) -> list[Any]:
    return [body for _, body in load_source_documents(text, shown) if body is not None]


class _YamlFile:
    """A source file as pieces holding at most one document each (`path`: relative to the tree,
    which it is read from and written to without following a link: clone_files)."""

    def __init__(self, path: Path, pieces: list[_Piece]) -> None:
        self.path = path
        self.pieces = pieces

    @classmethod
    def read(cls, tree: Path, shown: Path) -> _YamlFile:
        try:
            text = read_source(tree, shown)[1].decode("utf-8")
            documents = _documents(text, str(shown))
        except RefusedPath as error:
            raise unreadable_source(str(error)) from error
        except (UnicodeDecodeError, SourceSyntaxProblem) as error:
            raise unreadable_source(f"{shown}: {type(error).__name__}") from error
        pieces = cls._pieces(text, str(shown))
        if pieces is None or [p.body for p in pieces if p.body is not None] != documents:
            raise unreadable_source(
                f"{shown}: its documents are not separated by plain '---' lines, so it cannot be "
                "edited without losing its comments; edit it by hand"
            )
        return cls(shown, pieces)

    @staticmethod
    def _pieces(text: str, shown: str) -> list[_Piece] | None:
        pieces = []
        for separator, piece_text in _split(text):
            try:
                found = _documents(piece_text, shown)
            except SourceSyntaxProblem:
                return None
            if len(found) > 1 or (found and not isinstance(found[0], dict)):
                return None
            pieces.append(_Piece(separator, piece_text, found[0] if found else None))
        return pieces

    def find(self, ref: DocumentRef) -> _Piece | None:
        for piece in self.pieces:
            body = piece.body
            if (
                body is not None
                and (body.get("apiVersion"), body.get("kind")) == ref.kind
                and get_path(body, "metadata", "namespace") == ref.namespace
                and get_path(body, "metadata", "name") == ref.name
            ):
                return piece
        return None

    def replace(self, piece: _Piece, body: dict[str, Any]) -> None:
        piece.text = _head_comments(piece.text) + dump_object(body) + _tail_comments(piece.text)
        piece.body = body

    def remove(self, piece: _Piece) -> None:
        self.pieces.remove(piece)

    def write(self, tree: Path, relative: Path, checked: Sequence[dict[str, Any]] = ()) -> None:
        """Write the pieces back; a file left without any document is deleted. The index keeps
        what was written (records.working_index.note_written), so it never reads the file back; `checked`:
        the bodies just checked against their schemas (`checked`), not checked again there."""
        try:
            if all(piece.body is None for piece in self.pieces):
                remove_beneath(tree, self.path)
                note_written(tree, relative, None)
                return
            data = "".join(piece.separator + piece.text for piece in self.pieces).encode("utf-8")
            write_beneath(tree, self.path, data, new=False)
        except RefusedPath as error:
            raise unwritable(relative, error) from error
        note_written(tree, relative, data, checked)


def checked(body: dict[str, Any], what: str) -> dict[str, Any]:
    """`body` if it passes its schema: the controller never writes a document the render refuses."""
    document = SourceDocument(file=what, document=1, body=body, directory=Path())
    problems = problems_in(document, source_schemas())
    if problems:
        details = "; ".join(f"{p.field_path or '-'}: {p.message}" for p in problems[:MAX_PROBLEMS_SHOWN])
        raise PermanentError(f"{what} would not be a valid record: {details}")
    return body


def _find(tree: Path, ref: DocumentRef) -> tuple[_YamlFile, _Piece]:
    file = _YamlFile.read(tree, ref.path)
    piece = file.find(ref)
    if piece is None or piece.body is None:
        raise PermanentError(f"{ref} is not in {ref.path} any more")
    return file, piece


def edit_document(tree: Path, ref: DocumentRef, edit: Callable[[dict[str, Any]], None]) -> bool:
    """Apply `edit` to a copy of the document; write it back when it changed. True if written."""
    file, piece = _find(tree, ref)
    original = piece.body or {}
    updated = copy.deepcopy(original)
    edit(updated)
    if updated == original:
        return False
    file.replace(piece, checked(updated, str(ref)))
    file.write(tree, ref.path, [updated])
    return True


def remove_document(tree: Path, ref: DocumentRef) -> None:
    """Remove the document with the comments heading it; its file goes when nothing else is in it."""
    file, piece = _find(tree, ref)
    file.remove(piece)
    file.write(tree, ref.path)


def describe(body: dict[str, Any]) -> str:
    return (
        f"{body.get('kind')} {get_path(body, 'metadata', 'namespace')}/{get_path(body, 'metadata', 'name')}"
    )


def write_new_document(tree: Path, path: Path, body: dict[str, Any]) -> None:
    """Write `body`, checked, as the only document of a new file; refuse to overwrite a file (or a
    link, or anything else by its name), and to write through a link on its way."""
    checked(body, describe(body))
    data = dump_object(body).encode("utf-8")
    try:
        write_beneath(tree, path, data, new=True)
    except FileExistsError:
        message = f"{path} exists but holds no record of {describe(body)}: not overwritten"
        raise PermanentError(message) from None
    except RefusedPath as error:
        raise unwritable(path, error) from error
    note_written(tree, path, data, [body])
