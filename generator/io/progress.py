"""Progress on an interactive terminal: one line, redrawn at most ten times a second; with
`--verbose`, a log line per step instead.

The line is shown only when stderr is a TTY and the environment is not CI (`CI` set, as GitHub
Actions, GitLab and most CI systems do); anywhere else the pipeline's reports are dropped, unless
`--verbose` asks for the step log (StepLog), which is plain lines and so fits a CI log.

A counter is shown only when it counts something: a step of zero items, or one just started
with no total, shows its name alone, never `0/0` or `: 0`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TextIO

from btp_gitops.generator.core.progress import NO_PROGRESS, Progress

_REDRAW_EVERY = 0.1  # seconds; a redraw per tenant would cost more than the render


class TerminalProgress:
    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._last_draw = float("-inf")
        self._drawn = False

    def update(self, phase: str, done: int, total: int | None = None) -> None:
        now = self._clock()
        finished_phase = total is not None and done >= total
        if now - self._last_draw < _REDRAW_EVERY and not finished_phase:
            return
        self._last_draw = now
        # \r returns to the line start, \033[K clears what a longer previous line left behind.
        self._stream.write(f"\r\033[K{phase}{counter(done, total)}")
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._drawn = False


def counter(done: int, total: int | None) -> str:
    """`: 3/7` or `: 3`, or nothing when there is nothing to count yet (never `0/0`)."""
    if total == 0 or (total is None and done == 0):
        return ""
    return f": {done}/{total}" if total is not None else f": {done}"


class StepLog:
    """`--verbose`: each step on a line of its own once it ends, with its count and how long it took."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._phase: str | None = None
        self._done = 0
        self._total: int | None = None
        self._started = 0.0

    def update(self, phase: str, done: int, total: int | None = None) -> None:
        # The same step again from zero (sources, then the catalog) is a step of its own.
        if phase != self._phase or (done == 0 and self._done > 0):
            self._end()
            self._phase, self._started = phase, self._clock()
        self._done, self._total = done, total

    def finish(self) -> None:
        self._end()
        self._phase = None

    def _end(self) -> None:
        if self._phase is None or self._total == 0:  # a step over nothing is not worth a line
            return
        seconds = self._clock() - self._started
        self._stream.write(f"{self._phase}{counter(self._done, self._total)} ({seconds:.2f}s)\n")
        self._stream.flush()
        self._done = 0


def progress_for(stream: TextIO, environ: Mapping[str, str]) -> Progress:
    """A terminal progress line for `stream`, or none when it is not a TTY or this is CI."""
    if environ.get("CI", "").lower() not in {"", "0", "false"}:
        return NO_PROGRESS
    if not stream.isatty():
        return NO_PROGRESS
    return TerminalProgress(stream)
