"""bench/subscription_contention.py still runs end to end at tiny sizes: a smoke test, not a timing
test. What it asserts holds at any speed: every competitor commit kept, every answer of the
replicas right and the final Git state exact (requests the run's budget left unsent aside)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.contention_results import print_text
from tests.conftest import ROOT

pytestmark = [pytest.mark.kube, pytest.mark.slow]


def test_subscription_contention_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--requests", "12", "--clients", "3", "--pairs", "6", "--repeat", "1", "--budget", "60"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.subscription_contention", *args, "--output", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    competitor, replicas = report["competitor"], report["replicas"]
    assert competitor["contended"]["competitor_commits"] > 0
    assert competitor["contended"]["competitor_all_kept"] is True
    for side in ("contended", "baseline"):
        assert competitor[side]["requests"] == 12
        assert replicas[side]["requests"] == 12  # 6 pairs
        assert replicas[side]["failed"] == 0, replicas[side]["wrong_examples"]
        assert replicas[side]["tree_exact"] is True, replicas[side]["wrong_record_examples"]
        assert competitor[side]["tree_exact"] is True, competitor[side]["wrong_record_examples"]
    assert competitor["baseline"]["failed"] == competitor["baseline"]["not_sent"] == 0
    assert replicas["contended"]["outcomes_recorded"] == 6 - replicas["contended"]["not_sent"] // 2
    assert replicas["contended"]["outcome_failures"] == []

    print_text(report)  # the text form of the same report: both scenarios, side by side
    out = capsys.readouterr().out
    assert "with the competitor" in out and "baseline: no competitor" in out
    assert "2 replicas + outcome writer" in out and "baseline: 1 replica, no writer" in out
    assert "loadavg before" in out
    assert "latency to the final answer, ms: p50/p90/p99/max" in out
