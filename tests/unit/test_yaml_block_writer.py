"""`core.yaml_block_writer` writes exactly the bytes PyYAML writes, faster.

`dump_object` lays block collections out itself and asks PyYAML (core.yaml_style's `Dumper` over libyaml) how
each distinct scalar is written; whatever it cannot vouch for goes to PyYAML whole. Every test
here compares its output with PyYAML's own dump of the same object (`dump_with_pyyaml`, the code
path `dump_object` used alone before): byte for byte, on generated objects (hypothesis, with the
strings that change a scalar's style: indicators, numbers, dates, booleans, line breaks of every
kind, long keys) and on the cases it must hand over.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core import yaml_block_writer, yamlio
from btp_gitops.generator.core.yaml_block_writer import BlockWriter
from btp_gitops.generator.core.yaml_style import dump_with_pyyaml
from btp_gitops.generator.core.yamlio import dump_object

_TRICKY = [
    "", " ", "a ", " a", "y", "N", "yes", "Off", "NULL", "~", "-", "- a", "-a", "?", "? a", ":", "a:",
    "a: b", "a:b", "#a", "a #b", "a#b", "123", "0123", "0x1F", "0o17", "1e3", "1.5", "1_000", "1.0.0",
    "12:30", "2024-01-01", "2024-01-01T00:00:00Z", ".inf", ".nan", "=", "<<", "'q'", '"d"', "a'b",
    "a\nb", "a\n", "a\u2028b", "a\rb", "a\x85b", "\ttab", "é", "日本", "\ufeff", "[a]", "{a}", "a,b",
    "!t", "&a", "*a", "|", ">", "%", "@", "`", "apiVersion", "kind", "metadata", "status", "k" * 130,
    "00000001-5d2b-4c8e-9a3f-1b6d2c4e8f00", "bookshop-1-0-0", "example.com/x_y", "a" * 100,
    "a\nb\n", "a\n\n", "\n", "\n\n", " a\nb", "\na", "a\n\nb\n", "a \nb", "a\n b\n  c",
    "\ta\nb", "é\n日本\n", "a\r\nb\n", "a\nb\u2028c", "a\n\x00", "#!/bin/sh\nset -e\n", "x: 1\ny: [a]\n",
    "a\n...\nb", "a\n---\nb", "a\n\n\n",
]  # fmt: skip

_strings = (
    st.sampled_from(_TRICKY)
    | st.text(max_size=12)
    | st.from_regex(r"[A-Za-z0-9][\w./:-]{0,12}", fullmatch=True)
)
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _strings
_keys = _strings | st.sampled_from([1, True, None, 2.5])
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=30,
)


def _pyyaml_or_error(obj: Any) -> str | type[Exception]:
    try:
        return dump_with_pyyaml(obj)
    except yaml.YAMLError as error:
        return type(error)


def _ours_or_error(obj: Any) -> str | type[Exception]:
    try:
        return dump_object(obj)
    except yaml.YAMLError as error:
        return type(error)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=6))
def test_dump_object_writes_the_bytes_pyyaml_writes(obj: dict[Any, Any]) -> None:
    assert _ours_or_error(obj) == _pyyaml_or_error(obj)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(_strings, _values, min_size=1, max_size=3), min_size=1, max_size=3))
def test_a_mapping_or_list_met_twice_is_left_to_pyyaml_which_writes_an_alias(parts: list[Any]) -> None:
    shared = parts[0]
    obj = {"first": shared, "again": [shared, *parts[1:]]}
    assert yamlio._WRITER.document(obj) is None
    assert dump_object(obj) == dump_with_pyyaml(obj)
    assert "&id001" in dump_object(obj)


DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "bookshop-srv",
        "namespace": "bookshop",
        "labels": {"app.kubernetes.io/name": "srv", "sme.sap.com/btp-app-identifier-hash": "0123abcd"},
        "annotations": {"sme.sap.com/owner-identifier": "bookshop.bookshop", "empty": ""},
    },
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "srv"}},
        "template": {
            "metadata": {"labels": {"app": "srv"}},
            "spec": {
                "containers": [
                    {
                        "name": "srv",
                        "image": "registry.example.com/bookshop/srv:1.0.0",
                        "args": ["--port", "8080", "y", "1e3"],
                        "env": [{"name": "PORT", "value": "8080"}, {"name": "DEBUG", "value": "false"}],
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                        "resources": {},
                        "volumeMounts": [],
                    }
                ],
                "securityContext": {"runAsNonRoot": True},
            },
        },
    },
    "status": {"replicas": None, "ratio": 0.5},
}


def test_a_typical_object_is_written_by_the_block_writer_not_pyyaml() -> None:
    written = yamlio._WRITER.document(DEPLOYMENT)
    assert written is not None
    assert written == dump_with_pyyaml(DEPLOYMENT)
    assert "  - '8080'\n" in written  # a string that reads as a number keeps its quotes
    assert "  - 'y'\n" in written and "  - '1e3'\n" in written  # go-yaml would read a bool, a float
    assert written.endswith("status:\n  ratio: 0.5\n  replicas: null\n")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda obj: obj["metadata"]["annotations"].update(script="set -e\nrun\n\n"), "a `|+` block"),
        (
            lambda obj: obj["metadata"]["annotations"].update(script="a\nb\u2028c\n"),
            "U+2028 in a literal block",
        ),
        (lambda obj: obj["metadata"]["annotations"].update(note="a\u2028b"), "U+2028 is a line break"),
        (lambda obj: obj["spec"].update({1: "x"}), "a key that is not a string"),
        (lambda obj: obj["spec"].update({"k" * 130: "x"}), "a key written as `? key`"),
        (lambda obj: obj["spec"].update(when=(1, 2)), "a tuple: the safe dumper refuses it"),
    ],
)
def test_what_the_block_writer_cannot_vouch_for_goes_to_pyyaml_whole(change: Any, why: str) -> None:
    obj = copy.deepcopy(DEPLOYMENT)
    change(obj)
    assert yamlio._WRITER.document(obj) is None, why
    assert _ours_or_error(obj) == _pyyaml_or_error(obj)


@pytest.mark.parametrize("text", ["set -e\nrun\n", "a\n\n  b", " indented\nfirst", "no end\nbreak"])
def test_a_literal_block_is_written_by_the_block_writer_at_every_depth(text: str) -> None:
    obj = copy.deepcopy(DEPLOYMENT)
    obj["metadata"]["annotations"]["script"] = text
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["args"].append(text)
    container["env"].append({"name": "SCRIPT", "value": text})
    obj["spec"]["nested"] = [[text, {"deep": [text]}]]
    written = yamlio._WRITER.document(obj)
    assert written is not None
    assert written == dump_with_pyyaml(obj)
    assert "|" in written


def test_a_str_subclass_is_refused_as_pyyaml_refuses_it() -> None:
    class Name(str):
        pass

    obj = {"metadata": {"name": Name("a")}}
    with pytest.raises(yaml.representer.RepresenterError):
        dump_object(obj)


@pytest.mark.parametrize("root", [[], [{"a": 1}], "text", 3, {}])
def test_a_root_that_is_not_a_non_empty_mapping(root: Any) -> None:
    assert dump_object(root) == dump_with_pyyaml(root)


@pytest.mark.parametrize("text", [t for t in _TRICKY if yaml_block_writer._simple_string_text(t) is not None])
def test_the_shortcut_for_simple_strings_agrees_with_pyyaml_as_value_and_key(text: str) -> None:
    assert yaml_block_writer._simple_string_text(text) == dump_with_pyyaml({"k": text})[3:-1]
    assert yaml_block_writer._simple_string_text(text) == dump_with_pyyaml({text: 0})[: -len(": 0\n")]


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[0-9yYnNoOtTfFeE][0-9eE._xXoObB:-]{0,10}", fullmatch=True))
def test_the_shortcut_agrees_with_pyyaml_on_strings_that_look_like_numbers(text: str) -> None:
    shortcut = yaml_block_writer._simple_string_text(text)
    if shortcut is not None:
        assert shortcut == dump_with_pyyaml({"k": text})[3:-1]


def test_the_memo_keeps_short_values_and_short_literal_blocks_only() -> None:
    writer = BlockWriter(memo_limit=8, memo_longest=40)
    long_line, long_block = "x:" + "a" * 60, "line\n" * 60
    obj = {"a": "x: 1", "b": "k\nv\n", "c": long_line, "d": long_block, "e": 5}
    assert writer.document(obj) == dump_with_pyyaml(obj)
    assert set(writer.values) == {(str, "x: 1"), (str, "k\nv\n"), (int, 5)}
    render = BlockWriter()  # as dump_object's: any single line, literal blocks up to 256
    assert render.document(obj) == dump_with_pyyaml(obj)
    assert (str, long_line) in render.values and (str, long_block) not in render.values
    for index in range(20):  # the memo starts over at its limit
        writer.scalar(f"v: {index}")
        assert len(writer.values) <= 8


@pytest.mark.parametrize("first", [0.0, -0.0])
def test_zero_and_negative_zero_are_remembered_apart(first: float) -> None:
    # 0.0 == -0.0 (the same dict key), but PyYAML writes them differently: whichever the memo
    # met first must not answer for the other, in one object or across objects.
    obj = {"a": first, "b": -first, "c": [first, -first]}
    assert dump_object(obj) == dump_with_pyyaml(obj)
    assert dump_object({"d": -first}) == dump_with_pyyaml({"d": -first})
