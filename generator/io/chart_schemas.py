"""Schema references a chart may make: only inside its own schema, never to the network or a file.

Helm validates values against every `values.schema.json` of a chart and of its subcharts (those
under `charts/`, directories or packaged `.tgz` archives). Its JSON-schema library loads whatever a
`$ref` (or `$dynamicRef`, `$recursiveRef`, `$schema`) names: `http(s)://` with a GET, `file://`
and relative references from the machine's file system (a relative reference resolves against
`file:///values.schema.json`, the root of the file system, not the chart). A chart from a fork's
pull request or another team's repository could so make the renderer send requests and read files
outside the source roots, their first bytes leaking into Helm's error message.

So before either engine loads a chart, every schema it would read is checked here: a reference
must be a fragment (`#/definitions/x`, `#anchor`), which resolves inside the schema document that
holds it, and `$schema` must name a JSON-schema draft built into Helm (no fetch). Anything else
refuses the chart (exit 4) naming the chart, the schema file and the reference, never what the
reference points to. The check reads the schemas within Helm's own size limits (an archive unpacks
to at most 100 MiB, a file to at most 5 MiB) and counts every archive of the chart against one
budget, so a chart of nested archives cannot make it slow.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.errors import ChartRenderFailed
from btp_gitops.generator.io.sources import display_path

SCHEMA_FILE = "values.schema.json"
REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose value is data, not a schema: a "$ref" key inside a default value is not a reference.
DATA_KEYWORDS = frozenset({"default", "enum", "const", "examples"})
# Keywords whose value maps names to schemas: a property may be called "default".
NAME_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"}
)
_DRAFTS = (
    "draft-04/schema",
    "draft-06/schema",
    "draft-07/schema",
    "draft/2019-09/schema",
    "draft/2020-12/schema",
)
# The meta-schemas Helm's JSON-schema library carries itself (it fetches any other `$schema`).
META_SCHEMAS = frozenset(
    f"{scheme}://json-schema.org/{draft}{end}"
    for scheme in ("http", "https")
    for draft in _DRAFTS
    for end in ("", "#")
)
MAX_SCHEMA_BYTES = 5 * 1024 * 1024  # Helm's limit for one file of a chart archive
MAX_ARCHIVE_BYTES = 100 * 1024 * 1024  # Helm's limit for a chart archive, here for all of a chart's
MAX_NESTING = 16  # subcharts inside subcharts


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key-value pairs: a key given twice is checked twice."""


@dataclass
class _Budget:
    remaining: int


class _CountingReader(io.RawIOBase):
    """Decompressed archive bytes, stopping when the chart's budget is spent."""

    def __init__(self, stream: io.BufferedIOBase, budget: _Budget, shown: str) -> None:
        self.stream = stream
        self.budget = budget
        self.shown = shown

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(min(len(buffer), 1024 * 1024))
        self.budget.remaining -= len(data)
        if self.budget.remaining < 0:
            raise _Refused(
                f"{self.shown}: the chart's archives unpack to more than {MAX_ARCHIVE_BYTES >> 20} MiB"
            )
        buffer[: len(data)] = data
        return len(data)


class _Refused(Exception):
    """Why the chart is refused (the text after `chart X: `)."""


def check_schema_references(chart: Path, shown_chart: str, requested_by: str = "") -> None:
    """Refuse `chart` (exit 4) when a schema of it or of a subchart reaches outside that schema."""
    try:
        for where, data in _schemas_of_directory(chart, _Budget(MAX_ARCHIVE_BYTES), depth=0):
            _check_schema(where, data)
    except _Refused as refused:
        raise ChartRenderFailed(f"chart {shown_chart}{requested_by}: {refused}") from None


def _schemas_of_directory(chart: Path, budget: _Budget, depth: int) -> Iterator[tuple[str, bytes]]:
    schema = chart / SCHEMA_FILE
    if schema.is_file():
        yield display_path(schema), _read_file(schema)
    subcharts = chart / "charts"
    if not subcharts.is_dir():
        return
    if depth >= MAX_NESTING:
        raise _Refused(f"{display_path(subcharts)}: subcharts nested more than {MAX_NESTING} deep")
    # As Helm's loader: a name starting with _ or . is skipped, a .tgz is an archive, a directory a chart.
    for entry in sorted(subcharts.iterdir()):
        if entry.name.startswith(("_", ".")):
            continue
        if entry.name.endswith(".tgz") and entry.is_file():
            yield from _schemas_of_archive(
                display_path(entry), _read_file(entry, MAX_ARCHIVE_BYTES), budget, depth + 1
            )
        elif entry.is_dir():
            yield from _schemas_of_directory(entry, budget, depth + 1)


