"""The benchmarks in bench/ still run (on a tiny input): a smoke test, not a timing test."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_post_render_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.post_render", "--sizes", "40", "--repeat", "1", "--sides", "ours,bare"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.strip().startswith("40 ")]
    assert [row[2] for row in rows] == ["ours", "bare"], done.stdout
    assert all(float(row[3]) > 0 and float(row[5]) > 0 for row in rows), done.stdout


def test_cap_tenants_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cap_tenants", "--tenants", "40", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("ratio:") == 2  # the upgrade wave (the goal's scenario) and steady
    assert "upgrade-wave: 40 tenants" in done.stdout
    assert "      40 tenants:" in done.stdout  # the linearity table reached the full size
