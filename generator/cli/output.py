"""How command results are shown to people (text on stdout or stderr)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.redact import printable
from btp_gitops.generator.core.report import Note

if TYPE_CHECKING:  # post-render prints notes too, and reads no source directory
    from btp_gitops.generator.core.source_contents import Skipped


def print_notes(notes: list[Note], stream: TextIO) -> None:
    for note in notes:
        print(printable(f"  {note.level}: {note.reason}: {note.subject}: {note.message}"), file=stream)


def print_module_problems(problems: list[Problem], stream: TextIO) -> None:
    """Kyma modules that could not be resolved (their previous files kept), each named."""
    if not problems:
        return
    print(
        f"warning: rendered with {len(problems)} Kyma module problem(s); their previous files are kept:",
        file=stream,
    )
    for problem in problems:
        print(printable(f"  {problem.render()}"), file=stream)


def print_skipped(skipped: list[Skipped], stream: TextIO, quiet: bool) -> None:
    """What under the source paths was passed over as no source (a kustomization, Helm values, a
    chart, a render's output, other kinds), one note a line; `--quiet` leaves them out."""
    if quiet:
        return
    for entry in skipped:
        print(f"note: {entry.render()}", file=stream)
