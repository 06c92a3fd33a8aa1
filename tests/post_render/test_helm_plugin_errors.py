"""The Helm 4 plugin keeps btp-gitops' messages visible when post-render fails.

Helm 4 captures a post-renderer plugin's stderr and drops it on failure (helm/helm#31843); the
plugin's wrapper (helm-plugin/bin/post-render) replays it to the terminal and appends it to a log
in Helm's cache. Run for real: helm v4 built by scripts/build-tools.sh, the plugin installed from
helm-plugin/, a post-render that fails on a credentials file that does not exist; the terminal is
a real pseudo-terminal that helm runs in as its controlling terminal.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.post_render.conftest import HelmHome, _template_args, run_helm
from tests.support.tools import tool_path

pytestmark = pytest.mark.tools

MESSAGE = "no such file or directory"


def failing_args(tmp_path: Path) -> list[str]:
    return _template_args("btp-gitops", f"--post-renderer-args=--credentials={tmp_path / 'missing.yaml'}")


def log_of(home: HelmHome) -> Path:
    return home.root / "cache" / "btp-gitops" / "post-render.log"


def test_the_message_of_a_failed_post_render_is_in_the_log(helm_home: HelmHome, tmp_path: Path) -> None:
    log = log_of(helm_home)
    before = log.read_text() if log.exists() else ""

    result = run_helm("helm4", helm_home, *failing_args(tmp_path))

    assert result.returncode != 0
    assert 'plugin "btp-gitops"' in result.stderr or MESSAGE in result.stderr
    added = log.read_text().removeprefix(before)
    assert added.startswith("=== ") and " post-render exit 3\n" in added.splitlines(keepends=True)[0]
    assert "error: cannot read source documents (1 problem)" in added
    assert f"{tmp_path / 'missing.yaml'}: {MESSAGE}" in added
    assert (log.stat().st_mode & 0o777) == 0o600


def test_a_successful_post_render_writes_no_log_entry(helm_home: HelmHome) -> None:
    log = log_of(helm_home)
    before = log.read_text() if log.exists() else None

    result = run_helm("helm4", helm_home, *_template_args("btp-gitops"))

    assert result.returncode == 0, result.stderr
    assert "kind: Deployment" in result.stdout
    assert (log.read_text() if log.exists() else None) == before


def test_the_log_stays_bounded_and_keeps_whole_newest_entries(helm_home: HelmHome, tmp_path: Path) -> None:
    log = log_of(helm_home)
    log.parent.mkdir(parents=True, exist_ok=True)
    old_entry = "=== 2025-01-01T00:00:00Z post-render exit 3\n" + "old message line\n" * 40
    log.write_text(old_entry * 600)  # far past the 256 KiB bound
    assert log.stat().st_size > 262144

    result = run_helm("helm4", helm_home, *failing_args(tmp_path))

    assert result.returncode != 0
    text = log.read_text()
    assert log.stat().st_size <= 131072
    assert text.startswith("=== ")  # the cut is at an entry, not inside one
    assert text.rstrip().endswith(f"{tmp_path / 'missing.yaml'}: {MESSAGE}")


def run_in_terminal(
    argv: list[str], env: dict[str, str], output: Path, timeout: float = 120
) -> tuple[int, str]:
    """Run `argv` with a new pseudo-terminal as its controlling terminal, its stdout and stderr
    going to `output` (not to the terminal); returns the exit status and what reached the
    terminal."""
    pid, master = pty.fork()
    if pid == 0:  # the child: its session's controlling terminal is the pty
        try:
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    seen = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every holder of the terminal has closed it
                    break
                if not chunk:
                    break
                seen += chunk
            elif os.waitpid(pid, os.WNOHANG) != (0, 0):
                pid = 0
                break
        else:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"{argv[0]} did not finish within {timeout}s")
    finally:
        os.close(master)
    status = os.waitpid(pid, 0)[1] if pid else 0
    return status, seen.decode(errors="replace").replace("\r\n", "\n")


def test_the_message_reaches_the_terminal_helm_runs_in(helm_home: HelmHome, tmp_path: Path) -> None:
    argv = [str(tool_path("helm4")), *failing_args(tmp_path)]

    _, terminal = run_in_terminal(argv, helm_home.env(), tmp_path / "helm-output.txt")

    helm_output = (tmp_path / "helm-output.txt").read_text()
    assert "Error" in helm_output or "error" in helm_output  # helm failed, on its own stderr
    assert "error: cannot read source documents (1 problem)" in terminal
    assert f"{tmp_path / 'missing.yaml'}: {MESSAGE}" in terminal
    assert "btp-gitops post-render failed (exit 3)" in terminal
    assert str(log_of(helm_home)) in terminal


def test_a_ci_log_without_a_terminal_shows_the_reason_above_helms_error(
    helm_home: HelmHome, tmp_path: Path
) -> None:
    """As a CI runner starts helm: no controlling terminal (a new session), stdin empty, stdout and
    stderr pipes. Helm 4 drops the plugin's stderr; the reason must still be in helm's stderr."""
    result = subprocess.run(
        [str(tool_path("helm4")), *failing_args(tmp_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=helm_home.env(),
        start_new_session=True,
        check=False,
        timeout=300,
    )

    assert result.returncode != 0
    reason = f"{tmp_path / 'missing.yaml'}: {MESSAGE}"
    assert "cannot read source documents (1 problem)" in result.stderr
    assert reason in result.stderr
    assert "btp-gitops post-render failed (exit 3)" in result.stderr
    # before Helm's own one-line error, as a reader of the log scans it
    assert result.stderr.index(reason) < result.stderr.index('plugin "btp-gitops" exited with error')
    assert result.stderr.count(reason) == 1
