"""Table tests of maintenance window policies (generator.domains.kyma.maintenance).

Covered, as Lifecycle Manager resolves a window: which window applies to a Kyma (first matching
rule by any of its attribute patterns against the Kyma's labels, its windows in the order written,
else the default; the default also when the rule has nothing ahead), recurring windows on
weekdays counted from the date of the time checked (so a window that began the day before is
not seen after midnight), crossing midnight, UTC offsets, absolute windows (one whose end precedes
its begin is found and never active), the minimum window size (20 minutes: a running window with
less left is not entered), no window at all; keys in any case, both time formats in both kinds of
window; every problem of a policy file reported with its field path.

Nothing is faked: policy text in, the real parser and resolver, intervals out.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from btp_gitops.generator.core.errors import InputError
from btp_gitops.generator.domains.kyma.maintenance import MaintenancePolicy, PolicyText, parse_policy
from tests.support.yaml_errors import PARSER, matches

EUROPE = {"kyma-project.io/region": "europe-west1"}
TIMES = "a timestamp like 2025-10-10T20:00:00Z or a time of day like 20:00:00Z"
POLICY = {
    "rules": [
        {
            "match": {"region": "europe|eu-"},
            "windows": [{"days": ["Sat"], "begin": "20:00:00Z", "end": "02:00:00Z"}],
        },
        {
            "match": {"plan": "trial", "globalAccountID": "^ga-old$"},
            "windows": [{"begin": "2025-01-01T00:00:00Z", "end": "2025-01-02T00:00:00Z"}],
        },
        {
            "match": {"platformRegion": "cf-jp", "region": ""},
            "windows": [{"begin": "2025-10-20T04:00:00Z", "end": "2025-10-20T08:00:00Z"}],
        },
        {
            "match": {"region": "asia"},
            "windows": [{"days": ["Mon", "Thu"], "begin": "03:00:00+09:00", "end": "05:00:00+09:00"}],
        },
    ],
    "default": {"days": ["Sun"], "begin": "01:00:00Z", "end": "05:00:00Z"},
}


def policy(data: dict[str, Any] = POLICY) -> MaintenancePolicy:
    return parse_policy(PolicyText("policy.json", json.dumps(data)))


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# 2025-10-11 is a Saturday.
WINDOWS = [
    pytest.param(
        EUROPE,
        "2025-10-11T21:00:00Z",
        ("2025-10-11T20:00:00Z", "2025-10-12T02:00:00Z"),
        True,
        id="saturday-evening-in-window",
    ),
    pytest.param(
        EUROPE,
        "2025-10-12T01:30:00Z",
        ("2025-10-18T20:00:00Z", "2025-10-19T02:00:00Z"),
        False,
        id="after-midnight-the-saturday-window-is-not-seen-on-sunday",
    ),
    pytest.param(
        EUROPE,
        "2025-10-12T02:00:00Z",
        ("2025-10-18T20:00:00Z", "2025-10-19T02:00:00Z"),
        False,
        id="end-is-exclusive",
    ),
    pytest.param(
        EUROPE,
        "2025-10-08T12:00:00Z",
        ("2025-10-11T20:00:00Z", "2025-10-12T02:00:00Z"),
        False,
        id="wednesday-waits-for-saturday",
    ),
    pytest.param(
        {},
        "2025-10-12T02:00:00Z",
        ("2025-10-12T01:00:00Z", "2025-10-12T05:00:00Z"),
        True,
        id="no-labels-default-window",
    ),
    pytest.param(
        {"kyma-project.io/region": "us-east1"},
        "2025-10-08T12:00:00Z",
        ("2025-10-12T01:00:00Z", "2025-10-12T05:00:00Z"),
        False,
        id="no-rule-matches-default",
    ),
    pytest.param(
        {"kyma-project.io/broker-plan-name": "trial"},
        "2025-10-12T02:00:00Z",
        ("2025-10-12T01:00:00Z", "2025-10-12T05:00:00Z"),
        True,
        id="matched-rule-has-nothing-ahead-default",
    ),
    pytest.param(
        {"kyma-project.io/global-account-id": "ga-old"},
        "2025-01-01T12:00:00Z",
        ("2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"),
        True,
        id="any-attribute-matches-absolute-window",
    ),
    pytest.param(
        {"kyma-project.io/global-account-id": "xga-old"},
        "2025-01-01T12:00:00Z",
        ("2025-01-05T01:00:00Z", "2025-01-05T05:00:00Z"),
        False,
        id="anchored-pattern-does-not-match",
    ),
    pytest.param(
        {"kyma-project.io/platform-region": "cf-jp10", "kyma-project.io/region": "europe"},
        "2025-10-11T23:00:00Z",
        ("2025-10-11T20:00:00Z", "2025-10-12T02:00:00Z"),
        True,
        id="first-matching-rule-wins",
    ),
    pytest.param(
        {},
        "2025-10-12T04:30:00Z",
        ("2025-10-12T01:00:00Z", "2025-10-12T05:00:00Z"),
        True,
        id="thirty-minutes-left-is-entered",
    ),
    pytest.param(
        {},
        "2025-10-12T04:40:00Z",
        ("2025-10-19T01:00:00Z", "2025-10-19T05:00:00Z"),
        False,
        id="exactly-twenty-minutes-left-is-not-entered",
    ),
    pytest.param(
        {},
        "2025-10-12T04:50:00Z",
        ("2025-10-19T01:00:00Z", "2025-10-19T05:00:00Z"),
        False,
        id="ten-minutes-left-is-not-entered",
    ),
    pytest.param(
        {"kyma-project.io/platform-region": "cf-jp10"},
        "2025-10-12T02:00:00Z",
        ("2025-10-20T04:00:00Z", "2025-10-20T08:00:00Z"),
        False,
        id="future-absolute-window-not-the-running-default",
    ),
    pytest.param(
        {"kyma-project.io/region": "asia-northeast1"},
        "2025-10-15T19:00:00Z",
        ("2025-10-15T18:00:00Z", "2025-10-15T20:00:00Z"),
        True,
        id="offset-times-on-local-weekdays",
    ),
]


@pytest.mark.parametrize(("labels", "at", "window", "active"), WINDOWS)
def test_resolve(labels: dict[str, str], at: str, window: tuple[str, str], active: bool) -> None:
    found = policy().resolve(labels, utc(at))
    assert found is not None
    assert (found.begin.astimezone(UTC), found.end.astimezone(UTC)) == (utc(window[0]), utc(window[1]))
    assert found.active(utc(at)) is active


@pytest.mark.parametrize(
    ("minutes", "window"),
    [
        pytest.param(29, ("2025-10-12T01:00:00Z", "2025-10-12T05:00:00Z"), id="29-minutes-enters"),
        pytest.param(30, ("2025-10-19T01:00:00Z", "2025-10-19T05:00:00Z"), id="30-minutes-waits"),
        pytest.param(0, ("2025-10-12T01:00:00Z", "2025-10-12T05:00:00Z"), id="no-minimum"),
    ],
)
def test_the_minimum_window_size_is_a_parameter(minutes: int, window: tuple[str, str]) -> None:
    found = policy().resolve({}, utc("2025-10-12T04:30:00Z"), timedelta(minutes=minutes))
    assert found is not None
    assert (found.begin, found.end) == (utc(window[0]), utc(window[1]))


def test_no_window_at_all_without_a_default() -> None:
    empty = policy({"rules": [{"match": {"region": "eu"}, "windows": []}]})
    assert empty.resolve(EUROPE, utc("2025-10-11T21:00:00Z")) is None
    past = policy({"default": {"begin": "2025-01-01T00:00:00Z", "end": "2025-01-02T00:00:00Z"}})
    assert past.resolve({}, utc("2025-10-11T21:00:00Z")) is None


def test_an_absolute_window_whose_end_precedes_its_begin_is_found_and_never_active() -> None:
    inverted = policy(
        {
            "rules": [
                {
                    "match": {"region": "eu"},
                    "windows": [
                        {"begin": "2025-10-12T00:00:00Z", "end": "2025-10-11T00:00:00Z"},
                        {"days": ["Fri"], "begin": "00:00:00Z", "end": "23:59:59Z"},
                    ],
                }
            ],
            "default": {"days": ["Fri"], "begin": "00:00:00Z", "end": "23:59:59Z"},
        }
    )
    friday = utc("2025-10-10T12:00:00Z")  # inside the Friday windows, before the inverted one's end
    found = inverted.resolve(EUROPE, friday)
    assert found is not None
    assert (found.begin, found.end) == (utc("2025-10-12T00:00:00Z"), utc("2025-10-11T00:00:00Z"))
    assert found.active(friday) is False
    after = inverted.resolve(EUROPE, utc("2025-10-11T12:00:00Z"))  # its end has passed: the next window
    assert after is not None
    assert after.begin == utc("2025-10-17T00:00:00Z")


def test_keys_in_any_case_and_the_later_of_two_wins() -> None:
    shouted = {
        "RULES": [
            {
                "Match": {"REGION": "europe|eu-"},
                "windows": [{"Days": ["Sat"], "BEGIN": "20:00:00Z", "eNd": "02:00:00Z"}],
            }
        ],
        "Default": {"days": ["Mon"], "begin": "01:00:00Z", "end": "05:00:00Z"},
        "default": {"days": ["Sun"], "begin": "01:00:00Z", "end": "05:00:00Z"},
    }
    read = policy(shouted)
    same = policy({"rules": POLICY["rules"][:1], "default": POLICY["default"]})
    assert read == dataclasses.replace(same, file=read.file)


def test_both_time_formats_in_both_kinds_of_window() -> None:
    mixed = policy(
        {
            "rules": [
                {
                    "match": {"region": "eu"},
                    # a timestamp in a weekday window gives its time of day
                    "windows": [
                        {"days": ["Sat"], "begin": "2020-01-01T20:00:00Z", "end": "2020-01-01T22:00:00Z"}
                    ],
                },
                {
                    "match": {"plan": "trial"},
                    # a time of day in an absolute window is on day one of year one: long past
                    "windows": [{"begin": "20:00:00Z", "end": "22:00:00Z"}],
                },
            ]
        }
    )
    saturday = utc("2025-10-11T21:00:00Z")
    found = mixed.resolve(EUROPE, saturday)
    assert found is not None
    assert (found.begin, found.end, found.active(saturday)) == (
        utc("2025-10-11T20:00:00Z"),
        utc("2025-10-11T22:00:00Z"),
        True,
    )
    assert mixed.resolve({"kyma-project.io/broker-plan-name": "trial"}, saturday) is None


PROBLEMS = [
    pytest.param(
        {"default": {"days": ["Saturday"], "begin": "20:00:00Z", "end": "22:00:00Z"}},
        [("default.days", "must list weekdays out of Mon, Tue, Wed, Thu, Fri, Sat, Sun")],
        id="unknown-weekday",
    ),
    pytest.param(
        {"default": {"days": ["Sat"], "begin": "20:00:00", "end": "8pm"}},
        [
            ("default.begin", f"must be {TIMES}, got '20:00:00'"),
            ("default.end", f"must be {TIMES}, got '8pm'"),
        ],
        id="times-without-offset",
    ),
    pytest.param(
        {"rules": [{"match": {}, "windows": [{"begin": "2025-10-11", "end": "2025-10-10T00:00:00"}]}]},
        [
            ("rules[0].windows[0].begin", f"must be {TIMES}, got '2025-10-11'"),
            ("rules[0].windows[0].end", f"must be {TIMES}, got '2025-10-10T00:00:00'"),
        ],
        id="timestamp-without-offset",
    ),
    pytest.param(
        {"rules": {"match": {}}, "default": {"begin": "2025-10-11T00:00:00Z", "end": "x", "dayz": []}},
        [
            ("rules", "must be a list of rules"),
            ("default.end", f"must be {TIMES}, got 'x'"),
        ],
        id="shapes-and-a-misspelt-key-ignored",
    ),
    pytest.param(
        {"rules": [{"match": {"zone": "a", "region": "(eu"}, "windows": ["Sat"]}]},
        [
            ("rules[0].windows[0]", "must be an object with begin and end"),
            (
                "rules[0].match.region",
                "invalid regular expression: missing ), unterminated subpattern at position 0",
            ),
        ],
        id="match-and-window-shapes",
    ),
    pytest.param(
        {"rules": ["eu"]}, [("rules[0]", "must be an object with match and windows")], id="rule-shape"
    ),
]


def test_keys_lifecycle_manager_does_not_know_are_ignored_and_listed() -> None:
    """Go's JSON decoding skips a key that names no field; the policy lists each one by path (sorted),
    for the render's warning."""
    read = policy(
        {
            "rules": [{"match": {"zone": "eu", "region": "eu"}, "windows": [], "note": "x"}],
            "default": {"days": ["Sat"], "begin": "20:00:00Z", "end": "22:00:00Z", "timeBegin": "x"},
            "owner": "ops",
        }
    )
    assert read.ignored == ("default.timeBegin", "owner", "rules[0].match.zone", "rules[0].note")
    assert read.default is not None and read.rules[0].match[0][0] == "region"


@pytest.mark.parametrize(("data", "expected"), PROBLEMS)
def test_policy_problems(data: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    with pytest.raises(InputError) as raised:
        policy(data)
    assert raised.value.message.startswith("invalid maintenance policy (")
    assert [(p.field_path, p.message) for p in raised.value.problems] == sorted(expected)
    assert {p.file for p in raised.value.problems} == {"policy.json"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "{rules: [",
            "policy.json: document 1: invalid YAML: line 2, column 1: " + PARSER,
        ),
        ("[1, 2]", "policy.json: expected one object with rules"),
        ("{}\n---\n{}\n", "policy.json: expected one object with rules"),
    ],
)
def test_unreadable_policy(text: str, expected: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_policy(PolicyText("policy.json", text))
    [problem] = raised.value.problems
    assert matches(problem.render(), expected), problem.render()
