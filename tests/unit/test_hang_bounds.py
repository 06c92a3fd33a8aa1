"""A test that hangs ends the run neither silently nor late: pyproject.toml's per-test bound
(pytest-timeout, its `timeout_method`) fails it with the stacks of its threads while the other
tests go on, also under pytest-xdist; and scripts/bounded.sh, which bounds each pytest run of
scripts/test.sh as a whole, interrupts a run that still hangs so that pytest prints its summary.

The hang here is the shape that once held CI until its deadline: a thread of a pool waits for a
signal that a failed step never sends, and the pool's shutdown waits for that thread."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

from tests.conftest import ROOT

SETTINGS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
    "ini_options"
]

HANGS = """
import concurrent.futures
import threading


def test_a_pool_waits_for_a_signal_never_sent():
    answered = threading.Semaphore(0)

    def waiter():
        answered.acquire()  # the step that would release it failed

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        pool.submit(waiter)


def test_after_it_in_the_same_module():
    pass
"""

FAILS = """
def test_that_fails_before_the_hang():
    assert 1 + 1 == 3


def test_that_passes():
    pass
"""


def sample(tmp_path: Path, timeout: int) -> Path:
    folder = tmp_path / "sample"
    folder.mkdir()
    (folder / "test_a_fails.py").write_text(textwrap.dedent(FAILS))
    (folder / "test_b_hangs.py").write_text(textwrap.dedent(HANGS))
    (folder / "pytest.ini").write_text(
        f"[pytest]\ntimeout = {timeout}\ntimeout_method = {SETTINGS['timeout_method']}\n"
    )
    return folder


def run(folder: Path, *command: str, limit: float) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        command,
        cwd=folder,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        capture_output=True,
        text=True,
        check=False,
        timeout=limit,
    )
    return result, time.monotonic() - started


def test_the_project_bounds_every_test() -> None:
    assert isinstance(SETTINGS["timeout"], int) and 60 <= SETTINGS["timeout"] <= 900
    # signal: the test fails in place and its worker goes on (thread would end the worker)
    assert SETTINGS["timeout_method"] == "signal"


def test_a_hung_test_fails_with_its_stacks_and_the_others_still_run(tmp_path: Path) -> None:
    folder = sample(tmp_path, timeout=3)

    result, took = run(
        folder, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-ra", limit=120
    )

    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert took < 60, output
    failed = set(re.findall(r"^FAILED (\S+)", result.stdout, re.MULTILINE))
    assert failed == {
        "test_a_fails.py::test_that_fails_before_the_hang",
        "test_b_hangs.py::test_a_pool_waits_for_a_signal_never_sent",
    }, output
    assert "2 failed, 2 passed" in result.stdout, output  # the hung test's module went on
    assert "answered.acquire()" in result.stdout, output  # the waiting thread's stack


def test_bounded_interrupts_a_run_that_still_hangs_and_pytest_prints_its_summary(tmp_path: Path) -> None:
    folder = sample(tmp_path, timeout=3)

    result, took = run(
        folder,
        "bash",
        str(ROOT / "scripts" / "bounded.sh"),
        "8",
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:timeout",  # as if the per-test bound could not interrupt the hang
        "-n",
        "2",
        "-ra",
        limit=200,
    )

    assert result.returncode == 124, result.stdout + result.stderr
    assert 8 <= took < 140, took
    assert "FAILED test_a_fails.py::test_that_fails_before_the_hang" in result.stdout, result.stdout
    assert "KeyboardInterrupt" in result.stdout
    assert "stopped after 8 s" in result.stderr


def test_bounded_passes_on_what_its_command_returns(tmp_path: Path) -> None:
    script = str(ROOT / "scripts" / "bounded.sh")
    assert run(tmp_path, "bash", script, "30", "true", limit=60)[0].returncode == 0
    assert run(tmp_path, "bash", script, "30", "sh", "-c", "exit 7", limit=60)[0].returncode == 7
    refused = run(tmp_path, "bash", script, "0", "true", limit=60)[0]
    assert refused.returncode == 2 and "usage" in refused.stderr
