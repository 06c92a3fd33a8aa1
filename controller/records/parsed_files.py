"""The source tree's YAML files, each parsed once: kept between reads, parsed again only on change.

Every YAML file is read as a render reads it (records.source_files: strict, never through a
symbolic link, nor a file that is not regular or too large), and its CAPApplication,
CAPApplicationVersion and CAPTenant documents are checked against their schemas and made into
records (records.tree_records). Parsed files are kept between calls and parsed again only when
their size, times or inode changed (or their bytes, for a file written within the file system's
timestamp granularity of being read, as Git does for its index): every change of a batch indexes
the tree anew, and that must cost a walk of the tree, not a parse of it. What the writer itself
wrote (records.editor) is kept as written, its signature trusted until Git rewrites the file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.controller.records import source_files as files
from btp_gitops.controller.records.read_kinds import READ_KINDS as _READ_KINDS
from btp_gitops.controller.records.tree_records import (
    ApplicationRecord,
    TenantRecord,
    VersionRecord,
    application_record,
    tenant_record,
    version_record,
)
from btp_gitops.controller.records.unreadable import unreadable_source
from btp_gitops.generator.core import SchemaRegistry, SourceDocument, problems_in
from btp_gitops.generator.domains.cap import CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT
from btp_gitops.generator.io import load_schema_registry

_RACY_WINDOW_NS = 2_000_000_000  # wider than any file system's timestamp granularity we meet


@functools.cache
def source_schemas() -> SchemaRegistry:
    """The schemas the index checks documents against, and the editor every document it writes."""
    return load_schema_registry()


@dataclass(frozen=True, slots=True)
class FileContents:
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


class ParsedFiles:
    """Per tree root, the contents of each of its YAML files as last read (or written)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_root: dict[Path, dict[str, FileContents]] = {}

    def contents_of(self, root: Path) -> list[FileContents]:
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

    def reread(self, root: Path, relative: Path) -> FileContents | None:
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
    ) -> FileContents | None:
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
            contents = parse_file(
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
        self, root: Path, path: str, cached: FileContents | None, status: os.stat_result
    ) -> FileContents:
        """What the file holds now; `status`: its `lstat`, from the walk."""
        signature = _signature(status)
        if cached is not None and cached.signature == signature and not cached.racy():
            return cached
        checked_at = time.time_ns()
        relative = Path(path).relative_to(root)
        try:
            status, data = files.read_source(root, relative)  # a link, FIFO, device, big file: refused
        except files.RefusedPath as error:
            return FileContents(relative, signature, b"", checked_at, problems=(files.refusal(root, error),))
        signature, digest = _signature(status), hashlib.sha256(data).digest()
        if cached is not None and cached.digest == digest:
            return dataclasses.replace(cached, signature=signature, checked_at_ns=checked_at, own=False)
        return parse_file(root, relative, data, signature, digest, checked_at)


PARSED_FILES = ParsedFiles()


def parse_file(  # noqa: PLR0917 - the file's parts, each passed by whoever read it
    root: Path,
    relative: Path,
    data: bytes,
    signature: tuple[int, int, int, int],
    digest: bytes,
    checked_at: int,
    checked: Sequence[dict[str, Any]] = (),
) -> FileContents:
    """The file's documents, records and problems (`data`: its bytes); a document equal to one of
    the `checked` bodies (checked against its schema by whoever just wrote it) is not checked again."""
    documents, unparsed = files.documents_of(root, relative, data)
    if unparsed:
        return FileContents(relative, signature, digest, checked_at, problems=tuple(unparsed))
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
            applications.append(application_record(document, relative))
        elif kind == CAP_TENANT:
            tenants.append(tenant_record(document, relative))
        elif kind == CAP_APPLICATION_VERSION:  # Domains and ClusterDomains: documents only
            versions.append(version_record(document, relative))
    return FileContents(
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
