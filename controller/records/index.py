"""The reader of the source tree: what its CAP documents say, indexed, and the documents themselves.

`SourceIndex.of_tree` indexes the CAPApplication, CAPApplicationVersion and CAPTenant documents of
every YAML file of the tree, each file parsed once and its documents checked against their schemas
(records.parsed_files), under every key a lookup uses. A file's records are replaced whole when
the file changes, so a new commit costs the records of the files it changed, not the tree.

The index is the controller's one reader of the tree: models (the generator's `Application`,
`Version`, `Tenant`) are built from the documents it holds (`SourceIndex.document`), never from
the files read again, so what a reconciler decides on is what the index checked. A tree with an
unreadable file or a CAP document its schema refuses is `UnreadableSource` (records.unreadable),
wherever it is met. On the writer's thread, while a change is applied, `of_tree` answers with the
writer's own index of its tree (records.working_index), kept current file by file.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from btp_gitops.controller.records.parsed_files import PARSED_FILES, FileContents
from btp_gitops.controller.records.tree_records import ApplicationRecord, TenantRecord, VersionRecord
from btp_gitops.controller.records.unreadable import unreadable_source, unreadable_tree
from btp_gitops.generator.core import SourceDocument, get_path
from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    Application,
    Version,
    application_mode,
)

# Where one document is: its file (relative to the tree root), kind, namespace and name.
DocumentKey = tuple[Path, tuple[str, str], str, str]

_K = TypeVar("_K")
_V = TypeVar("_V")
_Rank = tuple[tuple[str, ...], int]  # a file's path components, then the document's place in it

# What a change looked up in an index (`SourceIndex.reads`), and what a file's records answer:
# ("app", ns, name), ("app-id", hash), ("tenant-id", ns, app, id), ("tenant-name", ns, name),
# ("tenants-of", ns, app), ("subdomain", ns, app, subdomain), ("version", ns, name),
# ("versions-of", ns, app), ("document", path, apiVersion, kind, ns, name), ("namespace", ns), and
# ("all",) for a look at every record. Two changes that share no key cannot see each other.
ReadKey = tuple[str, ...]
EVERYTHING: ReadKey = ("all",)
READABLE: ReadKey = ("readable",)  # whether any file has a problem


class _Ranked(Generic[_K, _V]):
    """Values per key in the order a render reads them: the first is what a lookup answers."""

    def __init__(self) -> None:
        self._entries: dict[_K, list[tuple[_Rank, _V]]] = {}
        # Keys whose lists only this instance holds (None: all of them). After `copy` the lists are
        # shared with the copy, and each side replaces a list before it changes it.
        self._owned: set[_K] | None = None

    def copy(self) -> _Ranked[_K, _V]:
        """An equal instance sharing the lists with this one; neither changes them in place again."""
        twin: _Ranked[_K, _V] = _Ranked()
        twin._entries = self._entries.copy()
        twin._owned = set()
        self._owned = set()
        return twin

    def add(self, key: _K, rank: _Rank, value: _V) -> None:
        owned = self._owned
        if owned is None or key in owned:
            bisect.insort(self._entries.setdefault(key, []), (rank, value), key=_rank_of)
            return
        entries = list(self._entries.get(key, ()))
        bisect.insort(entries, (rank, value), key=_rank_of)
        self._entries[key] = entries
        owned.add(key)

    def remove(self, key: _K, parts: tuple[str, ...]) -> None:
        """Drop the values of the file `parts` (a file is replaced whole)."""
        entries = self._entries.get(key)
        if entries is None:
            return
        kept = [entry for entry in entries if entry[0][0] != parts]
        if kept:
            self._entries[key] = kept
            if self._owned is not None:
                self._owned.add(key)
        else:
            del self._entries[key]

    def first(self, key: _K) -> _V | None:
        entries = self._entries.get(key)
        return entries[0][1] if entries else None

    def every(self, key: _K) -> list[_V]:
        return [value for _, value in self._entries.get(key, [])]


def _rank_of(entry: tuple[_Rank, Any]) -> _Rank:
    return entry[0]


# The `_Ranked` attributes of a SourceIndex (what `SourceIndex._copy` copies).
_RANKED_FIELDS = (
    "_apps",
    "_apps_by_identifier",
    "_tenants_by_id",
    "_tenants_by_name",
    "_tenants_of",
    "_by_subdomain",
    "_versions",
    "_versions_of",
    "_by_place",
    "_by_namespace",
)


class SourceIndex:
    """What a tree holds, looked up in O(1); where a key occurs twice, the first file (in path
    order, as the render reads them) wins. Build it once per commit (cache it by commit sha).

    The writer keeps one index per batch and updates it file by file as its changes write
    (`working_index`): a lookup or an update costs the records of one file, not the tree."""

    def __init__(self, files: Iterable[FileContents] = ()) -> None:
        self._files: dict[Path, FileContents] = {}
        self._apps: _Ranked[tuple[str, str], ApplicationRecord] = _Ranked()
        self._apps_by_identifier: _Ranked[str, ApplicationRecord] = _Ranked()
        self._tenants_by_id: _Ranked[tuple[str, str, str], TenantRecord] = _Ranked()
        self._tenants_by_name: _Ranked[tuple[str, str], TenantRecord] = _Ranked()
        self._tenants_of: _Ranked[tuple[str, str], TenantRecord] = _Ranked()
        self._by_subdomain: _Ranked[tuple[str, str, str], TenantRecord] = _Ranked()
        self._versions: _Ranked[tuple[str, str], VersionRecord] = _Ranked()
        self._versions_of: _Ranked[tuple[str, str], VersionRecord] = _Ranked()
        self._by_place: _Ranked[DocumentKey, SourceDocument] = _Ranked()
        self._by_namespace: _Ranked[str, SourceDocument] = _Ranked()
        self._ordered: list[FileContents] | None = None  # the files in path order, when asked for
        self._unreadable: dict[Path, tuple[str, ...]] = {}  # files with problems
        self.reads: set[ReadKey] | None = None  # what was looked up, while someone records it
        for contents in files:
            self._add(contents)

    @classmethod
    def of_tree(cls, tree: Path, previous: SourceIndex | None = None) -> SourceIndex:
        """Index every YAML file under `tree` (hidden files and directories skipped, as a render
        skips them). UnreadableSource when a file is not YAML or a CAP document breaks its schema:
        a record must not be written beside one that cannot be read (it might be the same tenant).

        `previous`: an index of the same tree at another commit (say the one before), unchanged
        by this call; the records of the files that did not change since are taken from it
        (`updated`) instead of being indexed again, so a new commit costs a walk of the tree and
        the records of the files it changed.

        Inside the writer's batch (`working_index`), on the writer's thread, this is the batch's
        own index, kept current as the batch writes: no walk of the tree at all."""
        root = tree.resolve()
        working = WORKING_INDEXES.current(root)
        if working is not None and working.index is not None:
            working.index.check_readable()
            return working.index
        contents = PARSED_FILES.contents_of(root)
        index = previous.updated(contents) if previous is not None else cls(contents)
        index.check_readable()
        return index

    def updated(self, files: Iterable[FileContents]) -> SourceIndex:
        """The index of `files` (a tree's parsed files), equal to `SourceIndex(files)`, made from
        this one: a file whose parsed contents are the very object this index holds keeps its
        records, the others are replaced, those not in `files` dropped. This index does not change
        (readers may hold it): the two share their lists until either side changes one."""
        twin = self._copy()
        wanted = {contents.path: contents for contents in files}
        for path in [path for path in twin._files if path not in wanted]:
            twin.replace_file(path, None)
        for path, contents in wanted.items():
            if twin._files.get(path) is not contents:
                twin.replace_file(path, contents)
        return twin

    def _copy(self) -> SourceIndex:
        twin = SourceIndex()
        for name in _RANKED_FIELDS:
            setattr(twin, name, getattr(self, name).copy())
        twin._files = self._files.copy()
        twin._unreadable = self._unreadable.copy()
        twin._ordered = self._ordered  # never changed in place: replaced (None) on a change
        return twin

    def check_readable(self) -> None:
        """UnreadableSource listing every problem, in path order, when a file has any."""
        self._read(READABLE)
        if self._unreadable:
            ordered = sorted(self._unreadable.items(), key=lambda item: item[0].parts)
            raise unreadable_tree([problem for _, problems in ordered for problem in problems])

    # --- the tree's records, in the order a render reads them --------------------------------------

    @property
    def applications(self) -> tuple[ApplicationRecord, ...]:
        self._read(EVERYTHING)
        return tuple(app for contents in self._in_order() for app in contents.applications)

    @property
    def tenants(self) -> tuple[TenantRecord, ...]:
        self._read(EVERYTHING)
        return tuple(tenant for contents in self._in_order() for tenant in contents.tenants)

    @property
    def versions(self) -> tuple[VersionRecord, ...]:
        self._read(EVERYTHING)
        return tuple(version for contents in self._in_order() for version in contents.versions)

    @property
    def documents(self) -> tuple[tuple[Path, SourceDocument], ...]:
        """Every CAP document (checked) with its file, in path order."""
        self._read(EVERYTHING)
        return tuple((c.path, document) for c in self._in_order() for document in c.documents)

    # --- lookups ------------------------------------------------------------------------------------

    def application_by_identifier(self, identifier_hash: str) -> ApplicationRecord | None:
        self._read(("app-id", identifier_hash))
        return self._apps_by_identifier.first(identifier_hash)

    def application(self, namespace: str, name: str) -> ApplicationRecord | None:
        self._read(("app", namespace, name))
        return self._apps.first((namespace, name))

    def tenant(self, namespace: str, application: str, tenant_id: str) -> TenantRecord | None:
        self._read(("tenant-id", namespace, application, tenant_id))
        return self._tenants_by_id.first((namespace, application, tenant_id))

    def tenant_named(self, namespace: str, name: str) -> TenantRecord | None:
        self._read(("tenant-name", namespace, name))
        return self._tenants_by_name.first((namespace, name))

    def tenants_of(self, namespace: str, application: str) -> list[TenantRecord]:
        self._read(("tenants-of", namespace, application))
        return self._tenants_of.every((namespace, application))

    def tenants_with_subdomain(self, namespace: str, application: str, sub_domain: str) -> list[TenantRecord]:
        """The application's tenants whose record names `sub_domain`, in path order."""
        self._read(("subdomain", namespace, application, sub_domain))
        return self._by_subdomain.every((namespace, application, sub_domain))

    def version_named(self, namespace: str, name: str) -> VersionRecord | None:
        self._read(("version", namespace, name))
        return self._versions.first((namespace, name))

    def versions_of(self, namespace: str, application: str) -> list[VersionRecord]:
        self._read(("versions-of", namespace, application))
        return self._versions_of.every((namespace, application))

    def services_only(self, app: ApplicationRecord) -> bool:
        """Whether the application has no tenants, as the render decides it (the CAP domain's
        `application_mode`): with a provider it has them; without one, its first version decides
        (only Service deployments and Content jobs: services-only)."""
        if app.has_provider:
            return False
        application = Application.from_source(
            self.document(app.path, CAP_APPLICATION, app.namespace, app.name)
        )
        versions = [
            Version.from_source(self.document(v.path, CAP_APPLICATION_VERSION, v.namespace, v.name))
            for v in self.versions_of(app.namespace, app.name)
        ]
        return application_mode(application, versions).services_only

    def document(self, path: Path, kind: tuple[str, str], namespace: str, name: str) -> SourceDocument:
        """The document a record was read from: `path` is the record's file (of two documents of
        the same name, the record's own). UnreadableSource when it is not there, which only an
        index built from one tree and asked about a record of another can meet."""
        self._read(("document", str(path), *kind, namespace, name))
        found = self._by_place.first((path, kind, namespace, name))
        if found is None:
            raise unreadable_source(f"{kind[1]} {namespace}/{name} is not in {path}")
        return found

    def documents_of_namespace(self, namespace: str) -> list[SourceDocument]:
        """Every CAP document of `namespace`, in the order a render reads them."""
        self._read(("namespace", namespace))
        return self._by_namespace.every(namespace)

    # --- kept current -------------------------------------------------------------------------------

    def replace_file(self, path: Path, contents: FileContents | None) -> None:
        """`path` (relative to the tree root) now holds `contents` (None: it is gone)."""
        old = self._files.get(path)
        if old is not None:
            self._drop(old)
        if contents is not None:
            self._add(contents)

    def file(self, path: Path) -> FileContents | None:
        return self._files.get(path)

    def _read(self, key: ReadKey) -> None:
        if self.reads is not None:
            self.reads.add(key)

    def _in_order(self) -> list[FileContents]:
        if self._ordered is None:
            self._ordered = sorted(self._files.values(), key=lambda contents: contents.path.parts)
        return self._ordered

    def _add(self, contents: FileContents) -> None:
        self._files[contents.path] = contents
        self._ordered = None
        if contents.problems:
            self._unreadable[contents.path] = contents.problems
        parts = contents.path.parts
        for place, app in enumerate(contents.applications):
            self._apps.add((app.namespace, app.name), (parts, place), app)
            self._apps_by_identifier.add(app.identifier_hash, (parts, place), app)
        for place, tenant in enumerate(contents.tenants):
            rank = (parts, place)
            self._tenants_by_id.add((tenant.namespace, tenant.application, tenant.tenant_id), rank, tenant)
            self._tenants_by_name.add((tenant.namespace, tenant.name), rank, tenant)
            self._tenants_of.add((tenant.namespace, tenant.application), rank, tenant)
            self._by_subdomain.add((tenant.namespace, tenant.application, tenant.sub_domain), rank, tenant)
        for place, version in enumerate(contents.versions):
            self._versions.add((version.namespace, version.name), (parts, place), version)
            self._versions_of.add((version.namespace, version.application), (parts, place), version)
        for place, document in enumerate(contents.documents):
            self._by_place.add(_key_of(contents.path, document), (parts, place), document)
            self._by_namespace.add(_namespace_of(document), (parts, place), document)

    def _drop(self, contents: FileContents) -> None:
        del self._files[contents.path]
        self._ordered = None
        self._unreadable.pop(contents.path, None)
        parts = contents.path.parts
        for app in contents.applications:
            self._apps.remove((app.namespace, app.name), parts)
            self._apps_by_identifier.remove(app.identifier_hash, parts)
        for tenant in contents.tenants:
            self._tenants_by_id.remove((tenant.namespace, tenant.application, tenant.tenant_id), parts)
            self._tenants_by_name.remove((tenant.namespace, tenant.name), parts)
            self._tenants_of.remove((tenant.namespace, tenant.application), parts)
            self._by_subdomain.remove((tenant.namespace, tenant.application, tenant.sub_domain), parts)
        for version in contents.versions:
            self._versions.remove((version.namespace, version.name), parts)
            self._versions_of.remove((version.namespace, version.application), parts)
        for document in contents.documents:
            self._by_place.remove(_key_of(contents.path, document), parts)
            self._by_namespace.remove(_namespace_of(document), parts)


def keys_of(contents: FileContents | None) -> set[ReadKey]:
    """Every lookup whose answer the records of a file take part in (nothing for None)."""
    if contents is None:
        return set()
    keys: set[ReadKey] = {EVERYTHING}
    for app in contents.applications:
        keys |= {("app", app.namespace, app.name), ("app-id", app.identifier_hash)}
    for tenant in contents.tenants:
        keys |= {
            ("tenant-id", tenant.namespace, tenant.application, tenant.tenant_id),
            ("tenant-name", tenant.namespace, tenant.name),
            ("tenants-of", tenant.namespace, tenant.application),
            ("subdomain", tenant.namespace, tenant.application, tenant.sub_domain),
        }
    for version in contents.versions:
        keys |= {
            ("version", version.namespace, version.name),
            ("versions-of", version.namespace, version.application),
        }
    for document in contents.documents:
        path, kind, namespace, name = _key_of(contents.path, document)
        keys |= {("document", str(path), *kind, namespace, name), ("namespace", namespace)}
    if contents.problems:
        keys.add(READABLE)
    return keys


def _namespace_of(document: SourceDocument) -> str:
    return str(get_path(document.body, "metadata", "namespace") or "")


def _key_of(path: Path, document: SourceDocument) -> DocumentKey:
    body = document.body
    return (
        path,
        (document.api_version, document.kind),
        str(get_path(body, "metadata", "namespace") or ""),
        str(get_path(body, "metadata", "name") or ""),
    )


# --- the writer's index, where of_tree answers with it -----------------------------------------------


class _OpenIndex(Protocol):
    """A writer's index of its tree (records.working_index's `WorkingIndex`): what `of_tree` asks
    of it, and what a file written on the writer's thread tells it."""

    @property
    def index(self) -> SourceIndex | None: ...

    def note_written(
        self, root: Path, relative: Path, data: bytes | None, checked: Sequence[dict[str, Any]] = ()
    ) -> None: ...


class WorkingIndexes:
    """The index each tree's writer keeps during a batch, for `of_tree` on the writer's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_root: dict[Path, tuple[int, _OpenIndex]] = {}

    def current(self, root: Path) -> _OpenIndex | None:
        with self._lock:
            found = self._by_root.get(root)
        return found[1] if found is not None and found[0] == threading.get_ident() else None

    def attach(self, root: Path, working: _OpenIndex) -> None:
        with self._lock:
            self._by_root[root] = (threading.get_ident(), working)

    def detach(self, root: Path) -> None:
        with self._lock:
            self._by_root.pop(root, None)


WORKING_INDEXES = WorkingIndexes()
