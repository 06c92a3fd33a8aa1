"""The source files of the controller's clone as the index and the editor read them: found without
entering a linked directory, read without following a link, bounded, parsed as a render parses
them.

A render reads its sources from paths the operator named; the controller reads a clone of a
repository anyone who can push to it fills. So a YAML file of the clone is read only through
`controller.clone_files`: a symbolic link (`zero.yaml -> /dev/zero`, or a link to a file outside
the clone), a FIFO, a device or a file over the render's limit (`MAX_FILE_BYTES`) is never opened
or read, and becomes a problem of that file naming it, as an unparseable one does: the tree is
unreadable (records.unreadable) until a commit replaces it. What a file holds is parsed with the
render's own reader of source text (strict YAML, its alias, depth and size limits, the shape
checks), so the controller and a render agree on every file.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path, PurePath

from btp_gitops.controller.clone_files import RefusedPath, lstat_beneath, read_beneath, walk
from btp_gitops.generator.core import KnownKinds, Problem, SourceDocument, SourceSorting, skipped_file
from btp_gitops.generator.io import (
    MAX_FILE_BYTES,
    YAML_SUFFIXES,
    display_path,
    documents_in_text,
    load_schema_registry,
)

__all__ = [
    "MAX_FILE_BYTES",
    "RefusedPath",
    "documents_of",
    "read_source",
    "refusal",
    "source_status",
    "yaml_files",
]


def yaml_files(root: Path) -> list[tuple[str, os.stat_result]]:
    """Every YAML file under `root` as a render's walk finds them (same order: by path components;
    hidden files and directories skipped, linked directories not entered), links and other files
    that are not regular included, each with its `lstat`. RefusedPath for a directory that
    cannot be listed."""
    return walk(root, YAML_SUFFIXES)


def source_status(root: Path, relative: PurePath) -> os.stat_result | None:
    """The `lstat` of `relative` when `yaml_files` would list it (a YAML name, no hidden part,
    not a directory, not beyond a link), else None."""
    if not relative.name.endswith(YAML_SUFFIXES) or any(part.startswith(".") for part in relative.parts):
        return None
    status = lstat_beneath(root, relative)
    return None if status is None or stat.S_ISDIR(status.st_mode) else status


def read_source(root: Path, relative: PurePath) -> tuple[os.stat_result, bytes]:
    """The `fstat` and bytes of a source file of the clone; RefusedPath for a link, a file that is
    not regular or one over `MAX_FILE_BYTES`, checked before anything is read."""
    return read_beneath(root, relative, MAX_FILE_BYTES)


def refusal(root: Path, error: RefusedPath) -> str:
    """A refused path as a problem line, naming it as the index names every file."""
    return Problem(file=display_path(root / error.relative), message=error.reason).render()


@functools.cache
def _known_kinds() -> KnownKinds:
    return KnownKinds((kind.api_version, kind.kind) for kind in load_schema_registry().kinds())


def documents_of(root: Path, relative: PurePath, data: bytes) -> tuple[list[SourceDocument], list[str]]:
    """The documents of a source file's bytes, checked as a render checks them, or its problems
    (a file with any problem gives no document, as `load_sources` refuses it whole). What a
    render passes over in a source directory (a kustomization, Helm values, documents of other
    kinds: core.source_contents) is passed over here too, without a note."""
    if skipped_file(relative.name):
        return [], []
    path = root / relative
    shown = display_path(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return [], [Problem(file=shown, message=f"not UTF-8 text (byte {error.start})").render()]
    problems: list[Problem] = []
    sorting = SourceSorting(_known_kinds())
    documents = list(documents_in_text(path, shown, text, problems, path.parent, sorting=sorting))
    return ([], [p.render() for p in problems]) if problems else (documents, [])
