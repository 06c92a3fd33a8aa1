"""Progress on an interactive terminal: one line, redrawn at most ten times a second.

Shown only when stderr is a TTY and the environment is not CI (`CI` set, as GitHub Actions,
GitLab and most CI systems do); anywhere else the pipeline's reports are dropped.
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
        count = f"{done}/{total}" if total is not None else str(done)
        # \r returns to the line start, \033[K clears what a longer previous line left behind.
        self._stream.write(f"\r\033[K{phase}: {count}")
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._drawn = False


def progress_for(stream: TextIO, environ: Mapping[str, str]) -> Progress:
    """A terminal progress line for `stream`, or none when it is not a TTY or this is CI."""
    if environ.get("CI", "").lower() not in {"", "0", "false"}:
        return NO_PROGRESS
    if not stream.isatty():
        return NO_PROGRESS
    return TerminalProgress(stream)
