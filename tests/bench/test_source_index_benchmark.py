"""bench.source_index still runs (on a tiny tree): a smoke test, not a timing test."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_source_index_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.source_index", "--tenants", "20", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "      20 tenants: index" in done.stdout
    assert "ratio:" in done.stdout
