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

Before all that, the render pack (io.render_pack) of the same scope and sources: a tenant record
file whose identity (or, when that changed or is racy, whose bytes) is the one the pack recorded
is taken from it without parsing or an entry, and its app, when the application inputs are
today's, as a `ReusedApp`: its files, object keys and Flux stages as the render that wrote the
pack laid them out and checked them; its objects are read back from its files only when
something asks for them.
After a render that passed every check, the pack is written again when anything in it changed.

The one seam with the CAP domain is `pipeline.tenant_renders.TenantRenders`: `CachedSources.renders`
says which records' apps are known, the domain has each tenant's app through `TenantRenders.app_of` (a
known one taken, any other made and kept in `rendered`, which `entries` and `pack_records`
write). The domain's rules read every record as a `Tenant`, from the cache or not.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.errors import InputError, Problem, SourceSyntaxError, raise_if_problems
from btp_gitops.generator.core.names import metadata_name_problems
from btp_gitops.generator.core.objects import Manifest, object_key
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress, counted
from btp_gitops.generator.core.report import AppRender, Level, Note
from btp_gitops.generator.core.source_contents import SourceSorting
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.validation import SchemaRegistry, problems_in
from btp_gitops.generator.domains.cap import CAP_TENANT
from btp_gitops.generator.io.git_blobs import blob_id, start_work_tree_blobs
from btp_gitops.generator.io.input_files import UnreadableInput, decoded_text, read_input_bytes
from btp_gitops.generator.io.packed_app import AppFiles, PackedApp, origins_text
from btp_gitops.generator.io.render_cache import Entry, RenderCache, app_payload, entry_json, rendered_app
from btp_gitops.generator.io.render_pack import (
    NOT_WRITTEN,
    WRITTEN,
    Identity,
    Pack,
    PackedRecord,
    PackNames,
    exact_json,
    find_pack,
    identity_of,
    objects_text,
    pack_names,
    save_pack,
)
from btp_gitops.generator.io.sources import display_path, documents_in_text, source_file_names
from btp_gitops.generator.pipeline.tenant_renders import TenantRenders

RecordKey = tuple[str, int]


class ReusedApp(AppRender):
    """A tenant's app taken from the render pack: what the layout, the wiring and the output
    checks need is at hand (`packed`); its objects are read back from its files when first asked
    for (a report, a diff), never on the way to the written files."""

    __slots__ = ("_objects", "packed")

    def __init__(self, packed: PackedApp, notes: list[Note]) -> None:
        self.app = packed.app
        self.notes = notes
        self.group = packed.group
        self.packed = packed
        self._objects: list[Manifest] | None = None

    @property
    def manifests(self) -> list[Manifest]:
        if self._objects is None:
            self._objects = [Manifest(body, origin) for body, origin in self.packed.objects_payload()]
        return self._objects

    @manifests.setter
    def manifests(self, value: list[Manifest]) -> None:
        self._objects = value

    @property
    def object_count(self) -> int:
        return len(self.packed.keys)

    def regrouped(self, group: str | None) -> ReusedApp:
        """The same app in another group's directory (its files are named inside the app's)."""
        copy = ReusedApp(self.packed.regrouped(group), self.notes)
        copy._objects = self._objects
        return copy


def reused_app(packed: PackedApp) -> ReusedApp | None:
    """The app a pack holds; None when a note's level is unknown."""
    try:
        notes = [Note(Level(n["level"]), n["reason"], n["subject"], n["message"]) for n in packed.notes]
    except ValueError:
        return None
    return ReusedApp(packed, notes)


@dataclass(slots=True)
class PackLayout:
    """What the render laid out and checked, by app name, for the pack: each app's files (named
    inside its directory), its object keys (as the duplicate check had them) and its Flux stages
    (Flux target, else None)."""

    files: dict[str, dict[str, str]] = field(default_factory=dict)
    keys: dict[str, list[str]] = field(default_factory=dict)
    stages: dict[str, list[str]] | None = None


