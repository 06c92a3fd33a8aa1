"""The manifest stream Helm hands a post-renderer, read and written back in the same shape.

Helm 3 writes each document as `---`, a `# Source: <chart>/templates/<file>` comment and the
object, in its kind install order, and leaves hooks out. Helm 4 writes documents without Source
comments but annotates every one of them, hooks included, with
`postrenderer.helm.sh/postrender-filename`, which it needs to split our output back into files.

Reading follows Helm's own document split (a `---` at the start of a line, even glued to content
as in `---apiVersion`), keeps the comment lines that head a document (Source among them), drops
empty documents, expands `kind: List`, and refuses anything that is not an object with
`metadata`, naming the document's position, line and Source. Writing puts every document back
in the order it came, with its head comments, in the project's YAML style. Comments inside an
object are not kept: the YAML library drops them on load.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from btp_gitops.generator.core.errors import Problem, SourceSyntaxError
from btp_gitops.generator.core.object_shape import shape_problems
from btp_gitops.generator.core.objects import KubeObject, Manifest, describe
from btp_gitops.generator.core.validation import type_name
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import (
    dump_each,
    load_stream_document,
    load_stream_documents,
    yaml_problem_location,
)

FILENAME_ANNOTATION = "postrenderer.helm.sh/postrender-filename"
SOURCE_PREFIX = "# Source: "

# Helm's own split pattern (see generator.core.yamlio.split_documents); finditer gives us the
# offsets too, so that errors can name the line a document starts on. Go's `\s` is ASCII
# whitespace only: Python's would also take U+00A0 and other Unicode spaces, which YAML reads as
# content (a value `\xa0` before a `---` would lose itself).
_SEPARATOR = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")

# Whitespace as YAML and Helm's split see it (a line of other Unicode spaces is content).
_BLANK = " \t\r\f"


@dataclass(slots=True)
class StreamDocument:
    """One object of the stream, with the comment lines that headed it in the input."""

    body: KubeObject
    position: int  # 1-based index of the input document it came from
    line: int  # 1-based line of the stream where that document starts
    comments: tuple[str, ...] = ()  # head comment lines, `# Source:` included, as written
    generated: bool = False  # added by a transform, not read from the stream

    @property
    def source(self) -> str | None:
        for comment in self.comments:
            if comment.startswith(SOURCE_PREFIX):
                return comment[len(SOURCE_PREFIX) :].strip()
        return None

    def origin(self) -> str:
        """Where the object came from, for notes and errors: its template, else its position."""
        filename = _filename_annotation(self.body)
        return self.source or filename or f"document {self.position}"

    def as_manifest(self) -> Manifest:
        return Manifest(self.body, self.origin())


@dataclass(slots=True)
class HelmStream:
    """A parsed post-renderer input: its objects, and the comment-only documents it held."""

    documents: list[StreamDocument]
    comment_only: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def annotated_by_helm4(self) -> bool:
        """True when Helm 4 sent the stream: it puts its filename annotation on every document."""
        return any(_filename_annotation(d.body) for d in self.documents if not d.generated)


def _filename_annotation(body: KubeObject) -> str | None:
    metadata = body.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    value = annotations.get(FILENAME_ANNOTATION) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class _RawDocument:
    position: int
    line: int
    comments: tuple[str, ...]
    content: str
    content_line: int  # line of the stream where `content` starts


def _split_head_comments(piece: str) -> tuple[tuple[str, ...], str, int]:
    """(comment lines heading the piece, the rest, how many lines the head took)."""
    lines = piece.split("\n")
    comments: list[str] = []
    taken = 0
    for line in lines:
        stripped = line.strip(_BLANK)
        if stripped and not stripped.startswith("#"):
            break
        if stripped:
            comments.append(stripped)
        taken += 1
    return tuple(comments), "\n".join(lines[taken:]), taken


def _raw_documents(text: str) -> Iterator[_RawDocument]:
    start = 0
    position = 0
    line = 1  # line of the stream that `start` is on, counted incrementally (streams are large)
    for match in [*_SEPARATOR.finditer(text), None]:
        end = match.start() if match else len(text)
        piece = text[start:end]
        if piece.strip():
            position += 1
            comments, content, head_lines = _split_head_comments(piece)
            yield _RawDocument(position, line, comments, content, line + head_lines)
        if match:
            line += text.count("\n", start, match.end())
            start = match.end()


def _where(raw: _RawDocument, body: Any = None, item: int | None = None) -> str:
    """`Kind ns/name, line L, Source: file` as far as known, to name a document in an error."""
    parts = [describe(body)] if isinstance(body, dict) and isinstance(body.get("metadata"), dict) else []
    if item is not None:
        parts.append(f"List item {item}")
    parts.append(f"line {raw.line}")
    source = next(
        (c[len(SOURCE_PREFIX) :].strip() for c in raw.comments if c.startswith(SOURCE_PREFIX)), None
    )
    if source:
        parts.append(f"Source: {source}")
    return ", ".join(parts)


def _object_problems(
    raw: _RawDocument, body: Any, stream_name: str, item: int | None = None
) -> list[Problem]:
    """Why `body` cannot be handed back to Helm, if it cannot: not an object, or no metadata."""
    if not isinstance(body, dict):
        found = (
            f"the document is {'an' if type_name(body) in {'array', 'integer'} else 'a'} {type_name(body)}"
        )
        return [
            Problem(stream_name, f"not a Kubernetes object ({found})", raw.position, _where(raw, body, item))
        ]
    found_problems: list[tuple[str | None, str]] = [
        (key, "required field is missing")
        for key in ("apiVersion", "kind")
        if not isinstance(body.get(key), str) or not body[key]
    ]
    if not _is_list(body):
        if not isinstance(body.get("metadata"), dict):
            found_problems.append(("metadata", "every object needs metadata"))
        if (
            not found_problems
        ):  # the shape of the rest is looked at once apiVersion, kind and metadata are there
            found_problems = list(shape_problems(body))
    if not found_problems:
        return []
    where = _where(raw, body, item)  # only for a problem: it costs as much as the checks
    return [Problem(stream_name, message, raw.position, where, path) for path, message in found_problems]


def _is_list(body: KubeObject) -> bool:
    return body.get("kind") == "List" and body.get("apiVersion") == "v1"


def _list_items(
    raw: _RawDocument, body: KubeObject, stream_name: str
) -> tuple[list[KubeObject], list[Problem]]:
    items = body.get("items") or []
    if not isinstance(items, list):
        return [], [Problem(stream_name, "must be of type array", raw.position, _where(raw), "items")]
    problems = []
    for index, item in enumerate(items):
        problems += _object_problems(raw, item, stream_name, index)
    return items, problems


def _parsed(raws: list[_RawDocument], stream_name: str, problems: list[Problem]) -> list[Any]:
    """The parsed content of every raw document (None for one that failed, with its problem)."""
    fast = load_stream_documents([raw.content for raw in raws])
    if fast is not None:
        return fast
    parsed: list[Any] = []
    budget = AliasBudget()  # the alias limit holds for the whole stream, not per document
    for raw in raws:
        try:
            parsed.append(load_stream_document(raw.content, budget))
        except yaml.YAMLError as error:
            detail = yaml_problem_location(error, line_offset=raw.content_line - 1)
            problems.append(Problem(stream_name, f"invalid YAML: {detail}", raw.position, _where(raw)))
            parsed.append(None)
        except RecursionError:
            problems.append(
                Problem(stream_name, "invalid YAML: nested too deeply", raw.position, _where(raw))
            )
            parsed.append(None)
    return parsed


def read_helm_stream(text: str, stream_name: str = "<stdin>") -> HelmStream:
    """Parse a post-renderer input; every problem of every document is reported at once."""
    stream = HelmStream(documents=[])
    problems: list[Problem] = []
    raws = []
    for raw in _raw_documents(text.lstrip("\ufeff")):
        if raw.content.strip():
            raws.append(raw)
        else:
            stream.comment_only.append(raw.comments)
    for raw, body in zip(raws, _parsed(raws, stream_name, problems), strict=True):
        if body is None:
            if not any(p.document == raw.position for p in problems):
                stream.comment_only.append(raw.comments)
            continue
        found = _object_problems(raw, body, stream_name)
        if found:
            problems += found
            continue
        if _is_list(body):
            items, found = _list_items(raw, body, stream_name)
            problems += found
            bodies = _inherit_filename(body, items)
        else:
            bodies = [body]
        stream.documents += [StreamDocument(b, raw.position, raw.line, raw.comments) for b in bodies]
    if problems:
        raise SourceSyntaxError("the manifest stream is not valid post-renderer input", problems)
    return stream


def _inherit_filename(list_body: KubeObject, items: list[KubeObject]) -> list[KubeObject]:
    """Items of a Helm 4 List keep the List's filename so Helm can put them back in its file."""
    filename = _filename_annotation(list_body)
    if filename:
        for item in items:
            item["metadata"].setdefault("annotations", {}).setdefault(FILENAME_ANNOTATION, filename)
    return items


