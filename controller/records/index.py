"""The reader of the source tree: what its CAP documents say, indexed, and the documents themselves.

`SourceIndex.of_tree` loads every YAML file of the tree as a render does
(`generator.io.sources.load_sources`, strict), checks its CAPApplication, CAPApplicationVersion and
CAPTenant documents against their schemas, and indexes them. Parsed files are kept between calls
and parsed again only when their size, times or inode changed (or their bytes, for a file written
within the file system's timestamp granularity of being read, as Git does for its index): every
change of a batch indexes the tree anew, and that must cost a walk of the tree, not a parse of it.

The index is the controller's one reader of the tree: models (the generator's `Application`,
`Version`, `Tenant`) are built from the documents it holds (`SourceIndex.document`), never from
the files read again, so what a reconciler decides on is what the index checked. A tree with an
unreadable file or a CAP document its schema refuses is `UnreadableSource` (records.unreadable),
wherever it is met.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.controller.records.unreadable import problems_of, unreadable_source, unreadable_tree
from btp_gitops.generator.core import BtpGitopsError, SchemaRegistry, SourceDocument, get_path, problems_in
from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    PROVIDER_SUFFIX,
    Application,
    BtpService,
    TenantStatus,
    TenantType,
    sha1_hex,
    tenant_from_source,
)
from btp_gitops.generator.io import YAML_SUFFIXES, load_schema_registry, load_sources

# A spec.btp.services entry: name, secret, class (`service_class`); the generator's own view.
ServiceBinding = BtpService

_READ_KINDS = frozenset({CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT})
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
    def services_only(self) -> bool:
        return not self.provider_tenant_id

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


class SourceIndex:
    """What a tree holds, looked up in O(1); where a key occurs twice, the first file (in path
    order, as the render reads them) wins. Build it once per commit (cache it by commit sha)."""

    def __init__(
        self,
        applications: tuple[ApplicationRecord, ...],
        tenants: tuple[TenantRecord, ...],
        versions: tuple[VersionRecord, ...],
        documents: tuple[tuple[Path, SourceDocument], ...] = (),
    ) -> None:
        self.applications = applications
        self.tenants = tenants
        self.versions = versions
        self._documents = documents  # every CAP document (checked), in path order, with its file
        self._by_place: dict[DocumentKey, SourceDocument] = {}
        for path, document in documents:
            self._by_place.setdefault(_key_of(path, document), document)
        self._apps: dict[tuple[str, str], ApplicationRecord] = {}
        self._apps_by_identifier: dict[str, ApplicationRecord] = {}
        for app in applications:
            self._apps.setdefault((app.namespace, app.name), app)
            self._apps_by_identifier.setdefault(app.identifier_hash, app)
        self._tenants_by_id: dict[tuple[str, str, str], TenantRecord] = {}
        self._tenants_by_name: dict[tuple[str, str], TenantRecord] = {}
        self._tenants_of: dict[tuple[str, str], list[TenantRecord]] = {}
        for tenant in tenants:
            self._tenants_by_id.setdefault((tenant.namespace, tenant.application, tenant.tenant_id), tenant)
            self._tenants_by_name.setdefault((tenant.namespace, tenant.name), tenant)
            self._tenants_of.setdefault((tenant.namespace, tenant.application), []).append(tenant)
        self._versions: dict[tuple[str, str], VersionRecord] = {}
        for version in versions:
            self._versions.setdefault((version.namespace, version.name), version)

    @classmethod
    def of_tree(cls, tree: Path) -> SourceIndex:
        """Index every YAML file under `tree` (hidden files and directories skipped, as a render
        skips them). UnreadableSource when a file is not YAML or a CAP document breaks its schema:
        a record must not be written beside one that cannot be read (it might be the same tenant)."""
        files = _PARSED_FILES.contents_of(tree.resolve())
        problems = [problem for contents in files for problem in contents.problems]
        if problems:
            raise unreadable_tree(problems)
        return cls(
            tuple(app for contents in files for app in contents.applications),
            tuple(tenant for contents in files for tenant in contents.tenants),
            tuple(version for contents in files for version in contents.versions),
            tuple((contents.path, document) for contents in files for document in contents.documents),
        )

    def application_by_identifier(self, identifier_hash: str) -> ApplicationRecord | None:
        return self._apps_by_identifier.get(identifier_hash)

    def application(self, namespace: str, name: str) -> ApplicationRecord | None:
        return self._apps.get((namespace, name))

    def tenant(self, namespace: str, application: str, tenant_id: str) -> TenantRecord | None:
        return self._tenants_by_id.get((namespace, application, tenant_id))

    def tenant_named(self, namespace: str, name: str) -> TenantRecord | None:
        return self._tenants_by_name.get((namespace, name))

    def tenants_of(self, namespace: str, application: str) -> list[TenantRecord]:
        return list(self._tenants_of.get((namespace, application), []))

    def version_named(self, namespace: str, name: str) -> VersionRecord | None:
        return self._versions.get((namespace, name))

    def versions_of(self, namespace: str, application: str) -> list[VersionRecord]:
        return [v for v in self.versions if (v.namespace, v.application) == (namespace, application)]

    def document(self, path: Path, kind: tuple[str, str], namespace: str, name: str) -> SourceDocument:
        """The document a record was read from: `path` is the record's file (of two documents of
        the same name, the record's own). UnreadableSource when it is not there, which only an
        index built from one tree and asked about a record of another can meet."""
        found = self._by_place.get((path, kind, namespace, name))
        if found is None:
            raise unreadable_source(f"{kind[1]} {namespace}/{name} is not in {path}")
        return found

    def documents_of_namespace(self, namespace: str) -> list[SourceDocument]:
        """Every CAP document of `namespace`, in the order a render reads them."""
        return [d for _, d in self._documents if get_path(d.body, "metadata", "namespace") == namespace]


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

    def racy(self) -> bool:
        """Written so shortly before it was checked that a later write may have kept its times."""
        return self.signature[1] >= self.checked_at_ns - _RACY_WINDOW_NS


def _signature(stat: os.stat_result) -> tuple[int, int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)


def _yaml_files(root: Path) -> list[str]:
    """Every YAML file under `root` as `generator.io.sources.source_files` finds them (same order:
    by path components), without walking hidden directories such as `.git` at all. Plain strings:
    with thousands of records, building and comparing Path objects was most of an index's cost."""
    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if not d.startswith(".")]
        found += [
            os.path.join(directory, name)
            for name in names
            if not name.startswith(".") and name.endswith(YAML_SUFFIXES)
        ]
    return sorted(found, key=lambda path: path.split(os.sep))