def packed_app(
    app: AppRender, files: Mapping[str, str], stages: list[str] | None, keys: list[str] | None
) -> PackedApp | None:
    """A tenant app rendered now, as the pack keeps it (`keys`: its objects' keys, made here when
    None); None when a key, file name, text or origin holds a NUL (which the pack's index joins
    them with)."""
    if isinstance(app, ReusedApp):
        return app.packed
    origins = origins_text([m.origin for m in app.manifests])
    if origins is None:
        return None
    if keys is None:
        keys = [object_key(m.body).text() for m in app.manifests]
    blob_ids = {name: blob_id(text.encode("utf-8", "surrogatepass")) for name, text in files.items()}
    content = AppFiles.rendered(keys, dict(files), blob_ids)
    if content is None:
        return None
    notes = [note.as_dict() for note in app.notes]
    return PackedApp(app.app, app.group, notes, content, stages, origins)


@dataclass(slots=True)
class Record:
    """A tenant record file: its cache key, its document, and the entry found for it."""

    key: str
    document: SourceDocument
    entry: Entry | None
    identity: Identity | None = None  # the file's, when it was read (None: not a regular file)
    blob: str = ""  # the Git blob id of the bytes read


@dataclass(slots=True)
class PackHit:
    """A tenant record file the pack holds: unchanged, or read again and the same bytes."""

    record: PackedRecord
    document: SourceDocument
    identity: Identity


