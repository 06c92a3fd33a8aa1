"""The post-renderer's stream reader: Helm's document split, head comments, Lists, clear errors.

Rule by rule with small streams, then hypothesis: arbitrary bytes give a clean error or a parse,
never a traceback; valid streams survive a write/read round trip with the same objects.
"""

from __future__ import annotations

import string
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core.errors import BtpGitopsError, SourceSyntaxError
from btp_gitops.generator.core.yamlio import dump_each, dump_object
from btp_gitops.generator.streams.helm import FILENAME_ANNOTATION, read_helm_stream, write_helm_stream

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


def bodies(text: str) -> list[dict[str, Any]]:
    return [d.body for d in read_helm_stream(text).documents]


def problems(text: str) -> list[str]:
    with pytest.raises(SourceSyntaxError) as caught:
        read_helm_stream(text)
    return [p.render() for p in caught.value.problems]


@pytest.mark.parametrize(
    ("stream", "names"),
    [
        pytest.param("---\n" + CONFIGMAP.format(name="a"), ["a"], id="one-document"),
        pytest.param(CONFIGMAP.format(name="a") + "---\n" + CONFIGMAP.format(name="b"), ["a", "b"], id="two"),
        pytest.param("---" + CONFIGMAP.format(name="a"), ["a"], id="separator-glued-to-content"),
        pytest.param(
            CONFIGMAP.format(name="a") + "---apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
            ["a", "b"],
            id="glued-after-a-document",
        ),
        pytest.param("---\n---\n\n---\n" + CONFIGMAP.format(name="a") + "---\n", ["a"], id="empty-documents"),
        pytest.param("---\n# only a comment\n---\n" + CONFIGMAP.format(name="a"), ["a"], id="comment-only"),
        pytest.param("---\n~\n---\n" + CONFIGMAP.format(name="a"), ["a"], id="null-document"),
        pytest.param("\ufeff---\n" + CONFIGMAP.format(name="a"), ["a"], id="byte-order-mark"),
        pytest.param("---\r\n" + CONFIGMAP.format(name="a").replace("\n", "\r\n"), ["a"], id="crlf"),
    ],
)
def test_documents_are_split_as_helm_splits_them(stream: str, names: list[str]) -> None:
    assert [b["metadata"]["name"] for b in bodies(stream)] == names


@pytest.mark.parametrize("value", ["\xa0", "a\xa0", "\u2003", "\u3000x"])
def test_unicode_spaces_before_a_separator_are_content(value: str) -> None:
    # Helm's split (Go regexp) takes ASCII whitespace before `---` only; YAML reads these as text.
    stream = "---\n" + CONFIGMAP.format(name="a") + f"data:\n  k: {value}\n---\n" + CONFIGMAP.format(name="b")
    assert [b.get("data") for b in bodies(stream)] == [{"k": value}, None]


@pytest.mark.parametrize("value", ["\n", "x\n\n", "x\n\n\n", " x\n\n"])
def test_a_kept_block_before_another_document_keeps_its_line_breaks(value: str) -> None:
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": value}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": value}},
    ]
    stream = yaml.safe_dump_all(objects, explicit_start=True, explicit_end=True)  # each closed by `...`
    assert [b["data"]["k"] for b in bodies(stream)] == [value, value]
    written = write_helm_stream(read_helm_stream(stream))
    assert [b["data"]["k"] for b in bodies(written)] == [value, value]
    assert [b["data"]["k"] for b in yaml.safe_load_all(written)] == [value, value]
    assert written.count("...\n") == 2  # each kept block's document closed once, the last one too


def test_head_comments_and_source_are_kept() -> None:
    stream = "---\n# Source: chart/templates/cm.yaml\n# generated\n" + CONFIGMAP.format(name="a")
    document = read_helm_stream(stream).documents[0]
    assert document.source == "chart/templates/cm.yaml"
    assert write_helm_stream(read_helm_stream(stream)) == stream


def test_a_list_is_expanded_and_its_items_keep_the_helm4_filename() -> None:
    stream = (
        "apiVersion: v1\nkind: List\nmetadata:\n  annotations:\n"
        f"    {FILENAME_ANNOTATION}: chart/templates/list.yaml\n"
        "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: b\n"
        f"    annotations:\n      {FILENAME_ANNOTATION}: chart/templates/own.yaml\n"
    )
    found = bodies(stream)
    assert [b["metadata"]["name"] for b in found] == ["a", "b"]
    assert [b["metadata"]["annotations"][FILENAME_ANNOTATION] for b in found] == [
        "chart/templates/list.yaml",
        "chart/templates/own.yaml",
    ]


