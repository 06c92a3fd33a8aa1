"""YAML in and out, with one style everywhere: what the rest of btp-gitops calls to read and write it.

Reading (core.yaml_reading): libyaml's C parser, YAML 1.1 scalars as Kubernetes reads them except
timestamps, which stay strings; source files strictly (a duplicate key is an error), Helm output
and values as Helm reads them. Every read is bounded (core.yaml_limits): document size, alias
expansion per file or stream (`AliasBudget`), depth.

Writing (core.yaml_style): block style, 2-space indent, a fixed key order, and the same bytes for
the same object, always. `dump_object` and `DocumentWriter` (a stream, as post-render writes it)
write them through the block writer (core.yaml_block_writer) wherever it vouches for an object,
else through PyYAML's emitter.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.yaml_block_writer import BlockWriter
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yaml_reading import (
    FastLoader,
    Loader,
    StrictLoader,
    bounded_documents,
    load_one,
)
from btp_gitops.generator.core.yaml_style import DUMP_OPTIONS, Dumper, dump_with_pyyaml

_WRITER = BlockWriter()


def dump_object(obj: Any) -> str:
    """One object as a YAML document body (no leading `---`)."""
    text = _WRITER.document(obj)
    return dump_with_pyyaml(obj) if text is None else text


def dump_report(report: Mapping[str, Any]) -> str:
    """A command's result (`-o yaml`) as one document, keys sorted as the JSON output sorts them."""

    def ordered(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: ordered(value[key]) for key in sorted(value)}
        if isinstance(value, list | tuple):
            return [ordered(item) for item in value]
        return value

    return dump_object(ordered(report))


def dump_each(objects: list[Any]) -> list[str]:
    """Each object as its own document body, like `dump_object`, as one stream (`DocumentWriter`).

    (A body ending in a `|+` block gets no `...` marker here: the next `---` ends it just as well;
    a stream-end marker, when libyaml writes one, is part of the last body.)
    """
    writer = DocumentWriter()
    try:
        bodies = [writer.dump(obj) for obj in objects]
    finally:
        tail = writer.close()
    if bodies:
        bodies[-1] += tail
    return bodies


def dump_documents(objects: list[Any]) -> str:
    """Several objects as a multi-document stream, each document starting with `---`."""
    return "".join(f"---\n{dump_object(obj)}" for obj in objects)


def yaml_problem_location(error: yaml.YAMLError, line_offset: int = 0) -> str:
    """`line L, column C: problem`; `line_offset` maps a piece of a stream back to its line."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if mark is not None:
        return f"line {mark.line + 1 + line_offset}, column {mark.column + 1}: {problem}"
    return str(problem)


def load_source_documents(text: str, file: str) -> Iterator[tuple[int, Any]]:
    """Yield (1-based document index, parsed document) of a source file, strictly.

    Raises `SourceSyntaxProblem` carrying a `Problem` that names the file, the document and the
    line where parsing failed.
    """
    loader = StrictLoader(text)
    index = 0
    try:
        for index, document in enumerate(bounded_documents(loader, text), start=1):
            yield index, document
    except yaml.YAMLError as error:
        raise SourceSyntaxProblem(
            Problem(file=file, document=index + 1, message=f"invalid YAML: {yaml_problem_location(error)}")
        ) from error
    except RecursionError as error:
        raise SourceSyntaxProblem(
            Problem(file=file, document=index + 1, message="invalid YAML: nested too deeply")
        ) from error
    finally:
        loader.dispose()


def load_stream_document(text: str, budget: AliasBudget | None = None) -> Any:
    """Parse one document of a manifest stream strictly (duplicate keys are errors).

    Pass one `budget` to every piece of one stream, so that the alias limit holds for the whole.
    """
    return load_one(text, StrictLoader, budget)


def load_stream_documents(pieces: list[str]) -> list[Any] | None:
    """Parse many single-document pieces in one strict pass; None when any piece fails or the
    pieces do not map one-to-one onto documents (the caller then parses them one by one, which
    names the piece at fault). One pass spares a loader per document on large streams."""
    text = "\n---\n".join(pieces)
    loader = StrictLoader(text)
    try:
        documents = list(bounded_documents(loader, text))
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    return documents if len(documents) == len(pieces) else None


def load_values_document(text: str) -> Any:
    """Parse a Helm values file (or Chart.yaml): YAML as Helm reads it, bounded like every read."""
    return load_one(text, Loader)


def load_trusted_document(text: str, budget: AliasBudget | None = None) -> Any:
    """Parse one machine-written document (e.g. a chart template's output) quickly, though still
    within the limits: a chart or a previous output tree may come from an untrusted change. Pass
    one `budget` to every piece of one file or chart, so that the alias limit holds for the whole.
    """
    return load_one(text, FastLoader, budget)


class SourceSyntaxProblem(Exception):
    """Carries the Problem of a YAML syntax error up to the loader, which collects them."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.render())
        self.problem = problem


# Helm splits rendered templates on this pattern (a `---` at the start of a line, glued content
# included); we split the same way so that a document boundary means what it means to Helm.
_DOCUMENT_SEPARATOR = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")  # Go's \s: ASCII only


def split_documents(text: str) -> list[str]:
    """Split a multi-document YAML text the way Helm does; blank pieces are dropped."""
    return [piece for piece in _DOCUMENT_SEPARATOR.split(text) if piece.strip()]


# The block writer of a `DocumentWriter`: it lives through a whole stream, so it remembers few
# scalars and no long ones (post-render's peak memory stays flat with the stream's size).
_STREAM_MEMO_LIMIT = 1 << 12
_STREAM_MEMO_LONGEST = 256


class DocumentWriter:
    """Objects dumped one at a time as one libyaml emitter writes them as a stream: each document
    `---` and its body (`dump` gives the body), then whatever the emitter writes at the stream's end
    (`close` gives it: a `...` after a last document ending in a `|+` block, else nothing).

    A body is written by the block writer (`BlockWriter`) when it vouches for the object, else by
    the emitter. Both write the same bytes; the emitter carries nothing from one document into the
    next but whether the stream is left open-ended (`|+`, which the block writer refuses), and
    that only shows at the end: `close` gives nothing after a last body the block writer wrote.
    """

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        options = {key: value for key, value in DUMP_OPTIONS.items() if key != "Dumper"}
        self._dumper = Dumper(self._buffer, explicit_start=True, **options)
        self._dumper.open()
        self._blocks = BlockWriter(_STREAM_MEMO_LIMIT, _STREAM_MEMO_LONGEST)
        self._last_by_blocks = False
        self._closed = False

    def _take(self) -> str:
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text

    def dump(self, obj: Any) -> str:
        # An empty mapping is `--- {}` in a stream: left to the emitter, as any other root.
        text = self._blocks.document(obj) if obj else None
        self._last_by_blocks = text is not None
        if text is not None:
            return text
        self._dumper.represent(obj)
        return self._take().removeprefix("---\n")

    def close(self) -> str:
        if self._closed:
            return ""
        self._closed = True
        try:
            self._dumper.close()
            tail = self._take()
        finally:
            self._dumper.dispose()
        return "" if self._last_by_blocks else tail
