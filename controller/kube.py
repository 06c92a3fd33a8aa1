"""The one layer that talks to the Kubernetes API: plain JSON objects in and out, for any kind.

Objects are the API's own JSON (dicts), as the generator's objects are, so the controller and the
generator share helpers. API errors become the controller's tree here and nowhere else:
404 -> None from `get` (or `NotFound` where absence is an error), 409 -> `Conflict`, 5xx/429 and
connection failures -> `KubeUnavailable` (retried), other 4xx -> `KubeRequestRefused`. Messages
carry the verb, the object and the status, never a response body (it may echo a Secret).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError
from urllib3.util.ssl_ import create_urllib3_context, resolve_cert_reqs

from btp_gitops.controller.errors import ConfigurationError, KubeRequestRefused, KubeUnavailable

KubeObject = dict[str, Any]
KubeObjects = list[KubeObject]  # named here: the client's `list` method shadows the builtin in its body

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
FIELD_MANAGER = "btp-gitops-controller"


@dataclass(frozen=True, slots=True)
class Resource:
    """A kind as the API serves it: where its objects live and whether they have a namespace."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base

    def describe(self, namespace: str | None, name: str) -> str:
        return f"{self.kind} {namespace}/{name}" if self.namespaced and namespace else f"{self.kind} {name}"


# Kinds the controller touches, named once.
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SECRET = Resource("", "v1", "secrets", "Secret")
CONFIG_MAP = Resource("", "v1", "configmaps", "ConfigMap")
EVENT = Resource("", "v1", "events", "Event")
DEPLOYMENT = Resource("apps", "v1", "deployments", "Deployment")
JOB = Resource("batch", "v1", "jobs", "Job")
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CRD = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
MUTATING_WEBHOOK = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
)
VALIDATING_WEBHOOK = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)
BTP_OPERATOR = Resource("operator.kyma-project.io", "v1alpha1", "btpoperators", "BtpOperator")
SERVICE_INSTANCE = Resource("services.cloud.sap.com", "v1", "serviceinstances", "ServiceInstance")
SERVICE_BINDING = Resource("services.cloud.sap.com", "v1", "servicebindings", "ServiceBinding")
CAP_APPLICATION = Resource("sme.sap.com", "v1alpha1", "capapplications", "CAPApplication")
CAP_APPLICATION_VERSION = Resource(
    "sme.sap.com", "v1alpha1", "capapplicationversions", "CAPApplicationVersion"
)
CAP_TENANT = Resource("sme.sap.com", "v1alpha1", "captenants", "CAPTenant")
CAP_TENANT_OUTPUT = Resource("sme.sap.com", "v1alpha1", "captenantoutputs", "CAPTenantOutput")


class Conflict(KubeUnavailable):
    """409: the object changed since it was read (or already exists); read again and retry."""

    reason = "Conflict"

    def __init__(self, message: str) -> None:
        super().__init__(message, delay=0.5)


class NotFound(KubeRequestRefused):
    def __init__(self, message: str) -> None:
        super().__init__(message, status=404)


def _translate(error: Exception, what: str) -> Exception:
    if isinstance(error, ApiException):
        status = int(error.status or 0)
        text = f"{what}: the API server answered {status} {error.reason or ''}".rstrip()
        if status == 404:
            return NotFound(text)
        if status == 409:
            return Conflict(text)
        if status == 429 or status >= 500 or status == 0:
            return KubeUnavailable(text)
        return KubeRequestRefused(text, status)
    return KubeUnavailable(f"{what}: {type(error).__name__}")


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """In-cluster credentials when running in a Pod (and no kubeconfig is given), else a kubeconfig."""
    try:
        if kubeconfig is None and context is None:
            try:
                config.load_incluster_config()  # type: ignore[no-untyped-call]
                return client.ApiClient()
            except ConfigException:
                pass
        return config.new_client_from_config(  # type: ignore[no-untyped-call,no-any-return]
            config_file=kubeconfig, context=context
        )
    except (ConfigException, OSError) as error:
        raise ConfigurationError(f"cannot load the kubeconfig: {error}") from error


# The TLS material urllib3 would load into a new SSL context for every connection it opens.
_TLS_FILES = ("ca_certs", "ca_cert_dir", "ca_cert_data", "cert_file", "key_file", "key_password")


