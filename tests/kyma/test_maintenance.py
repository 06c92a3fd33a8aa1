"""Table tests of maintenance window policies (generator.domains.kyma.maintenance).

Covered: which window applies to a Kyma (first matching rule by any of its attribute patterns
against the Kyma's labels, else the default; the default also when the rule has nothing ahead),
recurring windows on weekdays (crossing midnight, UTC offsets), absolute windows, the running
window and the next one; every problem of a policy file reported with its field path.

Nothing is faked: policy text in, the real parser and resolver, intervals out.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from btp_gitops.generator.core.errors import InputError
from btp_gitops.generator.domains.kyma.maintenance import MaintenancePolicy, PolicyText, parse_policy
from tests.support.yaml_errors import PARSER, matches

EUROPE = {"kyma-project.io/region": "europe-west1"}
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
        ("2025-10-11T20:00:00Z", "2025-10-12T02:00:00Z"),
        True,
        id="after-midnight-same-window",
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
        "2025-10-12T01:00:00Z",
        ("2025-10-11T20:00:00Z", "2025-10-12T02:00:00Z"),
        True,
        id="first-matching-rule-wins",
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
def test_next_window(labels: dict[str, str], at: str, window: tuple[str, str], active: bool) -> None:
    found = policy().next_window(labels, utc(at))
    assert found is not None
    assert (found.begin.astimezone(UTC), found.end.astimezone(UTC)) == (utc(window[0]), utc(window[1]))
    assert found.contains(utc(at)) is active


def test_no_window_at_all() -> None:
    empty = policy({"rules": [{"match": {"region": "eu"}, "windows": []}]})
    assert empty.next_window(EUROPE, utc("2025-10-11T21:00:00Z")) is None


PROBLEMS = [
    pytest.param({"rule": []}, [("rule", "unknown field")], id="unknown-field"),
    pytest.param(
        {"default": {"days": ["Saturday"], "begin": "20:00:00Z", "end": "22:00:00Z"}},
        [("default.days", "must list weekdays out of Mon, Tue, Wed, Thu, Fri, Sat, Sun")],
        id="unknown-weekday",
    ),
    pytest.param(
        {"default": {"days": ["Sat"], "begin": "20:00:00", "end": "8pm"}},
        [
            ("default.begin", "must carry a UTC offset (Z or +hh:mm)"),
            ("default.end", "must be a time of day like 20:00:00Z, got '8pm'"),
        ],
        id="times-of-day",
    ),
    pytest.param(
        {"rules": [{"match": {}, "windows": [{"begin": "2025-10-11", "end": "2025-10-10T00:00:00Z"}]}]},
        [("rules[0].windows[0].begin", "must carry a UTC offset (Z or +hh:mm)")],
        id="timestamp-without-offset",
    ),
    pytest.param(
        {
            "rules": [
                {"match": {}, "windows": [{"begin": "2025-10-11T00:00:00Z", "end": "2025-10-10T00:00:00Z"}]}
            ]
        },
        [("rules[0].windows[0].end", "must be after begin")],
        id="absolute-window-ends-before-it-begins",
    ),
    pytest.param(
        {"rules": [{"match": {"zone": "a", "region": "(eu"}, "windows": ["Sat"]}]},
        [
            ("rules[0].windows[0]", "must be an object with begin and end"),
            (
                "rules[0].match.region",
                "invalid regular expression: missing ), unterminated subpattern at position 0",
            ),
            (
                "rules[0].match.zone",
                "unknown attribute (known: globalAccountID, plan, region, platformRegion)",
            ),
        ],
        id="match-and-window-shapes",
    ),
    pytest.param(
        {"rules": ["eu"]}, [("rules[0]", "must be an object with match and windows")], id="rule-shape"
    ),
]


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
