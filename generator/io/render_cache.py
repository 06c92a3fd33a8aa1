"""The render cache: what a render learnt about one tenant record, kept for the next render.

A CAP tenant record is a file of one CAPTenant document (as the subscription server writes
them). Parsing, schema-validating, rendering and serialising 20,000 of them is most of a render,
although one render to the next changes a few. An entry keeps, for one such file:

- the document as parsed and validated (so an unchanged record is neither parsed nor checked
  against its schema again: validated once);
- the tenant's app as rendered, for the application inputs it was rendered with (a digest the
  CAP domain computes: the CAPApplication, its versions, the domains), each object with its YAML
  as `core.yamlio` writes it.

An entry's name is the sha256 of the code digest (the btp-gitops version, a content digest of
`generator/` and `schemas/` and the versions of PyYAML and jsonschema), the schemas the render
validates with, the layout target, the file's path as shown and its bytes. The rendered part is
used only when the digest of the application inputs it records is today's; otherwise the record
is rendered again and the entry replaced. Cross-tenant rules (names, tenant ids, subdomains) are
not cached: the domain checks every record, cached or not, each render.

Entries are untrusted input too: each carries its own name and an HMAC of it and its payload
under the user's cache key (io.cache_key: not in the cache directory, so whoever can write the
directory cannot sign an entry); an entry whose MAC does not hold, that is not a regular file,
too large, a link, corrupt, truncated or another key's is ignored (the record is read and
rendered as without a cache), never an error; so is one whose objects do not have an object's
shape. A cached record whose app is rendered again (its application changed) is checked against
its schema, as a source is (pipeline.cached_sources). Entries are opened relative to the cache
directory, no link followed.

Entries are the second layer: the render pack (io.render_pack) holds every tenant record of a
render in one file, so a render writes an entry only for a record that pack does not hold (the
pack could not be written, or cannot hold that record or its app). A render that fills an
empty cache writes one pack, not 20,000 entries (which cost more than half again a render
without a cache). Entries written before are still read, for records the pack misses.

A new entry is created in place (io.cache_files.create_at: a rename each would add a third to
the cost of writing them); one that replaces another goes to a temporary file renamed into
place. A reader that finds an entry half written (a render writing it at the time, or one that
crashed) finds its MAC does not hold and ignores it, as any damaged entry; the next write
replaces it whole. The directory is bounded: when a render wrote entries and the directory
holds more than `max_bytes`, the entries used least recently (a hit refreshes an entry's time
at most once a day) are removed down to 90 % of it;
only files that are entries by name (hex shard, hex key, `.json`), kind (a regular file, no link
followed) and header (their own key) are counted or removed, never anything else in the directory.
What it holds is counted by scanning it (20,000 entries: a tenth of a warm render), so the
directory keeps a ledger, `usage`: the bytes found by the last scan plus those written since,
and the renders since. A render that wrote entries adds their bytes and scans only when the
ledger says the directory is over `max_bytes`, or after `RESCAN_AFTER` renders (renders running
at once may each add to the same count and one addition be lost; the scan sets it right), or
when the ledger is missing, a link, or not what a ledger says.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import btp_gitops
from btp_gitops.generator.core.object_shape import shape_problems
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.report import AppRender, Level, Note
from btp_gitops.generator.core.validation import SchemaRegistry
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.cache_files import (
    atomic_write_at,
    create_at,
    open_directory,
    open_subdirectory,
    read_whole_at,
)
from btp_gitops.generator.io.cache_key import cache_secret, new_mac, same_mac
from btp_gitops.generator.transforms.secret_text import could_spell_secret

FORMAT = 3  # 2: an HMAC (io.cache_key) instead of a sha256; 3: an app's objects as the pack has them
DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB
MAX_ENTRY_BYTES = 8 << 20  # an entry larger than this is not read (a tenant's app is a few KiB)
RESCAN_AFTER = 64  # renders adding to the ledger before the directory is scanned again
_USAGE = "usage"
_USAGE_MAX_BYTES = 256  # a ledger is one short line
_TOUCH_AFTER = 24 * 3600.0  # a hit refreshes the entry's time when it is older than this
_SUFFIX = ".json"


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/btp-gitops/render`, else `~/.cache/btp-gitops/render`."""
    base = environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "btp-gitops" / "render"


