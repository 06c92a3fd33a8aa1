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


def test_cap_tenants_benchmark_runs() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.cap_tenants",
            "--tenants",
            "40",
            "--incremental-tenants",
            "30",
            "--repeat",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # the upgrade wave (goal a's scenario), steady, and one tenant added (goal b)
    assert done.stdout.count("ratio:") == 3
    assert "incremental: one tenant added to 30 (steady)" in done.stdout
    assert done.stdout.count("load average") >= 4
    assert "upgrade-wave: 40 tenants" in done.stdout
    assert "      40 tenants:" in done.stdout  # the linearity table reached the full size