def share_tls_context(pool_manager: urllib3.PoolManager) -> None:
    """Give every connection of `pool_manager` one SSL context, loaded once with the CA and the
    client certificate its settings name. Given files, urllib3 makes a context per connection and
    reads the CA bundle and the client key into it each time (tens of milliseconds of CPU under
    load): a burst of callbacks that opens a connection per handler pays that for each. Checks
    stay as they were: the certificate requirement and hostname checks are still applied per
    connection from the same settings, only the loading is shared."""
    settings = pool_manager.connection_pool_kw
    if settings.get("ssl_context") is not None or not any(settings.get(k) for k in _TLS_FILES):
        return  # a context of the caller's own, or nothing to load
    context = create_urllib3_context(cert_reqs=resolve_cert_reqs(settings.get("cert_reqs")))
    if settings.get("ca_certs") or settings.get("ca_cert_dir") or settings.get("ca_cert_data"):
        context.load_verify_locations(
            settings.get("ca_certs"), settings.get("ca_cert_dir"), settings.get("ca_cert_data")
        )
    else:
        context.load_default_certs()
    if settings.get("cert_file"):
        context.load_cert_chain(settings["cert_file"], settings.get("key_file"), settings.get("key_password"))
    for key in _TLS_FILES:
        settings.pop(key, None)
    settings["ssl_context"] = context