@dataclass(slots=True)
class CachedSources:
    documents: list[SourceDocument]  # every document of the sources, in file order
    fresh: list[SourceDocument]  # the ones parsed now: the render validates these
    records: dict[RecordKey, Record] = field(default_factory=dict)
    packed: dict[RecordKey, PackHit] = field(default_factory=dict)
    pack: Pack | None = None
    pack_name: str = ""  # the name `pack` was found under, or the render's own (io.render_pack.find_pack)
    pack_names: PackNames | None = None
    stamp: int = 0  # when reading the sources started (time.time_ns())
    # The JSON of record documents (for entries and the pack) and of apps' objects (for entries),
    # by id (the value kept, so that the id stays its own): made once after a render.
    _json: dict[int, tuple[object, str | None]] = field(default_factory=dict)

    def _body_json(self, body: dict[str, Any]) -> str | None:
        found = self._json.get(id(body))
        if found is None or found[0] is not body:
            found = self._json[id(body)] = (body, exact_json(body))
        return found[1]

    def _objects_json(self, app: AppRender) -> str | None:
        found = self._json.get(id(app))
        if found is None or found[0] is not app:
            text = objects_text((m.body, m.origin) for m in app.manifests)
            found = self._json[id(app)] = (app, text)
        return found[1]

    def pack_texts_hold(self, apps: Sequence[AppRender], held: frozenset[str]) -> bool:
        """Whether the pack's texts are the ones its headers name, asked before the first of them is
        used: when an app from the pack is laid out (not `held`, which `diff` leaves out). False
        makes the render start again without the pack (pipeline.render)."""
        if self.pack is None:
            return True
        # `held` is the directories of some of the apps from the pack, one each.
        needed = sum(isinstance(app, ReusedApp) for app in apps) > len(held)
        return not needed or self.pack.texts_hold()

    def renders(self, inputs: dict[tuple[str, str], str]) -> TenantRenders:
        """The tenant apps the pack and the entries hold for today's application inputs."""
        known: dict[RecordKey, AppRender] = {}
        for where, hit in self.packed.items():
            packed, digest = hit.record.app, _inputs_of(hit.document, inputs)
            if packed is None or not digest or hit.record.inputs != digest:
                continue
            reused = reused_app(packed)
            if reused is not None:
                known[where] = reused
        for where, record in self.records.items():
            entry, digest = record.entry, _inputs_of(record.document, inputs)
            if entry is None or entry.app is None or not digest or entry.inputs != digest:
                continue
            app = rendered_app(entry.app)
            if app is not None:
                known[where] = app
        return TenantRenders(known=known)

    def rendered_again(self, renders: TenantRenders) -> list[SourceDocument]:
        """The records taken from an entry or the pack whose app is not known: the domain reads
        every field of these, so they are checked as a source is (check_cached_records)."""
        cached = [
            *(hit.document for where, hit in self.packed.items() if where not in renders.known),
            *(
                record.document
                for where, record in self.records.items()
                if record.entry is not None and where not in renders.known
            ),
        ]
        return cached

    def entries(
        self,
        renders: TenantRenders,
        inputs: dict[tuple[str, str], str],
        packed: Mapping[RecordKey, PackedRecord] | None = None,
    ) -> Iterable[tuple[str, Entry]]:
        """The entries to write: every record whose entry is missing or says something else now,
        but those the pack this render wrote (or left as it was) holds with all an entry would
        (`packed`, from write_pack): one pack file, not one entry per record, is what a render
        that fills the cache writes."""
        packed = packed or {}
        for where, record in self.records.items():
            digest = _inputs_of(record.document, inputs)
            app: AppRender | None = None
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
            held = packed.get(where)
            if held is not None and held.key == record.key and (held.app is not None or payload is None):
                continue
            document = record.document
            yield (
                record.key,
                Entry(
                    document.document, document.body, digest, payload, self._entry_json(document, digest, app)
                ),
            )

    def _entry_json(self, document: SourceDocument, digest: str, app: AppRender | None) -> str | None:
        """The entry's JSON from the texts the pack gets too; None (the entry serialised whole,
        and not written if JSON cannot hold it) when one of them is not exact."""
        body = self._body_json(document.body)
        objects = self._objects_json(app) if app is not None else "null"
        if body is None or objects is None:
            return None
        return entry_json(document.document, body, digest, app, objects)

    def pack_records(
        self,
        renders: TenantRenders,
        inputs: dict[tuple[str, str], str],
        layout: PackLayout,
    ) -> list[PackedRecord]:
        """Every tenant record of this render for the next pack, its app as `layout` has it. A
        record read now whose document JSON cannot hold exactly is left out."""
        found: list[PackedRecord] = []
        rows = []
        for where, hit in self.packed.items():
            app = renders.rendered[where] if where in renders.rendered else renders.known.get(where)
            kept = app.packed if isinstance(app, ReusedApp) else app
            known = hit.record
            if kept is known.app and Pack.unchanged(known, hit.identity):
                found.append(known)  # as it was: the next render finds the same
            elif kept is known.app and kept is not None:
                # The same bytes and app, the file seen anew (touched, or a fresh checkout): the
                # record with the identity read now (io.render_pack.save_pack decides if it is kept).
                found.append(
                    PackedRecord(
                        known.shown,
                        known.document,
                        hit.identity,
                        known.key,
                        known.body,
                        known.inputs,
                        kept,
                        self.stamp,
                        known.blob,
                    )
                )
            else:
                rows.append((where, hit.document, known.key, hit.identity, known.blob))
        rows += [
            (w, r.document, r.key, r.identity, r.blob)
            for w, r in self.records.items()
            if r.identity is not None and self._body_json(r.document.body) is not None
        ]
        for where, document, key, identity, file_blob in rows:
            digest = _inputs_of(document, inputs)
            app = renders.rendered.get(where) if where in renders.rendered else renders.known.get(where)
            packed = None
            if app is not None and digest:
                stages = None if layout.stages is None else layout.stages.get(app.app, [])
                packed = packed_app(app, layout.files.get(app.app, {}), stages, layout.keys.get(app.app))
            digest = digest if packed is not None else ""
            found.append(
                PackedRecord(
                    document.file,
                    document.document,
                    identity,
                    key,
                    document.body,
                    digest,
                    packed,
                    self.stamp,
                    file_blob,
                )
            )
        return found

    def write_pack(
        self,
        cache: RenderCache,
        renders: TenantRenders,
        inputs: dict[tuple[str, str], str],
        layout: PackLayout,
    ) -> dict[RecordKey, PackedRecord]:
        """After a render that passed every check: what changed in the pack (io.render_pack.save_pack).
        The records the pack holds now (none when it could not be written): they need no entry."""
        records = self.pack_records(renders, inputs, layout)
        secret = cache.secret
        if secret is None:
            return {}
        names = self.pack_names
        saved = save_pack(
            cache.directory, self.pack_name, self.stamp, records, self.pack, secret=secret, names=names
        )
        cache.pack_saved = saved
        if saved == NOT_WRITTEN:
            return {}
        if saved == WRITTEN:
            cache.packs_written += 1
        return {(record.shown, record.document): record for record in records}