def test_comment_only_input_gives_non_empty_output() -> None:
    stream = "---\n# Source: chart/templates/empty.yaml\n"
    assert write_helm_stream(read_helm_stream(stream)) == stream


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        pytest.param(
            "- a\n- b\n",
            ["<stdin>: document 1 (line 1): not a Kubernetes object (the document is an array)"],
            id="not-a-mapping",
        ),
        pytest.param(
            "---\n# Source: c/templates/x.yaml\napiVersion: v1\nkind: ConfigMap\n",
            [
                "<stdin>: document 1 (line 2, Source: c/templates/x.yaml): metadata: every object needs metadata"
            ],
            id="no-metadata",
        ),
        pytest.param(
            "---\n" + CONFIGMAP.format(name="a") + "---\nkind: ConfigMap\nmetadata:\n  name: b\n",
            ["<stdin>: document 2 (ConfigMap b, line 7): apiVersion: required field is missing"],
            id="no-apiVersion",
        ),
        pytest.param(
            CONFIGMAP.format(name="a") + "metadata: {}\n",
            ["<stdin>: document 1 (line 1): invalid YAML: line 5, column 1: found duplicate key 'metadata'"],
            id="duplicate-key",
        ),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems:\n- 3\n",
            [
                "<stdin>: document 1 (List item 0, line 1): not a Kubernetes object (the document is an integer)"
            ],
            id="list-item-not-an-object",
        ),
    ],
)
def test_bad_documents_are_named_by_position_line_and_source(stream: str, expected: list[str]) -> None:
    assert problems(stream) == expected


def test_invalid_yaml_is_named_by_document_source_and_stream_line() -> None:
    """The parser's own words for a syntax error change between PyYAML releases; what is ours is
    the error class, the document, its Source, and the line counted in the whole stream."""
    with pytest.raises(SourceSyntaxError) as caught:
        read_helm_stream("---\n# Source: c/templates/x.yaml\na: [\n")

    [problem] = caught.value.problems
    where = "<stdin>: document 1 (line 2, Source: c/templates/x.yaml): invalid YAML: line 4, column 1: "
    rendered = problem.render()
    assert rendered.startswith(where), rendered
    assert rendered.removeprefix(where).strip(), "the parser's reason follows the place"


def test_every_bad_document_is_reported_at_once() -> None:
    assert len(problems("- a\n---\nfoo\n---\n" + CONFIGMAP.format(name="ok") + "---\nkind: X\n")) == 4


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_give_a_clean_error_or_objects(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        stream = read_helm_stream(text)
    except BtpGitopsError as error:
        assert error.problems, "an error must say what is wrong"
        return
    for document in stream.documents:
        assert isinstance(document.body.get("metadata"), dict)


yaml_ish = st.text(alphabet=string.ascii_letters + string.digits + ":-[]{}#&*!|>'\"%@`,?\n ", max_size=200)


@settings(max_examples=300, deadline=None)
@given(yaml_ish)
def test_yaml_like_text_gives_a_clean_error_or_objects(text: str) -> None:
    try:
        read_helm_stream("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n" + text)
    except BtpGitopsError as error:
        assert error.problems


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
# What the API server takes (core.label_syntax): anything else is refused on reading, not passed on.
label_keys = st.from_regex(r"[a-z](?:[a-z0-9-]{0,19}[a-z0-9])?", fullmatch=True)
label_values = st.from_regex(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?)?", fullmatch=True)
data_keys = st.from_regex(r"[-._A-Za-z0-9]{1,12}", fullmatch=True).filter(lambda key: key not in {".", ".."})
objects = st.builds(
    lambda kind, name, labels, data, text_data: {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "labels": labels},
        "data": text_data if kind in {"ConfigMap", "Secret"} else data,
    },
    st.sampled_from(["ConfigMap", "Secret", "Service", "Thing"]),
    names,
    st.dictionaries(label_keys, label_values, max_size=3),
    st.dictionaries(st.text(max_size=10), values, max_size=4),
    st.dictionaries(data_keys, st.text(max_size=10) | st.none(), max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(objects, min_size=1, max_size=6), st.lists(st.sampled_from(["", "\n", "# note\n"]), max_size=6)
)
def test_valid_streams_round_trip(generated: list[dict[str, Any]], fillers: list[str]) -> None:
    parts = []
    for index, obj in enumerate(generated):
        filler = fillers[index] if index < len(fillers) else ""
        parts.append(f"---\n{filler}# Source: chart/templates/t{index}.yaml\n{dump_object(obj)}")
    stream = "".join(parts)
    read = read_helm_stream(stream)
    assert [d.body for d in read.documents] == generated
    again = read_helm_stream(write_helm_stream(read))
    assert [d.body for d in again.documents] == generated
    assert [d.source for d in again.documents] == [
        f"chart/templates/t{i}.yaml" for i in range(len(generated))
    ]


def test_deep_nesting_is_a_clean_error() -> None:
    # Whether the parser's own depth limit or Python's recursion limit stops it, and in whatever
    # words PyYAML puts it, the result is one problem at the document, not a traceback.
    [problem] = problems("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert problem.startswith("<stdin>: document 1 (line 1): invalid YAML: ")


@pytest.mark.parametrize(
    "objs",
    [
        [],
        [{"a": "x\n\n"}, {"b": 1}],
        [{"c": "y\n\n\n"}, {"d": "q"}, {"e": "tail\n\n"}],
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}, "data": {"k": "line\n"}}],
    ],
)
def test_dump_each_matches_dumping_one_by_one(objs: list[dict[str, Any]]) -> None:
    bodies = dump_each(objs)
    assert len(bodies) == len(objs)
    assert [yaml.safe_load(b) for b in bodies] == objs
    assert list(yaml.safe_load_all("".join(f"---\n{b}" for b in bodies))) == objs
    assert [b.removesuffix("...\n") for b in bodies] == [dump_object(o).removesuffix("...\n") for o in objs]
