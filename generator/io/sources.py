"""Reading source documents from files and directories."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from btp_gitops.generator.core.errors import Problem, SourceSyntaxError, raise_if_problems
from btp_gitops.generator.core.object_shape import shape_problems
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress, counted
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.yamlio import SourceSyntaxProblem, load_source_documents
from btp_gitops.generator.io.input_files import UnreadableInput, read_input_text

YAML_SUFFIXES = (".yaml", ".yml")


def display_path(path: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(absolute)


def source_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every YAML file named or found under the given paths, in a stable order.

    Hidden files and directories (".git", ".btp-gitops") are skipped.
    """
    for path in paths:
        if path.is_dir():
            found = [
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix in YAML_SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            ]
            yield from sorted(found)
        else:
            yield path


def _documents_of(path: Path, problems: list[Problem]) -> Iterator[SourceDocument]:
    shown = display_path(path)
    try:
        text = read_input_text(path)
    except UnreadableInput as error:
        problems.append(Problem(file=shown, message=error.reason))
        return
    try:
        for index, body in load_source_documents(text, shown):
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
                        message="required field is missing: not a Kubernetes object",
                    )
                )
                continue
            shape = [] if body.get("kind") == "List" else shape_problems(body)
            if shape:
                problems += [
                    Problem(file=shown, document=index, field_path=field, message=message)
                    for field, message in shape
                ]
                continue
            yield SourceDocument(file=shown, document=index, body=body, directory=path.parent.resolve())
    except SourceSyntaxProblem as error:
        problems.append(error.problem)


def load_sources(paths: Iterable[Path], progress: Progress = NO_PROGRESS) -> list[SourceDocument]:
    """Parse every document under `paths`; raise SourceSyntaxError listing every unreadable one."""
    problems: list[Problem] = []
    files = list(source_files(paths))
    documents = [
        doc
        for path in counted(files, progress, "reading sources", len(files))
        for doc in _documents_of(path, problems)
    ]
    raise_if_problems(SourceSyntaxError, "cannot read source documents", problems)
    return documents
