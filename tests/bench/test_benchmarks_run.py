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


def test_shard_commit_benchmark_runs() -> None:
    """On 200 tenants too, one tenant's commit writes fewer tree bytes sharded than flat."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.shard_commit", "--tenants", "200", "--repeat", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    trees = {
        line.split(":")[0].strip(): int(line.split("tree bytes")[1].split()[0].replace(",", ""))
        for line in done.stdout.splitlines()
        if "tree bytes" in line and "/" not in line
    }
    assert set(trees) == {"sharded", "flat (baseline)"}, done.stdout
    assert trees["sharded"] < trees["flat (baseline)"], done.stdout
    assert "load average" in done.stdout
