"""CAPTenant records in a source tree: what the tree holds, and the edits the subscription server and
the controller make to it.

Reading: `SourceIndex.of_tree` loads every YAML file of the tree as a render does
(`generator.io.sources.load_sources`, strict), checks its CAPApplication, CAPApplicationVersion and
CAPTenant documents against their schemas, and indexes them. Parsed files are kept between calls
and parsed again only when their size, times or inode changed (or their bytes, for a file written
within the file system's timestamp granularity of being read, as Git does for its index): every
change of a batch indexes the tree anew, and that must cost a walk of the tree, not a parse of it.

Writing: each edit is a `TreeChange` (controller.gitstore), a pure function of the tree: it looks
its record up anew each time it is applied, rewrites only the document it is about (other
documents of a multi-document file and the comments heading it stay as they are), writes in the
generator's YAML style (`generator.core.yamlio`), and returns None when the record already says
what it should, so applying it twice changes nothing. The record format is the README's ("CAP
tenants"); a new record goes to `<directory of its CAPApplication's file>/tenants/<tenant>.yaml`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.controller.errors import PermanentError
from btp_gitops.controller.gitstore import TreeChange
from btp_gitops.generator.core.errors import SourceSyntaxError
from btp_gitops.generator.core.objects import get_path
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.validation import SchemaRegistry, problems_in
from btp_gitops.generator.core.yamlio import (
    SourceSyntaxProblem,
    dump_each,
    dump_object,
    load_source_documents,
)
from btp_gitops.generator.domains.cap.identity import PREFIX, sha1_hex
from btp_gitops.generator.domains.cap.model import (
    API_VERSION,
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    Application,
    BtpService,
    TenantOperation,
)
from btp_gitops.generator.domains.cap.tenants.model import (
    CAP_TENANT,
    DEPROVISION_ANNOTATION,
    PROVIDER_SUFFIX,
    SUBSCRIPTION_CONTEXT_ANNOTATION,
    TenantState,
    TenantStatus,
    TenantType,
    tenant_from_source,
)
from btp_gitops.generator.domains.cap.tenants.names import SUBSCRIPTION_GUID
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.io.sources import YAML_SUFFIXES, load_sources

# CAP Operator's annotation for the subscribing global account, on the CAPTenant.
GLOBAL_ACCOUNT_ANNOTATION = f"{PREFIX}global-account-id"
TENANTS_DIRECTORY = "tenants"
MAX_TENANT_NAME = 63

# A spec.btp.services entry: name, secret, class (`service_class`); the generator's own view.
ServiceBinding = BtpService

_READ_KINDS = frozenset({CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT})
_RACY_WINDOW_NS = 2_000_000_000  # wider than any file system's timestamp granularity we meet
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$")
_MAX_PROBLEMS_SHOWN = 5


# --- what the tree holds -----------------------------------------------------------------------------


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
    ) -> None:
        self.applications = applications
        self.tenants = tenants
        self.versions = versions
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
        skips them). PermanentError when a file is not YAML or a CAP document breaks its schema:
        a record must not be written beside one that cannot be read (it might be the same tenant)."""
        files = _PARSED_FILES.contents_of(tree.resolve())
        problems = [problem for contents in files for problem in contents.problems]
        if problems:
            shown = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
            more = len(problems) - _MAX_PROBLEMS_SHOWN
            raise PermanentError(
                f"the source tree has unreadable CAP documents: {shown}"
                + (f" (and {more} more)" if more > 0 else "")
            )
        return cls(
            tuple(app for contents in files for app in contents.applications),
            tuple(tenant for contents in files for tenant in contents.tenants),
            tuple(version for contents in files for version in contents.versions),
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


# --- reading files, parsed once ----------------------------------------------------------------------


@functools.cache
def _schemas() -> SchemaRegistry:
    return load_schema_registry()


@dataclass(frozen=True, slots=True)
class _FileContents:
    """What one YAML file holds for us, and what tells whether the file still holds it."""

    signature: tuple[int, int, int, int]  # size, mtime, inode, ctime (ns)
    digest: bytes
    checked_at_ns: int
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
                raise PermanentError(f"cannot read the source tree {root}: {error.strerror}") from error
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
    try:
        documents = load_sources([path])
    except SourceSyntaxError as error:
        return _FileContents(
            signature, digest, checked_at, problems=tuple(p.render() for p in error.problems)
        )
    relative = path.relative_to(root)
    applications, tenants, versions, problems = [], [], [], []
    for document in documents:
        kind = (document.api_version, document.kind)
        if kind not in _READ_KINDS:
            continue
        found = problems_in(document, _schemas())
        if found:
            problems += [p.render() for p in found]
        elif kind == CAP_APPLICATION:
            applications.append(_application_record(document, relative))
        elif kind == CAP_TENANT:
            tenants.append(_tenant_record(document, relative))
        else:
            versions.append(_version_record(document, relative))
    return _FileContents(
        signature, digest, checked_at, tuple(applications), tuple(tenants), tuple(versions), tuple(problems)
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


# --- names and places --------------------------------------------------------------------------------


def consumer_tenant_name(application: str, tenant_id: str) -> str:
    """`<application>-consumer-<8 hex of sha1(tenant_id)>`, at most 63 characters.

    Derived from the tenant id alone (never from the subdomain, which a subaccount may change) so
    that the same tenant always gets the same record: a subscription callback the SaaS registry
    repeats, or one applied again after a rejected push, finds the record it wrote rather than
    writing a second one. Tenant ids may hold capitals and underscores, so they are hashed, not
    copied; the application's name is a DNS-1123 name, and cutting it (at most 63 characters keep
    the names derived from the tenant's, such as its VirtualService and Jobs, within Kubernetes'
    limits) and dropping trailing `-`/`.` keeps the whole a valid DNS-1123 name.
    """
    suffix = f"-consumer-{sha1_hex(tenant_id)[:8]}"
    head = application[: MAX_TENANT_NAME - len(suffix)].rstrip("-.")
    return f"{head}{suffix}"


def record_path(app: ApplicationRecord, tenant_name: str) -> Path:
    """Where a new record of `app`'s tenant goes, relative to the tree root."""
    return app.path.parent / TENANTS_DIRECTORY / f"{tenant_name}.yaml"


# --- editing one document of a file ------------------------------------------------------------------

_SEPARATOR_LINE = re.compile(r"---[ \t]*(?:#[^\n]*)?\r?\n?")


@dataclass(slots=True)
class _Piece:
    """A stretch of a YAML file: the `---` line opening it ("" for the first) and what follows."""

    separator: str
    text: str
    body: dict[str, Any] | None


def _is_comment_or_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _head_comments(text: str) -> str:
    lines = text.splitlines(keepends=True)
    count = next((i for i, line in enumerate(lines) if not _is_comment_or_blank(line)), len(lines))
    return "".join(lines[:count])


def _tail_comments(text: str) -> str:
    """Comment lines at column 0 after a document's last line: they are about what follows."""
    lines = text.splitlines(keepends=True)
    count = 0
    for line in reversed(lines):
        if not _is_comment_or_blank(line) or (line.strip() and not line.startswith("#")):
            break
        count += 1
    return "".join(lines[len(lines) - count :]) if count else ""


def _split(text: str) -> list[tuple[str, str]]:
    pieces: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines(keepends=True):
        if _SEPARATOR_LINE.fullmatch(line):
            pieces.append((line, []))
        else:
            pieces[-1][1].append(line)
    return [(separator, "".join(lines)) for separator, lines in pieces]


def _documents(text: str, shown: str) -> list[Any]:
    return [body for _, body in load_source_documents(text, shown) if body is not None]


class _YamlFile:
    """A source file as pieces holding at most one document each, so that one document can be
    replaced or removed while the rest of the file stays byte for byte. A file whose pieces do not
    line up with its documents (a `---` inside a block scalar, directives...) is written back
    from its parsed documents instead, which loses its comments but never its content."""

    def __init__(self, path: Path, pieces: list[_Piece]) -> None:
        self.path = path
        self.pieces = pieces

    @classmethod
    def read(cls, path: Path) -> _YamlFile:
        try:
            text = path.read_text(encoding="utf-8")
            documents = _documents(text, str(path))
        except (OSError, UnicodeDecodeError, SourceSyntaxProblem) as error:
            raise PermanentError(f"cannot read {path}: {type(error).__name__}") from error
        pieces = cls._pieces(text, str(path))
        if pieces is None or [p.body for p in pieces if p.body is not None] != documents:
            texts = dump_each(documents)
            pieces = [
                _Piece("---\n" if i else "", t, body)
                for i, (t, body) in enumerate(zip(texts, documents, strict=True))
            ]
        return cls(path, pieces)

    @staticmethod
    def _pieces(text: str, shown: str) -> list[_Piece] | None:
        pieces = []
        for separator, piece_text in _split(text):
            try:
                found = _documents(piece_text, shown)
            except SourceSyntaxProblem:
                return None
            if len(found) > 1 or (found and not isinstance(found[0], dict)):
                return None
            pieces.append(_Piece(separator, piece_text, found[0] if found else None))
        return pieces

    def find(self, kind: tuple[str, str], namespace: str, name: str) -> _Piece | None:
        for piece in self.pieces:
            body = piece.body
            if (
                body is not None
                and (body.get("apiVersion"), body.get("kind")) == kind
                and get_path(body, "metadata", "namespace") == namespace
                and get_path(body, "metadata", "name") == name
            ):
                return piece
        return None

    def replace(self, piece: _Piece, body: dict[str, Any]) -> None:
        piece.text = _head_comments(piece.text) + dump_object(body) + _tail_comments(piece.text)
        piece.body = body

    def remove(self, piece: _Piece) -> None:
        self.pieces.remove(piece)

    def write(self) -> None:
        """Write the pieces back; a file left without any document is deleted."""
        if all(piece.body is None for piece in self.pieces):
            self.path.unlink()
            return
        self.path.write_text("".join(piece.separator + piece.text for piece in self.pieces), "utf-8")


def _checked(body: dict[str, Any], what: str) -> dict[str, Any]:
    """`body` if it passes its schema: the controller never writes a record the render refuses."""
    document = SourceDocument(file=what, document=1, body=body, directory=Path())
    problems = problems_in(document, _schemas())
    if problems:
        details = "; ".join(f"{p.field_path or '-'}: {p.message}" for p in problems[:_MAX_PROBLEMS_SHOWN])
        raise PermanentError(f"{what} would not be a valid record: {details}")
    return body


@dataclass(frozen=True, slots=True)
class _DocumentRef:
    """Where one document is: its file (relative to the tree root), kind, namespace and name."""

    path: Path
    kind: tuple[str, str]
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind[1]} {self.namespace}/{self.name}"

    @classmethod
    def of_tenant(cls, record: TenantRecord) -> _DocumentRef:
        return cls(record.path, CAP_TENANT, record.namespace, record.name)


def _find(tree: Path, ref: _DocumentRef) -> tuple[_YamlFile, _Piece]:
    file = _YamlFile.read(tree / ref.path)
    piece = file.find(ref.kind, ref.namespace, ref.name)
    if piece is None or piece.body is None:
        raise PermanentError(f"{ref} is not in {ref.path} any more")
    return file, piece


def _edit_document(tree: Path, ref: _DocumentRef, edit: Callable[[dict[str, Any]], None]) -> bool:
    """Apply `edit` to a copy of the document; write it back when it changed. True if written."""
    file, piece = _find(tree, ref)
    original = piece.body or {}
    updated = copy.deepcopy(original)
    edit(updated)
    if updated == original:
        return False
    file.replace(piece, _checked(updated, str(ref)))
    file.write()
    return True


def _remove_document(tree: Path, ref: _DocumentRef) -> None:
    file, piece = _find(tree, ref)
    file.remove(piece)
    file.write()


def _write_new_record(tree: Path, path: Path, body: dict[str, Any]) -> None:
    target = tree / path
    if target.exists():
        raise PermanentError(f"{path} exists but holds no record of {_describe(body)}: not overwritten")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump_object(body), encoding="utf-8")


