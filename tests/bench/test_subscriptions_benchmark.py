"""bench/subscriptions.py still runs end to end (on 40 requests): a smoke test, not a timing test."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.kube


def test_subscriptions_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.subscriptions", "--requests", "40", "--clients", "8"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "non-202 answers" in done.stdout
    assert "40 new files for 40 tenants: 0 lost, 0 duplicated, 0 unexpected" in done.stdout
    assert "  ratio: server throughput " in done.stdout
    assert "goal (issue #8: all 40 recorded" in done.stdout
