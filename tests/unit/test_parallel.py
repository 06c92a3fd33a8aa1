"""tests/support/parallel.py under pytest-xdist: a module runs on one worker, so its module-scoped
fixture is set up once; the modules of a shared directory run on one worker together; modules with
a `slow` test start first; `--serial-tests` leaves the `serial` tests out of the parallel run and
runs only them after it. Run in a pytest of its own, with two workers, on test files written for it
(a copy of tests/support/parallel.py's SHARED_DIRECTORIES: tests/image/)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT
from tests.support.parallel import SHARED_DIRECTORIES, FilesAndSharedDirectories

# A module-scoped fixture records each set-up in a file named by the environment.
SHARED = """
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def shared():
    with Path(os.environ["PARALLEL_SAMPLE_SETUPS"]).open("a") as setups:
        setups.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
    return "set up"


@pytest.mark.parametrize("n", range(12))
def test_uses_the_module_fixture(shared, n):
    assert shared == "set up"
"""

FREE = """
import pytest


@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass
"""

SLOW = """
import pytest


@pytest.mark.slow
def test_slow():
    pass
"""

SERIAL = """
import pytest


@pytest.mark.serial
def test_timed():
    pass
"""

INI = """
[pytest]
addopts = --dist loadfile
markers =
    serial: runs alone
    slow: takes long
"""


def run_sample(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    sample = tmp_path / "sample"
    files = {
        "test_shared.py": SHARED,
        "test_free_a.py": FREE,
        "test_free_b.py": FREE,
        "test_free_c.py": FREE,
        "test_timed.py": SERIAL,
        "tests/image/test_one.py": FREE,
        "tests/image/test_two.py": FREE,
        "test_zz_slow.py": SLOW,
        "pytest.ini": INI,
    }
    for name, text in files.items():
        (sample / name).parent.mkdir(parents=True, exist_ok=True)
        (sample / name).write_text(textwrap.dedent(text))
    setups = tmp_path / "setups.txt"
    setups.unlink(missing_ok=True)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.support.parallel",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            "-v",
            *args,
        ],
        cwd=sample,
        env={
            # Not the variables of the xdist worker this test may itself run in.
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")},
            "PYTHONPATH": str(ROOT),
            "PARALLEL_SAMPLE_SETUPS": str(setups),
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return result, setups.read_text().split() if setups.exists() else []


def ran(output: str) -> list[tuple[str, str]]:
    """(worker, test file) of each passed test, in the order the controller reported them."""
    return re.findall(r"\[(gw\d+)\][^\n]* PASSED (\S+?\.py)::", output)


def test_modules_and_shared_directories_each_run_on_one_worker(tmp_path: Path) -> None:
    result, setups = run_sample(tmp_path, "-n", "2", "--serial-tests=skip")

    assert result.returncode == 0, result.stdout + result.stderr
    passed = ran(result.stdout)
    assert len(passed) == 12 + 3 * 6 + 2 * 6 + 1, result.stdout
    workers: dict[str, set[str]] = {}
    for worker, module in passed:
        unit = "tests/image/" if module.startswith("tests/image/") else module
        workers.setdefault(unit, set()).add(worker)
    assert all(len(on) == 1 for on in workers.values()), workers
    assert {worker for worker, _ in passed} == {"gw0", "gw1"}  # shared out all the same
    assert setups in (["gw0"], ["gw1"])  # the module fixture: once
    assert "test_timed" not in result.stdout


def test_a_module_with_a_slow_test_starts_first(tmp_path: Path) -> None:
    result, _ = run_sample(tmp_path, "-n", "2", "--serial-tests=skip")

    assert result.returncode == 0, result.stdout + result.stderr
    passed = ran(result.stdout)
    (worker,) = {worker for worker, module in passed if module == "test_zz_slow.py"}
    first_of_that_worker = next(module for on, module in passed if on == worker)
    assert first_of_that_worker == "test_zz_slow.py", result.stdout  # collected last, given out first


def test_serial_tests_run_only_after_the_parallel_run(tmp_path: Path) -> None:
    result, setups = run_sample(tmp_path, "--serial-tests=only")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 43 deselected" in result.stdout, result.stdout
    assert "test_timed.py::test_timed PASSED" in result.stdout
    assert setups == []


def test_without_the_option_every_test_runs_in_file_order(tmp_path: Path) -> None:
    result, setups = run_sample(tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "44 passed" in result.stdout and "deselected" not in result.stdout, result.stdout
    assert setups == ["main"]
    order = re.findall(r"^(\S+?\.py)::\S+ PASSED", result.stdout, re.MULTILINE)
    assert order.index("test_free_a.py") < order.index("test_zz_slow.py")


def test_a_shared_directory_is_one_unit_of_work_and_any_other_module_is_its_own() -> None:
    scheduler = object.__new__(FilesAndSharedDirectories)  # _split_scope reads no state

    units = {
        nodeid: scheduler._split_scope(nodeid)
        for nodeid in (
            "tests/image/test_image.py::test_runs",
            "tests/image/test_reproducible.py::test_build[a::b]",
            "tests/kube/test_flux_sync.py::test_sync",
            "tests/unit/test_names.py::TestNames::test_one",
        )
    }

    assert units == {
        "tests/image/test_image.py::test_runs": "tests/image/",
        "tests/image/test_reproducible.py::test_build[a::b]": "tests/image/",
        "tests/kube/test_flux_sync.py::test_sync": "tests/kube/test_flux_sync.py",
        "tests/unit/test_names.py::TestNames::test_one": "tests/unit/test_names.py",
    }
    assert "tests/image/" in SHARED_DIRECTORIES
