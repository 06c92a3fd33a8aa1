"""Maintenance windows: when an upgrade that requires downtime may happen, as Lifecycle Manager decides.

The policy file is Lifecycle Manager's (JSON, or the same in YAML):

    {"rules": [{"match": {"region": "europe|eu-", "plan": "...", "globalAccountID": "...",
                          "platformRegion": "..."},
                "windows": [{"days": ["Sat"], "begin": "20:00:00Z", "end": "00:00:00Z"},
                            {"begin": "2025-10-10T20:00:00Z", "end": "2025-10-11T00:00:00Z"}]}],
     "default": {"days": ["Sat", "Sun"], "begin": "21:00:00+00:00", "end": "05:00:00+00:00"}}

It is read as Lifecycle Manager reads it (Go's JSON decoding): keys match their field in any
case (`Rules`, `BEGIN`), a later key of the same field wins, and a time is a full timestamp
(RFC 3339) or a time of day with its UTC offset, in either kind of window. A key that names no
field is skipped, as Go skips it (Lifecycle Manager's own test policies carry `timeBegin` and
`timeEnd` in `default`); the policy lists each one (`ignored`), so the render can warn that a
misspelt `windows` means no window. A weekday other than Mon..Sun is refused.

Resolving, for a Kyma with given labels at a given time, with a minimum window size (default 20
minutes, Lifecycle Manager's):

- A rule matches when any of its patterns (regular expressions, searched anywhere) matches the
  Kyma's label of that attribute. The first matching rule's windows are tried in the order
  written; the first one with an occurrence that ends more than the minimum size from now wins
  (a running window with less left is not entered). When that rule offers none, or no rule
  matches, the `default` window is tried the same way.
- A window with `days` occurs on those weekdays, from the date of the time checked (UTC) on for
  eight days, between its two times of day; when `end` is not after `begin` the occurrence ends on
  the next day. A window without `days` is one absolute interval; one whose end precedes its
  begin is still the window found when its end is ahead, and it is never active.
- The module may be upgraded when the window found is active: it has begun and not ended. No
  window at all (no default window, and nothing ahead) is "failed to determine" for Lifecycle
  Manager: the module is then in Error, not upgraded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
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
DEFAULT_MIN_WINDOW = timedelta(minutes=20)  # Lifecycle Manager's --min-maintenance-window-size
_DAY = timedelta(days=1)
_LOOKAHEAD_DAYS = 8  # a week and a day: every weekday once, today's twice

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_TIME_OF_DAY = re.compile(r"\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})")


@dataclass(frozen=True, slots=True)
class PolicyText:
    """A maintenance policy file as read: what to call it and what it says."""

    file: str
    text: str


@dataclass(frozen=True, slots=True)
class Interval:
    begin: datetime
    end: datetime

    def active(self, at: datetime) -> bool:
        """Begun and not ended, both strictly, as Lifecycle Manager checks it."""
        return self.begin < at < self.end

    def describe(self) -> str:
        return f"{self.begin.isoformat()} to {self.end.isoformat()}"


@dataclass(frozen=True, slots=True)
class Window:
    days: frozenset[str]  # weekday abbreviations; empty: begin and end are absolute
    begin: datetime  # a time of day is kept on 0001-01-01 (Go's zero date is long past as well)
    end: datetime

    def available(self, at: datetime, min_size: timedelta) -> Interval | None:
        """The first occurrence that ends more than `min_size` after `at`, or None."""
        if not self.days:
            return Interval(self.begin, self.end) if self.end > at + min_size else None
        today = at.astimezone(UTC).date()
        begin = datetime.combine(today, self.begin.timetz())
        end = datetime.combine(today, self.end.timetz())
        if end <= begin:  # goes through midnight
            end += _DAY
        for _ in range(_LOOKAHEAD_DAYS):
            if WEEKDAYS[begin.weekday()] in self.days and end > at + min_size:
                return Interval(begin, end)
            begin, end = begin + _DAY, end + _DAY
        return None


def first_available(windows: tuple[Window, ...], at: datetime, min_size: timedelta) -> Interval | None:
    """The first window, in the order written, with an occurrence available at `at`."""
    return next((found for w in windows if (found := w.available(at, min_size)) is not None), None)


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
    default: Window | None
    ignored: tuple[str, ...] = ()  # the paths of keys that name no field, sorted

    def resolve(
        self, labels: Mapping[str, str], at: datetime, min_size: timedelta = DEFAULT_MIN_WINDOW
    ) -> Interval | None:
        """The window for a Kyma with `labels` at `at` (maybe not active yet), or None when
        neither the first matching rule nor the default provides one."""
        rule = next((r for r in self.rules if r.matches(labels)), None)
        found = first_available(rule.windows, at, min_size) if rule else None
        if found is None and self.default is not None:
            found = self.default.available(at, min_size)
        return found


def _fields(value: dict[Any, Any], known: tuple[str, ...]) -> tuple[dict[str, Any], list[str]]:
    """The object's values by field, keys matched in any case (the later of two wins), and the
    keys that name no field."""
    by_fold = {name.casefold(): name for name in known}
    found: dict[str, Any] = {}
    unknown = []
    for key, item in value.items():
        name = by_fold.get(str(key).casefold())
        if name is None:
            unknown.append(str(key))
        else:
            found[name] = item
    return found, unknown


class _Reader:
    """Parses the policy, collecting every problem with its field path."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []
        self.ignored: list[str] = []

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(file=self.file, field_path=path, message=message))

    def fields(self, value: dict[Any, Any], path: str, known: tuple[str, ...]) -> dict[str, Any]:
        found, unknown = _fields(value, known)
        self.ignored += [f"{path}.{key}" if path else key for key in unknown]
        return found

    def moment(self, value: Any, path: str) -> datetime | None:
        text = value if isinstance(value, str) else ""
        normalized = text[:-1] + "+00:00" if text.endswith("Z") else text
        try:
            if _TIMESTAMP.fullmatch(text):
                return datetime.fromisoformat(normalized)
            if _TIME_OF_DAY.fullmatch(text):
                return datetime.combine(datetime.min.date(), time.fromisoformat(normalized))
        except ValueError:
            pass
        self.problem(
            path,
            f"must be a timestamp like 2025-10-10T20:00:00Z or a time of day like 20:00:00Z, got {value!r}",
        )
        return None

    def window(self, value: Any, path: str) -> Window | None:
        if not isinstance(value, dict):
            self.problem(path, "must be an object with begin and end")
            return None
        found = self.fields(value, path, ("days", "begin", "end"))
        days = found.get("days") or []
        if not isinstance(days, list) or any(d not in WEEKDAYS for d in days):
            self.problem(f"{path}.days", f"must list weekdays out of {', '.join(WEEKDAYS)}")
            return None
        begin = self.moment(found.get("begin"), f"{path}.begin")
        end = self.moment(found.get("end"), f"{path}.end")
        if begin is None or end is None:
            return None
        return Window(frozenset(days), begin, end)

    def match(self, value: Any, path: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
        if not isinstance(value, dict):
            self.problem(path, "must be an object of attribute patterns")
            return ()
        result = []
        for attribute, pattern in sorted(self.fields(value, path, tuple(ATTRIBUTE_LABELS)).items()):
            if pattern:  # an empty pattern matches nothing, as in Lifecycle Manager
                try:
                    result.append((attribute, re.compile(str(pattern))))
                except re.error as error:
                    self.problem(f"{path}.{attribute}", f"invalid regular expression: {error}")
        return tuple(result)

    def rule(self, value: Any, path: str) -> Rule | None:
        if not isinstance(value, dict):
            self.problem(path, "must be an object with match and windows")
            return None
        found = self.fields(value, path, ("match", "windows"))
        listed = found.get("windows") or []
        if not isinstance(listed, list):
            self.problem(f"{path}.windows", "must be a list of windows")
            listed = []
        windows = [self.window(w, f"{path}.windows[{i}]") for i, w in enumerate(listed)]
        return Rule(self.match(found.get("match") or {}, f"{path}.match"), tuple(w for w in windows if w))


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
    found = reader.fields(body, "", ("rules", "default"))
    listed = found.get("rules") or []
    if not isinstance(listed, list):
        reader.problem("rules", "must be a list of rules")
        listed = []
    rules = [reader.rule(r, f"rules[{i}]") for i, r in enumerate(listed)]
    default = reader.window(found["default"], "default") if found.get("default") is not None else None
    raise_if_problems(InputError, "invalid maintenance policy", reader.problems)
    ignored = tuple(sorted(reader.ignored))
    return MaintenancePolicy(policy.file, tuple(r for r in rules if r), default, ignored)
