"""Reading the live objects a cutover plan compares a render with: `diff --against-cluster`.

Only GETs, never a write: the discovery document of each group-version (which kinds are served,
under which plural, namespaced or not), the live object of every rendered identity, and lists of
the kinds operators create in the namespaces the render writes to. Every answer is input: each
request is bounded in time (`timeout`), each answer in bytes (`max_answer_bytes`, read in chunks
and dropped past the bound), the run in requests (`max_requests`) and listed objects
(`max_listed`). Any failure is a `ClusterUnreachable` naming the cluster and the object asked for.

The Kubernetes client belongs to the `controller` extra (`pip install 'btp-gitops[controller]'`),
imported here when a command reads the cluster, as io.cluster does for post-render.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from btp_gitops.generator.core.errors import ClusterUnreachable, Problem
from btp_gitops.generator.core.objects import ObjectKey
from btp_gitops.generator.io.cluster import require_kubernetes_client
from btp_gitops.generator.migration.model import LiveObject

if TYPE_CHECKING:
    from kubernetes import client

CLIENT_MISSING = "--against-cluster needs the kubernetes client: pip install 'btp-gitops[controller]'"
_CHUNK = 64 * 1024
_PAGE = 250  # objects per list request; `continue` fetches the rest


@dataclass(frozen=True, slots=True)
class LookupLimits:
    timeout: float = 15.0  # seconds per request (connect and read)
    max_answer_bytes: int = 16 * 1024 * 1024  # one answer: an object or a page of a list
    max_requests: int = 20_000
    max_listed: int = 20_000  # objects in all lists together


@dataclass(frozen=True, slots=True)
class ServedKind:
    plural: str
    namespaced: bool


@dataclass
class LiveLookup:
    """GETs against the cluster of a kubeconfig (default: $KUBECONFIG or ~/.kube/config)."""

    kubeconfig: str | None = None
    context: str | None = None
    limits: LookupLimits = LookupLimits()
    _api: client.ApiClient | None = field(default=None, init=False, repr=False)
    _served: dict[str, dict[str, ServedKind] | None] = field(default_factory=dict, init=False, repr=False)
    _requests: int = field(default=0, init=False, repr=False)
    _listed: int = field(default=0, init=False, repr=False)

    def where(self) -> str:
        return f"cluster (kubeconfig {self.kubeconfig or 'default'}" + (
            f", context {self.context})" if self.context else ")"
        )

    def __enter__(self) -> LiveLookup:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._api is not None:
            self._api.close()  # type: ignore[no-untyped-call]
            self._api = None

    def _client(self) -> client.ApiClient:
        if self._api is None:
            require_kubernetes_client(CLIENT_MISSING)
            from kubernetes import config  # noqa: PLC0415
            from kubernetes.config.config_exception import ConfigException  # noqa: PLC0415

            try:
                self._api = config.new_client_from_config(  # type: ignore[no-untyped-call]
                    config_file=self.kubeconfig, context=self.context
                )
            except (ConfigException, OSError, ValueError, TypeError) as error:
                raise ClusterUnreachable(
                    "cannot load the kubeconfig for --against-cluster", [Problem(self.where(), str(error))]
                ) from error
        return self._api

    def _get_json(self, path: str, what: str, query: list[tuple[str, str]] | None = None) -> Any | None:
        """The answer to one GET as JSON; None for 404. Bounded in time and bytes."""
        self._requests += 1
        if self._requests > self.limits.max_requests:
            raise ClusterUnreachable(
                f"cannot read {what}",
                [Problem(self.where(), f"more than {self.limits.max_requests} requests")],
            )
        api = self._client()
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        try:
            method, url, headers, _, _ = api.param_serialize(
                "GET",
                path,
                query_params=query or [],
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = api.rest_client.request(  # type: ignore[no-untyped-call]
                method, url, headers=headers, _request_timeout=self.limits.timeout
            ).response
            try:
                status = response.status
                data = b"" if status == 404 else self._bounded(response, what)
            finally:
                response.release_conn()
        except (ApiException, HTTPError, OSError) as error:
            raise ClusterUnreachable(
                f"cannot read {what}", [Problem(self.where(), _describe(error))]
            ) from error
        if status == 404:
            return None
        if status >= 400:
            raise ClusterUnreachable(
                f"cannot read {what}",
                [Problem(self.where(), f"the API server answered {status} {_reason(data)}")],
            )
        try:
            return json.loads(data)
        except ValueError as error:
            raise ClusterUnreachable(
                f"cannot read {what}", [Problem(self.where(), "the answer is not JSON")]
            ) from error

    def _bounded(self, response: Any, what: str) -> bytes:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.stream(_CHUNK):
            size += len(chunk)
            if size > self.limits.max_answer_bytes:
                raise ClusterUnreachable(
                    f"cannot read {what}",
                    [
                        Problem(
                            self.where(),
                            f"the answer is over {self.limits.max_answer_bytes:,} bytes: refused",
                        )
                    ],
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def served(self, api_version: str, kind: str) -> ServedKind | None:
        """How the API server serves a kind (its discovery document), or None when it does not."""
        if api_version not in self._served:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            found = self._get_json(path, f"the discovery document of {api_version}")
            self._served[api_version] = _served_kinds(found) if isinstance(found, dict) else None
        kinds = self._served[api_version]
        return kinds.get(kind) if kinds else None

    def get(self, api_version: str, key: ObjectKey) -> LiveObject | None:
        """The live object of one rendered identity; None when it or its kind does not exist."""
        served = self.served(api_version, key.kind)
        if served is None or (served.namespaced and not key.namespace):
            return None
        body = self._get_json(_path(api_version, served, key.namespace, key.name), key.describe())
        if body is None:
            return None
        if not isinstance(body, dict):
            raise ClusterUnreachable(
                f"cannot read {key.describe()}", [Problem(self.where(), "the answer is not an object")]
            )
        body.setdefault("apiVersion", api_version)
        body.setdefault("kind", key.kind)
        return LiveObject(body, self.where())

    def list(
        self, api_version: str, kind: str, namespace: str = "", label_selector: str = ""
    ) -> list[LiveObject]:
        """Every object of a kind in a namespace (or cluster-wide), page by page; [] when not served."""
        served = self.served(api_version, kind)
        if served is None or (served.namespaced and not namespace):
            return []
        what = f"{kind} objects" + (f" in namespace {namespace}" if served.namespaced else "")
        path = _path(api_version, served, namespace if served.namespaced else "", "")
        found: list[LiveObject] = []
        token = ""
        while True:
            query = [("limit", str(_PAGE))]
            if token:
                query.append(("continue", token))
            if label_selector:
                query.append(("labelSelector", label_selector))
            page = self._get_json(path, what, query)
            if not isinstance(page, dict):
                return found
            items = page.get("items")
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict):
                    item.setdefault("apiVersion", api_version)
                    item.setdefault("kind", kind)
                    found.append(LiveObject(item, self.where()))
            self._listed += len(items) if isinstance(items, list) else 0
            if self._listed > self.limits.max_listed:
                raise ClusterUnreachable(
                    f"cannot read {what}",
                    [Problem(self.where(), f"more than {self.limits.max_listed} objects listed")],
                )
            metadata = page.get("metadata")
            token = str(metadata.get("continue") or "") if isinstance(metadata, dict) else ""
            if not token:
                return found


def _served_kinds(document: dict[str, Any]) -> dict[str, ServedKind]:
    kinds = {}
    for resource in document.get("resources") or []:
        if not isinstance(resource, dict):
            continue
        name, kind = resource.get("name"), resource.get("kind")
        if isinstance(name, str) and isinstance(kind, str) and "/" not in name:  # not a subresource
            kinds[kind] = ServedKind(name, bool(resource.get("namespaced")))
    return kinds


def _path(api_version: str, served: ServedKind, namespace: str, name: str) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if served.namespaced else ""
    return f"{base}{scope}/{served.plural}" + (f"/{name}" if name else "")


def _describe(error: BaseException) -> str:
    status = getattr(error, "status", None)
    if status:
        return f"the API server answered {status} {getattr(error, 'reason', '')}".strip()
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _reason(data: bytes) -> str:
    try:
        answer = json.loads(data)
    except ValueError:
        return ""
    if isinstance(answer, dict):
        return f"{answer.get('reason', '')}: {answer.get('message', '')}".strip(": ")
    return ""
