"""Reading source documents from files and directories.

Every YAML file under the source paths (hidden and linked directories are not entered; a link
leading out of the roots is refused, io.containment) is read within limits
(io.input_files), parsed strictly (core.yamlio: a duplicate key is an error, timestamps stay
strings) and shape-checked (core.object_shape) into `SourceDocument`s that remember their file
and document index, so that every later problem can name them. All problems of all files are
collected before the command fails.

With a `SourceSorting` (a render's SOURCE paths), what a GitOps repository keeps beside the
sources is passed over and noted instead (core.source_contents): kustomizations, Helm values and
charts, the output of a render, documents of kinds btp-gitops does not read. A directory is
recognised by a regular file in it (never through a link), before anything below it is listed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from btp_gitops.generator.core.errors import PathNotAllowed, Problem, SourceSyntaxError, raise_if_problems
from btp_gitops.generator.core.object_shape import object_ref_of, shape_problems
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress, counted
from btp_gitops.generator.core.source_contents import (
    CHART_FILE,
    MANIFEST_FILE,
    VALUES_REASON,
    Skipped,
    SourceSorting,
    foreign_reason,
    object_ref,
    skipped_directory,
    skipped_file,
    values_file,
)
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.yamlio import SourceSyntaxProblem, load_source_documents
from btp_gitops.generator.io.containment import SourceRoots, display_path
from btp_gitops.generator.io.input_files import UnreadableInput, read_input_text

__all__ = ["YAML_SUFFIXES", "display_path", "documents_in_text", "load_sources", "source_files"]

YAML_SUFFIXES = (".yaml", ".yml")
# A YAML file in a source directory that is no object is neither a source nor recognised.
_NOT_AN_OBJECT_HINT = " (Helm values beside the sources are recognised by their name, values*.yaml)"
_MARKERS = frozenset({MANIFEST_FILE, CHART_FILE})  # the files that make a directory no sources


def _skipped_directory(entries: list[os.DirEntry[str]]) -> str | None:
    markers = [e.name for e in entries if e.name in _MARKERS and e.is_file(follow_symlinks=False)]
    return skipped_directory(markers) if markers else None


def _walk(directory: Path, roots: SourceRoots, sorting: SourceSorting | None = None) -> list[str]:
    """The YAML files under `directory`, not descending into hidden or linked directories; a
    symbolic link (to a file or a directory) whose target leaves the roots is refused.
    (`os.scandir` entries: a file costs no `stat` unless it is a link.) With `sorting`, the
    directories and files that are no sources are passed over and noted there."""
    found: list[str] = []
    pending = [os.fspath(directory)]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError:
            continue  # as os.walk: a directory that cannot be listed is passed over
        if sorting is not None and (reason := _skipped_directory(entries)):
            sorting.skipped.append(Skipped(display_path(Path(current)), reason))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                roots.check_link(Path(entry.path))
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            elif entry.name.endswith(YAML_SUFFIXES) and entry.is_file():
                if sorting is not None and (reason := skipped_file(entry.name)):
                    sorting.skipped.append(Skipped(display_path(Path(entry.path)), reason))
                    continue
                found.append(entry.path)
    # In the order of Path's comparison (part by part), without a Path per comparison: every
    # path here starts with the same `directory`, so comparing the parts is the same. Comparing
    # the strings with each separator made NUL (lower than any character a name can hold) is
    # comparing the lists of parts, in C.
    found.sort(key=lambda path: path.replace(os.sep, "\0"))
    return found


def source_files(
    paths: Iterable[Path], roots: SourceRoots | None = None, sorting: SourceSorting | None = None
) -> Iterator[Path]:
    """Every YAML file named or found under the given paths, in a stable order.

    Hidden files and directories (".git", ".btp-gitops") are skipped. Symbolic links met in a
    directory must stay inside `roots` (default: the given paths themselves). With `sorting`,
    what is no source (a kustomization, a chart, a render's output) is passed over and noted,
    a file named on the command line too (a shell glob names them all).
    """
    for name in source_file_names(paths, roots, sorting):
        yield Path(name)


def source_file_names(
    paths: Iterable[Path], roots: SourceRoots | None = None, sorting: SourceSorting | None = None
) -> list[str]:
    """`source_files` as strings (a render with the render cache takes 20,000 of them without a
    Path each)."""
    paths = list(paths)
    allowed = roots if roots is not None else SourceRoots.of(paths)
    found: list[str] = []
    for path in paths:
        if path.is_dir():
            found += _walk(path, allowed, sorting)
        elif sorting is not None and (reason := skipped_file(path.name)):
            sorting.skipped.append(Skipped(display_path(path), reason))
        else:
            found.append(os.fspath(path))
    return found


def _documents_of(
    path: Path, problems: list[Problem], sorting: SourceSorting | None
) -> Iterator[SourceDocument]:
    shown = display_path(path)
    try:
        text = read_input_text(path)
    except UnreadableInput as error:
        problems.append(Problem(file=shown, message=error.reason))
        return
    yield from documents_in_text(path, shown, text, problems, sorting=sorting)


def _is_object(body: object) -> bool:
    return (
        isinstance(body, dict)
        and isinstance(body.get("apiVersion"), str)
        and isinstance(body.get("kind"), str)
    )


def documents_in_text(
    path: Path,
    shown: str,
    text: str,
    problems: list[Problem],
    directory: Path | None = None,
    *,
    sorting: SourceSorting | None = None,
) -> Iterator[SourceDocument]:
    """The documents of one source file's text (`shown`: its path as the user reads it), each
    checked to be a Kubernetes object of a sound shape; what is not is added to `problems`.
    `directory`: the file's directory resolved, when the caller knows it already. With
    `sorting`, a Helm values file and the documents of kinds that are not btp-gitops's are
    passed over (before their shape is checked: they are not read) and noted there."""
    where = directory if directory is not None else path.parent.resolve()
    try:
        bodies: Iterable[tuple[int, object]] = load_source_documents(text, shown)
        if sorting is not None and values_file(path.name):
            bodies = list(bodies)
            if not any(_is_object(body) for _, body in bodies):
                if any(body is not None for _, body in bodies):
                    sorting.skipped.append(Skipped(shown, VALUES_REASON))
                return
        for index, body in bodies:
            if body is None:
                continue  # an empty document (comments only) is allowed
            if not isinstance(body, dict):
                problems.append(
                    Problem(
                        file=shown, document=index, message=f"expected a mapping, got {type(body).__name__}"
                    )
                )
                continue
            missing = [field for field in ("apiVersion", "kind") if not isinstance(body.get(field), str)]
            if missing:
                problems.append(
                    Problem(
                        file=shown,
                        document=index,
                        field_path=missing[0],
                        message="required field is missing: not a Kubernetes object"
                        + (_NOT_AN_OBJECT_HINT if sorting is not None else ""),
                    )
                )
                continue
            if sorting is not None and not sorting.known.meant_for_us(body["apiVersion"], body["kind"]):
                reason = foreign_reason(body["apiVersion"], body["kind"])
                sorting.skipped.append(Skipped(shown, reason, index, object_ref(body)))
                continue
            shape = [] if body.get("kind") == "List" else shape_problems(body)
            if shape:
                problems += [
                    Problem(shown, message, index, object_ref_of(body), field) for field, message in shape
                ]
                continue
            yield SourceDocument(file=shown, document=index, body=body, directory=where)
    except SourceSyntaxProblem as error:
        problems.append(error.problem)


def load_sources(
    paths: Iterable[Path],
    progress: Progress = NO_PROGRESS,
    roots: SourceRoots | None = None,
    sorting: SourceSorting | None = None,
) -> list[SourceDocument]:
    """Parse every document under `paths`; raise SourceSyntaxError listing every unreadable one.

    With `roots`, the paths are ones a source named: each must resolve inside the roots
    (PathNotAllowed otherwise); without, the paths are the roots (the command line named them).
    With `sorting`, what is not a source is passed over and noted (`source_files`, `documents_in_text`).
    """
    paths = list(paths)
    if roots is not None:
        for path in paths:
            if not roots.contains(path):
                problem = Problem(file=display_path(path), message=roots.outside(path))
                raise PathNotAllowed("a source names a file outside the source roots", [problem])
    problems: list[Problem] = []
    files = list(source_files(paths, roots, sorting))
    documents = [
        doc
        for path in counted(files, progress, "reading sources", len(files))
        for doc in _documents_of(path, problems, sorting)
    ]
    raise_if_problems(SourceSyntaxError, "cannot read source documents", problems)
    return documents
