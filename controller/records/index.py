"""The reader of the source tree: what its CAP documents say, indexed, and the documents themselves.

`SourceIndex.of_tree` loads every YAML file of the tree as a render does (records.source_files:
strict, never through a symbolic link, nor a file that is not regular or too large), checks its
CAPApplication, CAPApplicationVersion and CAPTenant documents against their schemas, and indexes
them. Parsed files are kept between calls and parsed again only when their size, times or inode
changed (or their bytes, for a file written within the file system's timestamp granularity of
being read, as Git does for its index): every change of a batch indexes the tree anew, and that
must cost a walk of the tree, not a parse of it.

The index is the controller's one reader of the tree: models (the generator's `Application`,
`Version`, `Tenant`) are built from the documents it holds (`SourceIndex.document`), never from
the files read again, so what a reconciler decides on is what the index checked. A tree with an
unreadable file or a CAP document its schema refuses is `UnreadableSource` (records.unreadable),
wherever it is met.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from btp_gitops.controller.records import source_files as files
from btp_gitops.controller.records.read_kinds import READ_KINDS as _READ_KINDS
from btp_gitops.controller.records.unreadable import unreadable_source, unreadable_tree
from btp_gitops.generator.core import SchemaRegistry, SourceDocument, get_path, problems_in
from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    PROVIDER_SUFFIX,
    Application,
    BtpService,
    TenantStatus,
    TenantType,
    Version,
    application_mode,
    sha1_hex,
    tenant_from_source,
)
from btp_gitops.generator.io import load_schema_registry

# A spec.btp.services entry: name, secret, class (`service_class`); the generator's own view.
ServiceBinding = BtpService

_RACY_WINDOW_NS = 2_000_000_000  # wider than any file system's timestamp granularity we meet

# Where one document is: its file (relative to the tree root), kind, namespace and name.
DocumentKey = tuple[Path, tuple[str, str], str, str]


@dataclass(frozen=True, slots=True)
class ApplicationRecord:
    """A CAPApplication found in the source tree."""

    namespace: str
    name: str
    btp_app_name: str
    provider_subaccount_id: str
    path: Path  # its file, relative to the tree root
    services: tuple[ServiceBinding, ...]  # spec.btp.services
    annotations: dict[str, str]
    provider_sub_domain: str  # "" for services-only
    provider_tenant_id: str  # "" for services-only
    global_account_id: str = ""  # the deprecated account half of the identity

    @property
    def identifier_hash(self) -> str:
        """`sme.sap.com/app-identifier-hash`, as generator.domains.cap.identity.app_identifier_hash
        computes it: the account is providerSubaccountId, else the deprecated globalAccountId."""
        return sha1_hex(self.provider_subaccount_id or self.global_account_id, self.btp_app_name)

    @property
    def has_provider(self) -> bool:
        """Whether `spec.provider` names a provider tenant (an application without one may still
        have consumer tenants: SourceIndex.services_only decides that)."""
        return bool(self.provider_tenant_id)

    @property
    def provider_tenant_name(self) -> str:
        return f"{self.name}{PROVIDER_SUFFIX}"


@dataclass(frozen=True, slots=True)
class TenantRecord:
    """A CAPTenant record found in the tree."""

    path: Path  # relative to the tree root
    namespace: str
    name: str
    application: str
    tenant_id: str
    sub_domain: str
    marked_for_deprovisioning: bool
    status: TenantStatus


@dataclass(frozen=True, slots=True)
class VersionRecord:
    """A CAPApplicationVersion found in the tree."""

    path: Path  # relative to the tree root
    namespace: str
    name: str
    application: str
    version: str


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

    def __init__(self, files: Iterable[_FileContents] = ()) -> None:
        self._files: dict[Path, _FileContents] = {}
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
        self._ordered: list[_FileContents] | None = None  # the files in path order, when asked for
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
        working = _WORKING.current(root)
        if working is not None and working.index is not None:
            working.index.check_readable()
            return working.index
        contents = _PARSED_FILES.contents_of(root)
        index = previous.updated(contents) if previous is not None else cls(contents)
        index.check_readable()
        return index

    def updated(self, files: Iterable[_FileContents]) -> SourceIndex:
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

    def replace_file(self, path: Path, contents: _FileContents | None) -> None:
        """`path` (relative to the tree root) now holds `contents` (None: it is gone)."""
        old = self._files.get(path)
        if old is not None:
            self._drop(old)
        if contents is not None:
            self._add(contents)

    def file(self, path: Path) -> _FileContents | None:
        return self._files.get(path)

    def _read(self, key: ReadKey) -> None:
        if self.reads is not None:
            self.reads.add(key)

    def _in_order(self) -> list[_FileContents]:
        if self._ordered is None:
            self._ordered = sorted(self._files.values(), key=lambda contents: contents.path.parts)
        return self._ordered

    def _add(self, contents: _FileContents) -> None:
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

    def _drop(self, contents: _FileContents) -> None:
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


def keys_of(contents: _FileContents | None) -> set[ReadKey]:
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


# --- reading files, parsed once ----------------------------------------------------------------------


@functools.cache
def source_schemas() -> SchemaRegistry:
    """The schemas the index checks documents against, and the editor every document it writes."""
    return load_schema_registry()


@dataclass(frozen=True, slots=True)
class _FileContents:
    """What one YAML file holds for us, and what tells whether the file still holds it."""

    path: Path  # relative to the tree root
    signature: tuple[int, int, int, int]  # size, mtime, inode, ctime (ns)
    digest: bytes
    checked_at_ns: int
    documents: tuple[SourceDocument, ...] = ()  # its CAP documents that passed their schemas
    applications: tuple[ApplicationRecord, ...] = ()
    tenants: tuple[TenantRecord, ...] = ()
    versions: tuple[VersionRecord, ...] = ()
    problems: tuple[str, ...] = ()
    # Written by the writer itself (records.editor), which knows what it wrote: its signature is
    # trusted without the racy check until Git rewrites the file (`WorkingIndex.rewritten`).
    own: bool = False

    def racy(self) -> bool:
        """Written so shortly before it was checked that a later write may have kept its times."""
        return not self.own and self.signature[1] >= self.checked_at_ns - _RACY_WINDOW_NS


def _signature(stat: os.stat_result) -> tuple[int, int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)


class _ParsedFiles:
    """Per tree root, the contents of each of its YAML files as last read (or written)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_root: dict[Path, dict[str, _FileContents]] = {}

    def contents_of(self, root: Path) -> list[_FileContents]:
        with self._lock:
            previous = self._by_root.get(root, {})
            try:
                current = {
                    path: self._current(root, path, previous.get(path), status)
                    for path, status in files.yaml_files(root)
                }
            except files.RefusedPath as error:
                raise unreadable_source(files.refusal(root, error)) from error
            except OSError as error:
                raise unreadable_source(f"{root}: {error.strerror}") from error
            self._by_root[root] = current  # files gone from the tree leave the cache here
        return list(current.values())

    def reread(self, root: Path, relative: Path) -> _FileContents | None:
        """One file as it is on disk now (None when it is gone or not a source file)."""
        path = str(root / relative)
        with self._lock:
            cache = self._by_root.setdefault(root, {})
            cached = cache.pop(path, None)
            status = files.source_status(root, relative)
            if status is None:
                return None
            try:
                contents = self._current(
                    root, path, dataclasses.replace(cached, own=False) if cached else None, status
                )
            except OSError as error:
                raise unreadable_source(f"{path}: {error.strerror}") from error
            cache[path] = contents
            return contents

    def wrote(
        self, root: Path, relative: Path, data: bytes | None, checked: Sequence[dict[str, Any]] = ()
    ) -> _FileContents | None:
        """The writer wrote `data` to `relative` (None: deleted it): parse what it wrote and keep
        its digest, so the file is not read and hashed again while it stays as written. `checked`:
        bodies the writer checked against their schemas before writing them (a document equal to
        one of them is not checked again)."""
        path = str(root / relative)
        with self._lock:
            cache = self._by_root.setdefault(root, {})
            status = files.source_status(root, relative) if data is not None else None
            if data is None or status is None:
                cache.pop(path, None)
                return None
            checked_at = time.time_ns()
            contents = _parse_file(
                root, relative, data, _signature(status), hashlib.sha256(data).digest(), checked_at, checked
            )
            cache[path] = dataclasses.replace(contents, own=True)
            return cache[path]

    def disown(self, root: Path, relatives: Iterable[Path] | None) -> None:
        """Git rewrote these files (None: any file): their signatures are checked as usual again."""
        with self._lock:
            cache = self._by_root.get(root, {})
            paths = list(cache) if relatives is None else [str(root / r) for r in relatives]
            for path in paths:
                cached = cache.get(path)
                if cached is not None and cached.own:
                    cache[path] = dataclasses.replace(cached, own=False)

    def _current(
        self, root: Path, path: str, cached: _FileContents | None, status: os.stat_result
    ) -> _FileContents:
        """What the file holds now; `status`: its `lstat`, from the walk."""
        signature = _signature(status)
        if cached is not None and cached.signature == signature and not cached.racy():
            return cached
        checked_at = time.time_ns()
        relative = Path(path).relative_to(root)
        try:
            status, data = files.read_source(root, relative)  # a link, FIFO, device, big file: refused
        except files.RefusedPath as error:
            return _FileContents(relative, signature, b"", checked_at, problems=(files.refusal(root, error),))
        signature, digest = _signature(status), hashlib.sha256(data).digest()
        if cached is not None and cached.digest == digest:
            return dataclasses.replace(cached, signature=signature, checked_at_ns=checked_at, own=False)
        return _parse_file(root, relative, data, signature, digest, checked_at)


