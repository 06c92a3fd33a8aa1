"""`btp-gitops diff` output: plain text, markdown for a pull-request comment, JSON.

Markdown is bounded: GitHub refuses comments over 65,536 characters, so the report keeps the
summary first and adds per-object diffs while they fit under `max_length`, then says what it
left out. It never cuts a diff block in half, so what is shown is always valid markdown.

Text and markdown go to terminals and CI logs, and name files and show contents from a tree
someone else may have pushed: every control character in them (an escape sequence that would
clear the screen, move the cursor or set a window title; a carriage return that overwrites a line)
is shown escaped (`\x1b`, `\x0d`, `\u2028`) rather than written. Line breaks and tabs of the diffs
stay. JSON is JSON: its encoder escapes control characters itself, and the values stay exact.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.redact import printable
from btp_gitops.generator.diff.compare import CLUSTER_ROOT, Change, ChangeKind, ClusterDiff

DEFAULT_MAX_LENGTH = 60_000  # GitHub's comment limit (65,536) minus room for what a workflow adds
MIN_MAX_LENGTH = 1_000  # the title, totals and truncation note must fit
_BACKTICKS = re.compile(r"`+")
# The warning comes before the totals and is never truncated, so it is bounded on its own.
_MARKDOWN_PROBLEMS = 10
_PROBLEM_CHARS = 300


@dataclass(frozen=True, slots=True)
class DiffTitle:
    cluster: str
    against: str  # "main (3f1602f1a2b3)" or "directory ../gitops"
    # Kyma modules the render could not resolve (their previous files kept, as `render` does): a
    # reviewer must see them, since a diff that keeps old files shows no change for that module.
    module_problems: tuple[str, ...] = ()

    @property
    def tree(self) -> str:
        return f"clusters/{self.cluster}"


def app_label(app: str) -> str:
    return "(cluster)" if app == CLUSTER_ROOT else app


def totals(diff: ClusterDiff) -> str:
    apps = len(diff.apps())
    return (
        f"{diff.count(ChangeKind.ADDED)} added, {diff.count(ChangeKind.CHANGED)} changed, "
        f"{diff.count(ChangeKind.REMOVED)} removed in {apps} app{'s' if apps != 1 else ''}"
    )


# --- text -------------------------------------------------------------------------------------


def text_report(diff: ClusterDiff, title: DiffTitle) -> str:
    return printable(_text_report(diff, title))


def _text_report(diff: ClusterDiff, title: DiffTitle) -> str:
    head = f"btp-gitops diff: {title.tree} against {title.against}"
    problems = "".join(f"  {problem}\n" for problem in title.module_problems)
    if problems:
        problems = f"Kyma module problems ({len(title.module_problems)}), previous files kept:\n{problems}"
    if diff.empty:
        return f"{head}: no changes\n" + problems
    lines = [f"{head}: {totals(diff)}", ""]
    if problems:
        lines += [problems]
    for summary in diff.apps():
        lines.append(
            f"{app_label(summary.app)}: {summary.added} added, {summary.changed} changed, "
            f"{summary.removed} removed"
        )
        lines += [f"  {_change_line(change)}" for change in diff.changes if change.app == summary.app]
    lines.append("")
    text = "\n".join(lines) + "\n"
    return text + "".join(change.diff for change in diff.changes)


def _change_line(change: Change) -> str:
    note = f" ({change.note})" if change.note else ""
    return f"{change.kind.sign} {change.subject}{note}"


# --- markdown ---------------------------------------------------------------------------------


def markdown_report(diff: ClusterDiff, title: DiffTitle, max_length: int = DEFAULT_MAX_LENGTH) -> str:
    """At most `max_length` characters (>= MIN_MAX_LENGTH); the parts are escaped (`printable`)
    before they are measured, so the bound holds for what is printed."""
    head = f"### btp-gitops diff: `{title.tree}` against `{_code(title.against)}`\n\n"
    problems = _markdown_problems(title.module_problems)
    if diff.empty:
        return printable(head + "No changes.\n" + ("\n" + problems if problems else ""))
    parts = [
        head + problems + f"**{totals(diff)}**\n\n" + _TABLE_HEAD,
        *(f"| `{_code(app_label(s.app))}` | {s.added} | {s.changed} | {s.removed} |\n" for s in diff.apps()),
        "\n",
        *(_details(change) for change in diff.changes),
    ]
    return _bounded([printable(part) for part in parts], len(diff.changes), max_length)


_TABLE_HEAD = "| App | Added | Changed | Removed |\n|---|---:|---:|---:|\n"


def _markdown_problems(problems: tuple[str, ...]) -> str:
    """A warning block (before the totals, so truncation never drops it)."""
    if not problems:
        return ""
    shown = [_shortened(problem) for problem in problems[:_MARKDOWN_PROBLEMS]]
    if len(problems) > len(shown):
        shown.append(f"... and {len(problems) - len(shown)} more (run `btp-gitops diff` locally)")
    items = "".join(f"> - {html.escape(problem)}\n" for problem in shown)
    return (
        f"> [!WARNING]\n> {len(problems)} Kyma module problem(s): these modules could not be resolved "
        f"and keep their previous files.\n>\n{items}\n"
    )


def _shortened(problem: str) -> str:
    return problem if len(problem) <= _PROBLEM_CHARS else problem[: _PROBLEM_CHARS - 3] + "..."


def _bounded(parts: list[str], changes: int, max_length: int) -> str:
    """The parts in order while they fit; once one does not, a note instead of the rest."""
    if sum(map(len, parts)) <= max_length:
        return "".join(parts)
    detail_start = len(parts) - changes
    kept: list[str] = []
    used = 0
    for index, part in enumerate(parts):
        note = _truncation_note(max(0, index - detail_start), changes, max_length)
        if used + len(part) + len(note) > max_length:
            return "".join(kept) + note
        kept.append(part)
        used += len(part)
    return "".join(kept)


def _truncation_note(shown: int, changes: int, max_length: int) -> str:
    return (
        f"\n> [!NOTE]\n> Truncated to {max_length:,} characters: the diffs of {shown} of {changes} "
        "changes are shown. Run `btp-gitops diff` locally for all of them.\n"
    )


def _details(change: Change) -> str:
    summary = f"<code>{html.escape(app_label(change.app))}</code>: {html.escape(_change_line(change))}"
    if not change.diff:
        return f"<details><summary>{summary}</summary>\n\n{html.escape(change.note)}\n\n</details>\n\n"
    fence = _fence_for(change.diff)
    return f"<details><summary>{summary}</summary>\n\n{fence}diff\n{change.diff}{fence}\n\n</details>\n\n"


def _fence_for(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`, so the block cannot end early."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _code(text: str) -> str:
    return text.replace("`", "'")


# --- json -------------------------------------------------------------------------------------


def json_report(diff: ClusterDiff, title: DiffTitle) -> dict[str, Any]:
    return {
        "cluster": title.cluster,
        "against": title.against,
        "changed": not diff.empty,
        "summary": {kind.value: diff.count(kind) for kind in ChangeKind},
        "apps": [
            {"app": s.app, "added": s.added, "changed": s.changed, "removed": s.removed} for s in diff.apps()
        ],
        "changes": [change.as_dict() for change in diff.changes],
        "moduleProblems": list(title.module_problems),
    }