class KubeClient:
    """Typed CRUD, list and watch over any `Resource`, with errors mapped once."""

    def __init__(self, api_client: client.ApiClient, request_timeout: float = 30.0) -> None:
        self._api = api_client
        self._timeout = request_timeout
        self._open_watches: set[Any] = set()
        self._watches_lock = threading.Lock()

    def keep_connections(self, count: int) -> None:
        """Keep up to `count` connections to the API server open for reuse (the client's default
        is 5 per CPU). A thread that finds none free opens one of its own, and beyond `count` it
        is closed after its request: under `count` concurrent callers, a TLS handshake per call."""
        configuration = self._api.configuration
        if configuration.connection_pool_maxsize == count:
            return
        configuration.connection_pool_maxsize = count
        previous = self._api.rest_client.pool_manager
        rest_client = rest.RESTClientObject(configuration)
        share_tls_context(rest_client.pool_manager)
        self._api.rest_client = rest_client
        previous.clear()

    def _send(
        self,
        method: str,
        path: str,
        what: str,
        *,
        query: list[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        """The raw response (urllib3, not yet read); non-2xx statuses become our errors."""
        try:
            method, url, headers, _, _ = self._api.param_serialize(
                method,
                path,
                query_params=query or [],
                header_params={"Accept": "application/json", "Content-Type": content_type},
                auth_settings=["BearerToken"],
            )
            response = self._api.rest_client.request(  # type: ignore[no-untyped-call]
                method, url, headers=headers, body=body, _request_timeout=timeout or self._timeout
            ).response
        except (ApiException, HTTPError, OSError) as error:
            raise _translate(error, what) from error
        if response.status >= 400:
            response.drain_conn()
            raise _translate(ApiException(status=response.status, reason=response.reason), what)
        return response

    def _call(
        self,
        method: str,
        path: str,
        what: str,
        *,
        query: list[tuple[str, Any]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        response = self._send(method, path, what, query=query, body=body, content_type=content_type)
        try:
            data = response.data
        except (HTTPError, OSError) as error:
            raise _translate(error, what) from error
        return json.loads(data) if data else None

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> KubeObject | None:
        what = f"get {resource.describe(namespace, name)}"
        try:
            found: KubeObject = self._call("GET", resource.path(namespace, name), what)
        except NotFound:
            return None
        return found

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> KubeObjects:
        """Every object (all namespaces when `namespace` is None), following continue tokens."""
        items: KubeObjects = []
        token: str | None = None
        while True:
            query: list[tuple[str, Any]] = [("limit", 500)]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if token:
                query.append(("continue", token))
            page = self._call("GET", resource.path(namespace), f"list {resource.plural}", query=query)
            for item in page.get("items") or []:
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                items.append(item)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def list_with_version(
        self, resource: Resource, namespace: str | None = None, label_selector: str | None = None
    ) -> tuple[KubeObjects, str]:
        """One page-less list and its resourceVersion, to start a watch from."""
        query: list[tuple[str, Any]] = [("labelSelector", label_selector)] if label_selector else []
        page = self._call("GET", resource.path(namespace), f"list {resource.plural}", query=query)
        return list(page.get("items") or []), str((page.get("metadata") or {}).get("resourceVersion", ""))

    def create(
        self,
        resource: Resource,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        owned: bool = False,
    ) -> KubeObject:
        """Create the object (`Conflict` when it exists); `owned`: under the controller's field
        manager, as `apply` writes."""
        name = str((body.get("metadata") or {}).get("name", ""))
        query: list[tuple[str, Any]] = [("fieldManager", FIELD_MANAGER)] if owned else []
        created: KubeObject = self._call(
            "POST",
            resource.path(namespace),
            f"create {resource.describe(namespace, name)}",
            query=query,
            body=dict(body),
        )
        return created

    def replace(self, resource: Resource, body: Mapping[str, Any]) -> KubeObject:
        meta = body.get("metadata") or {}
        namespace, name = meta.get("namespace"), str(meta.get("name", ""))
        replaced: KubeObject = self._call(
            "PUT",
            resource.path(namespace, name),
            f"update {resource.describe(namespace, name)}",
            query=[("fieldManager", FIELD_MANAGER)],
            body=dict(body),
        )
        return replaced

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
    ) -> KubeObject:
        """A merge patch by default; JSON patches (lists) guard with `test` ops against races."""
        what = f"patch {resource.describe(namespace, name)}" + (f" {subresource}" if subresource else "")
        patched: KubeObject = self._call(
            "PATCH", resource.path(namespace, name, subresource), what, body=patch, content_type=content_type
        )
        return patched

    def apply(self, resource: Resource, body: Mapping[str, Any], *, force: bool = True) -> KubeObject:
        """Server-side apply under the controller's field manager."""
        meta = body.get("metadata") or {}
        namespace, name = meta.get("namespace"), str(meta.get("name", ""))
        query: list[tuple[str, Any]] = [("fieldManager", FIELD_MANAGER), ("force", str(force).lower())]
        applied: KubeObject = self._call(
            "PATCH",
            resource.path(namespace, name),
            f"apply {resource.describe(namespace, name)}",
            query=query,
            body=json.dumps(dict(body)),
            content_type=APPLY_PATCH,
        )
        return applied

    def patch_status(
        self, resource: Resource, name: str, status: Mapping[str, Any], namespace: str | None = None
    ) -> KubeObject:
        return self.patch(resource, name, {"status": dict(status)}, namespace, subresource="status")

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        preconditions: KubeObject | None = None,
    ) -> bool:
        """True when a delete was issued, False when the object was already gone. With
        `preconditions` (the object as read), only that very version is deleted: `Conflict` if it
        changed or was replaced since."""
        what = f"delete {resource.describe(namespace, name)}"
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if preconditions is not None:
            meta = preconditions.get("metadata") or {}
            body["preconditions"] = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
        try:
            self._call("DELETE", resource.path(namespace, name), what, body=body)
        except NotFound:
            return False
        return True

    def remove_finalizer(self, resource: Resource, obj: KubeObject, finalizer: str) -> bool:
        """Drop one finalizer with a JSON patch that fails (409/422) if the list changed meanwhile."""
        meta = obj.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        if finalizer not in finalizers:
            return False
        index = finalizers.index(finalizer)
        patch = [
            {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizer},
            {"op": "remove", "path": f"/metadata/finalizers/{index}"},
        ]
        try:
            self.patch(resource, str(meta["name"]), patch, meta.get("namespace"), content_type=JSON_PATCH)
        except NotFound:
            return False
        except KubeRequestRefused as error:
            if error.status == 422:  # the test op failed: somebody else changed the list
                where = resource.describe(meta.get("namespace"), meta["name"])
                raise Conflict(f"finalizers of {where} changed") from error
            raise
        return True

    def add_finalizer(self, resource: Resource, obj: KubeObject, finalizer: str) -> KubeObject:
        meta = obj.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        if finalizer in finalizers:
            return obj
        patch = {
            "metadata": {
                "finalizers": [*finalizers, finalizer],
                "resourceVersion": meta.get("resourceVersion"),
            }
        }
        return self.patch(resource, str(meta["name"]), patch, meta.get("namespace"))

    def watch(
        self,
        resource: Resource,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> Iterator[tuple[str, KubeObject]]:
        """(type, object) events until the server closes the watch; `KubeUnavailable` on 410 Gone
        too, so the caller lists again."""
        query: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        what = f"watch {resource.plural}"
        response = self._send(
            "GET", resource.path(namespace), what, query=query, timeout=(self._timeout, timeout_seconds + 30)
        )
        with self._watches_lock:
            self._open_watches.add(response)
        try:
            for line in response:
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = str(event.get("type", ""))
                if kind == "ERROR":
                    reason = (event.get("object") or {}).get("reason", "error")
                    raise KubeUnavailable(f"{what}: {reason}", delay=0)
                yield kind, event.get("object") or {}
        except (HTTPError, OSError, ValueError) as error:
            # ValueError: the read was cut by `interrupt_watches` (a closed file).
            raise _translate(error, what) from error
        finally:
            with self._watches_lock:
                self._open_watches.discard(response)
            response.release_conn()

    def interrupt_watches(self) -> None:
        """End every open watch now (their iterators raise KubeUnavailable): a stopping controller
        must not wait for the server to close long polls."""
        with self._watches_lock:
            responses = list(self._open_watches)
        for response in responses:
            # A watch that ended by itself meanwhile is over already: its socket is closed (EBADF,
            # OSError), or urllib3 has handed its connection back to the pool at the end of the
            # stream (RuntimeError), before the watch's own `finally` forgot it.
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                response.shutdown()

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]