_PARSED_FILES = _ParsedFiles()


def _parse_file(  # noqa: PLR0917 - the file's parts, each passed by whoever read it
    root: Path,
    relative: Path,
    data: bytes,
    signature: tuple[int, int, int, int],
    digest: bytes,
    checked_at: int,
    checked: Sequence[dict[str, Any]] = (),
) -> _FileContents:
    """The file's documents, records and problems (`data`: its bytes); a document equal to one of
    the `checked` bodies (checked against its schema by whoever just wrote it) is not checked again."""
    documents, unparsed = files.documents_of(root, relative, data)
    if unparsed:
        return _FileContents(relative, signature, digest, checked_at, problems=tuple(unparsed))
    applications, tenants, versions, problems, kept = [], [], [], [], []
    for document in documents:
        kind = (document.api_version, document.kind)
        if kind not in _READ_KINDS:
            continue
        found = [] if document.body in checked else problems_in(document, source_schemas())
        if found:
            problems += [p.render() for p in found]
            continue
        kept.append(document)
        if kind == CAP_APPLICATION:
            applications.append(_application_record(document, relative))
        elif kind == CAP_TENANT:
            tenants.append(_tenant_record(document, relative))
        elif kind == CAP_APPLICATION_VERSION:  # Domains and ClusterDomains: documents only
            versions.append(_version_record(document, relative))
    return _FileContents(
        relative,
        signature,
        digest,
        checked_at,
        tuple(kept),
        tuple(applications),
        tuple(tenants),
        tuple(versions),
        tuple(problems),
    )


