"""A tenant's app as the render pack (io.render_pack) holds it, and the checks its index passes.

A warm render reads 20,000 apps of four files each. The pack's index keeps each app compact, so
that reading it costs a few strings per app rather than objects per file:

- its object keys joined by a NUL (split when first asked for: the duplicate check asks for
  every app's);
- its file names joined by a NUL, their Git blob ids as one string of 40-character ids (in the
  same order), and one span of the blob holding their texts, UTF-8, each after the one before
  and a NUL (none holds one: names are checked, YAML escapes a NUL in a text, and an app whose
  text or key holds one anyway is not packed);
- its objects' origins (a source file and document each), one for all when they share it. The
  objects themselves are not kept: the files hold them, one each beside the kustomization.yaml
  listings, and are read back only when something asks for them (`objects_payload`: a report, a
  duplicate's error). Keeping them as well, as JSON, cost a render that fills the cache a tenth of
  a full render (making, checking and compressing 20,000 apps' objects) and the pack a fifth of
  its size, for what only an error message reads.

Names and ids are checked when the pack is read, every app's in one match (`names_hold`,
`blob_ids_hold`), with each app's counts: a pack failing them is ignored. An app's texts are
decoded once, when its files are first asked for (one UTF-8 decode of its span, split at the
NULs, kept: every later caller gets the very same strings); a span that is not UTF-8, a count of
texts that is not the count of names, a name listed twice or a kustomization.yaml other than the
one the layout writes for the files beside it is found then and fails the render with
`PackDamaged` (exit 3, naming the app): only a pack signed with the user's key (stolen) can hold
one, since its MAC holds.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from btp_gitops.generator.core.errors import InputError
from btp_gitops.generator.core.layout import KUSTOMIZATION, app_directory, kustomization
from btp_gitops.generator.core.names import NameRule, name_message, path_message
from btp_gitops.generator.core.object_shape import shape_problems
from btp_gitops.generator.core.objects import object_key
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import load_trusted_document
from btp_gitops.generator.io.cache_files import read_part
from btp_gitops.generator.io.git_blobs import blob_id, flat_tree_id, flat_tree_ids, tree_id

BLOB_ID_WIDTH = 40  # a SHA-1 Git blob id in hexadecimal

Key = str  # an object's key as core.objects.ObjectKey.text gives it

# What a pack's app may name, checked on reading as a render checks a fresh app before writing:
# the common forms by one match over every app's (20,000 apps are read per render), anything
# else by the render's own rules (core.names, core.layout).
_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\Z")
_LAYOUT_PATH = re.compile(r"(?:[a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9._-]*\Z")  # a file, or in a stage
_LAYOUT_PATHS = re.compile(r"(?:(?:[a-z0-9][a-z0-9_-]*/)?[a-z0-9][a-z0-9._-]*\0)*")
_LISTING = re.compile(
    r"apiVersion: kustomize\.config\.k8s\.io/v1beta1\nkind: Kustomization\nresources:\n"
    r"(?:- [a-z][a-z0-9_-]*\.[a-z0-9._-]*\n)*\Z"
)
_BLOB_ID = re.compile(f".{{{BLOB_ID_WIDTH}}}", re.DOTALL)

# The characters each joined form may hold (its NULs included), and what in a form of those
# characters alone is not in it: an empty name, label or part, or one that starts or ends where it
# may not (a hyphen at a label's edge, a dot starting a name).
_LOWER_DIGITS = b"abcdefghijklmnopqrstuvwxyz0123456789"
_HEX_DIGITS = b"0123456789abcdef"
_SUBDOMAIN_CHARACTERS = _LOWER_DIGITS + b"-.\0"
_NOT_IN_SUBDOMAINS = ("\0\0", "..", ".-", "-.", "\0-", "-\0", "\0.", ".\0")
_FILE_NAME_CHARACTERS = _LOWER_DIGITS + b"._-\0"
_NOT_IN_FILE_NAMES = ("\0\0", "\0.", "\0_", "\0-")


def _only(text: str, characters: bytes) -> bool:
    """Whether `text` holds none but the ASCII `characters`: one pass in C. A regular expression's
    character class costs ten times more over the one to three megabytes a pack's 20,000 apps'
    names and ids join to, and a pattern with optional parts more again."""
    return text.isascii() and not text.encode("ascii").translate(None, characters)


def _joined_subdomains(joined: str) -> bool:
    """Whether `joined` is names joined by NULs, a NUL after the last, each a DNS subdomain's
    labels of the common form (`_SUBDOMAIN`), lengths aside."""
    return (
        _only(joined, _SUBDOMAIN_CHARACTERS)
        and (not joined or joined.endswith("\0"))
        and joined[:1] not in ("-", ".", "\0")
        and not any(mark in joined for mark in _NOT_IN_SUBDOMAINS)
    )


def _joined_file_names(joined: str) -> bool:
    """Whether `joined` is file names joined by NULs, a NUL after the last, each of the common form
    of a file in an app's own directory (`_LAYOUT_PATH` without a stage directory)."""
    return (
        _only(joined, _FILE_NAME_CHARACTERS)
        and (not joined or joined.endswith("\0"))
        and joined[:1] not in (".", "_", "-", "\0")
        and not any(mark in joined for mark in _NOT_IN_FILE_NAMES)
    )