def _inputs_of(document: SourceDocument, inputs: dict[tuple[str, str], str]) -> str:
    metadata, spec = document.body.get("metadata"), document.body.get("spec")
    # A record from the cache was validated when it was cached, or so the cache says: read
    # without trusting its shape (see CachedSources.rendered_again).
    metadata = metadata if isinstance(metadata, dict) else {}
    spec = spec if isinstance(spec, dict) else {}
    return inputs.get((str(metadata.get("namespace", "")), str(spec.get("capApplicationInstance", ""))), "")


def check_cached_records(documents: list[SourceDocument], schemas: SchemaRegistry) -> None:
    """Records from the cache that are rendered again pass the schemas and the name rules as the
    sources do; one that does not was not cached by btp-gitops: refused (exit 3), naming the
    record's file and the cache, rather than rendered from a shape nothing checked."""
    problems = [problem for document in documents for problem in problems_in(document, schemas)]
    problems += metadata_name_problems(documents)
    raise_if_problems(
        InputError,
        "the render cache holds records that do not pass their schemas: it was not written by "
        "btp-gitops; remove the cache directory or render with --no-cache",
        problems,
    )


def _is_record(document: SourceDocument) -> bool:
    return (document.api_version, document.kind) == CAP_TENANT


def load_cached_sources(
    paths: Sequence[Path],
    cache: RenderCache,
    scope: str,
    progress: Progress = NO_PROGRESS,
    sorting: SourceSorting | None = None,
) -> CachedSources:
    """`io.sources.load_sources`, with the tenant records the pack and the cache hold taken from them."""
    # Decoding entries makes many small objects and no cycles: the cycle collector, run again
    # and again over a growing heap, would cost a third of this, and as much again in the
    # render after it. Collected not at all while loading, then frozen (left out of every later
    # collection) until the render ends (`thawed`).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(paths, cache, scope, progress, sorting)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def thawed() -> None:
    """After a render with the cache: what loading froze is collected as usual again."""
    gc.unfreeze()


def _with_pack(paths: Sequence[Path], cache: RenderCache, scope: str) -> CachedSources:
    """Nothing loaded yet, the render pack found for these sources (io.render_pack.find_pack)."""
    names = pack_names(scope, paths, [display_path(path) for path in paths], cache.pack_place)
    secret = None if cache.pack_aside else cache.secret
    name, pack = find_pack(cache.directory, names, secret) if secret is not None else (names.own, None)
    cache.pack_found = "" if pack is None else "own" if name == names.own else "pointer"
    return CachedSources([], [], pack=pack, pack_name=name, pack_names=names, stamp=time.time_ns())


def _load(
    paths: Sequence[Path], cache: RenderCache, scope: str, progress: Progress, sorting: SourceSorting | None
) -> CachedSources:
    problems: list[Problem] = []
    loaded = _with_pack(paths, cache, scope)
    pack = loaded.pack
    packed = pack.records if pack is not None else {}
    vouched = _vouched_sources(paths) if packed else None  # Git asked while the sources are listed
    files = source_file_names(paths, sorting=sorting)
    by_git = vouched() if vouched is not None else {}
    directories: dict[str, tuple[str, Path]] = {}  # a parent -> as shown, resolved
    for path in counted(files, progress, "reading sources", len(files)):
        parent, _, file_name = path.rpartition(os.sep)
        if parent not in directories:
            directories[parent] = (display_path(Path(parent or ".")), Path(parent or ".").resolve())
        shown_parent, directory = directories[parent]
        # display_path of the file, without asking for the working directory once per file
        shown = file_name if shown_parent == "." else f"{shown_parent.rstrip('/')}/{file_name}"
        known = packed.get(shown)
        identity: Identity | None = None
        if known is not None and pack is not None:
            if known.blob and by_git.get(path) == known.blob:
                # Git vouches the file holds the bytes the record was made of (a fresh checkout:
                # every identity is new). The record keeps the identity it has.
                _take(loaded, cache, known, known.identity, directory)
                continue
            try:
                identity = identity_of(os.stat(path))
            except OSError:
                identity = None  # read below, which says why it cannot be
            if identity is not None and pack.unchanged(known, identity):
                _take(loaded, cache, known, identity, directory)
                continue
        _read_source(
            loaded,
            cache,
            path,
            scope=scope,
            shown=shown,
            known=known,
            identity=identity,
            directory=directory,
            problems=problems,
            sorting=sorting,
        )
    raise_if_problems(SourceSyntaxError, "cannot read source documents", problems)
    cache.records += len(loaded.packed) + len(loaded.records)
    return loaded


