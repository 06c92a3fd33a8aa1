"""The subscription benchmark's report (bench/subscriptions.py): the figures of one run beside the
baseline's, as text or JSON, the medians per scenario, and where the server's time went."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GOAL_SECONDS = 12.0  # simultaneous clients: every 202 and the last push
GOAL_P99_SECONDS = 1.0  # fewer clients than requests: p99 to the 202


@dataclass(slots=True)
class BaselineResult:
    tenants: int
    seconds: float
    per_record: float
    first_quarter: float  # mean seconds per record over the first quarter of the sample
    last_quarter: float
    commits: int
    complete: bool
    cpu_seconds: float = 0.0  # this process and its Git commands, over the sample


@dataclass(slots=True)
class Report:
    requests: int
    clients: int
    batch_window: float
    max_batch: int
    requests_per_second: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    answers: dict[str, int]
    non_202: int
    commits: int
    all_pushed_seconds: float | None  # None: the remote never held every record
    last_answer_seconds: float
    new_files: int
    lost: int
    duplicated: int
    unexpected: int
    context_secrets: int
    pending_callbacks: int
    cpu_seconds: dict[str, float]
    baseline: BaselineResult
    baseline_extrapolated_seconds: float
    throughput_ratio: float
    time_ratio: float | None
    goal_met: bool
    goal_misses: list[str] = field(default_factory=list)
    profile: dict[str, Any] | None = None
    connection_errors: int = 0  # requests without an HTTP answer (reset, refused, timed out)
    load_before: str = ""  # /proc/loadavg's first three fields
    load_after: str = ""


def print_text(report: Report) -> None:
    r, b = report, report.baseline
    n = r.requests
    pushed = (
        f"{r.all_pushed_seconds:.1f} s" if r.all_pushed_seconds is not None else "never (records missing)"
    )
    answers = ", ".join(f"{status}: {count}" for status, count in r.answers.items())
    cpu = r.cpu_seconds
    cpu_line = ", ".join(
        f"{name} {cpu[name]:.1f}" for name in ("server", "kube-apiserver", "etcd", "clients") if name in cpu
    )
    rows = [
        ("requests/s (all requests / time to the last answer)", f"{r.requests_per_second:.1f}"),
        (
            "latency to the 202, ms: p50 / p90 / p99 / max",
            f"{r.p50_ms:.0f} / {r.p90_ms:.0f} / {r.p99_ms:.0f} / {r.max_ms:.0f}",
        ),
        ("answers", answers),
        ("non-202 answers", str(r.non_202)),
        (
            "commits on the remote for the run",
            f"{r.commits} ({n / max(r.commits, 1):.1f} records per commit)",
        ),
        ("time from the first request until all pushed", pushed),
        (
            "records on the remote (final tree)",
            f"{r.new_files} new files for {n} tenants: {r.lost} lost, {r.duplicated} duplicated, "
            f"{r.unexpected} unexpected",
        ),
        (
            "cluster objects written",
            f"{r.context_secrets} subscription-context Secrets, {r.pending_callbacks} pending callbacks",
        ),
        (f"CPU seconds during the run ({cpu['wall']:.1f} s wall, 2 cores)", cpu_line),
        ("connection errors (reset, refused, timed out)", str(r.connection_errors)),
        ("load average before / after the run", f"{r.load_before} / {r.load_after}"),
    ]
    print(
        f"subscriptions: {n} SaaS registry subscribe requests (PUT /provision/tenants/{{id}}) "
        f"from {r.clients} concurrent keep-alive clients, loopback HTTP"
    )
    print(
        f"server: own process, real kube-apiserver + etcd, bare Git remote on disk; "
        f"batch_window {r.batch_window:g} s, max_batch {r.max_batch}"
    )
    _table(rows)
    print(
        f"baseline: plain git, one commit + push per record, sequential, fresh clone; "
        f"measured on {b.tenants} tenants, extrapolated linearly to {n}"
    )
    _table(
        [
            (
                "per record (whole sample / first quarter / last quarter)",
                f"{b.per_record * 1000:.0f} / {b.first_quarter * 1000:.0f} / {b.last_quarter * 1000:.0f} ms",
            ),
            ("records/s", f"{b.tenants / b.seconds:.1f}"),
            ("CPU seconds per record (git + this process)", f"{b.cpu_seconds / b.tenants * 1000:.0f} ms"),
            (f"time for {n} (extrapolated)", f"{report.baseline_extrapolated_seconds:.1f} s"),
            ("sample recorded completely", f"{'yes' if b.complete else 'NO'} ({b.commits} commits)"),
        ]
    )
    time_part = (
        f"time for {n}: {r.all_pushed_seconds:.1f} s vs {report.baseline_extrapolated_seconds:.1f} s "
        f"extrapolated ({r.time_ratio:.1f}x less)"
        if r.all_pushed_seconds is not None and r.time_ratio is not None
        else f"time for {n}: n/a (not all recorded)"
    )
    print(f"  ratio: server throughput {r.throughput_ratio:.1f}x the baseline's; {time_part}")
    goal = "meets" if r.goal_met else f"MISSES ({', '.join(r.goal_misses)})"
    print(f"goal ({goal_text(r)}): {goal}")
    if r.profile is not None:
        print_profile(r.profile, cpu["wall"])


def goal_text(report: Report) -> str:
    n = report.requests
    if report.clients >= report.requests:
        return (
            f"issue #18: {n} simultaneous clients, all {n} recorded, none lost or duplicated, "
            f"no connection error, every 202 and the last push within {GOAL_SECONDS:.0f} s"
        )
    return (
        f"issue #18: all {n} recorded, none lost or duplicated, "
        f"p99 to the 202 at most {GOAL_P99_SECONDS:.0f} s"
    )


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def print_summary(reports: list[Report]) -> None:
    """Per scenario: the median of its runs (and every run's value), beside the baseline's."""
    for clients in dict.fromkeys(r.clients for r in reports):
        runs = [r for r in reports if r.clients == clients]
        n = runs[0].requests

        def column(values: list[float], unit: str = "", digits: int = 1) -> str:
            each = " / ".join(f"{v:.{digits}f}" for v in values)
            return f"{median(values):.{digits}f}{unit} (runs: {each})"

        pushed = [r.all_pushed_seconds if r.all_pushed_seconds is not None else math.inf for r in runs]
        baseline_wall = [r.baseline_extrapolated_seconds for r in runs]
        baseline_cpu = [r.baseline.cpu_seconds / r.baseline.tenants * n for r in runs]
        server_cpu = [
            sum(v for k, v in r.cpu_seconds.items() if k in ("server", "kube-apiserver", "etcd"))
            for r in runs
        ]
        simultaneous = clients >= n
        print()
        print(f"summary: {n} subscriptions from {clients} clients, median of {len(runs)} runs")
        _table(
            [
                (
                    "time to the last push (server) / baseline, s"
                    + (f" (target <= {GOAL_SECONDS:.0f} s)" if simultaneous else ""),
                    f"{column(pushed)} / {column(baseline_wall)}",
                ),
                (
                    "CPU s, server + kube-apiserver + etcd / baseline (extrapolated)",
                    f"{column(server_cpu)} / {column(baseline_cpu)}",
                ),
                ("requests/s", column([r.requests_per_second for r in runs])),
                (
                    "p50 / p99 to the 202, ms"
                    + ("" if simultaneous else f" (target: p99 <= {GOAL_P99_SECONDS * 1000:.0f} ms)"),
                    f"{column([r.p50_ms for r in runs], digits=0)} / "
                    f"{column([r.p99_ms for r in runs], digits=0)}",
                ),
                ("connection errors", column([float(r.connection_errors) for r in runs], digits=0)),
                ("non-202 answers", column([float(r.non_202) for r in runs], digits=0)),
                ("lost / duplicated", " ; ".join(f"{r.lost} / {r.duplicated}" for r in runs)),
                ("commits per run", " / ".join(str(r.commits) for r in runs)),
                (
                    "load average before -> after each run",
                    " ; ".join(f"{r.load_before} -> {r.load_after}" for r in runs),
                ),
            ]
        )
        met = sum(r.goal_met for r in runs)
        misses = sorted({m for r in runs for m in r.goal_misses})
        print(
            f"  goal ({goal_text(runs[0])}): met in {met} of {len(runs)} runs"
            + (f"; missed: {', '.join(misses)}" if misses else "")
        )


def print_profile(profile: Mapping[str, Any], wall: float) -> None:
    print("profile (server process: wall time inside each part, summed over its threads)")
    timings: dict[str, list[float]] = profile["timings"]
    rows = sorted(timings.items(), key=lambda item: (not item[0].startswith("request"), -item[1][1]))
    print(f"  {'part':<74} {'calls':>7} {'total s':>9} {'mean ms':>9}")
    for label, (count, seconds) in rows:
        print(f"  {label:<74} {int(count):>7} {seconds:>9.1f} {seconds * 1000 / max(count, 1):>9.1f}")
    sizes = profile["batch_sizes"]
    if sizes:
        ordered = sorted(sizes)
        print(
            f"  batches: {len(sizes)}, changes per batch min {ordered[0]} / median "
            f"{ordered[len(ordered) // 2]} / max {ordered[-1]}; run wall {wall:.1f} s"
        )


def _table(rows: list[tuple[str, str]]) -> None:
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