def _subdomain(name: str) -> bool:
    return (len(name) <= 253 and _SUBDOMAIN.match(name) is not None) or name_message(
        name, NameRule.SUBDOMAIN
    ) is None


def subdomains(names: list[str]) -> bool:
    """Every name a DNS subdomain (an app's name, a group's), in one match when every one has the
    common form, else name by name by the render's own rule."""
    joined = "\0".join([*names, ""])
    if (
        joined.count("\0") == len(names)
        and _joined_subdomains(joined)
        and max(map(len, names), default=0) <= 253
    ):
        return True
    return all(_subdomain(name) for name in names)


class PackDamaged(InputError):
    """A pack whose checksums hold but whose files do not read back as objects of a Kubernetes
    object's shape, are not the objects its keys name or not as many as its origins, or whose
    files' texts are not the ones its index names: written by something else.
    Exit 3, naming the pack's app; never a traceback."""


class PackChanged(InputError):
    """A pack whose texts are not the ones its signed header names: changed after it was written
    (the index is signed; the texts only through their digest in it). A render finds it out before
    it uses a text, and renders again without the pack (pipeline.render); this reaches a user only
    from something reading a text later. Exit 3, never a traceback."""


class PackBlob:
    """The texts of a pack's apps (io.render_pack), read from the pack file when one is first
    needed and then checked whole against the SHA-256 its signed header names: a warm `diff`
    leaves out every app the compared commit holds as the pack gives it, and reads none of them.
    The descriptor keeps the file that was opened, whatever is renamed over it meanwhile."""

    __slots__ = ("__weakref__", "_closer", "_data", "_digest", "_fd", "_length", "_offset", "where")

    def __init__(self, fd: int, offset: int, length: int, digest: str, where: str) -> None:
        """`fd`: the pack file, open; closed once the texts are read, or with this object."""
        self._fd, self._offset, self._length, self._digest = fd, offset, length, digest
        self.where = where
        self._data: memoryview | None = None
        self._closer = weakref.finalize(self, os.close, fd)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, span: slice) -> memoryview:
        return self.whole()[span]

    def whole(self) -> memoryview:
        """The texts, read and checked on the first call; PackChanged when they are not the ones
        the header names (then and on every later call)."""
        if self._data is None:
            data = read_part(self._fd, self._offset, self._length) if self._closer.alive else None
            self._closer()
            if data is None or hashlib.sha256(data).hexdigest() != self._digest:
                raise PackChanged(
                    f"the render pack {self.where} holds other texts than its header names (it changed "
                    "after it was written); remove the cache directory's packs/ or render with --no-cache"
                )
            self._data = memoryview(data)
        return self._data

    def close(self) -> None:
        """Close the file now, if it is still open (the texts, once read, stay)."""
        self._closer()

    def holds(self) -> bool:
        """Whether the texts are the ones the header names (read now, if they were not yet)."""
        try:
            self.whole()
        except PackChanged:
            return False
        return True


class _Lie(ValueError):
    """What an app's files turned out to be, decoded (made a PackDamaged naming the app)."""


def _split(joined: str) -> list[str]:
    return joined.split("\0") if joined else []


def _kustomizations_hold(files: dict[str, str]) -> bool:
    """Every kustomization.yaml one the layout writes for the files beside it: resources in the
    same directory, nothing else (a forged one could generate a Secret or pull in files from
    elsewhere)."""
    for path, text in files.items():
        if (path == KUSTOMIZATION or path.endswith("/" + KUSTOMIZATION)) and not _LISTING.match(text):
            directory = posixpath.dirname(path)
            beside = [
                posixpath.basename(other)
                for other in files
                if other != path and posixpath.dirname(other) == directory
            ]
            if text != kustomization(beside):
                return False
    return True


def _listings_hold(files: dict[str, str], names: str) -> bool:
    """`_kustomizations_hold`, by one match when the app has one kustomization.yaml, its own, of
    the common form (a tenant app laid out for Argo CD)."""
    listing = files.get(KUSTOMIZATION)
    if listing is not None and names.count(KUSTOMIZATION) == 1 and _LISTING.match(listing):
        return True
    return _kustomizations_hold(files)