def write_helm_stream(stream: HelmStream) -> str:
    """Every document as `---`, its head comments, then the object; order as in `documents`.

    A stream with no object left gives back its comment-only documents, so that non-empty input
    never yields empty output (Helm 4 treats empty output as a failed post-renderer).
    """
    bodies = dump_each([document.body for document in stream.documents])
    parts = [document_text(document, body) for document, body in zip(stream.documents, bodies, strict=True)]
    if not parts:
        parts = ["---\n" + "".join(f"{c}\n" for c in comments) for comments in stream.comment_only]
    return "".join(parts)


# --- one document at a time ------------------------------------------------------------------
# The same split, document reading and checks as above, over a stream given as chunks of text, so
# that post-render holds one document at a time instead of the stream.

_TAIL_SEPARATOR = re.compile(r"[\t\n\f\r ]*\n---[\t\n\f\r ]*")  # `_SEPARATOR` past the start of the text


def iter_raw_documents(chunks: Iterable[str]) -> Iterator[_RawDocument]:
    """`_raw_documents` over the text that `chunks` make up, without joining them.

    A separator is taken once the text after it is known not to extend it (its trailing
    whitespace ends before the buffer does), so the pieces, positions and lines are the ones the
    whole text gives; leading byte order marks are dropped as `read_helm_stream` drops them.
    """
    buffer = ""
    at_start = True  # the buffer begins where the text begins: `^` may match at 0
    bom_done = False
    position = 0
    line = 1
    for next_chunk in _with_end(chunks):
        final = next_chunk is None
        if next_chunk:
            text = next_chunk if bom_done else next_chunk.lstrip("\ufeff")
            bom_done = bom_done or bool(text)
            buffer += text
        start = 0
        while True:
            match = _next_separator(buffer, start, at_start)
            if match is None or (not final and match.end() == len(buffer)):
                break
            piece = buffer[start : match.start()]
            if piece.strip():
                position += 1
                comments, content, head_lines = _split_head_comments(piece)
                yield _RawDocument(position, line, comments, content, line + head_lines)
            line += buffer.count("\n", start, match.end())
            start = match.end()
        if final:
            piece = buffer[start:]
            if piece.strip():
                position += 1
                comments, content, head_lines = _split_head_comments(piece)
                yield _RawDocument(position, line, comments, content, line + head_lines)
            return
        if start:
            buffer = buffer[start:]
            at_start = False


