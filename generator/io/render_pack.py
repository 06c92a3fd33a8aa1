"""The render pack: every tenant record of one render and its finished app, in one file.

The entries of io.render_cache spare a render parsing, validating and rendering an unchanged
record, but a render still opens and decodes one entry per record, lays each app out, and runs
the output guards over every object. A pack holds, for each tenant record file of a render that
passed every check:

- the file's path as shown, its document number, an identity of the file (size, mtime, inode,
  ctime, as Git's index keeps them) and the render cache key of its bytes (a sha256 of the scope,
  the path and the bytes);
- the document as validated;
- the digest of the application inputs its app was rendered with, and that app as written: its
  files (name in the app directory -> text, and the Git blob id of the text's UTF-8 bytes), the
  keys of its objects (for the duplicate check), its notes, its Flux stages, and its objects as
  JSON text, decoded only when asked for.

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

A pack is two files, as Git splits a large index: `<name>.pack` (the base) and `<name>.delta`,
the records that differ from the base's (added, changed, removed), naming the base by the
random id written into its header. A render that changed a few records writes the delta again, in O(changed);
when the delta would hold more than an eighth of the records, the base is written anew (and a
delta naming an older base is ignored). Each file is a header line (format, name, kind, id,
stamp, lengths, and an HMAC-SHA256 of the header's other fields and the body under the user's
cache key, io.cache_key: the key is not in the cache directory, so whoever can write a pack there
cannot sign one, and a pack whose MAC does not hold is not used), an index (JSON: the records, each app's
file names and the spans of their texts) and a blob (the texts, UTF-8, and each app's objects as
compressed JSON): reading a pack decodes the index and the file texts, not the objects.

A pack is named by the scope (code digest, schemas, target) and the source arguments, so two
source trees sharing a cache directory keep one each; at most `KEEP_PACKS` are kept (the ones
written least recently are removed). It is untrusted input like an entry: a file that is not a
regular file, a link, larger than `MAX_PACK_BYTES`, truncated, corrupt, of another shape or
another name's, unsigned, or whose apps name paths, directories or kustomizations a render
would not write, is ignored (the render proceeds without it); only a pack signed with the key
(stolen) whose objects do not decode, decompress beyond `MAX_OBJECTS_BYTES`, lack an object's
shape or are not the ones its keys name fails the render that asks for those objects, with an
error naming the pack (exit 3); the files of every app it hands the render pass the output
guard (pipeline.reused_output). Written to a temporary file renamed into place, so concurrent renders
each read whole files (the last one written wins).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import re
import secrets
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.errors import InputError
from btp_gitops.generator.core.layout import KUSTOMIZATION, TENANTS_DIR, kustomization
from btp_gitops.generator.core.names import NameRule, name_message, path_message
from btp_gitops.generator.core.object_shape import shape_problems
from btp_gitops.generator.core.objects import object_key
from btp_gitops.generator.io.cache_files import (
    atomic_write_at,
    open_directory,
    open_subdirectory,
    read_whole_at,
)
from btp_gitops.generator.io.cache_key import new_mac, same_mac
from btp_gitops.generator.io.git_blobs import blob_id

FORMAT = 4  # 3: an HMAC (io.cache_key) instead of a CRC-32; 4: each file's Git blob id
MAX_PACK_BYTES = 1 << 30  # a pack larger than this is neither read nor written
MAX_OBJECTS_BYTES = 8 << 20  # one app's objects, decompressed (as a render cache entry's limit)
KEEP_PACKS = 16  # packs kept in a cache directory (source trees x scopes)
DELTA_SHARE = 8  # a delta holds at most 1/DELTA_SHARE of the records (or DELTA_MIN), else a new base
DELTA_MIN = 64
RACY_NS = 2_000_000_000  # a file modified this close to a pack's stamp is read (FAT: 2 s granularity)
DIRECTORY = "packs"
_SUFFIX = ".pack"
_DELTA = ".delta"

Identity = tuple[int, int, int, int]  # size, mtime_ns, inode, ctime_ns
Key = str  # an object's key as core.objects.ObjectKey.text gives it


# What a pack's app may name, checked on reading as a render checks a fresh app before writing:
# the common forms by one match each (20,000 apps are read per render), anything else by the
# render's own rules (core.names, core.layout).
_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\Z")
_LAYOUT_PATH = re.compile(r"(?:[a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9._-]*\Z")  # a file, or in a stage
_LISTING = re.compile(
    r"apiVersion: kustomize\.config\.k8s\.io/v1beta1\nkind: Kustomization\nresources:\n"
    r"(?:- [a-z][a-z0-9_-]*\.[a-z0-9._-]*\n)*\Z"
)


_PACK_NAME = re.compile(r"[0-9a-f]{64}\.pack")


def _subdomain(name: str) -> bool:
    return (len(name) <= 253 and _SUBDOMAIN.match(name) is not None) or name_message(
        name, NameRule.SUBDOMAIN
    ) is None


def _layout_holds(texts: dict[str, str]) -> bool:
    """Every path a plain relative one, and every kustomization.yaml one the layout writes for
    the files beside it: resources in the same directory, nothing else (a forged one could
    generate a Secret or pull in files from elsewhere)."""
    if not all(_LAYOUT_PATH.match(path) or path_message(path) is None for path in texts):
        return False
    for path, text in texts.items():
        if (path == KUSTOMIZATION or path.endswith("/" + KUSTOMIZATION)) and not _LISTING.match(text):
            directory = posixpath.dirname(path)
            beside = [
                posixpath.basename(other)
                for other in texts
                if other != path and posixpath.dirname(other) == directory
            ]
            if text != kustomization(beside):
                return False
    return True


# The same checks over every app of a pack at once (a render reads 20,000): each name, and each
# kustomization.yaml of the common form, followed by a NUL (which neither holds); the count of
# NULs tells that no name or text held one. Anything else is checked app by app (_layout_holds).
_LAYOUT_PATHS = re.compile(r"(?:(?:[a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9._-]*\0)*")
_LISTINGS = re.compile(
    r"(?:apiVersion: kustomize\.config\.k8s\.io/v1beta1\nkind: Kustomization\nresources:\n"
    r"(?:- [a-z][a-z0-9_-]*\.[a-z0-9._-]*\n)*\0)*"
)


def _layouts_hold(apps: list[PackedApp]) -> bool:
    """`_layout_holds` for every app, in two matches when every path and kustomization has the
    common form (as a pack btp-gitops wrote has them), else app by app."""
    paths = [path for app in apps for path in app.files]
    listings = [
        text
        for app in apps
        for path, text in app.files.items()
        if path == KUSTOMIZATION or path.endswith("/" + KUSTOMIZATION)
    ]
    names, texts = "\0".join([*paths, ""]), "\0".join([*listings, ""])
    if (
        names.count("\0") == len(paths)
        and texts.count("\0") == len(listings)
        and _LAYOUT_PATHS.fullmatch(names)
        and _LISTINGS.fullmatch(texts)
    ):
        return True
    return all(_layout_holds(app.files) for app in apps)


_BLOB_IDS = re.compile(r"(?:[0-9a-f]{40}\0)*")


def _blob_ids_hold(apps: list[PackedApp]) -> bool:
    """Every blob id of every app the form of a SHA-1 one: forty lowercase hexadecimal digits,
    checked in one match over all of them (each followed by a NUL, which none holds)."""
    ids = [oid for app in apps for oid in app.blob_ids.values()]
    joined = "\0".join([*ids, ""])
    return joined.count("\0") == len(ids) and _BLOB_IDS.fullmatch(joined) is not None


def identity_of(status: os.stat_result) -> Identity:
    return (status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns)


def pack_name(scope: str, sources: Sequence[Path]) -> str:
    """One pack per scope and source arguments (as given, with the working directory: files are
    shown relative to it)."""
    digest = hashlib.sha256(f"{scope}\0{os.getcwd()}".encode("utf-8", "surrogateescape"))
    for source in sources:
        digest.update(b"\0" + os.fsencode(source))
    return digest.hexdigest()


class PackDamaged(InputError):
    """A pack whose checksums hold but whose objects do not decode, decompress beyond
    `MAX_OBJECTS_BYTES`, have the shape of no Kubernetes object or are not the objects its keys
    name: written by something else. Exit 3, naming the pack's app; never a traceback."""


