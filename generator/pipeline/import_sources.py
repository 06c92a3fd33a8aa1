"""`btp-gitops import`: live objects (a cluster or dumps) into source files, all or nothing.

read (io.live_objects) -> translate (each of TRANSLATORS, merged: migration.merge_results) ->
validate every document against its schema, as `render` does (a document that fails is not
written: it is listed with its problems) -> serialize (core.yamlio, the comment above each
document) -> guard (transforms.guards: no credential or private key in anything written) ->
write (stage every file, then move each into place; a file that exists is refused unless
`--force`; no symbolic link is followed on the way).
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.errors import OutputError, OutputNotWritable, Problem, UnsafeOutput, UsageError
from btp_gitops.generator.core.names import path_message
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.validation import SchemaRegistry, problems_in
from btp_gitops.generator.core.yamlio import dump_object
from btp_gitops.generator.io.containment import display_path
from btp_gitops.generator.io.live_objects import (
    ClusterSource,
    LiveRead,
    ReadLimits,
    read_cluster,
    read_dump_directory,
)
from btp_gitops.generator.io.output_tree import stage_directory
from btp_gitops.generator.io.repo import check_no_links
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.migration.btp_operator import import_btp_operator
from btp_gitops.generator.migration.cap import depends_on, import_cap
from btp_gitops.generator.migration.kyma import import_kyma
from btp_gitops.generator.migration.model import (
    FollowUp,
    ImportedDocument,
    ImportedFile,
    ImportResult,
    LiveObject,
    Skipped,
    merge_results,
)
from btp_gitops.generator.transforms.guards import assert_no_credentials

Translator = Callable[[Sequence[LiveObject]], ImportResult]
# One per operator; each picks the kinds it knows from every object read.
TRANSLATORS: tuple[Translator, ...] = (import_cap, import_kyma, import_btp_operator)

COMMENT_WIDTH = 98
_COMMENT_UNSAFE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\x85]")


@dataclass(frozen=True, slots=True)
class ImportOptions:
    out: Path
    cluster: ClusterSource | None = None
    from_dir: Path | None = None
    force: bool = False
    limits: ReadLimits = field(default_factory=ReadLimits)


@dataclass(frozen=True, slots=True)
class ImportReport:
    source: str
    out: str
    objects: int  # objects of the imported kinds read
    files: tuple[str, ...]  # written, relative to `out`
    overwritten: tuple[str, ...]
    skipped: tuple[Skipped, ...]  # read, not expressed in any file
    passed_over: tuple[Skipped, ...]  # met, not read (other kinds, Secrets)
    follow_ups: tuple[FollowUp, ...] = ()  # imported, with a step left to the user before a render

    def as_dict(self) -> dict[str, Any]:
        def entries(items: Iterable[Skipped]) -> list[dict[str, str]]:
            return [{"object": s.object, "origin": s.origin, "reason": s.reason} for s in items]

        return {
            "source": self.source,
            "out": self.out,
            "objects": self.objects,
            "files": list(self.files),
            "overwritten": list(self.overwritten),
            "skipped": entries(self.skipped),
            "passedOver": entries(self.passed_over),
            "followUps": [
                {"object": item.object, "origin": item.origin, "action": item.action}
                for item in self.follow_ups
            ],
        }


def _comment_lines(text: str) -> list[str]:
    """A comment entry as lines of at most about 100 columns: a file name or value from a dump
    cannot end the comment or start a key (control characters and line breaks are escaped)."""
    safe = _COMMENT_UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    lines = textwrap.wrap(safe, COMMENT_WIDTH, break_long_words=False, break_on_hyphens=False) or [""]
    return [f"# {lines[0]}", *(f"#   {line}" for line in lines[1:])]


def serialize(imported: ImportedFile) -> str:
    """The file's documents, each after its comment lines, separated by `---`."""
    pieces = []
    for document in imported.documents:
        comment = "".join(f"{line}\n" for entry in document.comment for line in _comment_lines(entry))
        pieces.append(comment + dump_object(dict(document.body)))
    return "---\n".join(pieces)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _document_ref(document: ImportedDocument) -> str:
    body = document.body
    metadata = body.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    return f"{body.get('kind')} {namespace}/{name}" if namespace else f"{body.get('kind')} {name}"


def _origin(document: ImportedDocument) -> str:
    first = document.comment[0] if document.comment else ""
    return first.removeprefix("imported from ")


