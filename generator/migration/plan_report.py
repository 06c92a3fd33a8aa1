"""The cutover plan as `btp-gitops diff --against-cluster` prints it: text, markdown, JSON.

The order is the order of attention: per app, what is recreated, then what is left behind, then
what is created, then what is adopted. Text and markdown pass `printable` (names read from a
cluster may hold control characters); markdown is bounded like diff's (a pull-request comment),
keeping the summary and saying what it left out. The plan holds no values, so neither does any
of these.
"""

from __future__ import annotations

import html
from typing import Any

from btp_gitops.generator.core.redact import printable
from btp_gitops.generator.migration.plan import OUTCOME_ORDER, CutoverPlan, Outcome, PlanEntry

_LABELS = {
    Outcome.RECREATED: "recreated",
    Outcome.LEFT_BEHIND: "left behind",
    Outcome.CREATED: "created",
    Outcome.ADOPTED: "adopted",
}
_JSON_KEYS = {
    Outcome.RECREATED: "recreated",
    Outcome.LEFT_BEHIND: "leftBehind",
    Outcome.CREATED: "created",
    Outcome.ADOPTED: "adopted",
}


def app_label(app: str) -> str:
    return app or "(cluster)"


def _counts(entries: list[PlanEntry] | tuple[PlanEntry, ...]) -> str:
    return ", ".join(
        f"{sum(1 for e in entries if e.outcome is outcome)} {_LABELS[outcome]}" for outcome in OUTCOME_ORDER
    )


def _changed_count(plan: CutoverPlan) -> int:
    return sum(1 for e in plan.entries if e.outcome is Outcome.ADOPTED and e.changes)


def summary(plan: CutoverPlan) -> str:
    return f"{_counts(plan.entries)} ({_changed_count(plan)} adopted with changes)"


def _sign(entry: PlanEntry) -> str:
    if entry.outcome is Outcome.ADOPTED:
        return "~" if entry.changes else "="
    return {Outcome.RECREATED: "!", Outcome.LEFT_BEHIND: "-", Outcome.CREATED: "+"}[entry.outcome]


def _headline(entry: PlanEntry) -> str:
    label = _LABELS[entry.outcome]
    if entry.outcome is Outcome.ADOPTED:
        label += ": " + (", ".join(entry.changes) if entry.changes else "unchanged")
    if entry.replaces:
        label += f", replaces {entry.replaces}"
    if entry.operator:
        label += f", made by {entry.operator}"
    return f"{_sign(entry)} {entry.subject} ({label})"


def _details(entry: PlanEntry) -> list[str]:
    lines = []
    if entry.reason:
        lines.append(f"why: {entry.reason}")
    if entry.consequence:
        lines.append(f"consequence: {entry.consequence}")
    if entry.action:
        lines.append(f"to do: {entry.action}")
    return lines


def _by_app(plan: CutoverPlan) -> list[tuple[str, list[PlanEntry]]]:
    return [(app, [e for e in plan.entries if e.app == app]) for app in plan.apps()]


def text_report(plan: CutoverPlan) -> str:
    lines = [f"btp-gitops diff: clusters/{plan.cluster} against {plan.against}: {summary(plan)}", ""]
    for app, entries in _by_app(plan):
        lines.append(f"{app_label(app)}: {_counts(entries)}")
        for entry in entries:
            lines.append(f"  {_headline(entry)}")
            lines += [f"      {line}" for line in _details(entry)]
    return printable("\n".join(lines) + "\n")


# --- markdown ---------------------------------------------------------------------------------


def markdown_report(plan: CutoverPlan, max_length: int) -> str:
    head = (
        f"### btp-gitops cutover plan: `clusters/{_code(plan.cluster)}` against `{_code(plan.against)}`\n\n"
        f"**{summary(plan)}**\n\n"
        "| App | Recreated | Left behind | Created | Adopted |\n|---|---:|---:|---:|---:|\n"
    )
    rows = [
        f"| `{_code(app_label(app))}` | "
        + " | ".join(str(sum(1 for e in entries if e.outcome is o)) for o in OUTCOME_ORDER)
        + " |\n"
        for app, entries in _by_app(plan)
    ]
    items = [_markdown_item(entry) for entry in plan.entries]
    parts = [printable(head + "".join(rows) + "\n"), *(printable(item) for item in items)]
    if sum(map(len, parts)) <= max_length:
        return "".join(parts)
    kept: list[str] = []
    used = 0
    for index, part in enumerate(parts):
        note = _truncation_note(max(0, index - 1), len(items), max_length)
        if used + len(part) + len(note) > max_length:
            return "".join(kept) + note
        kept.append(part)
        used += len(part)
    return "".join(kept)


def _markdown_item(entry: PlanEntry) -> str:
    details = "".join(f"  - {html.escape(line, quote=False)}\n" for line in _details(entry))
    app, headline = html.escape(app_label(entry.app), quote=False), html.escape(_headline(entry), quote=False)
    return f"- <code>{app}</code>: {headline}\n{details}"


def _truncation_note(shown: int, total: int, max_length: int) -> str:
    return (
        f"\n> [!NOTE]\n> Truncated to {max_length:,} characters: {shown} of {total} objects are listed. "
        "Run `btp-gitops diff --against-cluster` locally for all of them.\n"
    )


def _code(text: str) -> str:
    return text.replace("`", "'")


# --- json -------------------------------------------------------------------------------------


def json_report(plan: CutoverPlan) -> dict[str, Any]:
    return {
        "cluster": plan.cluster,
        "against": plan.against,
        "changed": not plan.unchanged,
        "summary": {
            **{_JSON_KEYS[outcome]: plan.count(outcome) for outcome in OUTCOME_ORDER},
            "adoptedWithChanges": _changed_count(plan),
        },
        "apps": [
            {"app": app, **{_JSON_KEYS[o]: sum(1 for e in entries if e.outcome is o) for o in OUTCOME_ORDER}}
            for app, entries in _by_app(plan)
        ],
        "objects": [entry.as_dict() for entry in plan.entries],
    }