def _read_file(path: Path, limit: int = MAX_SCHEMA_BYTES) -> bytes:
    try:
        with path.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as error:
        raise _Refused(f"cannot read {display_path(path)}: {error.strerror}") from error
    if len(data) > limit:
        raise _Refused(f"{display_path(path)} is larger than {limit >> 20} MiB")
    return data


def _schemas_of_archive(
    shown: str, archive: bytes, budget: _Budget, depth: int
) -> Iterator[tuple[str, bytes]]:
    """The schemas of a packaged chart, read in one pass: Helm strips the archive's top directory."""
    found: list[tuple[str, bytes]] = []
    nested: list[tuple[str, bytes]] = []
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(archive)) as unzipped:
            reader = io.BufferedReader(_CountingReader(unzipped, budget, shown))
            with tarfile.open(fileobj=reader, mode="r|") as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    parts = member.name.replace("\\", "/").split("/")[1:]
                    kind = _member_kind(parts)
                    if kind is None:
                        continue
                    extracted = tar.extractfile(member)
                    if extracted is None:
                        continue
                    limit = MAX_SCHEMA_BYTES if kind == "schema" else MAX_ARCHIVE_BYTES
                    data = extracted.read(limit + 1)
                    where = f"{shown}:{'/'.join(parts)}"
                    if len(data) > limit:
                        raise _Refused(f"{where} is larger than {limit >> 20} MiB")
                    (found if kind == "schema" else nested).append((where, data))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        raise _Refused(f"{shown}: not a readable chart archive ({error})") from error
    yield from found
    if nested and depth >= MAX_NESTING:
        raise _Refused(f"{shown}: subcharts nested more than {MAX_NESTING} deep")
    for where, data in nested:
        yield from _schemas_of_archive(where, data, budget, depth + 1)


def _member_kind(parts: list[str]) -> str | None:
    """ "schema" for `(charts/<dir>/)*values.schema.json`, "archive" for `(charts/<dir>/)*charts/<x>.tgz`."""
    while len(parts) >= 2 and parts[0] == "charts":
        name = parts[1]
        if not name or name.startswith(("_", ".")):
            return None
        if len(parts) == 2:
            return "archive" if name.endswith(".tgz") else None
        if name.endswith(".tgz"):
            return None
        parts = parts[2:]
    return "schema" if parts == [SCHEMA_FILE] else None


def _check_schema(where: str, data: bytes) -> None:
    try:
        document = json.loads(data.decode("utf-8", errors="replace"), object_pairs_hook=_Pairs)
    except RecursionError:
        raise _Refused(f"{where}: nested too deeply") from None
    except ValueError as error:
        raise _Refused(f"{where} is not valid JSON ({error})") from None
    for pointer, keyword, value in _keywords(document):
        if keyword in REFERENCE_KEYWORDS and isinstance(value, str) and not value.startswith("#"):
            raise _Refused(
                f"{where} refers to {json.dumps(value)} ({pointer}/{keyword}): a schema may refer only "
                "to itself (a reference starting with #); Helm would fetch this one from the network "
                "or the file system"
            )
        if keyword == "$schema" and isinstance(value, str) and value not in META_SCHEMAS:
            raise _Refused(
                f"{where} names the meta-schema {json.dumps(value)} ({pointer}/$schema): only the "
                "JSON-schema drafts built into Helm are allowed (draft-04 to 2020-12 on json-schema.org); "
                "Helm would fetch this one"
            )


def _keywords(document: Any) -> Iterator[tuple[str, str, Any]]:
    """(JSON pointer of the object, key, value) for every key of every object, iteratively, except
    inside a schema's keywords that hold data (a map of names to schemas has no such keyword)."""
    pending: list[tuple[str, Any, bool]] = [("#", document, False)]  # (pointer, node, a name map)
    while pending:
        pointer, node, name_map = pending.pop()
        if isinstance(node, _Pairs):
            for key, value in node:
                yield pointer, key, value
                if name_map or key not in DATA_KEYWORDS:
                    child_is_map = not name_map and key in NAME_MAP_KEYWORDS
                    pending.append((f"{pointer}/{_escape(key)}", value, child_is_map))
        elif isinstance(node, list):
            pending.extend((f"{pointer}/{index}", item, False) for index, item in enumerate(node))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