def _read_source(
    loaded: CachedSources,
    cache: RenderCache,
    path: str,  # as listed
    *,
    scope: str,
    shown: str,
    known: PackedRecord | None,
    identity: Identity | None,
    directory: Path,
    problems: list[Problem],
    sorting: SourceSorting | None,
) -> None:
    """A source file read: a tenant record the pack (`known`) or an entry holds, or its documents
    parsed (`problems`: why it cannot be)."""
    if identity is None:
        with contextlib.suppress(OSError):
            identity = identity_of(os.stat(path))  # before reading: a change after it shows next time
    try:
        data = read_input_bytes(path)  # the name as listed: a Path per file costs as much as the read
        text = decoded_text(data)
    except UnreadableInput as error:
        problems.append(Problem(file=shown, message=error.reason))
        return
    key = cache.key(scope, shown, data)
    if known is not None and identity is not None and known.key == key:
        _take(loaded, cache, known, identity, directory)  # touched, or racy: the same bytes
        return
    entry = cache.read(key)
    if entry is not None:
        document = SourceDocument(shown, entry.document, entry.body, directory)
        if _is_record(document):
            loaded.documents.append(document)
            loaded.records[(shown, entry.document)] = Record(key, document, entry, identity, blob_id(data))
            return
    before = len(problems)
    found = list(documents_in_text(Path(path), shown, text, problems, directory, sorting=sorting))
    loaded.documents += found
    loaded.fresh += found
    if len(found) == 1 and len(problems) == before and _is_record(found[0]):
        loaded.records[(shown, found[0].document)] = Record(key, found[0], None, identity, blob_id(data))


def _vouched_sources(paths: Sequence[Path]) -> Callable[[], dict[str, str]]:
    """The Git blob ids of the source files Git tracks and vouches for (io.git_blobs: the same
    proofs as for the output), by their paths as listed (`source_file_names`), asked for now and
    answered when called; nothing for a directory in no Git work tree, or one of SHA-256 objects
    (a pack keeps SHA-1 ids). A source tree is a Git checkout in CI, where every file has a new
    identity: the blob ids spare reading and hashing 20,000 unchanged records."""
    asked = [
        (os.path.join(os.fspath(path), ""), start_work_tree_blobs(path))
        for path in dict.fromkeys(paths)
        if path.is_dir() and not path.is_symlink()
    ]

    def answer() -> dict[str, str]:
        blobs: dict[str, str] = {}
        for prefix, started in asked:
            vouched = started()
            if vouched is not None and vouched.object_format == "sha1":
                blobs.update({prefix + relative: oid for relative, oid in vouched.blobs.items()})
        return blobs

    return answer


def _take(
    loaded: CachedSources, cache: RenderCache, known: PackedRecord, identity: Identity, directory: Path
) -> None:
    body = known.body
    document = SourceDocument(known.shown, known.document, body, directory)
    if (body.get("apiVersion"), body.get("kind")) == CAP_TENANT:
        loaded.documents.append(document)
        loaded.packed[(known.shown, known.document)] = PackHit(known, document, identity)
        cache.hits += 1
    else:  # a pack says it holds tenant records only: one that does not is not used
        loaded.documents.append(document)
        loaded.fresh.append(document)