def _describe(body: dict[str, Any]) -> str:
    return (
        f"{body.get('kind')} {get_path(body, 'metadata', 'namespace')}/{get_path(body, 'metadata', 'name')}"
    )


def _metadata_map(body: dict[str, Any], field: str) -> dict[str, Any]:
    metadata = body.setdefault("metadata", {})
    if not isinstance(metadata.get(field), dict):
        metadata[field] = {}
    value: dict[str, Any] = metadata[field]
    return value


def _drop_empty_metadata_map(body: dict[str, Any], field: str) -> None:
    if not body["metadata"].get(field):
        body["metadata"].pop(field, None)


# --- subscribe and unsubscribe -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a subscribe request records."""

    namespace: str
    application: str  # the CAPApplication's name
    tenant_id: str
    sub_domain: str
    subscription_guid: str
    global_account_id: str
    subscription_context_secret: str  # name of the cluster Secret holding the payload (never the payload)


def _tenant_application(index: SourceIndex, namespace: str, application: str) -> ApplicationRecord:
    app = index.application(namespace, application)
    if app is None:
        raise PermanentError(f"no CAPApplication {namespace}/{application} in the source repository")
    if app.services_only:
        raise PermanentError(f"CAPApplication {namespace}/{application} is services-only: it has no tenants")
    return app


