"""Helpers for the translators' tests: an import result written as the command writes it, and
the whole result as one text (to look for what must never be in it)."""

from __future__ import annotations

import json
from pathlib import Path

from btp_gitops.generator.core.yamlio import dump_object
from btp_gitops.generator.migration import ImportedDocument, ImportResult, LiveObject


def file_text(documents: tuple[ImportedDocument, ...]) -> str:
    """The documents of one imported file: each its comment lines, then its body, `---` between."""
    parts = []
    for document in documents:
        comment = "".join(f"# {line}\n" for line in document.comment)
        parts.append(comment + dump_object(dict(document.body)))
    return "---\n".join(parts)


def write_result(result: ImportResult, root: Path) -> list[Path]:
    """Every file of `result` under `root`, as `btp-gitops import` writes them (core.yamlio)."""
    written = []
    for imported in result.files:
        path = root / imported.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(file_text(imported.documents))
        written.append(path)
    return written


def serialized(result: ImportResult) -> str:
    """Everything a result could put anywhere: file texts, paths, skipped objects and reasons."""
    texts = [f"{f.path}\n{file_text(f.documents)}" for f in result.files]
    texts += [json.dumps([s.object, s.origin, s.reason]) for s in result.skipped]
    return "\n".join(texts) + repr(result)


def imported_origins(result: ImportResult) -> set[str]:
    """`Kind namespace/name` of every object a document says it was imported from."""
    found = set()
    for imported in result.files:
        for document in imported.documents:
            for line in document.comment:
                if line.startswith(("Imported from ", "Settings read from ")):
                    found.add(line.split(": ", 1)[1].rstrip(".").split(" (")[0])
    return found


def accounted_for(objects: list[LiveObject], result: ImportResult) -> set[str]:
    """The picked objects neither imported nor listed as skipped (should be empty)."""
    listed = imported_origins(result) | {s.object for s in result.skipped}
    return {live.describe() for live in objects} - listed
