"""What a contention run left in the remote, checked record by record, and the report of the runs
(bench/subscription_contention.py)."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.subscription_setup import (
    TENANTS_DIR,
    Tenant,
    git,
    percentile,
)


def tenant_documents(remote: Path, ref: str) -> dict[str, list[dict[str, Any]]]:
    """CAPTenant documents under TENANTS_DIR at `ref`, by file."""
    paths = git(remote, "ls-tree", "-r", "--name-only", ref, "--", TENANTS_DIR).split()
    found: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        text = git(remote, "show", f"{ref}:{path}")
        found[path] = [
            d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "CAPTenant"
        ]
    return found


@dataclass(slots=True)
class TreeCheck:
    lost: int = 0  # expected tenants without a record
    duplicated: int = 0  # tenants with more than one record
    unexpected: int = 0  # records of tenants nobody subscribed (the seeded ones excepted)
    wrong: int = 0  # records whose content is not what the run's answers say
    seeded_changed: int = 0  # seeded records that differ from the seed
    recorded_without_202: int = 0  # tenants whose request failed but whose record is there
    details: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not (self.lost or self.duplicated or self.unexpected or self.wrong or self.seeded_changed)


def check_tree(
    remote: Path,
    seed: str,
    tenants: list[Tenant],
    acknowledged: set[str],
    expect: Callable[[Tenant, dict[str, Any]], str | None],
) -> TreeCheck:
    """The final tree against the tenants whose subscribe got a 202 (`acknowledged` tenant ids):
    each recorded exactly once, as `expect` wants it (it names what is wrong). A tenant without a
    202 may be recorded or not (an OutcomeUnknown 503 may land later): counted, not an error."""
    check = TreeCheck()
    seeded = tenant_documents(remote, seed)
    final = tenant_documents(remote, "refs/heads/main")
    by_id: dict[str, list[dict[str, Any]]] = {}
    for path, documents in final.items():
        if path in seeded:
            if documents != seeded[path]:
                check.seeded_changed += 1
            continue
        for document in documents:
            by_id.setdefault(str((document.get("spec") or {}).get("tenantId")), []).append(document)
    wanted = {t.tenant_id for t in tenants}
    check.unexpected = sum(len(docs) for tid, docs in by_id.items() if tid not in wanted)
    for tenant in tenants:
        records = by_id.get(tenant.tenant_id, [])
        if tenant.tenant_id not in acknowledged:
            check.recorded_without_202 += bool(records)
            continue
        if not records:
            check.lost += 1
        elif len(records) > 1:
            check.duplicated += 1
        else:
            problem = expect(tenant, records[0])
            if problem:
                check.wrong += 1
                if len(check.details) < 5:
                    check.details.append(f"{tenant.record_name}: {problem}")
    return check


def competitor_lines(remote: Path) -> list[str]:
    try:
        return git(remote, "show", "refs/heads/main:competitor.txt").splitlines()
    except RuntimeError:
        return []


@dataclass(slots=True)
class Run:
    """One run of a configuration."""

    requests: int  # sent
    not_sent: int  # requests of jobs no client started within the run's budget
    failed: int  # final answer not the right 202
    wrong_examples: list[str]
    retried: int  # requests that needed more than one attempt
    latencies: list[float]
    wall: float  # first request to last answer
    cpu_servers: float  # server processes with their Git children
    cpu_here: float  # this process (clients, the competitor) with its Git children
    commits: int
    tree: TreeCheck
    competitor_commits: int = 0
    competitor_kept: bool = True
    competitor_rate: float = 0.0
    competitor_rejections: int = 0
    outcomes_recorded: int = 0
    outcome_failures: list[str] = field(default_factory=list)
    cpu_writer: float = 0.0


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def summary_of(runs: list[Run]) -> dict[str, Any]:
    """Medians over the runs for times and CPU; sums for everything that must be 0."""
    return {
        "runs": len(runs),
        "requests": runs[0].requests + runs[0].not_sent,
        "not_sent": sum(r.not_sent for r in runs),
        "recorded_without_202": sum(r.tree.recorded_without_202 for r in runs),
        "failed": sum(r.failed for r in runs),
        "wrong_examples": [w for r in runs for w in r.wrong_examples][:5],
        "retried": sum(r.retried for r in runs),
        "p50_ms": _median([percentile(r.latencies, 0.50) * 1000 for r in runs]),
        "p90_ms": _median([percentile(r.latencies, 0.90) * 1000 for r in runs]),
        "p99_ms": _median([percentile(r.latencies, 0.99) * 1000 for r in runs]),
        "max_ms": _median([r.latencies[-1] * 1000 for r in runs]),
        "wall_s": _median([r.wall for r in runs]),
        "walls_s": [round(r.wall, 2) for r in runs],
        "requests_per_s": _median([r.requests / r.wall for r in runs]),
        "cpu_servers_s": _median([r.cpu_servers for r in runs]),
        "cpu_here_s": _median([r.cpu_here for r in runs]),
        "cpu_writer_s": _median([r.cpu_writer for r in runs]),
        "commits": _median([r.commits for r in runs]),
        "lost": sum(r.tree.lost for r in runs),
        "duplicated": sum(r.tree.duplicated for r in runs),
        "unexpected": sum(r.tree.unexpected for r in runs),
        "wrong_records": sum(r.tree.wrong for r in runs),
        "wrong_record_examples": [d for r in runs for d in r.tree.details][:5],
        "seeded_changed": sum(r.tree.seeded_changed for r in runs),
        "tree_exact": all(r.tree.exact for r in runs),
        "competitor_commits": sum(r.competitor_commits for r in runs),
        "competitor_rate": _median([r.competitor_rate for r in runs]),
        "competitor_rejections": sum(r.competitor_rejections for r in runs),
        "competitor_all_kept": all(r.competitor_kept for r in runs),
        "outcomes_recorded": sum(r.outcomes_recorded for r in runs),
        "outcome_failures": [f for r in runs for f in r.outcome_failures][:5],
    }


def _row(label: str, contended: str, baseline: str) -> tuple[str, str, str]:
    return label, contended, baseline


def _print_table(title: str, headers: tuple[str, str], rows: list[tuple[str, str, str]]) -> None:
    print(title)
    width = max(len(r[0]) for r in rows)
    left = max(len(headers[0]), *(len(r[1]) for r in rows))
    print(f"  {'':<{width}}  {headers[0]:<{left}}  {headers[1]}")
    for label, contended, baseline in rows:
        print(f"  {label:<{width}}  {contended:<{left}}  {baseline}")


def _common_rows(c: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    def latency(s: dict[str, Any]) -> str:
        return f"{s['p50_ms']:.0f} / {s['p90_ms']:.0f} / {s['p99_ms']:.0f} / {s['max_ms']:.0f}"

    def tree(s: dict[str, Any]) -> str:
        lost, duplicated = s["lost"], s["duplicated"]
        return (
            f"{lost} lost, {duplicated} dup, {s['unexpected']} unexpected, {s['wrong_records']} wrong; "
            f"{s['recorded_without_202']} recorded without a 202"
        )

    def cpu(s: dict[str, Any]) -> str:
        extra = f" + writer {s['cpu_writer_s']:.1f}" if s["cpu_writer_s"] else ""
        return f"servers {s['cpu_servers_s']:.1f} + here {s['cpu_here_s']:.1f}{extra}"

    return [
        _row("requests failing after the retry (sum)", str(c["failed"]), str(b["failed"])),
        _row("requests not sent: the run's --budget ran out (sum)", str(c["not_sent"]), str(b["not_sent"])),
        _row("requests that needed a retry (sum)", str(c["retried"]), str(b["retried"])),
        _row("latency to the final answer, ms: p50/p90/p99/max", latency(c), latency(b)),
        _row(
            "wall, first request to last answer (median; runs)",
            f"{c['wall_s']:.1f} s {c['walls_s']}",
            f"{b['wall_s']:.1f} s {b['walls_s']}",
        ),
        _row("requests/s", f"{c['requests_per_s']:.1f}", f"{b['requests_per_s']:.1f}"),
        _row("CPU seconds (median)", cpu(c), cpu(b)),
        _row("commits on the remote, all writers (median)", f"{c['commits']:.0f}", f"{b['commits']:.0f}"),
        _row("final tree, tenants with a 202 (sum over runs)", tree(c), tree(b)),
    ]


def print_text(report: dict[str, Any]) -> None:
    load = report["loadavg"]
    print(
        f"subscription contention: {report['repeat']} run(s) per configuration; "
        f"loadavg before {load['before']}, "
        f"after {load['after']} ({os.cpu_count()} cores)"
    )
    if "competitor" in report:
        c, b = report["competitor"]["contended"], report["competitor"]["baseline"]
        rows = _common_rows(c, b)
        rows.insert(
            0,
            _row(
                "competing writer: commits (sum), rate (median), its lost pushes",
                f"{c['competitor_commits']}, {c['competitor_rate']:.1f}/s, {c['competitor_rejections']}",
                "none",
            ),
        )
        rows.append(
            _row(
                "every competitor commit in the final history",
                "yes" if c["competitor_all_kept"] else "NO",
                "-",
            )
        )
        _print_table(
            f"(a) {c['requests']} subscribes from {report['clients']} clients, one server, "
            f"with a competing pusher at {report['competitor_rate']:g}/s",
            ("with the competitor", "baseline: no competitor"),
            rows,
        )
        for example in c["wrong_examples"] + c["wrong_record_examples"]:
            print(f"    e.g. {example}")
    if "replicas" in report:
        c, b = report["replicas"]["contended"], report["replicas"]["baseline"]
        rows = _common_rows(c, b)
        rows.insert(
            0,
            _row(
                "wrong answers: 404 for a recorded tenant, 'created' for an existing one, non-202",
                str(c["failed"]),
                str(b["failed"]),
            ),
        )
        rows.append(
            _row(
                "outcomes recorded by the controller-side writer (sum; failures)",
                f"{c['outcomes_recorded']}; {len(c['outcome_failures'])}",
                "-",
            )
        )
        rows.append(
            _row(
                "final Git state exact (every run)",
                "yes" if c["tree_exact"] else "NO",
                "yes" if b["tree_exact"] else "NO",
            )
        )
        _print_table(
            f"(b) {report['pairs']} subscribe/unsubscribe pairs from {report['clients']} clients",
            ("2 replicas + outcome writer", "baseline: 1 replica, no writer"),
            rows,
        )
        for example in c["wrong_examples"] + c["wrong_record_examples"] + c["outcome_failures"]:
            print(f"    e.g. {example}")
    verdict = "meets" if report["goal_met"] else "MISSES"
    print(
        f"goal (issue #18: 0 failing after the retry, every competitor commit kept, every answer right, "
        f"final state exact): {verdict}"
    )


def goal_met(report: dict[str, Any]) -> bool:
    ok = True
    if "competitor" in report:
        c = report["competitor"]["contended"]
        ok &= (
            c["failed"] == 0
            and c["not_sent"] == 0
            and c["competitor_all_kept"]
            and c["tree_exact"]
            and c["competitor_commits"] > 0
        )
    if "replicas" in report:
        c = report["replicas"]["contended"]
        ok &= c["failed"] == 0 and c["not_sent"] == 0 and c["tree_exact"] and not c["outcome_failures"]
    return bool(ok)
