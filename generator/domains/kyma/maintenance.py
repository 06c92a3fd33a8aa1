"""Maintenance windows: when an upgrade that requires downtime may happen.

The policy file is Lifecycle Manager's (JSON, or the same in YAML):

    {"rules": [{"match": {"region": "europe|eu-", "plan": "...", "globalAccountID": "...",
                          "platformRegion": "..."},
                "windows": [{"days": ["Sat"], "begin": "20:00:00Z", "end": "00:00:00Z"},
                            {"begin": "2025-10-10T20:00:00Z", "end": "2025-10-11T00:00:00Z"}]}],
     "default": {"days": ["Sat", "Sun"], "begin": "21:00:00+00:00", "end": "05:00:00+00:00"}}

A rule matches a Kyma when any of its patterns (regular expressions, searched anywhere) matches
the Kyma's label of that attribute. The first matching rule's windows apply; when none of them is
current or ahead, or no rule matches, the default window does. A window with `days` recurs on
those weekdays between two times of day (crossing midnight when `end` is not after `begin`); one
without is an absolute interval. Times must carry a UTC offset.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from btp_gitops.generator.core.errors import InputError, Problem, raise_if_problems
from btp_gitops.generator.core.yamlio import SourceSyntaxProblem, load_source_documents

# Policy attribute -> the Kyma label holding it.
ATTRIBUTE_LABELS = {
    "globalAccountID": "kyma-project.io/global-account-id",
    "plan": "kyma-project.io/broker-plan-name",
    "region": "kyma-project.io/region",
    "platformRegion": "kyma-project.io/platform-region",
}
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True, slots=True)
class PolicyText:
    """A maintenance policy file as read: what to call it and what it says."""

    file: str
    text: str


@dataclass(frozen=True, slots=True)
class Interval:
    begin: datetime
    end: datetime

    def contains(self, at: datetime) -> bool:
        return self.begin <= at < self.end

    def describe(self) -> str:
        return f"{self.begin.isoformat()} to {self.end.isoformat()}"


@dataclass(frozen=True, slots=True)
class Window:
    days: frozenset[int]  # weekday numbers (Monday 0); empty: begin and end are absolute
    begin: datetime | time
    end: datetime | time

    def occurrences(self, around: datetime) -> Iterator[Interval]:
        """The window's intervals from the day before `around` to a week after it."""
        first, last = self.begin, self.end
        if isinstance(first, datetime) and isinstance(last, datetime):
            yield Interval(first, last)
            return
        if isinstance(first, datetime) or isinstance(last, datetime):
            return  # parse_policy never mixes the two forms
        local = around.astimezone(first.tzinfo)
        for offset in range(-1, 8):
            day: date = local.date() + timedelta(days=offset)
            if day.weekday() not in self.days:
                continue
            begin = datetime.combine(day, first)
            end = datetime.combine(day, last)
            if end <= begin:  # crosses midnight
                end += timedelta(days=1)
            yield Interval(begin, end)


def upcoming(windows: tuple[Window, ...], at: datetime) -> Interval | None:
    """The earliest interval of `windows` that has not ended at `at` (it may be running)."""
    intervals = [i for window in windows for i in window.occurrences(at) if i.end > at]
    return min(intervals, key=lambda i: (i.begin, i.end), default=None)


