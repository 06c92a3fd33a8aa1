"""scripts/mutate.py, run as a developer runs it, on a tiny module and its tests in a scratch
checkout: a mutant the tests catch is killed, one they miss survives and is shown with its diff,
a loop that never ends is stopped by the timeout, a reviewed equivalent leaves the score, and
the module's bytes are the same afterwards."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "mutate.py"

MODULE = '''\
"""A module with one well-tested function and one whose boundary no test checks."""


def add(a: int, b: int) -> int:
    return a + b


def is_small(x: int) -> bool:
    return x < 10


def count_up(limit: int) -> int:
    steps = 0
    while steps < limit:
        steps = steps + 1
    return steps
'''

TESTS = """\
from calc import add, count_up, is_small


def test_add() -> None:
    assert add(2, 3) == 5


def test_is_small_far_from_the_boundary() -> None:
    assert is_small(1)
    assert not is_small(50)


def test_count_up() -> None:
    assert count_up(3) == 3
"""


def _checkout(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (tmp_path / "calc.py").write_text(MODULE)
    (tmp_path / "test_calc.py").write_text(TESTS)
    return tmp_path


def _mutate(root: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "calc.py",
            "--root",
            str(root),
            "--timeout",
            "8",
            *options,
            "--",
            "test_calc.py",
        ],
        capture_output=True,
        text=True,
        # The fixture needs no plugin: without loading them each of its pytest runs starts faster.
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        check=False,
        timeout=300,
    )


def _status(output: str, line: int, operator: str) -> list[str]:
    """The statuses of the mutants of one line and operator."""
    return re.findall(rf"^\[\d+/\d+\] (\w+) +\S+ line {line} {operator} ", output, re.MULTILINE)


def test_kills_survives_times_out_and_restores(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    result = _mutate(root, "--equivalents", str(tmp_path / "none.toml"), "--min-score", "100")

    assert result.returncode == 1, result.stderr  # a survivor: below --min-score
    assert _status(result.stdout, 5, "arithmetic") == ["killed"]  # a + b -> a - b
    # x < 10 -> x <= 10 survives (no test at 10); x < 10 -> x >= 10 is killed.
    assert sorted(_status(result.stdout, 9, "compare")) == ["killed", "survived"]
    assert _status(result.stdout, 9, "constant") == ["survived", "killed"]  # x < 11, x < 0
    assert _status(result.stdout, 15, "arithmetic") == ["timeout"]  # steps - 1 never reaches 3
    assert "SURVIVED is_small:" in result.stdout
    assert "-    return x < 10\n+    return (x <= 10)\n" in result.stdout
    assert "killed 11 / non-equivalent 14 = 78.6% (2 by timeout; 0 equivalent; 3 survived)" in result.stdout
    assert (root / "calc.py").read_text() == MODULE


def test_a_reviewed_equivalent_leaves_the_score(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    listing = _mutate(root, "--list", "--equivalents", str(tmp_path / "none.toml")).stdout
    survivor = re.search(
        r"^(is_small:\w+) line 9 compare\n(?:.*\n){4}-    return x < 10\n\+    return \(x <= 10\)",
        listing,
        re.MULTILINE,
    )
    assert survivor is not None, listing
    ident = survivor.group(1)
    equivalents = tmp_path / "equivalents.toml"
    equivalents.write_text(
        f'["calc.py"]\n"{ident}" = "for the test\'s sake"\n"gone:0000" = "no longer generated"\n'
    )

    result = _mutate(root, "--only", ident, "--equivalents", str(equivalents), "--min-score", "100")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "stale equivalent (no such mutant any more): gone:0000" in result.stdout
    assert (
        "calc.py: killed 0 / non-equivalent 0 = 100.0% (0 by timeout; 1 equivalent; 0 survived)"
        in result.stdout
    )
    assert (root / "calc.py").read_text() == MODULE


def test_tests_failing_before_any_mutant_stop_the_run(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    (root / "test_calc.py").write_text(TESTS + "\n\ndef test_broken() -> None:\n    assert add(1, 1) == 3\n")

    result = _mutate(root)

    assert result.returncode == 2
    assert "the tests do not pass on the unmutated module" in result.stderr
    assert (root / "calc.py").read_text() == MODULE