def _check_subscription(subscription: Subscription, app: ApplicationRecord) -> None:
    """Values that would make a record the render refuses, or a label Kubernetes refuses."""
    if subscription.subscription_guid and not _LABEL_VALUE.match(subscription.subscription_guid):
        raise PermanentError(
            f"subscription GUID {subscription.subscription_guid!r} is not a valid label value"
        )
    secret = subscription.subscription_context_secret
    if secret and not _DNS_SUBDOMAIN.match(secret):
        raise PermanentError(f"subscription context Secret name {secret!r} is not a valid object name")
    if (
        subscription.tenant_id == app.provider_tenant_id
        and subscription.sub_domain != app.provider_sub_domain
    ):
        raise PermanentError(
            f"tenant {subscription.tenant_id} is CAPApplication {app.namespace}/{app.name}'s provider, "
            f"whose subdomain is {app.provider_sub_domain}, not {subscription.sub_domain}"
        )


def _check_subdomain_free(subscription: Subscription, app: ApplicationRecord, index: SourceIndex) -> None:
    """A subdomain is one host per domain, so one tenant of the application: a second would make
    the render refuse the whole application, every other tenant with it."""
    wanted = subscription.sub_domain
    if subscription.tenant_id != app.provider_tenant_id and wanted == app.provider_sub_domain:
        raise PermanentError(f"subdomain {wanted} is CAPApplication {app.namespace}/{app.name}'s provider's")
    for other in index.tenants_of(app.namespace, app.name):
        if other.sub_domain == wanted and other.tenant_id != subscription.tenant_id:
            raise PermanentError(f"subdomain {wanted} is taken by CAPTenant {other.namespace}/{other.name}")