@dataclass(frozen=True, slots=True)
class Rule:
    match: tuple[tuple[str, re.Pattern[str]], ...]  # (attribute, pattern)
    windows: tuple[Window, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        for attribute, pattern in self.match:
            value = labels.get(ATTRIBUTE_LABELS[attribute], "")
            if value and pattern.search(value):
                return True
        return False


@dataclass(frozen=True, slots=True)
class MaintenancePolicy:
    file: str
    rules: tuple[Rule, ...]
    default: tuple[Window, ...]

    def next_window(self, labels: Mapping[str, str], at: datetime) -> Interval | None:
        """The window that applies to a Kyma with `labels`: running at `at`, or the next one."""
        rule = next((r for r in self.rules if r.matches(labels)), None)
        found = upcoming(rule.windows, at) if rule else None
        return found or upcoming(self.default, at)


class _Reader:
    """Parses the policy, collecting every problem with its field path."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(file=self.file, field_path=path, message=message))

    def moment(self, value: Any, path: str, with_days: bool) -> datetime | time | None:
        text = value if isinstance(value, str) else ""
        try:
            parsed: datetime | time = time.fromisoformat(text) if with_days else datetime.fromisoformat(text)
        except ValueError:
            wanted = "a time of day like 20:00:00Z" if with_days else "a timestamp like 2025-10-10T20:00:00Z"
            self.problem(path, f"must be {wanted}, got {value!r}")
            return None
        if parsed.tzinfo is None:
            self.problem(path, "must carry a UTC offset (Z or +hh:mm)")
            return None
        return parsed

    def window(self, value: Any, path: str) -> Window | None:
        if not isinstance(value, dict):
            self.problem(path, "must be an object with begin and end")
            return None
        days = value.get("days") or []
        if not isinstance(days, list) or any(d not in WEEKDAYS for d in days):
            self.problem(f"{path}.days", f"must list weekdays out of {', '.join(WEEKDAYS)}")
            return None
        begin = self.moment(value.get("begin"), f"{path}.begin", bool(days))
        end = self.moment(value.get("end"), f"{path}.end", bool(days))
        if begin is None or end is None:
            return None
        if isinstance(begin, datetime) and isinstance(end, datetime) and end <= begin:
            self.problem(f"{path}.end", "must be after begin")
            return None
        return Window(frozenset(WEEKDAYS.index(d) for d in days), begin, end)

    def match(self, value: Any, path: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
        if not isinstance(value, dict):
            self.problem(path, "must be an object of attribute patterns")
            return ()
        found = []
        for attribute, pattern in sorted(value.items()):
            if attribute not in ATTRIBUTE_LABELS:
                known = ", ".join(ATTRIBUTE_LABELS)
                self.problem(f"{path}.{attribute}", f"unknown attribute (known: {known})")
            elif pattern:  # an empty pattern matches nothing, as in Lifecycle Manager
                try:
                    found.append((attribute, re.compile(str(pattern))))
                except re.error as error:
                    self.problem(f"{path}.{attribute}", f"invalid regular expression: {error}")
        return tuple(found)

    def rule(self, value: Any, path: str) -> Rule | None:
        if not isinstance(value, dict):
            self.problem(path, "must be an object with match and windows")
            return None
        windows = [self.window(w, f"{path}.windows[{i}]") for i, w in enumerate(value.get("windows") or [])]
        return Rule(self.match(value.get("match", {}), f"{path}.match"), tuple(w for w in windows if w))


def parse_policy(policy: PolicyText) -> MaintenancePolicy:
    """The policy, or InputError listing every problem of the file."""
    reader = _Reader(policy.file)
    try:
        documents = [body for _, body in load_source_documents(policy.text, policy.file)]
    except SourceSyntaxProblem as error:
        raise InputError("cannot read the maintenance policy", [error.problem]) from error
    body = documents[0] if len(documents) == 1 else None
    if not isinstance(body, dict):
        raise InputError(
            "cannot read the maintenance policy", [Problem(policy.file, "expected one object with rules")]
        )
    for key in sorted(set(body) - {"rules", "default"}):
        reader.problem(key, "unknown field")
    rules = [reader.rule(r, f"rules[{i}]") for i, r in enumerate(body.get("rules") or [])]
    default = reader.window(body["default"], "default") if "default" in body else None
    raise_if_problems(InputError, "invalid maintenance policy", reader.problems)
    return MaintenancePolicy(policy.file, tuple(r for r in rules if r), (default,) if default else ())
