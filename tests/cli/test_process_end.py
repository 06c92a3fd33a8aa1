"""How the `btp-gitops` process ends (generator.cli.run): without taking its heap apart, yet with
everything the interpreter's shutdown would have done that a user can see: all of stdout written,
the atexit functions run, a thread that is not a daemon waited for, a reader that went away
ending the command as the broken-pipe exit code says.

A command contributed through the `btp_gitops.commands` entry-point group (as the controller
joins the CLI) does each of those in the real console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from btp_gitops.generator.cli import main
from btp_gitops.generator.cli import output as cli_output
from btp_gitops.generator.cli.output import keep_until_exit
from btp_gitops.generator.core.exit_codes import ExitCode
from tests.support.contributed import contributed_command_env

CLI = Path(sys.executable).parent / "btp-gitops"

PROBE = """
import atexit
import sys
import threading
import time
from pathlib import Path

WRITTEN = 3_000_001  # more than any buffer between the process and its reader


def register(commands):
    parser = commands.add_parser("end-probe")
    parser.add_argument("what")
    parser.add_argument("marker")
    parser.set_defaults(handler=handle)


def handle(args):
    marker = Path(args.marker)
    if args.what == "atexit":
        atexit.register(marker.write_text, "the atexit function ran\\n")
        sys.stdout.write("y" * WRITTEN)  # left in the buffer: the end of the process writes it
        return 5
    if args.what == "thread":
        def later():
            time.sleep(0.5)
            marker.write_text("the thread ended\\n")

        threading.Thread(target=later).start()
        return 0
    if args.what == "reader-gone":
        sys.stdout.write("a line for a reader that is gone\\n")  # a few bytes: flushed at the end
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return 0
    raise SystemExit(f"unknown probe {args.what}")
"""


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    # stdout buffered, as a shell's user has it (not PYTHONUNBUFFERED): the end of the process writes
    # what the command left in the buffer.
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    return contributed_command_env(tmp_path, "end_probe", "end-probe", PROBE, environment)


def test_all_of_stdout_is_written_and_the_atexit_functions_run(
    probe_env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "atexit-ran"
    done = subprocess.run(
        [str(CLI), "end-probe", "atexit", str(marker)],
        capture_output=True,
        env=probe_env,
        check=False,
        timeout=60,
    )
    assert done.returncode == 5, done.stderr  # the command's own code, not shutdown's
    assert done.stdout == b"y" * 3_000_001
    assert marker.read_text() == "the atexit function ran\n"
    assert done.stderr == b""


def test_a_thread_that_is_not_a_daemon_is_waited_for(probe_env: dict[str, str], tmp_path: Path) -> None:
    marker = tmp_path / "thread-ended"
    done = subprocess.run(
        [str(CLI), "end-probe", "thread", str(marker)],
        capture_output=True,
        env=probe_env,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "the thread ended\n"


def test_a_reader_gone_before_the_last_flush_ends_it_as_a_broken_pipe(
    probe_env: dict[str, str], tmp_path: Path
) -> None:
    """The output still buffered when the command returns meets a closed pipe: the exit code of a
    broken pipe, and no complaint of the interpreter on stderr."""
    marker = tmp_path / "reader-gone"
    process = subprocess.Popen(
        [str(CLI), "end-probe", "reader-gone", str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=probe_env,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader goes away before the command returns
    marker.write_text("gone\n")
    try:
        code = process.wait(timeout=60)
        stderr = process.stderr.read()
    finally:
        process.stderr.close()
        if process.poll() is None:
            process.kill()
    assert code == ExitCode.BROKEN_PIPE
    assert stderr == b""


def test_what_a_command_kept_is_let_go_when_main_runs_the_next_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kept = object()
    keep_until_exit(kept)
    assert any(item is kept for item in cli_output._KEPT)
    assert main(["completion", "bash"]) == ExitCode.OK
    assert not any(item is kept for item in cli_output._KEPT)
    assert "btp-gitops" in capsys.readouterr().out