def inflate(data: bytes, limit: int) -> bytes | None:
    """`data` decompressed (zlib) when it is one whole stream of at most `limit` bytes; None when
    it is not, or would be larger (a bomb of compressed spaces stops at `limit`, not at its end)."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error:
        return None
    if len(out) > limit or inflater.unconsumed_tail or not inflater.eof or inflater.unused_data:
        return None
    return out


@dataclass(slots=True)
class PackedApp:
    """A tenant's app as a pack holds it (see the module docstring). `objects` is the JSON text
    of its objects ([[body, origin], ...]) compressed (zlib), a span of `blob`, decoded by
    `objects_payload`."""

    app: str
    group: str | None
    notes: list[dict[str, str]]
    keys: list[Key]
    files: dict[str, str]
    stages: list[str] | None  # the app's Flux stage directories (Flux target), else None
    blob: bytes | memoryview
    objects: tuple[int, int]
    blob_ids: dict[str, str]  # file name -> Git (SHA-1) blob id of its text's UTF-8 bytes

    def verified_text(self, name: str) -> str:
        """The text of file `name`, its bytes hashed: they must be the blob id the pack claims
        (a text leaving the process is checked, see the module docstring)."""
        text = self.files[name]
        if blob_id(text.encode("utf-8", "surrogatepass")) != self.blob_ids.get(name):
            raise self._damaged(f"the file {name}", "is not the blob its index names")
        return text

    def objects_bytes(self) -> bytes:
        start, end = self.objects
        return bytes(self.blob[start:end])

    def objects_payload(self) -> list[tuple[dict[str, Any], str]]:
        """The app's objects, checked as any input: bounded, each of an object's shape, and the
        very objects its keys (which the duplicate check used) name."""
        text = inflate(self.objects_bytes(), MAX_OBJECTS_BYTES)
        try:
            payload = json.loads(text) if text is not None else None
        except (ValueError, RecursionError):
            payload = None
        if not isinstance(payload, list) or not all(
            isinstance(o, list)
            and len(o) == 2
            and isinstance(o[0], dict)
            and isinstance(o[1], str)
            and not shape_problems(o[0])
            for o in payload
        ):
            raise self._damaged("objects", "cannot be read")
        if [object_key(body).text() for body, _ in payload] != self.keys:
            raise self._damaged("objects", "are not the ones its index names")
        return [(body, origin) for body, origin in payload]

    def _damaged(self, what: str, why: str) -> PackDamaged:
        return PackDamaged(
            f"the render pack holds {what} of app {self.app} that {why}: it was not written by "
            "btp-gitops; remove the cache directory's packs/ or render with --no-cache"
        )


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


@dataclass(slots=True)
class Pack:
    stamp: int  # time.time_ns() when the render that wrote the base started reading its sources
    records: dict[str, PackedRecord]  # by the file as shown, the delta applied
    base: dict[str, PackedRecord] = field(default_factory=dict)  # the base's alone
    base_id: str = ""  # the base's header id, which its deltas name

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


def _mac(secret: bytes, header: dict[str, Any], body: bytes | memoryview) -> str:
    """The MAC of a pack file: its header's other fields (canonical JSON) and its body."""
    mac = new_mac(secret)
    fields = {key: value for key, value in header.items() if key != "mac"}
    mac.update(json.dumps(fields, sort_keys=True).encode() + b"\n")
    mac.update(body)
    return mac.hexdigest()


