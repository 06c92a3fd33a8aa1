"""The render cache at the pipeline's edges: read before the render, written after it.

    read sources (bytes) ──> entry of each file? ──yes──> the validated CAPTenant, and its app when
                                   │                      rendered for today's application inputs
                                   no
                                   └──> parse ──> (validate, with every other document)

A file holding one CAPTenant document (a tenant record) is looked up in the cache by its bytes
(io.render_cache); a hit gives the document as validated when the entry was written, so it is
neither parsed nor checked against its schema again, and the tenant's app when it was rendered
with the same application inputs (cap.application_inputs). Every other file is read as without
a cache. After the render has passed every check, each record whose entry was missing or stale
gets one. The output is the same bytes with and without the cache (tests compare them).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from btp_gitops.generator.core.errors import Problem, SourceSyntaxError, raise_if_problems
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress, counted
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap import CAP_TENANT, TenantRenders
from btp_gitops.generator.io.input_files import UnreadableInput, decoded_text, read_input_bytes
from btp_gitops.generator.io.render_cache import Entry, RenderCache, app_payload, rendered_app
from btp_gitops.generator.io.sources import display_path, documents_in_text, source_files

RecordKey = tuple[str, int]


@dataclass(slots=True)
class Record:
    """A tenant record file: its cache key, its document, and the entry found for it."""

    key: str
    document: SourceDocument
    entry: Entry | None


@dataclass(slots=True)
class CachedSources:
    documents: list[SourceDocument]  # every document of the sources, in file order
    fresh: list[SourceDocument]  # the ones parsed now: the render validates these
    records: dict[RecordKey, Record] = field(default_factory=dict)

    def renders(self, inputs: dict[tuple[str, str], str]) -> TenantRenders:
        """The tenant apps the entries hold for today's application inputs."""
        known: dict[RecordKey, AppRender] = {}
        for where, record in self.records.items():
            entry, digest = record.entry, _inputs_of(record.document, inputs)
            if entry is None or entry.app is None or not digest or entry.inputs != digest:
                continue
            app = rendered_app(entry.app)
            if app is not None:
                known[where] = app
        return TenantRenders(known=known)

    def entries(
        self, renders: TenantRenders, inputs: dict[tuple[str, str], str]
    ) -> Iterable[tuple[str, Entry]]:
        """The entries to write: every record whose entry is missing or says something else now."""
        for where, record in self.records.items():
            digest = _inputs_of(record.document, inputs)
            if where in renders.rendered and digest:
                app = renders.rendered[where]
                payload = app_payload(app) if app is not None else None
            elif record.entry is not None and digest and record.entry.inputs == digest:
                continue  # its app was taken from the entry
            else:
                # Not rendered, or its application has no inputs digest: the document only.
                digest, payload = "", None
            entry = record.entry
            if entry is not None and entry.inputs == digest and entry.app == payload:
                continue
            yield record.key, Entry(record.document.document, record.document.body, digest, payload)


def _inputs_of(document: SourceDocument, inputs: dict[tuple[str, str], str]) -> str:
    metadata, spec = document.body.get("metadata") or {}, document.body.get("spec") or {}
    return inputs.get((str(metadata.get("namespace", "")), str(spec.get("capApplicationInstance", ""))), "")


def _is_record(document: SourceDocument) -> bool:
    return (document.api_version, document.kind) == CAP_TENANT


def load_cached_sources(
    paths: Iterable[Path], cache: RenderCache, scope: str, progress: Progress = NO_PROGRESS
) -> CachedSources:
    """`io.sources.load_sources`, with the tenant records the cache holds taken from it."""
    # Decoding entries makes many small objects and no cycles: the cycle collector, run again
    # and again over a growing heap, would cost a third of this, and as much again in the
    # render after it. Collected not at all while loading, then frozen (left out of every later
    # collection) until the render ends (`thawed`).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(paths, cache, scope, progress)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def thawed() -> None:
    """After a render with the cache: what loading froze is collected as usual again."""
    gc.unfreeze()


def _load(paths: Iterable[Path], cache: RenderCache, scope: str, progress: Progress) -> CachedSources:
    problems: list[Problem] = []
    files = list(source_files(list(paths)))
    loaded = CachedSources([], [])
    directories: dict[Path, tuple[str, Path]] = {}  # a parent -> as shown, resolved
    for path in counted(files, progress, "reading sources", len(files)):
        parent = path.parent
        if parent not in directories:
            directories[parent] = (display_path(parent), parent.resolve())
        shown_parent, directory = directories[parent]
        # display_path of the file, without asking for the working directory once per file
        shown = path.name if shown_parent == "." else f"{shown_parent.rstrip('/')}/{path.name}"
        try:
            data = read_input_bytes(path)
            text = decoded_text(data)
        except UnreadableInput as error:
            problems.append(Problem(file=shown, message=error.reason))
            continue
        key = cache.key(scope, shown, data)
        entry = cache.read(key)
        if entry is not None:
            document = SourceDocument(shown, entry.document, entry.body, directory)
            if _is_record(document):
                loaded.documents.append(document)
                loaded.records[(shown, entry.document)] = Record(key, document, entry)
                continue
        before = len(problems)
        found = list(documents_in_text(path, shown, text, problems, directory))
        loaded.documents += found
        loaded.fresh += found
        if len(found) == 1 and len(problems) == before and _is_record(found[0]):
            loaded.records[(shown, found[0].document)] = Record(key, found[0], None)
    raise_if_problems(SourceSyntaxError, "cannot read source documents", problems)
    return loaded