def _package_files(root: Path) -> Iterator[Path]:
    for parent, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".py", ".json", ".yaml")):
                yield Path(parent) / name


def library_version(distribution: str, module: str) -> str:
    """The installed version of `distribution` (which provides `module`), "none" when it is not
    installed. Read from the name of its metadata directory beside the module (`<name>-<version>
    .dist-info`, as pip installs it) without importing either: importlib.metadata reads the
    metadata of every installed distribution (~0.03 s of each render that uses the cache). From
    importlib.metadata when there is not exactly one such directory there (an egg, a source tree)."""
    spec = importlib.util.find_spec(module)
    if spec is not None and spec.origin is not None:
        wanted = _distribution_name(distribution)
        # A package's folder, or a module's file, is in the folder its metadata is in.
        folder = Path(spec.origin).parents[0 if spec.submodule_search_locations is None else 1]
        with contextlib.suppress(OSError):
            found = [
                version
                for name, _, version in (
                    entry.removesuffix(_DIST_INFO).partition("-")
                    for entry in os.listdir(folder)
                    if entry.endswith(_DIST_INFO)
                )
                if _distribution_name(name) == wanted and version
            ]
            if len(found) == 1:
                return found[0]
    from importlib import metadata  # noqa: PLC0415 - see the docstring

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "none"


_DIST_INFO = ".dist-info"


