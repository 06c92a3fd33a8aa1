"""The render pack: every tenant record of one render and its finished app, in one file.

The entries of io.render_cache spare a render parsing, validating and rendering an unchanged
record, but a render still opens and decodes one entry per record, lays each app out, and runs
the output guards over every object. A pack holds, for each tenant record file of a render that
passed every check:

- the file's path as shown, its document number, an identity of the file (size, mtime, inode,
  ctime, as Git's index keeps them), the render cache key of its bytes (a sha256 of the scope,
  the path and the bytes) and their Git blob id (a render in a Git work tree takes a record file
  Git vouches holds those bytes without reading it: a fresh checkout has new identities);
- the document as validated;
- the digest of the application inputs its app was rendered with, and that app as written: its
  files (name in the app directory -> text, and the Git blob id of the text's UTF-8 bytes), the
  keys of its objects (for the duplicate check), its notes, its Flux stages and its objects'
  origins (the objects are read back from its files when asked for, io.packed_app).

The blob ids let a warm render tell the files a Git work tree or commit already holds without
hashing 80,000 texts (io.git_blobs compares them with the ids Git lists). An id is a claim of the
pack, signed with it: where a text leaves the process (a file written, an app shown by `diff`),
its bytes are hashed and must be the claimed id (`PackedApp.verified_text`), else the pack is
damaged (exit 3); a file a forged id calls unchanged is one nothing writes or shows.

A render takes a file whose identity is the recorded one without reading it, unless the file is
*racy* (as Git says): its mtime not older than the pack's stamp (when the render that wrote it
started) less `RACY_NS`; a file changed within a timestamp's granularity of that render could
keep size and mtime. A racy or otherwise changed file is read and its key compared: the same
bytes are a hit too. The app's files and keys passed the path, name and credential checks of
the render that wrote the pack, with the same code (the scope names the code digest).

A pack is two files, as Git splits a large index: `<name>.pack` (the base) and `<name>.delta`, the
records that differ from the base's (added, changed, removed), naming the base by the random id
written into its header. A render that changed a few records writes the delta again, in
O(changed); when the delta would hold more than an eighth of the records, the base is written anew
(and a delta naming an older base is ignored). Records whose files only got new identities (the
same bytes, as after a fresh checkout: CI clones the sources for every run) are written only where
a delta holds them: more than that, the pack keeps their old identities (they are read and
compared next time) rather than being written whole on every such run. Each file is a header line
(format, name, kind, id, stamp, lengths, the SHA-256 of the blob, and an HMAC-SHA256 of the
header's other fields and the index under the user's cache key, io.cache_key: the key is not in
the cache directory, so whoever can write a pack there cannot sign one, and a pack whose MAC does
not hold is not used), an index (JSON: the records, each app compact, io.packed_app: its keys, file
names and blob ids as a few joined strings and the span of its texts) and a blob (each app's
texts, UTF-8, NUL between them). Reading a pack reads and decodes the index; the blob stays in the
file (kept open) until a text is first needed, and is then read whole and checked against its
SHA-256 (io.packed_app.PackBlob): a warm `diff --against REF` whose apps the commit all holds
reads none of it. A render checks it before it lays out any app from the pack, and when it does
not hold (the file was changed after it was written) renders again without the pack
(pipeline.render), as if the pack had been ignored from the start. An app's texts are decoded
once, when its files are first asked for; its objects are read from them only when asked for.

A pack is named by the scope (code digest, schemas, target) and the source arguments, so two
source trees sharing a cache directory keep one each; at most `KEEP_PACKS` are kept (the ones
written least recently are removed). It is untrusted input like an entry: a file that is not a
regular file, a link, larger than `MAX_PACK_BYTES`, truncated, corrupt, of another shape or
another name's, unsigned, whose apps name paths or directories a render would not write, or
whose index is at odds with itself (an app with more names than blob ids, an id not of a SHA-1's
form, an empty name, a span of texts outside the blob) is ignored (the render
proceeds without it). Only a pack signed with the key (stolen) can fail a render, with an error
naming the pack and the app (PackDamaged, exit 3), and only the render that asks for what is
damaged: an app's texts not UTF-8, not as many as its names (a NUL too many or too few), a name
listed twice or a kustomization.yaml other than the one the layout writes for the files beside
it (found when its files are first asked for, before anything is written or shown); its files
not reading back as objects, within the limits of any YAML read, of an object's shape, the ones
its keys name, as many as its origins (found when its objects are asked for); a text leaving the process whose
bytes are not its blob id. The files of every app it hands the render pass the output guard
(pipeline.reused_output). Written to a temporary file renamed into place, so concurrent renders
each read whole files (the last one written wins).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from btp_gitops.generator.core.layout import TENANTS_DIR
from btp_gitops.generator.core.names import path_message
from btp_gitops.generator.io.cache_files import (
    atomic_write_at,
    open_directory,
    open_regular_at,
    open_subdirectory,
    read_part,
    read_whole_at,
)
from btp_gitops.generator.io.cache_key import new_mac, same_mac
from btp_gitops.generator.io.packed_app import (
    BLOB_ID_WIDTH,
    AppFiles,
    PackBlob,
    PackChanged,
    PackedApp,
    blob_ids_hold,
    names_hold,
    subdomains,
)

# 3: an HMAC (io.cache_key) instead of a CRC-32; 4: each file's Git blob id; 5: each app's keys,
# names, ids and texts as a few joined strings and one span (io.packed_app), not lists per file;
# 6: the objects' origins instead of their compressed JSON (read back from the files instead);
# 7: each record file's Git blob id; 8: the MAC covers the header and the index, the blob (the
# texts) only through its SHA-256 in the header, and is read when a text is first needed
FORMAT = 8
MAX_PACK_BYTES = 1 << 30  # a pack larger than this is neither read nor written
KEEP_PACKS = 16  # packs kept in a cache directory (source trees x scopes)
DELTA_SHARE = 8  # a delta holds at most 1/DELTA_SHARE of the records (or DELTA_MIN), else a new base
DELTA_MIN = 64
RACY_NS = 2_000_000_000  # a file modified this close to a pack's stamp is read (FAT: 2 s granularity)
DIRECTORY = "packs"
_SUFFIX = ".pack"
_DELTA = ".delta"
_POINTER = ".latest"

Identity = tuple[int, int, int, int]  # size, mtime_ns, inode, ctime_ns


_PACK_NAME = re.compile(r"[0-9a-f]{64}\.pack")
_POINTER_NAME = re.compile(r"[0-9a-f]{64}\.latest")
_NAME = re.compile(r"[0-9a-f]{64}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_HEADER_BYTES = 4096  # a header line is at most this long


def identity_of(status: os.stat_result) -> Identity:
    return (status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns)


def pack_name(scope: str, sources: Sequence[Path], place: str | None = None) -> str:
    """One pack per scope, source arguments (as given) and place: the working directory (files
    are shown relative to it) unless `place` names the source tree otherwise (io.render_cache.
    RenderCache.pack_place). The pack's records are matched by their files' identities and
    bytes, so the name decides only which pack a render finds, never what it takes from one."""
    where = f"cwd\0{os.getcwd()}" if place is None else f"place\0{place}"
    digest = hashlib.sha256(f"{scope}\0{where}".encode("utf-8", "surrogateescape"))
    for source in sources:
        digest.update(b"\0" + os.fsencode(source))
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class PackNames:
    """Where a render looks for its pack. `own`: named after its source tree (`pack_name`).
    `shared`: the name of a pointer, kept beside the packs, to the pack written last for the same
    scope and sources as shown (relative to the working directory), wherever that directory was:
    a CI runner that checks the repository out under another path for each job (GitLab's
    concurrent builds directories, Jenkins' `@2` workspaces) finds the pack another job left.
    What a render takes from a pack is checked record by record (identity, else bytes), so a
    pointer decides only which pack is looked at first."""

    own: str
    shared: str


def pack_names(
    scope: str, sources: Sequence[Path], shown: Sequence[str], place: str | None = None
) -> PackNames:
    """`PackNames` of a render of `sources` (as given; `shown`: as the render shows them)."""
    digest = hashlib.sha256(f"pointer\0{scope}\0{place or ''}".encode("utf-8", "surrogateescape"))
    for source in shown:
        digest.update(b"\0" + source.encode("utf-8", "surrogateescape"))
    return PackNames(pack_name(scope, sources, place), digest.hexdigest())


@dataclass(slots=True)
class PackedRecord:
    shown: str
    document: int
    identity: Identity
    key: str
    body: dict[str, Any]
    inputs: str  # the application inputs digest `app` was rendered with; "" when none
    app: PackedApp | None
    stamp: int = 0  # the stamp of the file (base or delta) it was read from
    # The Git (SHA-1) blob id of the file's bytes: a Git work tree vouching for this id at the
    # file's path holds those bytes (pipeline.cached_sources); "" when not known.
    blob: str = ""


@dataclass(slots=True)
class Pack:
    stamp: int  # time.time_ns() when the render that wrote the base started reading its sources
    records: dict[str, PackedRecord]  # by the file as shown, the delta applied
    base: dict[str, PackedRecord] = field(default_factory=dict)  # the base's alone
    base_id: str = ""  # the base's header id, which its deltas name
    blobs: list[PackBlob] = field(default_factory=list)  # the texts of the base, and of the delta

    def texts_hold(self) -> bool:
        """Whether the texts are the ones the headers name (read now, if they were not yet)."""
        return all(blob.holds() for blob in self.blobs)

    @staticmethod
    def unchanged(record: PackedRecord, identity: Identity) -> bool:
        """The file is the one recorded, without reading it: the same identity, and not racy."""
        return record.identity == identity and identity[1] < record.stamp - RACY_NS


# --- reading -------------------------------------------------------------------------------


def _directory_fd(directory: Path, create: bool) -> int | None:
    root = open_directory(directory, create)
    if root is None:
        return None
    try:
        return open_subdirectory(root, DIRECTORY, create)  # None: absent, a link or not a directory
    finally:
        os.close(root)


@dataclass(slots=True)
class _File:
    header: dict[str, Any]
    records: list[PackedRecord]
    removed: list[str]
    blob: PackBlob


def _mac(secret: bytes, header: dict[str, Any], *body: bytes | bytearray | memoryview) -> str:
    """The MAC of a pack file: its header's other fields (canonical JSON) and its body (in parts,
    one after the other)."""
    mac = new_mac(secret)
    fields = {key: value for key, value in header.items() if key != "mac"}
    mac.update(json.dumps(fields, sort_keys=True).encode() + b"\n")
    for part in body:
        mac.update(part)
    return mac.hexdigest()


def read_pack(directory: Path, name: str, secret: bytes) -> Pack | None:
    """The pack `name` in the cache directory when its header and index are whole and its own;
    None otherwise. Its texts are read when first needed (`Pack.texts_hold`, io.packed_app.PackBlob)."""
    packs = _directory_fd(directory, create=False)
    if packs is None:
        return None
    try:
        base = _read_file(packs, name, "base", secret)
        if base is None:
            return None
        delta = _read_file(packs, name, "delta", secret)
    finally:
        os.close(packs)
    records = {record.shown: record for record in base.records}
    pack = Pack(base.header["stamp"], records, dict(records), base.header["id"], [base.blob])
    if len(records) != len(base.records):
        return None
    if delta is not None and delta.header.get("base") == pack.base_id:
        records = dict(records)
        for shown in delta.removed:
            records.pop(shown, None)
        records.update((record.shown, record) for record in delta.records)
        pack.records = records
        pack.blobs.append(delta.blob)
    elif delta is not None:
        delta.blob.close()
    return pack


def find_pack(directory: Path, names: PackNames, secret: bytes) -> tuple[str, Pack | None]:
    """The pack `names.own`, else the one its pointer names (`PackNames`), with the name of the
    one found (`names.own` when none is)."""
    pack = read_pack(directory, names.own, secret)
    if pack is not None:
        return names.own, pack
    other = _read_pointer(directory, names.shared)
    if other is None or other == names.own:
        return names.own, None
    found = read_pack(directory, other, secret)
    return (other, found) if found is not None else (names.own, None)


def _read_pointer(directory: Path, shared: str) -> str | None:
    packs = _directory_fd(directory, create=False)
    if packs is None:
        return None
    try:
        data = read_whole_at(packs, shared + _POINTER, 128)  # a link or anything else: None
    finally:
        os.close(packs)
    text = data.decode("ascii", errors="replace").strip() if data is not None else ""
    return text if _NAME.fullmatch(text) else None


def _read_file(packs: int, name: str, kind: str, secret: bytes) -> _File | None:
    """The base or the delta of the pack `name`, its header and index read and checked, its texts
    left in the file (`PackBlob`, which keeps the file open until they are read); None when it
    is absent or not whole and its own."""
    opened = open_regular_at(packs, name + (_SUFFIX if kind == "base" else _DELTA), MAX_PACK_BYTES)
    if opened is None:
        return None
    fd, size = opened[0], opened[1].st_size
    try:
        head = _head(fd, size, name, kind, secret)
    except BaseException:
        os.close(fd)
        raise
    if head is None:
        os.close(fd)
        return None
    header, index, start = head
    # From here the blob owns the descriptor: it closes it once (read, or with the blob).
    texts = start + header["index"]
    blob = PackBlob(fd, texts, size - texts, header["blob"], name + (_SUFFIX if kind == "base" else _DELTA))
    decoded = _decode(header, index, blob)
    if decoded is None:
        blob.close()
    return decoded


def _head(
    fd: int, size: int, name: str, kind: str, secret: bytes
) -> tuple[dict[str, Any], bytes, int] | None:
    """The header of the pack file open as `fd`, its index (bytes) and where its body starts, when
    the header is this pack's and its MAC holds for the header and the index."""
    first = read_part(fd, 0, min(size, _HEADER_BYTES))
    newline = first.find(b"\n") if first is not None else -1
    if first is None or newline < 0:
        return None
    body = size - newline - 1
    try:
        header = json.loads(first[:newline])
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(header, dict)
        or header.get("format") != FORMAT
        or header.get("name") != name
        or header.get("kind") != kind
        or type(header.get("stamp")) is not int
        or type(header.get("index")) is not int
        or not 0 <= header["index"] <= body
        or header.get("length") != body
        or type(header.get("id")) is not str
        or type(header.get("blob")) is not str
        or not _DIGEST.fullmatch(header["blob"])
    ):
        return None
    index = read_part(fd, newline + 1, header["index"])
    if index is None or not same_mac(_mac(secret, header, index), header.get("mac")):
        return None
    return header, index, newline + 1