def _next_separator(buffer: str, start: int, at_start: bool) -> re.Match[str] | None:
    """`_SEPARATOR.search(buffer, start)`, found faster: a separator is a `---` at the start of a
    line with the whitespace around it, so the search jumps to each line starting with `---` and
    matches from the whitespace run before it."""
    if at_start and start == 0 and buffer.startswith("---"):
        return _SEPARATOR.match(buffer, 0)
    dashes = buffer.find("\n---", start)
    if dashes < 0:
        return None
    begin = dashes
    while begin > start and buffer[begin - 1].isspace():
        begin -= 1
    return _TAIL_SEPARATOR.match(buffer, begin)


def _with_end(chunks: Iterable[str]) -> Iterator[str | None]:
    yield from chunks
    yield None


@dataclass(slots=True)
class ReadDocument:
    """One input document of a stream read one at a time: its objects (a List gives several, a
    comment-only document none) or the problems that make it unusable."""

    raw: _RawDocument
    documents: list[StreamDocument]
    problems: list[Problem]
    comment_only: bool = False


class NeedsWholeStream(Exception):
    """The stream holds what makes `read_helm_stream` read every document on its own (document end
    markers, directives, byte order marks inside, a document that parses only on its own): only
    reading the whole stream gives its values."""


def needs_whole_stream(raw: _RawDocument) -> bool:
    """True for a document `read_helm_stream` may read on its own rather than as part of the
    stream (which changes the value of a block scalar ending the document): see `_parsed`."""
    content = raw.content
    return content.startswith(("...", "%")) or "\n..." in content or "\n%" in content or "\ufeff" in content


