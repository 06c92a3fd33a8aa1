"""The benchmarks in bench/ still run (on a tiny input): a smoke test, not a timing test."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_post_render_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.post_render", "--documents", "40", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "ratio:" in done.stdout
    assert done.stdout.count("\n") >= 9
