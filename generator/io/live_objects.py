"""Reading the live objects `btp-gitops import` (and the cutover plan) start from.

Two places: a cluster, through a kubeconfig and context, and a directory of `kubectl get -o yaml`
dumps for users who cannot give btp-gitops cluster access. Both give `LiveObject`s of the kinds
asked for (by default `migration.kinds.IMPORTED_KINDS`; the cutover plan asks for others), each
with its origin, and a `Skipped` for every object met and not read (another kind, a Secret other
than BTP Manager's): nothing is passed over silently.

A cluster is read with paginated lists (`limit`/`continue`), kind by kind, for the namespaces
given or all; a kind whose CRD is not installed (404 on the list) has no objects. The one Secret
is read by name (`kyma-system/sap-btp-manager`); Secrets are never listed. What the cluster
answers is untrusted like any input: the number of objects and the bytes read are bounded
(`ReadLimits`), and a failure is a `ClusterUnreachable` naming the cluster and the kind.

A dump directory is walked in sorted order, dot-directories (`.git`) passed over; a symbolic link anywhere in
it is refused (a dump is read, never what a link points at), each file is read through
`io.input_files` (regular files only, size-limited, UTF-8), and a file's objects are single
documents, several documents, or `kind: List` (or `<Kind>List`) with `items`. The origin of an
object is `<file>: document N`, of a list item `<file>: document N, item M`.

The Kubernetes client belongs to the `controller` extra and is imported only to read a cluster
(as io.cluster does); its absence is a usage error naming the extra.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.errors import ClusterUnreachable, InputError, Problem, UsageError
from btp_gitops.generator.core.objects import describe
from btp_gitops.generator.core.yamlio import SourceSyntaxProblem, load_source_documents
from btp_gitops.generator.io.cluster import require_kubernetes_client
from btp_gitops.generator.io.containment import display_path
from btp_gitops.generator.io.input_files import UnreadableInput, read_input_text
from btp_gitops.generator.migration.kinds import (
    BTP_MANAGER_SECRET,
    IMPORTED_KINDS,
    NAMED_OBJECTS,
    LiveKind,
    is_named_object,
)
from btp_gitops.generator.migration.model import LiveObject, Skipped

CLIENT_MISSING = "import needs the kubernetes client to read a cluster: pip install 'btp-gitops[controller]'"
DUMP_SUFFIXES = (".yaml", ".yml", ".json")
REQUEST_TIMEOUT = 60  # seconds per page: a server that stops answering is an error, not a hang


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """How much one import reads at most: objects, and bytes (of answers or of dump files)."""

    max_objects: int = 200_000
    max_bytes: int = 1 << 30
    page_size: int = 500  # objects per list request of a cluster


@dataclass(slots=True)
class LiveRead:
    """What was read: the objects of the imported kinds, and what was met but not read, and why."""

    kinds: tuple[LiveKind, ...] = IMPORTED_KINDS  # what is read; anything else met is passed over
    objects: list[LiveObject] = field(default_factory=list)
    passed_over: list[Skipped] = field(default_factory=list)
    unnamed: list[Skipped] = field(default_factory=list)  # of an imported kind, but no name: skipped
    sources: str = ""  # the cluster or directory, for the report
    _bytes: int = 0

    def count_bytes(self, size: int, limits: ReadLimits, where: str) -> None:
        self._bytes += size
        if self._bytes > limits.max_bytes:
            raise InputError(
                f"{where}: more than {limits.max_bytes} bytes to read; import reads at most that much "
                "(import fewer namespaces at a time)"
            )

    def budget(self, limits: ReadLimits) -> int:
        """How many bytes may still be read."""
        return max(limits.max_bytes - self._bytes, 0)

    def add(self, live: LiveObject, limits: ReadLimits, where: str) -> None:
        self.objects.append(live)
        if len(self.objects) > limits.max_objects:
            raise InputError(
                f"{where}: more than {limits.max_objects} objects to import; import reads at most that many "
                "(import fewer namespaces at a time)"
            )


def _metadata_of(body: dict[str, Any]) -> tuple[str, str]:
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        return "", ""
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def sort_object(body: dict[str, Any], origin: str, read: LiveRead, limits: ReadLimits, where: str) -> None:
    """Keep an object of an imported kind (or BTP Manager's Secret); note anything else."""
    api_version, kind = str(body.get("apiVersion", "")), str(body.get("kind", ""))
    namespace, name = _metadata_of(body)
    wanted = any(entry.api_version == api_version and entry.kind == kind for entry in read.kinds)
    if wanted or is_named_object(api_version, kind, namespace, name):
        if not name:
            read.unnamed.append(Skipped(describe(body), origin, "the object has no metadata.name"))
            return
        read.add(LiveObject(body, origin), limits, where)
        return
    if kind == "Secret":
        reason = f"a Secret: import reads no Secret other than {BTP_MANAGER_SECRET.describe()}"
    else:
        reason = f"{api_version}/{kind} is not a kind btp-gitops import reads"
    read.passed_over.append(Skipped(describe(body), origin, reason))


# --- dump directories --------------------------------------------------------------------------------


def _dump_files(directory: Path) -> Iterator[Path]:
    """The dump files under `directory`, sorted; a symbolic link anywhere is refused."""
    for parent, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        for name in sorted([*dirs, *files]):
            entry = Path(parent) / name
            if entry.is_symlink():
                raise InputError(
                    "a symbolic link in the dump directory",
                    [Problem(display_path(entry), f"a link to {os.readlink(entry)}: import reads no link")],
                )
        for name in sorted(files):
            if name.endswith(DUMP_SUFFIXES):
                yield Path(parent) / name


def _items_of(body: dict[str, Any]) -> list[Any] | None:
    """The items of a `kind: List` (or `<Kind>List`) document, else None."""
    kind = str(body.get("kind", ""))
    items = body.get("items")
    if kind.endswith("List") and isinstance(items, list):
        return items
    return None


def _read_dump_file(path: Path, read: LiveRead, limits: ReadLimits, problems: list[Problem]) -> None:
    shown = display_path(path)
    try:
        text = read_input_text(path)
    except UnreadableInput as error:
        problems.append(Problem(shown, error.reason))
        return
    read.count_bytes(len(text), limits, shown)
    try:
        for index, body in load_source_documents(text, shown):
            if body is None:
                continue
            if not isinstance(body, dict) or not isinstance(body.get("kind"), str):
                problems.append(Problem(shown, "not a Kubernetes object (no kind)", index))
                continue
            items = _items_of(body)
            if items is None:
                sort_object(body, f"{shown}: document {index}", read, limits, shown)
                continue
            for number, item in enumerate(items, start=1):
                origin = f"{shown}: document {index}, item {number}"
                if not isinstance(item, dict) or not isinstance(item.get("kind"), str):
                    problems.append(
                        Problem(shown, f"item {number} is not a Kubernetes object (no kind)", index)
                    )
                    continue
                sort_object(item, origin, read, limits, shown)
    except SourceSyntaxProblem as error:
        problems.append(error.problem)


def read_dump_directory(
    directory: Path, limits: ReadLimits = ReadLimits(), kinds: Iterable[LiveKind] = IMPORTED_KINDS
) -> LiveRead:
    """Every object of `kinds` (and BTP Manager's Secret) in the dump files under `directory`.

    Raises UsageError when `directory` is no directory (or a link), InputError listing every file
    that cannot be read or parsed (nothing is imported from a dump that is partly unreadable).
    """
    try:
        mode = directory.lstat().st_mode
    except OSError as error:
        raise UsageError(f"--from-dir {directory}: {error.strerror or error}") from error
    if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
        raise UsageError(f"--from-dir {directory}: not a directory (a symbolic link is not followed)")
    read = LiveRead(kinds=tuple(kinds), sources=display_path(directory))
    problems: list[Problem] = []
    for path in _dump_files(directory):
        _read_dump_file(path, read, limits, problems)
    if problems:
        raise InputError(f"cannot read the dumps in {display_path(directory)}", problems)
    return read


# --- clusters ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterSource:
    """A cluster to read, through a kubeconfig (default: $KUBECONFIG or ~/.kube/config)."""

    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: all

    def where(self) -> str:
        shown = f"cluster (kubeconfig {self.kubeconfig or 'default'}"
        return shown + (f", context {self.context})" if self.context else ")")


class _Forbidden(Exception):
    """The API server refused to show an object these credentials may not read (403)."""


class _ClusterSession:
    """One API client for the whole read; raw JSON answers, so that their size is known."""

    def __init__(self, source: ClusterSource) -> None:
        require_kubernetes_client(CLIENT_MISSING)
        from kubernetes import config  # noqa: PLC0415
        from kubernetes.config.config_exception import ConfigException  # noqa: PLC0415

        self.source = source
        try:
            self.api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=source.kubeconfig, context=source.context
            )
            # The origin written above each imported document names the context, not the
            # kubeconfig's path: that is the reader's machine, not the cluster.
            context = source.context
            if not context:
                listed = config.list_kube_config_contexts(config_file=source.kubeconfig)  # type: ignore[no-untyped-call]
                context = str(listed[1]["name"])
        except (ConfigException, OSError, LookupError, TypeError) as error:
            raise ClusterUnreachable(
                "cannot load the kubeconfig to import from", [Problem(source.where(), str(error))]
            ) from error
        self.origin = f"cluster (context {context})"

    def close(self) -> None:
        self.api_client.close()

    def get(
        self, path: str, what: str, query: list[tuple[str, Any]], budget: int, forbidden_ok: bool = False
    ) -> tuple[dict[str, Any], int] | None:
        """The JSON answer to GET `path` and its size (at most `budget` bytes are read), or None for
        404; `_Forbidden` for 403 when `forbidden_ok`; ClusterUnreachable otherwise."""
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        where = self.source.where()
        try:
            method, url, headers, _, _ = self.api_client.param_serialize(
                "GET",
                path,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = self.api_client.rest_client.request(
                method, url, headers=headers, _request_timeout=REQUEST_TIMEOUT
            ).response
            try:
                if response.status == 404:
                    return None
                if response.status == 403 and forbidden_ok:
                    raise _Forbidden(what)
                if response.status >= 400:
                    raise ClusterUnreachable(
                        f"cannot read {what}",
                        [Problem(where, f"the API server answered {response.status} {response.reason}")],
                    )
                data: bytes = response.read(budget + 1)
            finally:
                response.release_conn()
        except (ApiException, HTTPError, OSError) as error:
            raise ClusterUnreachable(f"cannot read {what}", [Problem(where, type(error).__name__)]) from error
        if len(data) > budget:
            return {}, len(data)  # over the budget: the caller's count refuses it
        try:
            answer = json.loads(data)
        except ValueError as error:
            raise ClusterUnreachable(
                f"cannot read {what}", [Problem(where, "the answer is not JSON")]
            ) from error
        if not isinstance(answer, dict):
            raise ClusterUnreachable(f"cannot read {what}", [Problem(where, "the answer is not an object")])
        return answer, len(data)


def _list_paths(kind: LiveKind, namespaces: tuple[str, ...]) -> Iterable[tuple[str, str]]:
    base = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    if not kind.namespaced or not namespaces:
        yield f"{base}/{kind.plural}", f"{kind.kind} objects"
        return
    for namespace in namespaces:
        yield f"{base}/namespaces/{namespace}/{kind.plural}", f"{kind.kind} objects in namespace {namespace}"


def _read_kind(session: _ClusterSession, kind: LiveKind, read: LiveRead, limits: ReadLimits) -> None:
    where = session.source.where()
    for path, what in _list_paths(kind, session.source.namespaces):
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", limits.page_size)]
            if token:
                query.append(("continue", token))
            answered = session.get(path, what, query, read.budget(limits))
            if answered is None:
                return  # the CRD is not installed: none of that kind
            answer, size = answered
            read.count_bytes(size, limits, where)
            items = answer.get("items")
            if not isinstance(items, list):
                raise ClusterUnreachable(f"cannot read {what}", [Problem(where, "the list has no items")])
            for item in items:
                if isinstance(item, dict):
                    # A list's items carry no apiVersion and kind of their own in every server version.
                    item.setdefault("apiVersion", kind.api_version)
                    item.setdefault("kind", kind.kind)
                    sort_object(item, session.origin, read, limits, where)
            metadata = answer.get("metadata")
            token = str(metadata.get("continue") or "") if isinstance(metadata, dict) else ""
            if not token:
                break


def _read_named_objects(session: _ClusterSession, read: LiveRead, limits: ReadLimits) -> None:
    """The objects read by name (migration.kinds.NAMED_OBJECTS), each when its namespace is read
    (a cluster-wide one always): a 404 is none; a 403 for an optional one is noted as passed over."""
    namespaces = session.source.namespaces
    where = session.source.where()
    for named in NAMED_OBJECTS:
        if named.namespace and namespaces and named.namespace not in namespaces:
            continue
        try:
            answered = session.get(named.path(), named.describe(), [], read.budget(limits), named.optional)
        except _Forbidden:
            read.passed_over.append(
                Skipped(
                    named.describe(),
                    session.origin,
                    "not readable with these credentials (403): what it would tell is not known",
                )
            )
            continue
        if answered is None:
            continue
        body, size = answered
        read.count_bytes(size, limits, where)
        body.setdefault("apiVersion", named.api_version)
        body.setdefault("kind", named.kind)
        sort_object(body, session.origin, read, limits, where)


def read_cluster(
    source: ClusterSource,
    limits: ReadLimits = ReadLimits(),
    kinds: Iterable[LiveKind] = IMPORTED_KINDS,
    *,
    named_objects: bool = True,
) -> LiveRead:
    """Every object of `kinds` in the cluster (the namespaces given, or all), and BTP Manager's
    Secret and ConfigMap (read by name) when asked for and their namespace is read."""
    session = _ClusterSession(source)
    read = LiveRead(kinds=tuple(kinds), sources=source.where())
    try:
        for kind in read.kinds:
            _read_kind(session, kind, read, limits)
        if named_objects:
            _read_named_objects(session, read, limits)
    finally:
        session.close()
    return read