def _distribution_name(name: str) -> str:
    """A distribution's name as pip compares them: case and runs of `-`, `_` and `.` aside."""
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.cache
def code_digest() -> str:
    """What renders a tenant: the version, the content of `generator/` and `schemas/`, the YAML
    and schema libraries. A development build that changes a line changes the digest."""
    digest = hashlib.sha256(f"btp-gitops {btp_gitops.__version__} format {FORMAT}\n".encode())
    digest.update(f"python {sys.version_info[:2]}\n".encode())
    for package, module in (("PyYAML", "yaml"), ("jsonschema", "jsonschema")):
        digest.update(f"{package} {library_version(package, module)}\n".encode())
    generator = Path(btp_gitops.__file__).parent / "generator"
    for top in (generator, bundled.schema_dir()):
        for path in _package_files(top):
            digest.update(f"{path.relative_to(top)}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def schemas_digest(schemas: SchemaRegistry) -> str:
    """The schemas a render validates with (`--schemas` may name others than the shipped ones)."""
    text = json.dumps([kind.schema for kind in schemas.kinds()], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Entry:
    """One tenant record file: its document, and its app as rendered for `inputs`. `text`, when
    given, is the payload's JSON as `entry_json` assembled it from parts already checked to read
    back equal (the pack's objects): an entry written then costs no second serialisation."""

    document: int
    body: dict[str, Any]
    inputs: str  # the digest of the application inputs the app was rendered with; "" when none
    app: dict[str, Any] | None  # {"app", "group", "notes", "objects": [[body, origin]], "texts"}
    text: str | None = field(default=None, compare=False, repr=False)

    def payload(self) -> dict[str, Any]:
        return {"document": self.document, "body": self.body, "inputs": self.inputs, "app": self.app}

    @classmethod
    def of(cls, payload: Any) -> Entry | None:
        if not isinstance(payload, dict):
            return None
        document, body, inputs, app = (payload.get(k) for k in ("document", "body", "inputs", "app"))
        if type(document) is not int or not isinstance(body, dict) or not isinstance(inputs, str):
            return None
        if app is not None and not _app_shape(app):
            return None
        return cls(document, body, inputs, app)


def app_payload(app: AppRender) -> dict[str, Any]:
    """A tenant's app for an entry: its objects (body, origin) and their YAML once the layout
    wrote it."""
    return {
        "app": app.app,
        "group": app.group,
        "notes": [note.as_dict() for note in app.notes],
        "objects": [[m.body, m.origin] for m in app.manifests],
        "texts": [m.text for m in app.manifests],
    }


def entry_json(document: int, body_json: str, inputs: str, app: AppRender | None, objects_json: str) -> str:
    """The JSON of an entry's payload (as `_encode` would write `Entry(...).payload()`), put
    together from the record's body and the app's objects as JSON texts that were checked to
    read back equal (io.render_pack.exact_json, the objects the pack keeps); the rest are strings
    and a document number, which JSON holds exactly."""
    if app is None:
        app_text = "null"
    else:
        notes = [note.as_dict() for note in app.notes]
        texts = [m.text for m in app.manifests]
        app_text = (
            f'{{"app":{_string(app.app)},"group":{_string(app.group)},"notes":{_compact(notes)},'
            f'"objects":{objects_json},"texts":{_compact(texts)}}}'
        )
    return f'{{"document":{int(document)},"body":{body_json},"inputs":{_string(inputs)},"app":{app_text}}}'


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _string(value: str | None) -> str:
    return json.dumps(value, ensure_ascii=False)


def rendered_app(payload: dict[str, Any]) -> AppRender | None:
    """The app an entry holds (its shape checked by Entry.of); None when a note's level is unknown."""
    try:
        notes = [Note(Level(n["level"]), n["reason"], n["subject"], n["message"]) for n in payload["notes"]]
    except ValueError:
        return None
    # The text is what is written, the body what the guard checks: a text that could spell a
    # Secret (the word, or an escape) is written again from the body, so that the two cannot
    # differ in what the credential guard looks for.
    manifests = [
        Manifest(body, origin, None if _may_be_secret(text) else text)
        for (body, origin), text in zip(payload["objects"], payload["texts"], strict=True)
    ]
    return AppRender(payload["app"], manifests, notes, payload.get("group"))


def _may_be_secret(text: str | None) -> bool:
    return text is not None and could_spell_secret(text)


def _app_shape(app: Any) -> bool:
    if not isinstance(app, dict) or not isinstance(app.get("app"), str):
        return False
    if app.get("group") is not None and not isinstance(app.get("group"), str):
        return False
    notes, objects, texts = app.get("notes"), app.get("objects"), app.get("texts")
    if not isinstance(notes, list) or not isinstance(objects, list) or not isinstance(texts, list):
        return False
    if len(texts) != len(objects) or not all(text is None or isinstance(text, str) for text in texts):
        return False
    fields = ("level", "reason", "subject", "message")
    if not all(isinstance(n, dict) and all(isinstance(n.get(f), str) for f in fields) for n in notes):
        return False
    return all(
        isinstance(o, list)
        and len(o) == 2
        and isinstance(o[0], dict)
        and not shape_problems(o[0])
        and isinstance(o[1], str)
        for o in objects
    )


class RenderCache:
    """A cache directory the command owns (`--cache-dir`); see the module docstring."""

    def __init__(
        self,
        directory: Path,
        max_bytes: int = DEFAULT_MAX_BYTES,
        secret: bytes | None = None,
        *,
        pack_place: str | None = None,
    ) -> None:
        self.directory = directory
        # What names the render pack instead of the working directory (io.render_pack.pack_name):
        # Argo CD's plugin gets a new directory for every request (cli.argocd_parameters).
        self.pack_place = pack_place
        self._secret = secret  # io.cache_key's; asked for on first use when not given
        self._secret_asked = secret is not None
        self.max_bytes = max_bytes
        self._root: int | None = None
        self._shards: dict[str, int] = {}
        self.hits = 0  # records taken from an entry or the render pack (io.render_pack)
        self.written = 0  # entries
        self.written_bytes = 0
        self.scans = 0  # of the whole directory, to bound it
        self.packs_written = 0
        self.records = 0  # tenant records in the sources
        self.pack_found = ""  # "own", "pointer" (io.render_pack.find_pack) or "" (none)
        self.pack_saved = ""  # what became of the pack (io.render_pack.save_pack), "" if not asked
        # The pack's texts turned out not to be the ones it was signed with: the render started
        # again without it (pipeline.render.render_cluster).
        self.pack_aside = False

    def summary(self) -> str:
        """What this render took from the cache, for `--verbose`: a user can tell whether a CI
        job's or the Argo CD plugin's cache is found and used. Empty when the sources hold no tenant
        record (the cache holds nothing else)."""
        if not self.records:
            return ""
        from btp_gitops.generator.io.render_pack import NOT_WRITTEN, UNCHANGED, WRITTEN  # noqa: PLC0415

        if self.secret is None:
            return "render cache: not used (no cache key could be read or made)"
        found = {
            "own": "the pack of this source tree",
            "pointer": "the pack another directory wrote last (found through the pointer)",
        }.get(self.pack_found, "no pack")
        if self.pack_aside:
            found = "no pack (set aside: its texts changed after it was written)"
        saved = {UNCHANGED: "left as it was", WRITTEN: "written", NOT_WRITTEN: "could not be written"}
        outcome = f"; pack {saved[self.pack_saved]}" if self.pack_saved in saved else ""
        return f"render cache: {self.hits} of {self.records} tenant record(s) reused, from {found}{outcome}"

    def set_pack_aside(self) -> None:
        """Render again without the pack: what was counted from it no longer is."""
        self.pack_aside = True
        self.hits = self.records = 0
        self.pack_found = ""

    @property
    def secret(self) -> bytes | None:
        """The key entries and packs are signed with (io.cache_key); None: no cache at all."""
        if not self._secret_asked:
            self._secret, self._secret_asked = cache_secret(), True
        return self._secret

    # --- keys ------------------------------------------------------------------------------

    def scope(self, schemas: SchemaRegistry, target: str) -> str:
        """What every key of one render shares."""
        return hashlib.sha256(f"{code_digest()}\0{schemas_digest(schemas)}\0{target}".encode()).hexdigest()

    @staticmethod
    def key(scope: str, shown: str, data: bytes) -> str:
        digest = hashlib.sha256(scope.encode())
        digest.update(b"\0" + shown.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(data)
        return digest.hexdigest()

    # --- directory -------------------------------------------------------------------------

    def _root_fd(self, create: bool) -> int | None:
        if self._root is None:
            self._root = open_directory(self.directory, create)
        return self._root

    def _shard(self, key: str, create: bool) -> int | None:
        return self._shard_named(key[:2], create)

    def _shard_named(self, name: str, create: bool) -> int | None:
        fd = self._shards.get(name)
        if fd is not None:
            return fd
        root = self._root_fd(create)
        if root is None:
            return None
        fd = open_subdirectory(root, name, create)
        if fd is not None:  # else absent, a link or not a directory: no entry there
            self._shards[name] = fd
        return fd

    def close(self) -> None:
        for fd in [*self._shards.values(), self._root]:
            if fd is not None:
                os.close(fd)
        self._shards, self._root = {}, None

    # --- entries ---------------------------------------------------------------------------

    def read(self, key: str) -> Entry | None:
        """The entry of `key` when it is whole and its own; None otherwise (never an error)."""
        secret = self.secret
        shard = self._shard(key, create=False) if secret is not None else None
        if shard is None or secret is None:
            return None
        data = read_whole_at(shard, key[2:] + _SUFFIX, MAX_ENTRY_BYTES, touch_after=_TOUCH_AFTER)
        entry = _decode(key, data, secret) if data is not None else None
        if entry is not None:
            self.hits += 1
        return entry

    def write(self, key: str, entry: Entry) -> None:
        """Store an entry (atomically); a directory that cannot be written is no error."""
        secret = self.secret
        data = _encode(key, entry, secret) if secret is not None else None
        if data is None:
            return
        shard = self._shard(key, create=True)
        if shard is None:
            return
        if create_at(shard, key[2:] + _SUFFIX, data):
            self.written += 1
            self.written_bytes += len(data)

    def write_all(self, entries: Iterable[tuple[str, Entry]]) -> None:
        for key, entry in entries:
            self.write(key, entry)
        if self.written:
            self.evict()

    def _usage(self, root: int) -> tuple[int, int] | None:
        """The ledger (bytes, renders since the last scan) when it is one."""
        data = read_whole_at(root, _USAGE, _USAGE_MAX_BYTES)
        if data is None:
            return None
        try:
            ledger = json.loads(data)
        except ValueError:
            return None
        if not isinstance(ledger, dict) or ledger.get("format") != FORMAT:
            return None
        total, renders = ledger.get("bytes"), ledger.get("renders")
        if type(total) is not int or type(renders) is not int or total < 0 or renders < 0:
            return None
        return total, renders

    def _write_usage(self, root: int, total: int, renders: int) -> None:
        ledger = {"format": FORMAT, "bytes": total, "renders": renders}
        atomic_write_at(root, _USAGE, json.dumps(ledger).encode())

    def evict(self) -> None:
        """Remove the entries used least recently while the directory holds more than max_bytes:
        scanned for when the ledger says so (see the module docstring)."""
        root = self._root_fd(create=False)
        if root is None:
            return
        ledger = self._usage(root)
        if ledger is not None:
            total, renders = ledger[0] + self.written_bytes, ledger[1] + 1
            if total <= self.max_bytes and renders < RESCAN_AFTER:
                self._write_usage(root, total, renders)
                return
        self.scans += 1
        self._write_usage(root, self._scan(root), 0)

    def _holds_entry(self, shard_name: str, name: str) -> bool:
        shard_fd = self._shard_named(shard_name, create=False)
        return shard_fd is not None and _is_entry(shard_fd, shard_name, name)

    def _scan(self, root: int) -> int:
        """Every entry's size and time; the least recently used removed when over max_bytes.
        What is left (bytes). Only entries count and go: a file named as an entry is (hex shard,
        hex key, `.json`), a regular file (no link followed), whose header names its own key
        (`_is_entry`, read when the directory is over the bound); anything else in the directory
        is left alone."""
        found: list[tuple[float, int, str, str]] = []
        with os.scandir(root) as shards:
            names = [
                s.name for s in shards if _SHARD_NAME.fullmatch(s.name) and s.is_dir(follow_symlinks=False)
            ]
        for shard_name in sorted(names):
            shard_fd = self._shard_named(shard_name, create=False)
            if shard_fd is None:
                continue
            with os.scandir(shard_fd) as entries:
                for entry in entries:
                    if _ENTRY_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        found.append((info.st_mtime, info.st_size, shard_name, entry.name))
        total = sum(size for _, size, _, _ in found)
        if total <= self.max_bytes:
            return total
        # Over the bound (rarely): the files named as entries are looked into, and only those
        # that are count and may go, so that a file planted under an entry's name can neither be
        # removed nor make the real entries go.
        found = [f for f in found if self._holds_entry(f[2], f[3])]
        total = sum(size for _, size, _, _ in found)
        found.sort()
        for _, size, shard_name, name in found:
            if total <= self.max_bytes * 0.9:
                break
            shard_fd = self._shard_named(shard_name, create=False)
            if shard_fd is None:
                continue
            try:
                os.unlink(name, dir_fd=shard_fd)
                total -= size
            except OSError:
                pass
        return total


_SHARD_NAME = re.compile(r"[0-9a-f]{2}")
_ENTRY_NAME = re.compile(r"[0-9a-f]{62}\.json")
_PEEK_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _is_entry(shard_fd: int, shard_name: str, name: str) -> bool:
    """Whether the file `name` of a shard is an entry: a regular file (not followed if a link)
    whose header line starts as `_encode` writes it, with the key its place names."""
    key = shard_name + name.removesuffix(_SUFFIX)
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=shard_fd
        )
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, 128)
    except OSError:
        return False
    finally:
        os.close(fd)
    return re.match(rb'\{"format": [0-9]+, "key": "' + key.encode() + rb'", ', head) is not None


def _mac(secret: bytes, key: str, body: bytes) -> str:
    mac = new_mac(secret)
    mac.update(key.encode() + b"\0")
    mac.update(body)
    return mac.hexdigest()


def _encode(key: str, entry: Entry, secret: bytes) -> bytes | None:
    text = entry.text if entry.text is not None else _payload_json(entry.payload())
    if text is None:
        return None
    body = text.encode("utf-8", "surrogatepass")
    head = json.dumps({"format": FORMAT, "key": key, "mac": _mac(secret, key, body)})
    return head.encode() + b"\n" + body


def _payload_json(payload: dict[str, Any]) -> str | None:
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    # JSON gives back strings, ints, floats, booleans, None, lists and string-keyed maps as they
    # were; anything else (a map with an integer key, a tuple) reads back unequal: not cached.
    return text if json.loads(text) == payload else None


def _decode(key: str, data: bytes, secret: bytes) -> Entry | None:
    head, newline, body = data.partition(b"\n")
    if not newline:
        return None
    try:
        header = json.loads(head)
        if (
            not isinstance(header, dict)
            or header.get("format") != FORMAT
            or header.get("key") != key
            or not same_mac(_mac(secret, key, body), header.get("mac"))
        ):
            return None
        return Entry.of(json.loads(body))
    except (ValueError, RecursionError):
        return None
