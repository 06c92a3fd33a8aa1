"""The benchmarks in bench/ still run (on a tiny input): a smoke test, not a timing test."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
    assert "31 tenants, cache warmed by that render:" in done.stdout
    # the CLI on a fresh clone of the committed repository: the full render, the warm render and
    # the warm diff against HEAD, then each warm one's share of the full render's CPU
    assert "on a fresh clone of the committed repository of 30 tenants" in done.stdout
    assert "more tenant in the sources (checked out anew)" in done.stdout
    assert "render --no-cache (the full render), this revision:" in done.stdout
    # the same render with an empty cache, which it fills: its ratio to the full render's CPU
    assert "render --cache-dir, empty: the render fills it, this revision:" in done.stdout
    assert "this revision, the cold render filling an empty cache: " in done.stdout
    assert "x the full render's" in done.stdout
    assert "render --cache-dir, warmed by the render before, this revision:" in done.stdout
    assert "diff --against HEAD --cache-dir, warmed likewise, this revision:" in done.stdout
    assert "this revision, render: " in done.stdout
    assert "this revision, diff --against HEAD: " in done.stdout
    # Argo CD's plugin, the sources unpacked into a new directory for the request
    assert "Argo CD plugin, render . --stdout, warmed by a request, this revision:" in done.stdout
    assert "this revision, Argo CD plugin, render . --stdout, warmed by a request: " in done.stdout
    assert done.stdout.count("of the full render's") == 3
    assert done.stdout.count("load average") >= 4
    assert "upgrade-wave: 40 tenants" in done.stdout
    assert "      40 tenants:" in done.stdout  # the linearity table reached the full size


def _shard_commit(*more: str) -> dict[str, tuple[int, int]]:
    """bench.shard_commit on 200 tenants: layout -> (tree bytes, blob bytes) of one tenant's commit."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.shard_commit", "--tenants", "200", "--repeat", "3", *more],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "load average" in done.stdout

    def figure(line: str, name: str) -> int:
        return int(line.split(name)[1].split(maxsplit=1)[0].replace(",", ""))

    sizes = {
        line.split(":")[0].strip(): (figure(line, "tree bytes"), figure(line, "blob bytes"))
        for line in done.stdout.splitlines()
        if "tree bytes" in line and "/" not in line
    }
    assert set(sizes) == {"sharded", "flat (baseline)"}, done.stdout
    return sizes


def test_shard_commit_benchmark_runs() -> None:
    """On 200 tenants too, one tenant's commit writes fewer tree bytes sharded than flat, and
    fewer blob bytes: the sharded commit rewrites its shard's ownership manifest, the flat one the
    manifest listing every file. Writing only the changed files (--write changed) commits the
    very same objects as the real writer."""
    full = _shard_commit()
    assert full["sharded"][0] < full["flat (baseline)"][0], full
    assert full["sharded"][1] < full["flat (baseline)"][1], full
    assert _shard_commit("--write", "changed") == full


@pytest.mark.tools
@pytest.mark.slow
def test_startup_benchmark_runs() -> None:
    """bench.startup with one round and helm3, without BTP Manager's helm+yq script: yq is a
    benchmark's peer that the suite does not build (scripts/build-tools.sh builds it when the
    benchmark runs in full)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.startup", "--repeat", "1", "--no-script"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "module-resources: the script was left out (--no-script)" in done.stdout
    assert "btp-gitops module-resources" in done.stdout and "helm+yq script" not in done.stdout
    assert done.stdout.count("(goal ") == 2
    assert "load average before:" in done.stdout


def test_cutover_plan_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cutover_plan", "--tenants", "4", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("tenants 4: ") and " recreated, " in first, done.stdout
    assert second.startswith("render ") and "plan " in second, done.stdout


@pytest.mark.kube
@pytest.mark.crds
def test_migration_benchmark_runs() -> None:
    """bench.migration on 3 tenants, one run: its own kube-apiserver with CAP Operator's objects,
    the four CLI steps, and its checks (one imported file per tenant, a plan that adopts)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.migration", "--tenants", "3", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 tenants: 3 tenant files imported from the cluster and from the dumps" in done.stdout
    assert done.stdout.count("load average") == 1 and "; after: " in done.stdout
    plan = next(line for line in done.stdout.splitlines() if line.startswith("plan: "))
    assert " adopted, " in plan and not plan.startswith("plan: 0 adopted"), plan
    rows = {
        line.split("  ")[1].strip(): line
        for line in done.stdout.splitlines()
        if line.startswith("  ") and line.rstrip().endswith("x")
    }
    assert set(rows) == {
        "import (cluster)",
        "import --from-dir",
        "render (baseline)",
        "diff --against-cluster",
    }
    assert rows["render (baseline)"].split()[-2:] == ["1.00x", "1.00x"], done.stdout
