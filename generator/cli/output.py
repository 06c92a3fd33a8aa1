"""How command results are shown to people (text on stdout or stderr)."""

from __future__ import annotations

from typing import TextIO

from btp_gitops.generator.core.report import Note


def print_notes(notes: list[Note], stream: TextIO) -> None:
    for note in notes:
        print(f"  {note.level}: {note.reason}: {note.subject}: {note.message}", file=stream)