def read_pack(directory: Path, name: str, secret: bytes) -> Pack | None:
    """The pack `name` in the cache directory when it is whole and its own; None otherwise."""
    packs = _directory_fd(directory, create=False)
    if packs is None:
        return None
    try:
        base_data = read_whole_at(packs, name + _SUFFIX, MAX_PACK_BYTES)
        base = _decode(name, "base", base_data, secret) if base_data is not None else None
        if base is None:
            return None
        delta_data = read_whole_at(packs, name + _DELTA, MAX_PACK_BYTES)
    finally:
        os.close(packs)
    records = {record.shown: record for record in base.records}
    pack = Pack(base.header["stamp"], records, dict(records), base.header["id"])
    if len(records) != len(base.records):
        return None
    delta = _decode(name, "delta", delta_data, secret) if delta_data is not None else None
    if delta is not None and delta.header.get("base") == pack.base_id:
        records = dict(records)
        for shown in delta.removed:
            records.pop(shown, None)
        records.update((record.shown, record) for record in delta.records)
        pack.records = records
    return pack


def _decode(name: str, kind: str, data: bytes, secret: bytes) -> _File | None:
    newline = data.find(b"\n", 0, 4096)
    if newline < 0:
        return None
    body = memoryview(data)[newline + 1 :]  # no copy of 100 MB: the blob is sliced where used
    try:
        header = json.loads(data[:newline])
        if (
            not isinstance(header, dict)
            or header.get("format") != FORMAT
            or header.get("name") != name
            or header.get("kind") != kind
            or type(header.get("stamp")) is not int
            or type(header.get("index")) is not int
            or header.get("length") != len(body)
            or type(header.get("id")) is not str
            or not same_mac(_mac(secret, header, body), header.get("mac"))
        ):
            return None
        index = json.loads(bytes(body[: header["index"]]))
    except (ValueError, RecursionError):
        return None
    blob = body[header["index"] :]
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
    if not _layouts_hold(apps) or not _blob_ids_hold(apps):
        return None
    return _File(header, records, removed)