def mark_last(raws: Iterable[_RawDocument]) -> Iterator[tuple[_RawDocument, bool]]:
    """Each raw document, and whether it is the last one with content (a lookahead of one)."""
    pending: list[_RawDocument] = []
    for raw in raws:
        if not raw.content.strip():
            yield raw, False
            continue
        if pending:
            yield pending.pop(), False
        pending.append(raw)
    if pending:
        yield pending.pop(), True


def read_document(
    raw: _RawDocument, budget: AliasBudget, stream_name: str = "<stdin>", *, last: bool = True
) -> ReadDocument:
    """One document of the stream, parsed and checked as `read_helm_stream` parses and checks it
    (`budget` is the stream's: one for every document of one stream, in order).

    `read_helm_stream` reads a stream's documents as one text, each but the `last` followed by a
    line break and the next, and each on its own only when that fails (for the errors, which then
    name lines of the document): so does this. Raises NeedsWholeStream when the document reads on
    its own only, where `read_helm_stream` would read every document so.
    """
    if not raw.content.strip():
        return ReadDocument(raw, [], [], comment_only=True)
    remaining = budget.remaining
    try:
        body = load_stream_document(raw.content if last else raw.content + "\n", budget)
    except (yaml.YAMLError, RecursionError):
        budget.remaining = remaining
        body = None
    else:
        return _checked(raw, body, stream_name)
    try:
        load_stream_document(raw.content, budget)
    except yaml.YAMLError as error:
        detail = yaml_problem_location(error, line_offset=raw.content_line - 1)
        return ReadDocument(
            raw, [], [Problem(stream_name, f"invalid YAML: {detail}", raw.position, _where(raw))]
        )
    except RecursionError:
        message = "invalid YAML: nested too deeply"
        return ReadDocument(raw, [], [Problem(stream_name, message, raw.position, _where(raw))])
    raise NeedsWholeStream(f"document {raw.position} reads on its own only")


def _checked(raw: _RawDocument, body: Any, stream_name: str) -> ReadDocument:
    if body is None:
        return ReadDocument(raw, [], [], comment_only=True)
    problems = _object_problems(raw, body, stream_name)
    if problems:
        return ReadDocument(raw, [], problems)
    if _is_list(body):
        items, problems = _list_items(raw, body, stream_name)
        bodies = _inherit_filename(body, items)
    else:
        bodies = [body]
    return ReadDocument(
        raw, [StreamDocument(b, raw.position, raw.line, raw.comments) for b in bodies], problems
    )


def filename_annotation(body: KubeObject) -> str | None:
    """Helm 4's filename annotation of an object, if it carries one."""
    return _filename_annotation(body)


def document_text(document: StreamDocument, body_text: str) -> str:
    """A document as `write_helm_stream` writes it: `---`, its head comments, the dumped body,
    closed by `...` when the body ends in whitespace that matters (`closed_body`)."""
    return "---\n" + "".join(f"{comment}\n" for comment in document.comments) + closed_body(body_text)


def closed_body(body_text: str) -> str:
    """`body_text`, with a document end marker when Helm's split would change its meaning.

    The split takes all whitespace before a `---` as part of the separator. Only a block scalar
    that keeps its final line breaks (`|+`) can end a body with whitespace beyond its last `\n`,
    and the split would drop those line breaks from the value; `...` ends the document before
    them. (libyaml writes that marker itself only at the end of a stream.)
    """
    if body_text.endswith("\n\n") or body_text[:-1].endswith((" ", "\t")):
        return body_text + "...\n"
    return body_text


def comment_only_text(comments: Iterable[tuple[str, ...]]) -> str:
    """What `write_helm_stream` writes for a stream without objects: its comment-only documents."""
    return "".join("---\n" + "".join(f"{c}\n" for c in group) for group in comments)


def split_stream_pieces(text: str) -> list[str]:
    """The text of each document of a stream with content (head comments included), as split."""
    return [
        "".join(f"{c}\n" for c in raw.comments) + raw.content
        for raw in _raw_documents(text.lstrip("\ufeff"))
        if raw.content.strip()
    ]