def validated(
    result: ImportResult, registry: SchemaRegistry, out: Path
) -> tuple[list[ImportedFile], list[Skipped]]:
    """The files with every document valid by its schema, and a skip for each one that is not
    (its problems as the reason); a file left with no document is not written."""
    files: list[ImportedFile] = []
    invalid: list[Skipped] = []
    refused: list[str] = []  # files with a document refused
    for imported in result.files:
        problem = path_message(imported.path)
        if problem is not None:
            raise ValueError(f"a translator wrote an unsafe path: {problem}")  # a bug, not an input problem
        kept = []
        for index, document in enumerate(imported.documents, start=1):
            body = _plain(document.body)
            source = SourceDocument(str(out / imported.path), index, body, out / Path(imported.path).parent)
            problems = problems_in(source, registry)
            if problems:
                reasons = "; ".join(f"{p.field_path or 'document'}: {p.message}" for p in problems)
                reason = f"invalid by its schema: {reasons}"
                invalid.append(Skipped(_document_ref(document), _origin(document), reason))
                refused.append(imported.path)
                continue
            kept.append(ImportedDocument(body, document.comment))
        if kept:
            files.append(ImportedFile(imported.path, tuple(kept)))
    written = []
    for imported in files:
        owner = next((path for path in refused if depends_on(imported.path, path)), None)
        if owner is None:
            written.append(imported)
            continue
        for document in imported.documents:
            reason = f"what it belongs to was not imported ({owner}, listed above)"
            invalid.append(Skipped(_document_ref(document), _origin(document), reason))
    return written, invalid


@dataclass(slots=True)
class _Move:
    target: Path
    backup: Path | None = None


@dataclass(slots=True)
class _Writer:
    """All files or none: staged under `out`, then moved into place; undone if a move fails."""

    out: Path
    force: bool
    done: list[_Move] = field(default_factory=list)

    def prepare(self) -> None:
        if self.out.is_symlink():
            raise UnsafeOutput(f"--out {self.out}: a symbolic link; import writes only into a real directory")
        if self.out.exists() and not self.out.is_dir():
            raise UsageError(f"--out {self.out}: not a directory")
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise OutputNotWritable(f"cannot create --out {self.out}: {error.strerror or error}") from error

    def existing(self, paths: Iterable[str]) -> list[str]:
        found = []
        for path in paths:
            check_no_links(self.out, path)
            target = self.out / path
            if os.path.lexists(target):
                if not target.is_file():
                    raise UnsafeOutput(f"{display_path(target)}: exists and is not a file; nothing written")
                found.append(path)
        return found

    def write(self, texts: Mapping[str, str]) -> None:
        staging = stage_directory(self.out, "import")
        try:
            for path, text in texts.items():
                staged = staging / "new" / path
                staged.parent.mkdir(parents=True, exist_ok=True)
                with open(staged, "x", encoding="utf-8", newline="") as handle:
                    handle.write(text)
            for path in texts:
                self._move(staging, path)
        except OSError as error:
            self._undo()
            raise OutputNotWritable(
                f"cannot write into {display_path(self.out)}: {error.strerror or error}"
            ) from error
        except BaseException:
            self._undo()
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _move(self, staging: Path, path: str) -> None:
        check_no_links(self.out, path)  # again: nothing may have planted a link since the check
        target = self.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        move = _Move(target)
        if os.path.lexists(target):
            move.backup = staging / "old" / path
            move.backup.parent.mkdir(parents=True, exist_ok=True)
            os.replace(target, move.backup)
        self.done.append(move)
        os.replace(staging / "new" / path, target)

    def _undo(self) -> None:
        for move in reversed(self.done):
            try:
                if move.backup is not None and move.backup.exists():
                    os.replace(move.backup, move.target)
                else:
                    move.target.unlink(missing_ok=True)
            except OSError:
                continue


def _read(options: ImportOptions) -> LiveRead:
    if options.from_dir is not None:
        return read_dump_directory(options.from_dir, options.limits)
    if options.cluster is None:
        raise UsageError("import needs a cluster (--kubeconfig/--context) or --from-dir DIR")
    return read_cluster(options.cluster, options.limits)


def import_sources(options: ImportOptions, translators: Sequence[Translator] = TRANSLATORS) -> ImportReport:
    read = _read(options)
    objects = tuple(read.objects)
    result = merge_results(translator(objects) for translator in translators)
    files, invalid = validated(result, load_schema_registry(), options.out)
    texts = {imported.path: serialize(imported) for imported in files}
    manifests = [
        Manifest(dict(document.body), f"{imported.path}: document {index}")
        for imported in files
        for index, document in enumerate(imported.documents, start=1)
    ]
    assert_no_credentials(manifests, texts)
    writer = _Writer(options.out, options.force)
    overwritten: list[str] = []
    if texts:
        writer.prepare()
        overwritten = writer.existing(texts)
        if overwritten and not options.force:
            shown = ", ".join(overwritten[:5]) + (
                f" and {len(overwritten) - 5} more" if len(overwritten) > 5 else ""
            )
            raise OutputError(
                f"{display_path(options.out)} already holds {shown}; nothing written "
                "(pass --force to overwrite them, or name another --out)",
                [Problem(display_path(options.out / path), "exists") for path in overwritten],
            )
        writer.write(texts)
    skipped = sorted([*read.unnamed, *result.skipped, *invalid], key=lambda s: (s.object, s.origin, s.reason))
    refused = {skip.object for skip in invalid}  # not written: nothing left to do for them
    return ImportReport(
        source=read.sources,
        out=display_path(options.out),
        objects=len(objects),
        files=tuple(texts),
        overwritten=tuple(overwritten),
        skipped=tuple(skipped),
        passed_over=tuple(sorted(read.passed_over, key=lambda s: (s.object, s.origin))),
        follow_ups=tuple(f for f in result.follow_ups if f.object not in refused),
    )
