"""`render_pack.exact_json`: the JSON text of a value when, and only when, it reads back equal.

A render that fills the cache asks this of 20,000 record documents and as many apps' objects; the
answer decides what the pack and the entries keep, so it must be the round trip's answer."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btp_gitops.generator.io.render_pack import exact_json


class Level(enum.IntEnum):
    HIGH = 2


class Tag(enum.StrEnum):
    BLUE = "blue"


def round_trips(value: Any) -> bool:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return bool(json.loads(text) == value)


@pytest.mark.parametrize(
    "value",
    [
        {"metadata": {"name": "customer-001", "labels": {"a": "b"}}, "spec": {"replicas": 3}},
        [[{"kind": "ConfigMap", "data": {"k": "v"}}, "tenants/a.yaml"]],
        {"text": "Grüße \u2028 \ud800 lone surrogate", "n": -0.0, "big": 10**30, "f": 1e-300},
        {"flags": [True, False, None], "empty": {}, "nothing": []},
        OrderedDict([("b", 1), ("a", [OrderedDict(x=1)])]),
        {"level": Level.HIGH, Tag.BLUE: "key of a string enum"},
        "a string",
        7,
        None,
    ],
    ids=["record", "objects", "text", "scalars", "ordered", "enums", "str", "int", "null"],
)
def test_a_value_json_holds_exactly_gives_its_text(value: Any) -> None:
    text = exact_json(value)
    assert text is not None
    assert json.loads(text) == value
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


nested: dict[str, Any] = {"a": []}
nested["a"].append(nested)


@pytest.mark.parametrize(
    "value",
    [
        {1: "an integer key"},
        {"spec": {"ports": {8080: "http"}}},
        {True: "a boolean key"},
        {None: "a null key"},
        {"metadata": {"annotations": {1.5: "a float key"}}},
        (1, 2),
        {"items": [1, (2, 3)]},
        [{"deep": [{"deeper": ("tuple",)}]}],
        {"value": math.nan},
        {"value": math.inf},
        {"a set": {1, 2}},
        {"bytes": b"\x00"},
        nested,
    ],
    ids=[
        "int-key",
        "nested-int-key",
        "bool-key",
        "null-key",
        "float-key",
        "tuple",
        "tuple-in-list",
        "deep-tuple",
        "nan",
        "inf",
        "set",
        "bytes",
        "cycle",
    ],
)
def test_a_value_that_would_read_back_otherwise_gives_none(value: Any) -> None:
    assert exact_json(value) is None


def test_a_value_nested_beyond_the_encoder_gives_none() -> None:
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    assert exact_json(deep) is None


keys = st.one_of(st.text(max_size=5), st.integers(-3, 3), st.booleans(), st.none(), st.floats(-2, 2))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8))
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_the_answer_is_the_round_trips(value: Any) -> None:
    """Generated values of every shape: a text exactly when the value reads back equal."""
    assert (exact_json(value) is not None) == round_trips(value)