def _record(item: Any, blob: memoryview, stamp: int) -> PackedRecord | None:
    """One record of an index, its types checked (inline: 20,000 of them are read per render)."""
    if type(item) is not list or len(item) != 7:
        return None
    shown, document, identity, key, body, inputs, app = item
    if (
        type(shown) is not str
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
    return PackedRecord(shown, document, (size, mtime, inode, ctime), key, body, inputs, packed, stamp)


def _app(item: Any, blob: memoryview) -> PackedApp | None:
    if type(item) is not list or len(item) != 7:
        return None
    name, group, notes, keys, files, stages, objects = item
    if type(name) is not str or (group is not None and type(group) is not str) or type(notes) is not list:
        return None
    if group is None:
        if name == TENANTS_DIR or not _subdomain(name):
            return None
    elif not (_subdomain(name) and _subdomain(group)):
        return None
    for note in notes:
        if type(note) is not dict or len(note) != 4:
            return None
        for field_name in ("level", "reason", "subject", "message"):
            if type(note.get(field_name)) is not str:
                return None
    if type(keys) is not list or type(files) is not list or not all(type(key) is str for key in keys):
        return None
    texts: dict[str, str] = {}
    blob_ids: dict[str, str] = {}
    size = len(blob)
    try:
        for entry in files:
            if type(entry) is not list:
                return None
            file_name, start, end, oid = entry
            if type(file_name) is not str or type(start) is not int or type(end) is not int:
                return None
            if not 0 <= start <= end <= size or type(oid) is not str:
                return None
            texts[file_name] = str(blob[start:end], "utf-8", "surrogatepass")
            blob_ids[file_name] = oid  # its form is checked with every other app's (_decode)
    except ValueError:  # not four parts, or not UTF-8 (UnicodeDecodeError)
        return None
    if stages is not None and (
        type(stages) is not list
        or not all(type(s) is str and "/" not in s and path_message(s) is None for s in stages)
    ):
        return None
    if type(objects) is not list or len(objects) != 2:
        return None
    start, end = objects
    if type(start) is not int or type(end) is not int or not 0 <= start <= end <= size:
        return None
    return PackedApp(name, group, notes, keys, texts, stages, blob, (start, end), blob_ids)


# --- writing -------------------------------------------------------------------------------


def exact_json(value: Any) -> str | None:
    """`value` as compact JSON when it reads back equal (strings, numbers, booleans, None, lists
    and string-keyed maps; a map with an integer key or a tuple would not); None otherwise. The
    render cache's entries are put together from these texts (io.render_cache.entry_json)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return text if json.loads(text) == value else None


def objects_text(objects: Iterable[tuple[dict[str, Any], str]]) -> str | None:
    """The objects of an app as the pack keeps them, `[[body, origin], ...]`, in JSON; None when
    JSON cannot hold them exactly."""
    return exact_json([[body, origin] for body, origin in objects])


def compressed(text: str) -> bytes:
    # Compressed: a fifth of the size, and a pack is read (and hashed) whole on every render.
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 1)


def objects_json(objects: Iterable[tuple[dict[str, Any], str]]) -> bytes | None:
    """The objects of an app for a pack, compressed; None when JSON cannot hold them exactly."""
    text = objects_text(objects)
    return compressed(text) if text is not None else None


def exact_in_json(value: Any) -> bool:
    """Whether `value` reads back from JSON equal (a record's document, before it is packed)."""
    return exact_json(value) is not None


def _encode(
    name: str,
    kind: str,
    stamp: int,
    records: Iterable[PackedRecord],
    *,
    removed: list[str],
    base: str,
    secret: bytes,
) -> bytes | None:
    """A pack file's bytes; None when it cannot be written."""
    blob = bytearray()
    index = []
    for record in records:
        app = None
        if record.app is not None:
            files = []
            blob_ids = record.app.blob_ids
            for file_name, text in record.app.files.items():
                data = text.encode("utf-8", "surrogatepass")
                files.append([file_name, len(blob), len(blob) + len(data), blob_ids[file_name]])
                blob += data
            objects = record.app.objects_bytes()
            span = [len(blob), len(blob) + len(objects)]
            blob += objects
            packed = record.app
            app = [
                packed.app,
                packed.group,
                packed.notes,
                packed.keys,
                files,
                packed.stages,
                span,
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
            ]
        )
    try:
        text = json.dumps(
            {"records": index, "removed": removed}, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except (TypeError, ValueError, RecursionError):
        return None
    encoded = text.encode("utf-8", "surrogatepass")
    body = encoded + bytes(blob)
    header = {
        "format": FORMAT,
        "name": name,
        "kind": kind,
        "id": secrets.token_hex(16),
        "base": base,
        "stamp": stamp,
        "index": len(encoded),
        "length": len(body),
    }
    header["mac"] = _mac(secret, header, body)
    data = json.dumps(header).encode() + b"\n" + body
    return data if len(data) <= MAX_PACK_BYTES else None


def _differs(old: PackedRecord | None, new: PackedRecord) -> bool:
    if old is new:  # a record the render took from the pack as it was
        return False
    return (
        old is None
        or not Pack.unchanged(old, new.identity)
        or old.key != new.key
        or old.inputs != new.inputs
        or old.app is not new.app
    )


UNCHANGED, WRITTEN, NOT_WRITTEN = "unchanged", "written", "not written"


def save_pack(
    directory: Path, name: str, stamp: int, records: list[PackedRecord], pack: Pack | None, *, secret: bytes
) -> str:
    """Write what changed since `pack` (the one this render read): nothing when nothing did
    (UNCHANGED), a delta against its base when few records differ from the base, else a new base
    (WRITTEN). A directory that cannot be written is no error (NOT_WRITTEN)."""
    if (
        pack is not None
        and len(records) == len(pack.records)
        and not any(_differs(pack.records.get(record.shown), record) for record in records)
    ):
        return UNCHANGED
    if pack is not None:
        current = {record.shown for record in records}
        changed = [record for record in records if _differs(pack.base.get(record.shown), record)]
        removed = sorted(shown for shown in pack.base if shown not in current)
        if len(changed) + len(removed) <= max(DELTA_MIN, len(records) // DELTA_SHARE):
            encoded = _encode(
                name, "delta", stamp, changed, removed=removed, base=pack.base_id, secret=secret
            )
            stored = encoded is not None and _store(directory, name + _DELTA, encoded)
            return WRITTEN if stored else NOT_WRITTEN
    encoded = _encode(name, "base", stamp, records, removed=[], base="", secret=secret)
    if encoded is None or not _store(directory, name + _SUFFIX, encoded):
        return NOT_WRITTEN
    packs = _directory_fd(directory, create=False)
    if packs is not None:
        try:
            with contextlib.suppress(OSError):
                os.unlink(name + _DELTA, dir_fd=packs)  # names the base before: ignored anyway
            _keep_latest(packs)
        finally:
            os.close(packs)
    return WRITTEN


def _store(directory: Path, filename: str, data: bytes) -> bool:
    packs = _directory_fd(directory, create=True)
    if packs is None:
        return False
    try:
        return atomic_write_at(packs, filename, data)
    finally:
        os.close(packs)


def _keep_latest(packs: int) -> None:
    """The `KEEP_PACKS` bases written last, and their deltas."""
    found: list[tuple[int, str]] = []
    with os.scandir(packs) as listing:
        for entry in listing:
            # A pack by its name (the sha256 pack_name gives), a regular file: nothing else is removed.
            if _PACK_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    found.sort(reverse=True)
    for _, old in found[KEEP_PACKS:]:
        for filename in (old, old.removesuffix(_SUFFIX) + _DELTA):
            with contextlib.suppress(OSError):
                os.unlink(filename, dir_fd=packs)