def _apply_subscription(body: dict[str, Any], subscription: Subscription) -> None:
    """The fields a subscribe owns; a re-subscribe also calls off a pending deprovisioning mark."""
    body["spec"]["subDomain"] = subscription.sub_domain
    labels = _metadata_map(body, "labels")
    if subscription.subscription_guid:
        labels[SUBSCRIPTION_GUID] = subscription.subscription_guid
    annotations = _metadata_map(body, "annotations")
    if subscription.subscription_context_secret:
        annotations[SUBSCRIPTION_CONTEXT_ANNOTATION] = subscription.subscription_context_secret
    if subscription.global_account_id:
        annotations[GLOBAL_ACCOUNT_ANNOTATION] = subscription.global_account_id
    annotations.pop(DEPROVISION_ANNOTATION, None)
    _drop_empty_metadata_map(body, "labels")
    _drop_empty_metadata_map(body, "annotations")


def _new_record(
    namespace: str, name: str, application: str, tenant_id: str, sub_domain: str
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": CAP_TENANT[1],
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"capApplicationInstance": application, "subDomain": sub_domain, "tenantId": tenant_id},
    }


def _create_record(tree: Path, index: SourceIndex, app: ApplicationRecord, body: dict[str, Any]) -> Path:
    """Write a new record of `app`'s tenant at its conventional place; refuse a taken name."""
    name = body["metadata"]["name"]
    taken = index.tenant_named(app.namespace, name)
    if taken is not None:
        raise PermanentError(
            f"CAPTenant {app.namespace}/{name} already exists for tenant {taken.tenant_id} ({taken.path})"
        )
    path = record_path(app, name)
    _write_new_record(tree, path, _checked(body, _describe(body)))
    return path


@dataclass(frozen=True, slots=True)
class _Subscribe:
    subscription: Subscription

    def __call__(self, tree: Path) -> str | None:
        s = self.subscription
        index = SourceIndex.of_tree(tree)
        app = _tenant_application(index, s.namespace, s.application)
        _check_subscription(s, app)
        _check_subdomain_free(s, app, index)
        record = index.tenant(s.namespace, s.application, s.tenant_id)
        if record is None:
            provider = s.tenant_id == app.provider_tenant_id
            name = app.provider_tenant_name if provider else consumer_tenant_name(app.name, s.tenant_id)
            body = _new_record(s.namespace, name, app.name, s.tenant_id, s.sub_domain)
            _apply_subscription(body, s)
            _create_record(tree, index, app, body)
            return (
                f"CAPTenant {s.namespace}/{name}: tenant {s.tenant_id} subscribed (subdomain {s.sub_domain})"
            )
        ref = _DocumentRef.of_tenant(record)
        if not _edit_document(tree, ref, lambda body: _apply_subscription(body, s)):
            return None
        again = " again" if record.marked_for_deprovisioning else ""
        return f"{ref}: tenant {s.tenant_id} subscribed{again} (subdomain {s.sub_domain})"


