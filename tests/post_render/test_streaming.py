"""post-render one document at a time against the whole-stream implementation it replaced.

Differential: streams shuffled from real documents (the chart, the edge cases, the bench shapes),
with separators, comments, byte order marks and document end markers placed at random, must give
the same bytes, the same notes and the same errors both ways; the split into documents must not
depend on how the input arrives in chunks; and a failing stream writes nothing.
"""

from __future__ import annotations

import io
import random
import tracemalloc
from datetime import UTC, datetime

import pytest
import yaml

from bench.stream_fixture import bench_stream
from btp_gitops.generator.core.errors import SourceSyntaxError, UsageError
from btp_gitops.generator.pipeline.post_render import (
    PostRenderRequest,
    PostRenderResult,
    _post_render_whole_stream,
    post_render,
    post_render_to,
)
from btp_gitops.generator.streams.helm import _raw_documents, iter_raw_documents, split_stream_pieces
from tests.post_render.test_golden_output import CREDENTIALS, GOLDEN

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PIECES = [
    piece
    for name in ("edge-cases", "operator-chart", "bench-helm3", "bench-helm4")
    for piece in split_stream_pieces((GOLDEN / f"{name}.in.yaml").read_text(encoding="utf-8"))[:40]
]
SEPARATORS = ["---\n", "---\n\n", "\n---\n", "---   \n", "--- # c\n", "---\n# Source: x/y.yaml\n"]
REQUESTS = [
    PostRenderRequest(),
    PostRenderRequest(certificate_mode="gardener", namespace="other"),
    PostRenderRequest(credentials=CREDENTIALS, manager_image="m:1", chart_version="9.9.9"),
]


def _no_key() -> object:
    raise AssertionError("no key is generated here")


def _random_stream(rnd: random.Random) -> str:
    parts = []
    for piece in rnd.sample(PIECES, rnd.randint(0, 12)):
        parts.append(rnd.choice(SEPARATORS) + piece + rnd.choice(["", "\n", "\n\n", "  \n"]))
    if rnd.random() < 0.1:
        parts.insert(rnd.randint(0, len(parts)), "---\n...\n")
    if rnd.random() < 0.1:
        parts.insert(0, "\ufeff")
    if rnd.random() < 0.1:
        parts.insert(rnd.randint(0, len(parts)), "---\n# only a comment\n")
    return "".join(parts)


def _outcome(run: object) -> tuple[str, object]:
    try:
        result = run()  # type: ignore[operator]
    except (SourceSyntaxError, UsageError) as error:
        return "error", (type(error), str(error), [p.render() for p in getattr(error, "problems", [])])
    return "ok", (result.text, result.helm4, result.objects, result.added, result.notes)


@pytest.mark.parametrize("seed", range(40))
def test_streaming_equals_the_whole_stream_implementation(seed: int) -> None:
    rnd = random.Random(seed)
    text = _random_stream(rnd)
    request = REQUESTS[seed % len(REQUESTS)]
    streamed = _outcome(lambda: post_render(text, request, NOW, _no_key))  # type: ignore[arg-type]
    whole = _outcome(
        lambda: _post_render_whole_stream(text, request, NOW, _no_key, "<stdin>", None)  # type: ignore[arg-type]
    )
    assert streamed == whole


@pytest.mark.parametrize(
    "broken",
    [
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n---\napiVersion: v1\n",
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, name: b}\n",
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n"
        "    postrenderer.helm.sh/postrender-filename: ../escape.yaml\n",
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",  # no chart version anywhere
        "---\napiVersion: v1\nkind: List\nitems:\n- null\n- apiVersion: v1\n  kind: ConfigMap\n"
        "  metadata: {name: a}\n",
    ],
)
def test_errors_are_the_same_and_nothing_is_written(broken: str) -> None:
    request = PostRenderRequest()
    whole = _outcome(
        lambda: _post_render_whole_stream(broken, request, NOW, _no_key, "<stdin>", None)  # type: ignore[arg-type]
    )
    assert whole[0] == "error"
    assert _outcome(lambda: post_render(broken, request, NOW, _no_key)) == whole  # type: ignore[arg-type]
    out = io.StringIO()
    with pytest.raises((SourceSyntaxError, UsageError)):
        post_render_to(io.BytesIO(broken.encode()), out, request, NOW, _no_key)  # type: ignore[arg-type]
    assert out.getvalue() == ""


@pytest.mark.parametrize("seed", range(20))
def test_the_split_does_not_depend_on_the_chunks(seed: int) -> None:
    rnd = random.Random(seed)
    text = _random_stream(rnd) + "".join(
        rnd.choice(["---", "\n", " ", "#c", "\t", "\r\n"]) for _ in range(20)
    )
    expected = list(_raw_documents(text.lstrip("\ufeff")))
    for size in (1, 3, 64, 4096):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert list(iter_raw_documents(iter(chunks))) == expected, size


def test_memory_at_the_peak_is_less_than_the_stream() -> None:
    """What "one document at a time" promises, measured: Python's allocations at their peak over a
    post-render of 4,000 documents (3 MB in, as much out) stay below the size of the stream, so
    neither the input, nor the output, nor a cache of what was read or written is held whole (the
    input spool, the output buffer and the YAML resolvers' memos each fit in a fraction of it)."""
    data = bench_stream(4000).encode()
    source = io.BytesIO(data)
    out = _CountingSink()
    tracemalloc.start()
    try:
        result = post_render_to(source, out, PostRenderRequest(), NOW, _no_key)  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(result, PostRenderResult)
    assert result.objects > 4000  # with the added certificate objects
    assert out.written > len(data)
    assert peak < len(data), f"peak {peak:,} bytes for a stream of {len(data):,}"


class _CountingSink(io.TextIOBase):
    """stdout that keeps nothing: only the output's size is needed here."""

    written = 0

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)


@pytest.mark.parametrize("last_kept", [True, False])
def test_kept_line_breaks_survive_the_stream_between_documents(last_kept: bool) -> None:
    """A `|+` value ends its document with blank lines, which Helm's split before the next `---`
    would take: the output closes such a document with `...`, once, the last one included."""
    values = ["x\n\n", "plain", "\n"] if last_kept else ["x\n\n", "\n", "plain"]
    stream = yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"k": v}}
            for i, v in enumerate(values)
        ],
        explicit_start=True,
        explicit_end=True,
    )
    out = io.StringIO()
    request = PostRenderRequest(chart_version="0.1.0")
    post_render_to(io.BytesIO(stream.encode()), out, request, NOW, _no_key)  # type: ignore[arg-type]
    text = out.getvalue()
    assert [d["data"]["k"] for d in yaml.safe_load_all(text) if d] == values
    again = [piece for piece in split_stream_pieces(text) if "kind:" in piece]
    assert [yaml.safe_load(piece)["data"]["k"] for piece in again] == values  # as Helm splits it
    assert text.count("...\n") == 2
