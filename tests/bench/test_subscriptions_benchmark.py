"""bench/subscriptions.py still runs end to end (40 requests, both scenarios: 40 simultaneous
clients and 8, one run each): a smoke test, not a timing test."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.kube


def test_subscriptions_benchmark_runs() -> None:
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "bench.subscriptions", "--requests", "40", "--clients", "40", "8", "--runs", "1"),
            *("--baseline", "10"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "non-202 answers" in done.stdout
    assert done.stdout.count("40 new files for 40 tenants: 0 lost, 0 duplicated, 0 unexpected") == 2
    assert done.stdout.count("  ratio: server throughput ") == 2
    assert "goal (issue #18: 40 simultaneous clients, all 40 recorded" in done.stdout
    assert "goal (issue #18: all 40 recorded" in done.stdout
    assert "summary: 40 subscriptions from 40 clients, median of 1 runs" in done.stdout
    assert "summary: 40 subscriptions from 8 clients, median of 1 runs" in done.stdout