def subscribe_tenant(subscription: Subscription) -> TreeChange:
    """Record a subscription: a new record named `consumer_tenant_name` (`<ca>-provider` for the
    application's provider tenant), or the existing record of the tenant updated (subdomain,
    subscription GUID label, subscription context and global account annotations; a deprovisioning
    mark is cleared: a re-subscribe). An existing record's status is kept."""
    return _Subscribe(subscription)


def _mark_for_deprovisioning(body: dict[str, Any]) -> None:
    _metadata_map(body, "annotations")[DEPROVISION_ANNOTATION] = "true"


@dataclass(frozen=True, slots=True)
class _Unsubscribe:
    namespace: str
    application: str
    tenant_id: str

    def __call__(self, tree: Path) -> str | None:
        record = SourceIndex.of_tree(tree).tenant(self.namespace, self.application, self.tenant_id)
        if record is None:
            return None
        ref = _DocumentRef.of_tenant(record)
        if not _edit_document(tree, ref, _mark_for_deprovisioning):
            return None
        return f"{ref}: tenant {self.tenant_id} unsubscribed, to be deprovisioned"


def unsubscribe_tenant(namespace: str, application: str, tenant_id: str) -> TreeChange:
    """Mark the tenant's record for deprovisioning (`btp-gitops.io/deprovision: "true"`). None when
    there is no record (the caller answers 404; look it up with `SourceIndex.tenant` first to tell
    that from an unsubscribe already recorded) or it is marked already."""
    return _Unsubscribe(namespace, application, tenant_id)


# --- what the controller records -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OperationOutcome:
    operation: TenantOperation
    version_instance: str  # the CAPApplicationVersion the operation ran on
    succeeded: bool


_FAILURE_STATES = {
    TenantOperation.PROVISIONING: TenantState.PROVISIONING_ERROR,
    TenantOperation.UPGRADE: TenantState.UPGRADE_ERROR,
    # A failed deprovisioning is retried, never called off: Deleting holds on even if a
    # re-subscribe clears the mark (the render deprovisions a tenant in state Deleting).
    TenantOperation.DEPROVISIONING: TenantState.DELETING,
}


def _completed(status: dict[str, Any], outcome: OperationOutcome) -> bool:
    last = status.get("lastCompletedOperation")
    return (
        isinstance(last, dict)
        and last.get("operation") == outcome.operation.value
        and last.get("capApplicationVersionInstance") == outcome.version_instance
    )


def _record_failure(status: dict[str, Any], outcome: OperationOutcome) -> None:
    if _completed(status, outcome):
        return  # a late report of a failed attempt of an operation that has completed since
    if status.get("state") == TenantState.DELETING and outcome.operation != TenantOperation.DEPROVISIONING:
        return  # deletion is never called off
    status["state"] = _FAILURE_STATES[outcome.operation].value


def _record_success(status: dict[str, Any], outcome: OperationOutcome) -> None:
    completed = {
        "operation": outcome.operation.value,
        "capApplicationVersionInstance": outcome.version_instance,
    }
    status["lastCompletedOperation"] = completed
    if outcome.operation == TenantOperation.DEPROVISIONING:
        # The tenant is gone from CAP's point of view; a Deleting state left behind would turn a
        # later re-subscribe into another deprovisioning.
        status.pop("state", None)
        return
    current = str(status.get("currentCAPApplicationVersionInstance") or "")
    previous = [
        str(v) for v in status.get("previousCAPApplicationVersions") or [] if v != outcome.version_instance
    ]
    if current and current != outcome.version_instance and current not in previous:
        previous.append(current)  # oldest first: the version it ran on until now goes last
    if previous or "previousCAPApplicationVersions" in status:
        status["previousCAPApplicationVersions"] = previous
    status["currentCAPApplicationVersionInstance"] = outcome.version_instance
    if status.get("state") != TenantState.DELETING:
        status["state"] = TenantState.READY.value


def _apply_outcome(body: dict[str, Any], outcome: OperationOutcome) -> None:
    if not isinstance(body.get("status"), dict):
        body["status"] = {}
    if outcome.succeeded:
        _record_success(body["status"], outcome)
    else:
        _record_failure(body["status"], outcome)
    if not body["status"]:
        del body["status"]