class _ParsedFiles:
    """Per tree root, the contents of each of its YAML files as last read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_root: dict[Path, dict[str, _FileContents]] = {}

    def contents_of(self, root: Path) -> list[_FileContents]:
        with self._lock:
            previous = self._by_root.get(root, {})
            try:
                current = {path: self._current(root, path, previous.get(path)) for path in _yaml_files(root)}
            except OSError as error:
                raise unreadable_source(f"{root}: {error.strerror}") from error
            self._by_root[root] = current  # files gone from the tree leave the cache here
        return list(current.values())

    @staticmethod
    def _current(root: Path, path: str, cached: _FileContents | None) -> _FileContents:
        signature = _signature(os.stat(path))
        if cached is not None and cached.signature == signature and not cached.racy():
            return cached
        checked_at = time.time_ns()
        with open(path, "rb") as file:
            digest = hashlib.sha256(file.read()).digest()
        if cached is not None and cached.digest == digest:
            return dataclasses.replace(cached, signature=signature, checked_at_ns=checked_at)
        return _parse_file(root, Path(path), signature, digest, checked_at)


_PARSED_FILES = _ParsedFiles()


def _parse_file(
    root: Path, path: Path, signature: tuple[int, int, int, int], digest: bytes, checked_at: int
) -> _FileContents:
    relative = path.relative_to(root)
    try:
        documents = load_sources([path])
    except BtpGitopsError as error:
        return _FileContents(relative, signature, digest, checked_at, problems=tuple(problems_of(error)))
    applications, tenants, versions, problems, kept = [], [], [], [], []
    for document in documents:
        kind = (document.api_version, document.kind)
        if kind not in _READ_KINDS:
            continue
        found = problems_in(document, source_schemas())
        if found:
            problems += [p.render() for p in found]
            continue
        kept.append(document)
        if kind == CAP_APPLICATION:
            applications.append(_application_record(document, relative))
        elif kind == CAP_TENANT:
            tenants.append(_tenant_record(document, relative))
        else:
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