class AppFiles:
    """What a packed app holds beside its name, group, notes and stages: its object keys and its
    files (name -> text, name -> Git blob id), as the index keeps them until first asked for.
    Shared by the copies of an app (`PackedApp.regrouped`): decoded once, the same strings."""

    __slots__ = (
        "_blob_ids",
        "_files",
        "_ids",
        "_keys",
        "_tree",
        "blob",
        "ids_text",
        "keys_text",
        "names_text",
        "span",
    )

    def __init__(
        self,
        keys_text: str,
        names_text: str,
        ids_text: str,
        blob: bytes | memoryview | PackBlob,
        span: tuple[int, int],
    ) -> None:
        self.keys_text = keys_text
        self.names_text = names_text
        self.ids_text = ids_text
        self.blob = blob
        self.span = span  # the texts, each followed by a NUL but the last
        self._keys: list[Key] | None = None
        self._files: dict[str, str] | None = None
        self._ids: list[str] | None = None
        self._tree: str | None = None

    @classmethod
    def rendered(cls, keys: list[Key], files: dict[str, str], blob_ids: dict[str, str]) -> AppFiles | None:
        """An app rendered now; None when a key, name or text holds a NUL (not packed then)."""
        keys_text, names_text = "\0".join(keys), "\0".join(files)
        texts = "\0".join(files.values()).encode("utf-8", "surrogatepass")
        if (
            keys_text.count("\0") != max(len(keys) - 1, 0)
            or names_text.count("\0") != max(len(files) - 1, 0)
            or texts.count(0) != max(len(files) - 1, 0)
        ):
            return None
        made = cls(keys_text, names_text, "".join(blob_ids[name] for name in files), texts, (0, len(texts)))
        made._keys, made._files, made._ids = keys, files, [blob_ids[name] for name in files]
        return made

    def count(self) -> int:
        """How many files the names say (the ids and the texts must say as many)."""
        return self.names_text.count("\0") + 1 if self.names_text else 0

    def keys(self) -> list[Key]:
        if self._keys is None:
            self._keys = _split(self.keys_text)
        return self._keys

    def texts_bytes(self) -> bytes:
        start, end = self.span
        return bytes(self.blob[start:end])

    def files(self) -> dict[str, str]:
        """Name -> text, decoded on the first call (raises _Lie when the texts are not the ones
        the index names)."""
        if self._files is None:
            names = _split(self.names_text)
            start, end = self.span
            try:
                whole = str(self.blob[start:end], "utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise _Lie("texts", "are not UTF-8") from None
            texts = whole.split("\0") if names else []
            if len(texts) != len(names) or (not names and whole):
                raise _Lie("texts", "are not as many as its file names")
            files = dict(zip(names, texts, strict=True))
            if len(files) != len(names):
                raise _Lie("file names", "list a name twice")
            if KUSTOMIZATION in self.names_text and not _listings_hold(files, self.names_text):
                raise _Lie("a kustomization.yaml", "is not the one its layout writes")
            self._files = files
        return self._files

    def ids(self) -> list[str]:
        """The Git blob ids of the files, in the order of `files` (of its names)."""
        if self._ids is None:
            self._ids = _BLOB_ID.findall(self.ids_text)
        return self._ids

    @staticmethod
    def find_tree_ids(contents: Sequence[AppFiles]) -> None:
        """Work out the `tree_id` of each of `contents` at once (git_blobs.flat_tree_ids), kept for
        when it is asked for: a `diff` of 20,000 tenants asks for every one."""
        flat = [content for content in contents if content._tree is None and "/" not in content.names_text]
        found = flat_tree_ids([(content.names_text, content.ids_text) for content in flat])
        for content, tree in zip(flat, found, strict=True):
            content._tree = tree or ""

    def tree_id(self) -> str | None:
        """The Git tree id of a directory holding these files as the index names them (names and
        blob ids; the texts are not decoded); None when the names cannot be one directory's.

        Made from the names and ids on every `diff`, never kept in the pack: a stored id could
        name another directory than the files the pack gives the render, so a signed but forged
        pack could make `diff` leave out an app whose files `render --out` then writes (a file
        added or renamed). Made here, a false id can only be a false blob id, whose file is then
        neither shown nor written (see io.render_pack)."""
        if self._tree is None:
            names = _split(self.names_text)
            if "/" in self.names_text:  # in stage directories (Flux)
                ids = self.ids()
                self._tree = (tree_id(zip(names, ids, strict=True)) if len(names) == len(ids) else None) or ""
            else:
                self._tree = flat_tree_id(names, self.ids_text) or ""
        return self._tree or None


def names_hold(apps: list[AppFiles]) -> bool:
    """Every file name of every app a plain relative path (as a render checks a fresh app's), in
    one match when every name has the common form (as a pack btp-gitops wrote has them), else
    app by app by the render's own rule. An empty name is refused either way."""
    joined = "\0".join([*(app.names_text for app in apps if app.names_text), ""])
    if _joined_file_names(joined) or ("/" in joined and _LAYOUT_PATHS.fullmatch(joined)):
        return True
    return all(
        _LAYOUT_PATH.match(path) or path_message(path) is None
        for app in apps
        for path in _split(app.names_text)
    )


def blob_ids_hold(apps: list[AppFiles]) -> bool:
    """Every blob id of every app the form of a SHA-1 one, forty lowercase hexadecimal digits (each
    app's ids are as many times forty characters as it has names: checked with its index)."""
    return _only("".join([app.ids_text for app in apps]), _HEX_DIGITS)


@dataclass(slots=True)
class PackedApp:
    """A tenant's app as a pack holds it (see io.render_pack). `origins` names where each object
    came from (`origins_text`); its keys and files are `content`'s, decoded when first asked for,
    and its objects are read back from its files by `objects_payload`."""

    app: str
    group: str | None
    notes: list[dict[str, str]]
    content: AppFiles
    stages: list[str] | None  # the app's Flux stage directories (Flux target), else None
    origins: str
    _paths: list[str] | None = field(default=None, repr=False, compare=False)

    @property
    def keys(self) -> list[Key]:
        return self.content.keys()

    @property
    def files(self) -> dict[str, str]:
        """File name in the app directory -> text (the same dict, and strings, on every call)."""
        try:
            return self.content.files()
        except _Lie as lie:
            raise self._damaged(*lie.args) from None

    def paths(self) -> list[str]:
        """Each file's path in the cluster directory, in the order of `files` (made once: the
        layout, the claims and the guard of reused files each go over every file)."""
        if self._paths is None:
            directory = app_directory(self.app, self.group) + "/"
            self._paths = [directory + name for name in self.files]
        return self._paths

    def paths_texts_ids(self) -> Iterator[tuple[str, str, str]]:
        """Each file's path in the cluster directory, text and claimed blob id, in order (no map
        of ids made per app)."""
        return zip(self.paths(), self.files.values(), self.content.ids(), strict=True)

    def regrouped(self, group: str | None) -> PackedApp:
        """The same app, in another group's directory (its content shared: decoded once)."""
        return PackedApp(self.app, group, self.notes, self.content, self.stages, self.origins)

    def verified_text(self, path: str, text: str, claim: str) -> str:
        """`text`, of the app's file at `path`, its bytes hashed: they must be `claim`, the blob id
        the pack gives it (a text leaving the process is checked, see io.render_pack)."""
        if blob_id(text.encode("utf-8", "surrogatepass")) != claim:
            raise self._damaged(f"the file {path}", "is not the blob its index names")
        return text

    def objects_payload(self) -> list[tuple[dict[str, Any], str]]:
        """The app's objects in the order of its keys, each with its origin: read back from its
        files as any input is read (bounded YAML, an object's shape each), and the very objects
        its keys (which the duplicate check used) name. They are the objects as written: for
        the Flux target without the sync-wave annotation the layout removes (transforms.ordering)."""
        keys = self.keys
        origins = _split(self.origins) if "\0" in self.origins else [self.origins] * len(keys)
        if len(origins) != len(keys):
            raise self._damaged("origins", "are not as many as its objects")
        found: dict[Key, dict[str, Any]] = {}
        read = 0
        budget = AliasBudget()  # one for the app: its files are one input
        for path, text in self.files.items():
            if posixpath.basename(path) == KUSTOMIZATION:
                continue
            try:
                body = load_trusted_document(text, budget)
            except (yaml.YAMLError, RecursionError):
                body = None
            if not isinstance(body, dict) or shape_problems(body):
                raise self._damaged(f"the file {path}", "does not hold an object")
            found.setdefault(object_key(body).text(), body)
            read += 1
        if read != len(keys) or len(found) != len(keys) or any(key not in found for key in keys):
            raise self._damaged("files", "do not hold the objects its index names")
        return [(found[key], origin) for key, origin in zip(keys, origins, strict=True)]

    def _damaged(self, what: str, why: str) -> PackDamaged:
        return PackDamaged(
            f"the render pack holds {what} of app {self.app} that {why}: it was not written by "
            "btp-gitops; remove the cache directory's packs/ or render with --no-cache"
        )


def origins_text(origins: list[str]) -> str | None:
    """The origins of an app's objects as a pack keeps them: the one origin when all share it
    (a tenant's app: its record), else each after a NUL; None when one holds a NUL."""
    if any("\0" in origin for origin in origins):
        return None
    if len(set(origins)) <= 1:
        return origins[0] if origins else ""
    return "\0".join(origins)