def _provider_application(index: SourceIndex, namespace: str, name: str) -> ApplicationRecord | None:
    """The application whose provider tenant `name` is, when it has no record yet."""
    if not name.endswith(PROVIDER_SUFFIX):
        return None
    app = index.application(namespace, name.removesuffix(PROVIDER_SUFFIX))
    return app if app is not None and not app.services_only else None


@dataclass(frozen=True, slots=True)
class _RecordOutcome:
    namespace: str
    name: str
    outcome: OperationOutcome

    def __call__(self, tree: Path) -> str | None:
        index = SourceIndex.of_tree(tree)
        record = index.tenant_named(self.namespace, self.name)
        what = self._summary()
        if record is not None:
            changed = _edit_document(
                tree, _DocumentRef.of_tenant(record), lambda body: _apply_outcome(body, self.outcome)
            )
            return what if changed else None
        app = _provider_application(index, self.namespace, self.name)
        if app is None:
            raise PermanentError(
                f"no record of CAPTenant {self.namespace}/{self.name} in the source repository"
            )
        # The provider tenant is derived from its application until its status is first recorded.
        body = _new_record(
            self.namespace, self.name, app.name, app.provider_tenant_id, app.provider_sub_domain
        )
        _apply_outcome(body, self.outcome)
        _create_record(tree, index, app, body)
        return what

    def _summary(self) -> str:
        result = "succeeded" if self.outcome.succeeded else "failed"
        return (
            f"CAPTenant {self.namespace}/{self.name}: {self.outcome.operation.value} on "
            f"{self.outcome.version_instance} {result}"
        )


def record_operation_outcome(namespace: str, name: str, outcome: OperationOutcome) -> TreeChange:
    """Record how the tenant's operation ended, as README "CAP tenants" reads the status.

    Success of a provisioning or upgrade: state Ready, the version becomes current (the one before
    goes to previousCAPApplicationVersions, oldest first, no duplicates), lastCompletedOperation
    says so. Success of a deprovisioning: lastCompletedOperation says so (the record then renders
    nothing) and the state is dropped. Failure: state ProvisioningError / UpgradeError / Deleting,
    nothing else; a failure reported after the same operation completed changes nothing, and a
    tenant in state Deleting stays there. The provider tenant `<ca>-provider` gets its record
    written here when it has none yet. Other missing records: PermanentError."""
    return _RecordOutcome(namespace, name, outcome)


# --- removing records and versions ------------------------------------------------------------------


def _deprovisioned(record: TenantRecord) -> bool:
    done = record.status.last_completed
    return (
        record.marked_for_deprovisioning
        and done is not None
        and done.operation == TenantOperation.DEPROVISIONING
        and record.status.state != TenantState.DELETING
    )


@dataclass(frozen=True, slots=True)
class _RemoveTenant:
    namespace: str
    name: str
    only_if_deprovisioned: bool

    def __call__(self, tree: Path) -> str | None:
        record = SourceIndex.of_tree(tree).tenant_named(self.namespace, self.name)
        if record is None or (self.only_if_deprovisioned and not _deprovisioned(record)):
            return None
        _remove_document(tree, _DocumentRef.of_tenant(record))
        return f"CAPTenant {self.namespace}/{self.name}: record removed (tenant {record.tenant_id})"


def remove_tenant_record(namespace: str, name: str, *, only_if_deprovisioned: bool = False) -> TreeChange:
    """Delete the tenant's record: its file when that holds only the record, else the record's
    document. None when there is no record. With `only_if_deprovisioned`, only a record still
    marked for deprovisioning whose deprovisioning completed goes: applied again after the remote
    moved on, the removal must not take a record that a re-subscribe has just revived."""
    return _RemoveTenant(namespace, name, only_if_deprovisioned)


@dataclass(frozen=True, slots=True)
class _RemoveVersion:
    namespace: str
    name: str

    def __call__(self, tree: Path) -> str | None:
        version = SourceIndex.of_tree(tree).version_named(self.namespace, self.name)
        if version is None:
            return None
        _remove_document(tree, _DocumentRef(version.path, CAP_APPLICATION_VERSION, self.namespace, self.name))
        return f"CAPApplicationVersion {self.namespace}/{self.name}: removed (version {version.version})"


def remove_version(namespace: str, name: str) -> TreeChange:
    """Delete the CAPApplicationVersion's document (its file when that holds only it), for version
    cleanup. None when it is not in the tree."""
    return _RemoveVersion(namespace, name)