def _decode(header: dict[str, Any], data: bytes, blob: PackBlob) -> _File | None:
    try:
        index = _index_of(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(index, dict):
        return None
    items, removed = index.get("records"), index.get("removed")
    if type(items) is not list or type(removed) is not list or not all(type(s) is str for s in removed):
        return None
    records = []
    for item in items:
        record = _record(item, blob, header["stamp"])
        if record is None:
            return None
        records.append(record)
    apps = [record.app for record in records if record.app is not None]
    named = [app.app for app in apps] + [app.group for app in apps if app.group is not None]
    contents = [app.content for app in apps]
    if not subdomains(named) or not names_hold(contents) or not blob_ids_hold(contents):
        return None
    return _File(header, records, removed, blob)


def _index_of(encoded: bytes) -> Any:
    """The index read back. orjson reads it a fifth faster than `json`, and refuses what `json`
    is told to refuse here (NaN, infinities, a number past a double's range); what it refuses
    besides (see `_index_json`: a lone surrogate, an integer past 64 bits, deep nesting) `json`
    reads as before."""
    try:
        return orjson.loads(encoded)
    except orjson.JSONDecodeError:
        return json.loads(bytes(encoded), parse_float=_finite, parse_constant=_no_constant)


def _finite(text: str) -> float:
    """A number of the index: never NaN or infinite (`_index_json` could not write one back)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of a double's range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON a pack holds")


def _record(item: Any, blob: PackBlob, stamp: int) -> PackedRecord | None:
    """One record of an index, its types checked (inline: 20,000 of them are read per render)."""
    if type(item) is not list or len(item) != 8:
        return None
    shown, document, identity, key, body, inputs, app, file_blob = item
    if (
        type(file_blob) is not str
        or len(file_blob) not in (0, BLOB_ID_WIDTH)
        or type(shown) is not str
        or type(document) is not int
        or type(identity) is not list
        or len(identity) != 4
        or type(key) is not str
        or type(body) is not dict
        or type(inputs) is not str
    ):
        return None
    size, mtime, inode, ctime = identity
    if type(size) is not int or type(mtime) is not int or type(inode) is not int or type(ctime) is not int:
        return None
    packed = None
    if app is not None:
        packed = _app(app, blob)
        if packed is None:
            return None
    seen = (size, mtime, inode, ctime)
    return PackedRecord(shown, document, seen, key, body, inputs, packed, stamp, file_blob)


def _app(item: Any, blob: PackBlob) -> PackedApp | None:
    if type(item) is not list or len(item) != 7:
        return None
    name, group, notes, keys, files, stages, origins = item
    if type(name) is not str or (group is not None and type(group) is not str) or type(notes) is not list:
        return None
    if group is None and name == TENANTS_DIR:
        return None  # names and groups are checked with every other app's (_decode)
    for note in notes:
        if type(note) is not dict or len(note) != 4:
            return None
        for field_name in ("level", "reason", "subject", "message"):
            if type(note.get(field_name)) is not str:
                return None
    if type(keys) is not str or type(files) is not list or len(files) != 4:
        return None
    names, ids, start, end = files
    size = len(blob)
    if type(names) is not str or type(ids) is not str or type(start) is not int or type(end) is not int:
        return None
    if not 0 <= start <= end <= size or (not names and start != end):
        return None
    content = AppFiles(keys, names, ids, blob, (start, end))
    # As many ids as names (their form is checked with every other app's names and ids, _decode);
    # the texts are counted when they are decoded (io.packed_app).
    if len(ids) != BLOB_ID_WIDTH * content.count():
        return None
    if stages is not None and (
        type(stages) is not list
        or not all(type(s) is str and "/" not in s and path_message(s) is None for s in stages)
    ):
        return None
    if type(origins) is not str:
        return None  # as many as the objects: counted when they are asked for (io.packed_app)
    return PackedApp(name, group, notes, content, stages, origins)


# --- writing -------------------------------------------------------------------------------


def exact_json(value: Any) -> str | None:
    """`value` as compact JSON when it reads back equal (strings, numbers, booleans, None, lists
    and string-keyed maps; a map with an integer key or a tuple would not); None otherwise. The
    render cache's entries are put together from these texts (io.render_cache.entry_json)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # another type, a NaN, a cycle, too deep
        return None
    return text if _reads_back(value) else None


def _reads_back(value: Any) -> bool:
    """Whether `value`, which `json.dumps` took (so it holds no cycle and no type JSON lacks),
    reads back from its JSON equal. The encoder changes only two things silently: a map's key
    that is not a string (1, 1.5, True, None become "1", "1.5", "true", "null") and a tuple (a
    list). Looked for in one walk: reading the text back and comparing would cost a render that
    fills the cache twice as much (20,000 records and apps)."""
    if isinstance(value, tuple):
        return False
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return False
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        for child in children:
            if isinstance(child, (dict, list)):
                pending.append(child)
            elif isinstance(child, tuple):
                return False
    return True


def objects_text(objects: Iterable[tuple[dict[str, Any], str]]) -> str | None:
    """The objects of an app as a render cache entry keeps them, `[[body, origin], ...]`, in JSON
    (io.render_cache.entry_json); None when JSON cannot hold them exactly."""
    return exact_json([[body, origin] for body, origin in objects])


def _encode(
    name: str,
    kind: str,
    stamp: int,
    records: Iterable[PackedRecord],
    *,
    removed: list[str],
    base: str,
    secret: bytes,
) -> list[bytes] | None:
    """A pack file's bytes, in parts to write one after the other; None when it cannot be written."""
    texts_of_apps: list[bytes] = []
    size = 0  # of the blob so far
    index = []
    for record in records:
        app = None
        if record.app is not None:
            packed, content = record.app, record.app.content
            try:
                texts = content.texts_bytes()
            except PackChanged:  # the texts of the pack read: not this render's to write on
                return None
            files = [content.names_text, content.ids_text, size, size + len(texts)]
            texts_of_apps.append(texts)
            size += len(texts)
            app = [
                packed.app,
                packed.group,
                packed.notes,
                content.keys_text,
                files,
                packed.stages,
                packed.origins,
            ]
        index.append(
            [
                record.shown,
                record.document,
                list(record.identity),
                record.key,
                record.body,
                record.inputs,
                app,
                record.blob,
            ]
        )
    encoded = _index_json({"records": index, "removed": removed})
    if encoded is None:
        return None
    blob = b"".join(texts_of_apps)
    length = len(encoded) + len(blob)
    header = {
        "format": FORMAT,
        "name": name,
        "kind": kind,
        "id": secrets.token_hex(16),
        "base": base,
        "stamp": stamp,
        "index": len(encoded),
        "length": length,
    }
    _seal(secret, header, encoded, blob)
    # The parts as they are, written one after the other: joining them would copy a pack of
    # 20,000 apps (some 80 MB) twice more.
    parts = [json.dumps(header).encode() + b"\n", encoded, blob]
    return parts if sum(map(len, parts)) <= MAX_PACK_BYTES else None


def _seal(secret: bytes, header: dict[str, Any], index: bytes, blob: bytes) -> None:
    """Sign a pack file's `header` (in place): the SHA-256 of its blob in it, and a MAC of its
    other fields and the index. A render reads the index, and the texts only when it needs one
    (`PackBlob`), so that a `diff` leaving out every app reads 28 MB of 78 for 20,000 apps."""
    header["blob"] = hashlib.sha256(blob).hexdigest()
    header["mac"] = _mac(secret, header, index)


def _index_json(index: dict[str, Any]) -> bytes | None:
    """The index as compact UTF-8 JSON, or None when it cannot be written.

    orjson writes it six times faster than `json` (the index of 20,000 tenants is 28 MB: a quarter
    of a second of every render that fills the cache), and it reads back the same. What orjson
    refuses, `json` writes as before: a lone surrogate (a source file's, kept with surrogatepass),
    an integer past 64 bits, nesting past orjson's depth. NaN and infinities, which orjson would
    write as null, are in no index: a fresh record's body is one `exact_json` took (it refuses
    them), a packed one was read refusing them (`_finite`, `_no_constant`)."""
    try:
        return orjson.dumps(index)
    except orjson.JSONEncodeError:
        pass
    try:
        text = json.dumps(index, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return text.encode("utf-8", "surrogatepass")


def _differs(old: PackedRecord | None, new: PackedRecord) -> bool:
    if old is new:  # a record the render took from the pack as it was
        return False
    return old is None or not Pack.unchanged(old, new.identity) or _content_differs(old, new)


def _content_differs(old: PackedRecord, new: PackedRecord) -> bool:
    """Other bytes, inputs or app; not only another identity of the same file (touched, or a fresh
    checkout: a new inode and mtime for the same bytes)."""
    return old.key != new.key or old.inputs != new.inputs or old.app is not new.app


UNCHANGED, WRITTEN, NOT_WRITTEN = "unchanged", "written", "not written"


def save_pack(
    directory: Path,
    name: str,
    stamp: int,
    records: list[PackedRecord],
    pack: Pack | None,
    *,
    secret: bytes,
    names: PackNames | None = None,
) -> str:
    """Write what changed since `pack` (the one this render read, under `name`): nothing when
    nothing did (UNCHANGED), a delta against its base when few records differ from the base, else
    a new base (WRITTEN). A directory that cannot be written is no error (NOT_WRITTEN).

    With `names`: a pack found through the pointer (`name` is not `names.own`) is another
    directory's: it is left as it is when only identities changed (a checkout of the same tree),
    else the render writes a base of its own (a delta there could be another tree's changes, which
    the next render in that directory would undo); the pointer then names the new base."""
    own = names.own if names is not None else name
    bound = max(DELTA_MIN, len(records) // DELTA_SHARE)
    if pack is not None and len(records) == len(pack.records):
        differing = [record for record in records if _differs(pack.records.get(record.shown), record)]
        if not differing:
            return UNCHANGED
        # Only new identities of the same files, more than a delta holds: a fresh checkout (CI
        # clones the sources for every run). Writing them would rewrite the whole pack on every
        # such run, for identities the next clone changes again: the pack is kept, and its
        # records are found by their bytes (read and compared) until a render writes a base.
        # Another directory's pack (found through the pointer) is never written for identities.
        if (len(differing) > bound or name != own) and not any(
            (old := pack.records.get(record.shown)) is None or _content_differs(old, record)
            for record in differing
        ):
            return UNCHANGED
    if pack is not None and name == own:
        current = {record.shown for record in records}
        changed = [record for record in records if _differs(pack.base.get(record.shown), record)]
        removed = sorted(shown for shown in pack.base if shown not in current)
        if len(changed) + len(removed) > bound:
            # The same for a fresh checkout with a few records changed: the delta holds the changes,
            # and the records whose files only got new identities stay as the base has them.
            changed = [
                record
                for record in changed
                if (old := pack.base.get(record.shown)) is None or _content_differs(old, record)
            ]
        if len(changed) + len(removed) <= bound:
            encoded = _encode(
                name, "delta", stamp, changed, removed=removed, base=pack.base_id, secret=secret
            )
            stored = encoded is not None and _store(directory, name + _DELTA, encoded)
            if stored and names is not None:
                _store(directory, names.shared + _POINTER, f"{name}\n".encode())
            return WRITTEN if stored else NOT_WRITTEN
    encoded = _encode(own, "base", stamp, records, removed=[], base="", secret=secret)
    if encoded is None or not _store(directory, own + _SUFFIX, encoded):
        return NOT_WRITTEN
    if names is not None:
        _store(directory, names.shared + _POINTER, f"{own}\n".encode())
    packs = _directory_fd(directory, create=False)
    if packs is not None:
        try:
            with contextlib.suppress(OSError):
                os.unlink(own + _DELTA, dir_fd=packs)  # names the base before: ignored anyway
            _keep_latest(packs)
        finally:
            os.close(packs)
    return WRITTEN


def _store(directory: Path, filename: str, data: bytes | list[bytes]) -> bool:
    packs = _directory_fd(directory, create=True)
    if packs is None:
        return False
    try:
        return atomic_write_at(packs, filename, data)
    finally:
        os.close(packs)


def _keep_latest(packs: int) -> None:
    """The `KEEP_PACKS` bases written last, and their deltas; as many pointers."""
    found: list[tuple[int, str]] = []
    pointers: list[tuple[int, str]] = []
    with os.scandir(packs) as listing:
        for entry in listing:
            # A pack or a pointer by its name (a sha256), a regular file: nothing else is removed.
            kept = (
                found
                if _PACK_NAME.fullmatch(entry.name)
                else pointers
                if _POINTER_NAME.fullmatch(entry.name)
                else None
            )
            if kept is not None and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    kept.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    found.sort(reverse=True)
    pointers.sort(reverse=True)
    old = [name for _, name in found[KEEP_PACKS:]]
    for filename in [*old, *(name.removesuffix(_SUFFIX) + _DELTA for name in old)]:
        with contextlib.suppress(OSError):
            os.unlink(filename, dir_fd=packs)
    for _, pointer in pointers[KEEP_PACKS:]:
        with contextlib.suppress(OSError):
            os.unlink(pointer, dir_fd=packs)
