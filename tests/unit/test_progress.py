"""Progress on a terminal: drawn on a TTY outside CI, throttled, cleared at the end; silent elsewhere."""

from __future__ import annotations

import io
import os
import pty
import subprocess
from pathlib import Path

import pytest

from btp_gitops.generator.core.progress import NO_PROGRESS, counted
from btp_gitops.generator.io.progress import TerminalProgress, progress_for
from tests.conftest import CLI, EXAMPLES, ROOT


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_updates_are_throttled_but_a_finished_phase_is_always_drawn() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream, clock)
    for done in range(5):
        progress.update("reading sources", done, 5)  # all at the same instant: drawn once
    assert stream.getvalue() == "\r\033[Kreading sources: 0/5"
    progress.update("reading sources", 5, 5)
    clock.now = 0.05
    progress.update("rendering", 0)
    clock.now = 0.2
    progress.update("rendering", 1)
    assert stream.getvalue().split("\r\033[K")[1:] == [
        "reading sources: 0/5",
        "reading sources: 5/5",
        "rendering: 1",
    ]
    progress.finish()
    assert stream.getvalue().endswith("rendering: 1\r\033[K")
    progress.finish()  # nothing more to clear
    assert stream.getvalue().endswith("rendering: 1\r\033[K")


def test_counted_reports_every_item_and_yields_them_unchanged() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = TerminalProgress(stream, clock)
    assert list(counted(["a", "b"], progress, "apps", 2)) == ["a", "b"]
    assert stream.getvalue().endswith("apps: 2/2")


@pytest.mark.parametrize(("ci", "expected_tty"), [("", True), ("true", False), ("1", False), ("false", True)])
def test_progress_only_on_a_terminal_outside_ci(ci: str, expected_tty: bool) -> None:
    leader, follower = pty.openpty()
    try:
        with open(follower, "w", closefd=False) as terminal:
            chosen = progress_for(terminal, {"CI": ci} if ci else {})
            assert isinstance(chosen, TerminalProgress) is expected_tty
    finally:
        os.close(leader)
        os.close(follower)
    assert progress_for(io.StringIO(), {}) is NO_PROGRESS


def _render_with_stderr(stderr: int, tmp_path: Path, **env: str) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "CI"} | env
    subprocess.run(
        [str(CLI), "render", str(EXAMPLES / "cap-app"), "--out", str(tmp_path / "repo")],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=environment,
        cwd=ROOT,
        check=True,
        timeout=300,
    )


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal's other side is closed: all read
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_render_draws_progress_on_a_terminal_and_nothing_in_ci(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        _render_with_stderr(follower, tmp_path)
        os.close(follower)
        shown = _read_all(leader)
    finally:
        os.close(leader)
    assert "reading sources: " in shown
    assert "writing apps: " in shown
    assert shown.endswith("\r\033[K")  # the line is cleared once the render is over

    leader, follower = pty.openpty()
    try:
        _render_with_stderr(follower, tmp_path, CI="true")
        os.close(follower)
        assert _read_all(leader) == ""
    finally:
        os.close(leader)
