"""`DocumentWriter` writes the stream libyaml's emitter writes, document by document, byte for byte.

post-render writes every object through one `DocumentWriter`, which lays out the bodies the block
writer vouches for itself and hands the rest to the emitter. The reference here is the path it
replaced: every object through one `Dumper` (core.yaml_style) over one buffer, `explicit_start`, split at the
emitter's document ends (what `dump_each` did before), with the emitter's own stream end. Compared
on the bench stream, the golden streams' objects, and generated lists of objects holding the
scalars that change how a document ends (literal blocks with `|`, `|-`, `|2-`, `|+`, at every
depth), so that the block writer's bodies and the emitter's bodies interleave in every order.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.stream_fixture import bench_stream
from btp_gitops.generator.core.yaml_style import DUMP_OPTIONS, Dumper
from btp_gitops.generator.core.yamlio import DocumentWriter, dump_each
from btp_gitops.generator.streams.helm import read_helm_stream
from tests.post_render.test_golden_output import GOLDEN


def _emitter_only(objects: list[Any]) -> tuple[list[str], str]:
    """(bodies, stream end) as one libyaml emitter writes the objects, nothing else involved."""
    buffer = io.StringIO()
    options = {key: value for key, value in DUMP_OPTIONS.items() if key != "Dumper"}
    dumper = Dumper(buffer, explicit_start=True, **options)
    bodies = []
    try:
        dumper.open()
        for obj in objects:
            start = buffer.tell()
            dumper.represent(obj)
            bodies.append(buffer.getvalue()[start:].removeprefix("---\n"))
        end = buffer.tell()
        dumper.close()
    finally:
        dumper.dispose()
    return bodies, buffer.getvalue()[end:]


def _document_writer(objects: list[Any]) -> tuple[list[str], str]:
    writer = DocumentWriter()
    bodies = [writer.dump(obj) for obj in objects]
    return bodies, writer.close()


def _assert_same(objects: list[Any]) -> None:
    assert _document_writer(objects) == _emitter_only(objects)
    bodies, tail = _emitter_only(objects)
    if bodies:
        bodies[-1] += tail
    assert dump_each(objects) == bodies


def _stream_objects(text: str) -> list[Any]:
    return [document.body for document in read_helm_stream(text).documents]


def test_the_bench_stream_is_written_as_the_emitter_writes_it() -> None:
    objects = _stream_objects(bench_stream(400))
    writer = DocumentWriter()
    for obj in objects:
        writer.dump(obj)
    assert writer._last_by_blocks  # the bench's objects, literal blocks included, are laid out here
    _assert_same(objects)


@pytest.mark.parametrize("name", sorted(path.name for path in GOLDEN.glob("*.yaml")))
def test_the_golden_streams_are_written_as_the_emitter_writes_them(name: str) -> None:
    _assert_same(_stream_objects((GOLDEN / name).read_text(encoding="utf-8")))


_BLOCKS = [
    "a\nb", "a\nb\n", "a\n\n", "a\n\n\n", "\n", "\n\n", " a\nb\n", "\na", "a\n\nb\n", "a \nb",
    "x: 1\ny:\n  - z\n", "a\r\nb\n", "a\nb\u2028c\n", "é\n日本\n", "a\n...\nb", "a\n---\nb\n", "\ta\nb",
]  # fmt: skip
_scalars = (
    st.sampled_from(_BLOCKS)
    | st.sampled_from(["plain", "", "y", "1e3", "123", "a: b", "#x", "- a", "'q'", "é"])
    | st.integers()
    | st.booleans()
    | st.none()
)
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["k", "data", "spec", "a b", "x"]), children, max_size=3)
    ),
    max_leaves=12,
)
_objects = st.dictionaries(
    st.sampled_from(["apiVersion", "kind", "metadata", "data", "z"]), _values, max_size=4
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_objects, max_size=6))
def test_any_list_of_objects_is_written_as_the_emitter_writes_it(objects: list[dict[str, Any]]) -> None:
    _assert_same(objects)


_SHARED = {"k": "v\n", "l": [1, 2]}


@pytest.mark.parametrize(
    "objects",
    [
        [{"a": "x\n\n"}],  # the emitter ends the stream with `...`
        [{"a": "x\n\n"}, {"b": "y\n"}],  # not after a block writer's body
        [{"b": "y\n"}, {"a": "x\n\n"}],
        [{"a": "x\n\n"}, {}, {"b": 1}],  # `--- {}`: the emitter's, as any empty root
        [{"a": ["x\n\n", {"b": 1}]}, {"c": {"d": "e\nf"}}],
        [{"a": _SHARED, "b": [_SHARED]}, {"c": "d\n"}],  # an anchor and alias: the emitter's
        [{"a": "x\n\n"}, {"a": _SHARED, "b": _SHARED}],
    ],
)
def test_how_the_stream_ends_follows_the_emitter(objects: list[dict[str, Any]]) -> None:
    _assert_same(objects)