def _string_map(body: Any, *path: str) -> dict[str, str]:
    value = get_path(body, *path)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _application_record(document: SourceDocument, path: Path) -> ApplicationRecord:
    app = Application.from_source(document)
    return ApplicationRecord(
        namespace=app.namespace,
        name=app.name,
        btp_app_name=app.btp_app_name,
        provider_subaccount_id=app.provider_subaccount_id,
        path=path,
        services=app.services,
        annotations=_string_map(document.body, "metadata", "annotations"),
        provider_sub_domain=app.provider.sub_domain if app.provider else "",
        provider_tenant_id=app.provider.tenant_id if app.provider else "",
        global_account_id=app.global_account_id,
    )


def _tenant_record(document: SourceDocument, path: Path) -> TenantRecord:
    tenant = tenant_from_source(document, TenantType.CONSUMER)
    return TenantRecord(
        path=path,
        namespace=tenant.namespace,
        name=tenant.name,
        application=tenant.application,
        tenant_id=tenant.tenant_id,
        sub_domain=tenant.sub_domain,
        marked_for_deprovisioning=tenant.marked_for_deprovisioning,
        status=tenant.status,
    )


def _version_record(document: SourceDocument, path: Path) -> VersionRecord:
    spec = document.body.get("spec") or {}
    return VersionRecord(
        path=path,
        namespace=str(get_path(document.body, "metadata", "namespace") or ""),
        name=str(get_path(document.body, "metadata", "name") or ""),
        application=str(spec.get("capApplicationInstance") or ""),
        version=str(spec.get("version") or ""),
    )


# --- the writer's index of its working tree ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChangeFootprint:
    """What one change looked up and which files it wrote (relative paths, as strings)."""

    reads: frozenset[ReadKey]
    writes: frozenset[str]


