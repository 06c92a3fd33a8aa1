"""Progress of long operations (thousands of tenant files), as a small interface.

The pipeline reports phases and counts; what becomes of them is decided at the edge: a line
redrawn on an interactive terminal (generator.io.progress), or nothing at all in CI, in pipes and
under `--output json`, so logs and machine-read output stay clean.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    def update(self, phase: str, done: int, total: int | None = None) -> None:
        """`done` of `total` items of `phase` are finished (total None: not known)."""

    def finish(self) -> None:
        """The operation is over (successfully or not): leave the terminal as it was."""


class NoProgress:
    def update(self, phase: str, done: int, total: int | None = None) -> None:
        pass

    def finish(self) -> None:
        pass


NO_PROGRESS: Progress = NoProgress()


def counted(items: Iterable[T], progress: Progress, phase: str, total: int | None = None) -> Iterator[T]:
    """`items` unchanged, reporting each one as done."""
    done = 0
    progress.update(phase, done, total)
    for item in items:
        yield item
        done += 1
        progress.update(phase, done, total)