class _WorkingIndexes:
    """The index each tree's writer keeps during a batch, for `of_tree` on the writer's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_root: dict[Path, tuple[int, WorkingIndex]] = {}

    def current(self, root: Path) -> WorkingIndex | None:
        with self._lock:
            found = self._by_root.get(root)
        return found[1] if found is not None and found[0] == threading.get_ident() else None

    def attach(self, root: Path, working: WorkingIndex) -> None:
        with self._lock:
            self._by_root[root] = (threading.get_ident(), working)

    def detach(self, root: Path) -> None:
        with self._lock:
            self._by_root.pop(root, None)


_WORKING = _WorkingIndexes()


class WorkingIndex:
    """The writer's index of its working tree (controller.gitstore's `TreeTracker`).

    Opened for a batch, it is what `SourceIndex.of_tree` answers on the writer's thread while a
    change is applied: one walk of the tree per batch at most (none when the tree is where the
    last batch left it), then every
    file the editor writes (`note_written`) replaces that file's records in place, so a change
    costs the records it touches, not the tree. The writer tells it which files Git rewrote
    (`rewritten`), and asks per change what it looked up and wrote (`change_started` /
    `change_ended`): a rebase after a lost push race re-applies only the changes whose lookups or
    files the competitor touched."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._index: SourceIndex | None = None  # of the tree as it is, while it is known
        self._writes: set[str] | None = None

    def open(self, tree: Path) -> None:
        root = tree.resolve()
        if self._index is None or self._root != root:
            self._root, self._index = root, SourceIndex(_PARSED_FILES.contents_of(root))

    @property
    def index(self) -> SourceIndex | None:
        """The index of the tree as it is now (None before `open`)."""
        return self._index

    def close(self) -> None:
        if self._root is not None:
            _WORKING.detach(self._root)  # a change that raised past change_ended

    def forget(self) -> None:
        """The tree is not known any more (an unexpected failure): the next `open` walks it."""
        self.close()
        self._index = None

    def change_started(self) -> None:
        """A change is applied now, on this thread: `of_tree` answers with this index until it
        ends (only then: an index handed to anyone else must not change under them)."""
        if self._index is not None and self._root is not None:
            self._index.reads = set()
            _WORKING.attach(self._root, self)
        self._writes = set()

    def change_ended(self) -> ChangeFootprint:
        if self._root is not None:
            _WORKING.detach(self._root)
        reads = self._index.reads if self._index is not None else None
        writes = self._writes or set()
        if self._index is not None:
            self._index.reads = None
        self._writes = None
        return ChangeFootprint(frozenset(reads or {EVERYTHING}), frozenset(writes))

    def rewritten(self, paths: Iterable[str] | None) -> set[ReadKey]:
        """Git rewrote these files of the tree (None: possibly any): they are read again and the
        lookups their records answered before or answer now are returned."""
        root = self._root
        if root is None:
            return {EVERYTHING}
        if paths is None:
            _PARSED_FILES.disown(root, None)
            self._index = SourceIndex(_PARSED_FILES.contents_of(root))
            return {EVERYTHING}
        touched: set[ReadKey] = set()
        relatives = [Path(path) for path in paths]
        _PARSED_FILES.disown(root, relatives)
        for relative in relatives:
            contents = _PARSED_FILES.reread(root, relative)
            if self._index is not None:
                touched |= keys_of(self._index.file(relative)) | keys_of(contents)
                self._index.replace_file(relative, contents)
        return touched

    def keys(self, paths: Iterable[str]) -> set[ReadKey]:
        """The lookups the records of these files answer now."""
        if self._index is None:
            return {EVERYTHING}
        return {key for path in paths for key in keys_of(self._index.file(Path(path)))}

    def note_written(
        self, root: Path, relative: Path, data: bytes | None, checked: Sequence[dict[str, Any]] = ()
    ) -> None:
        contents = _PARSED_FILES.wrote(root, relative, data, checked)
        if self._index is not None and root == self._root:
            self._index.replace_file(relative, contents)
        if self._writes is not None:
            self._writes.add(relative.as_posix())


def note_written(
    tree: Path, relative: Path, data: bytes | None, checked: Sequence[dict[str, Any]] = ()
) -> None:
    """records.editor wrote `data` to `relative` under `tree` (None: removed it), having checked
    the `checked` bodies against their schemas: the parsed state is kept as written, and the
    writer's index, when one is open on `tree`, follows."""
    root = tree.resolve()
    working = _WORKING.current(root)
    if working is not None:
        working.note_written(root, relative, data, checked)
    else:
        _PARSED_FILES.wrote(root, relative, data, checked)
