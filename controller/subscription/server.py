"""The subscription server's HTTP surface: settings, the routing table, and the threaded HTTP/1.1 server.

Why the standard library's `ThreadingHTTPServer`: every callback ends in a blocking wait (Kubernetes
writes, then the Git push of its record, seconds under load), which threads express directly; a
thread per connection serves the 50 concurrent callers the SaaS registry may send, and the stdlib
adds no dependency. Keep-alive is on (HTTP/1.1, every answer has a Content-Length); idle or slow
connections are closed after `socket_timeout`; with TLS the handshake runs in the connection's
thread, so one slow client never blocks `accept`.

Routes (anything else on a known path: 405 with `Allow`; unknown paths: 404):

    PUT|DELETE  /provision/tenants/{tenantId}                           SaaS registry (bearer JWT)
    PUT|DELETE  /sms/provision/tenants/{tenantId}                       subscription manager (client cert)
    GET         /dependencies/{providerSubaccountId}/{appName}/         SaaS registry
    GET         /sms/dependencies/{providerSubaccountId}/{appName}/     subscription manager
    GET         /healthz  /readyz  /metrics

Every answer is JSON (`{"error": "..."}` for failures) except `/metrics`. Each request logs one
line: method, route template, status, duration and the tenant id or app name from the path (ids,
not secrets); never headers or bodies.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from btp_gitops.controller.clients.cluster_side import ClusterSide
from btp_gitops.controller.clients.credentials import CredentialReader
from btp_gitops.controller.errors import AuthenticationFailed, ConfigurationError, TemporaryError
from btp_gitops.controller.kube import KubeClient
from btp_gitops.controller.subscription import handlers
from btp_gitops.controller.subscription.auth import JwksCache, TokenVerifier
from btp_gitops.controller.subscription.handlers import (
    HandlerSettings,
    NotFound,
    NotSubscribable,
    Request,
    Response,
    SubscriptionService,
)
from btp_gitops.controller.subscription.ledger import TenantLedger
from btp_gitops.controller.subscription.metrics import SubscriptionMetrics
from btp_gitops.controller.subscription.payloads import InvalidPayload
from btp_gitops.generator.core import BtpGitopsError

log = logging.getLogger("btp_gitops.subscription")

Handler = Callable[[SubscriptionService, Request, Mapping[str, str]], Response]


@dataclass(frozen=True, slots=True)
class SubscriptionServerSettings:
    host: str = "0.0.0.0"
    port: int = 4000
    tls_cert_file: str | None = None  # serve HTTPS when both are set
    tls_key_file: str | None = None
    namespaces: tuple[str, ...] = ()  # serve only applications in these namespaces (empty: all)
    callback_timeout: dt.timedelta = dt.timedelta(minutes=15)  # unless the binding's appUrls set one
    jwks_ttl: float = 600.0
    jwks_refetch_interval: float = 30.0  # at most one refetch per URL this often for unknown kids
    jwks_ca_file: str | None = None  # CA bundle for the issuers' token_keys (default: system CAs)
    jwks_timeout: float = 10.0
    leeway: float = 30.0  # clock skew accepted on exp / nbf / iat
    max_body_bytes: int = 1 << 20
    socket_timeout: float = 60.0
    shutdown_grace: float = 10.0  # how long `stop` waits for requests in flight

    def __post_init__(self) -> None:
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ConfigurationError("TLS needs both a certificate file and a key file")


@dataclass(frozen=True, slots=True)
class Route:
    template: str
    handlers: Mapping[str, Handler]
    bearer: bool = False  # answers 401/403 with a Bearer challenge

    @property
    def pattern(self) -> re.Pattern[str]:
        body = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.template.rstrip("/")))
        return re.compile(f"^{body}/?$")


ROUTES: tuple[Route, ...] = (
    Route(
        "/provision/tenants/{tenantId}",
        {"PUT": handlers.saas_subscribe, "DELETE": handlers.saas_unsubscribe},
        bearer=True,
    ),
    Route(
        "/sms/provision/tenants/{tenantId}",
        {"PUT": handlers.sms_subscribe, "DELETE": handlers.sms_unsubscribe},
    ),
    Route(
        "/dependencies/{providerSubaccountId}/{appName}/", {"GET": handlers.saas_dependencies}, bearer=True
    ),
    Route("/sms/dependencies/{providerSubaccountId}/{appName}/", {"GET": handlers.sms_dependencies}),
    Route("/healthz", {"GET": handlers.healthz}),
    Route("/readyz", {"GET": handlers.readyz}),
    Route("/metrics", {"GET": handlers.metrics}),
)
_COMPILED = tuple((route, route.pattern) for route in ROUTES)


def match_route(path: str) -> tuple[Route, dict[str, str]] | None:
    for route, pattern in _COMPILED:
        found = pattern.match(path)
        if found:
            return route, {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
    return None


class _BodyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(status, {"error": message}, headers=dict(headers or {}))


def response_for_error(error: Exception, route: Route | None) -> Response:
    """The answer for an error a handler raised; unexpected ones are logged with their traceback."""
    if isinstance(error, InvalidPayload):
        return error_response(400, error.message)
    if isinstance(error, AuthenticationFailed):
        challenge = (
            'Bearer error="insufficient_scope"' if error.status == 403 else 'Bearer error="invalid_token"'
        )
        headers = {"WWW-Authenticate": challenge} if route is not None and route.bearer else {}
        return error_response(error.status, error.message, headers)
    if isinstance(error, NotFound):
        return error_response(404, error.message)
    if isinstance(error, NotSubscribable):
        return error_response(409, error.message)
    if isinstance(error, TemporaryError):
        log.warning("request not completed (%s): %s", error.reason, error.message)
        return Response(
            503,
            {"error": "the request could not be completed now; try again later", "reason": error.reason},
            headers={"Retry-After": str(max(1, int(error.delay)))},
        )
    if isinstance(error, BtpGitopsError):  # ours, a GitError of the tenant records included
        log.warning("request failed (%s): %s", error.reason, error.message)
        return Response(503, {"error": "the request could not be completed", "reason": error.reason})
    log.error("unexpected error handling a request", exc_info=error)
    return error_response(500, "internal error")


class _RequestHandler(BaseHTTPRequestHandler):
    """One connection; every method goes through `_dispatch` (routing decides what is allowed)."""

    protocol_version = "HTTP/1.1"
    server_version = "btp-gitops-subscription-server"
    sys_version = ""
    disable_nagle_algorithm = True
    server: _HttpServer

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Our own line per request is logged by `_dispatch`."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol errors of the base class (bad request line, headers too long) as JSON too."""
        self.close_connection = True
        self._write(error_response(code, message or self.responses.get(code, ("error",))[0]), with_body=True)

    def _dispatch(self) -> None:
        started = time.perf_counter()
        service = self.server.service
        with service.metrics.in_progress(), self.server.busy():
            route, params, response = self._handle(service)
            self._write(response, with_body=self.command != "HEAD")
        seconds = time.perf_counter() - started
        template = route.template if route else "unmatched"
        service.metrics.observe(self.command, template, response.status, seconds)
        ids = " ".join(f"{k}={v}" for k, v in params.items() if k != "providerSubaccountId")
        log.info(
            "%s %s %d %.1fms%s",
            self.command,
            template,
            response.status,
            seconds * 1000,
            f" {ids}" if ids else "",
        )

    def _handle(self, service: SubscriptionService) -> tuple[Route | None, dict[str, str], Response]:
        url = urllib.parse.urlsplit(self.path)
        matched = match_route(url.path)
        try:
            body = self._read_body()
        except _BodyError as error:
            self.close_connection = True
            return (matched[0] if matched else None), {}, error_response(error.status, error.message)
        if matched is None:
            return None, {}, error_response(404, "no such route")
        route, params = matched
        handler = route.handlers.get(self.command)
        if handler is None:
            allowed = ", ".join(route.handlers)
            message = f"method {self.command} is not allowed on {route.template}"
            return route, params, error_response(405, message, {"Allow": allowed})
        request = Request(self.command, url.path, urllib.parse.parse_qs(url.query), self.headers, body)
        try:
            return route, params, handler(service, request, params)
        except Exception as error:
            return route, params, response_for_error(error, route)

    def _read_body(self) -> bytes:
        limit = self.server.settings.max_body_bytes
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked(limit)
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            return b""
        try:
            length = int(length_header)
        except ValueError:
            raise _BodyError(400, "Content-Length is not a number") from None
        if length < 0:
            raise _BodyError(400, "Content-Length is negative")
        if length > limit:
            raise _BodyError(413, f"the body exceeds {limit} bytes")
        body = self.rfile.read(length)
        if len(body) != length:
            raise _BodyError(400, "the body is shorter than its Content-Length")
        return body

    def _read_chunked(self, limit: int) -> bytes:
        parts: list[bytes] = []
        size_read = 0
        while True:
            line = self.rfile.readline(1026)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _BodyError(400, "malformed chunked body") from None
            if size == 0:
                while self.rfile.readline(1026) not in (b"\r\n", b"\n", b""):
                    pass  # trailers, ignored
                return b"".join(parts)
            size_read += size
            if size_read > limit:
                raise _BodyError(413, f"the body exceeds {limit} bytes")
            parts.append(self.rfile.read(size))
            self.rfile.readline(3)

    def _write(self, response: Response, with_body: bool) -> None:
        payload = response.payload
        body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
        if self.server.stopping:
            self.close_connection = True
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for key, value in response.headers.items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if with_body:
            self.wfile.write(body)


class _HttpServer(ThreadingHTTPServer):
    """Threads per connection, TLS in the connection's thread, and a record of open connections so
    `stop` can end idle keep-alive connections instead of waiting for their timeout."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self, settings: SubscriptionServerSettings, service: SubscriptionService, tls: ssl.SSLContext | None
    ) -> None:
        self.settings = settings
        self.service = service
        self.tls = tls
        self.stopping = False
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self._in_flight = 0
        self._idle = threading.Condition()
        super().__init__((settings.host, settings.port), _RequestHandler)

    @contextmanager
    def busy(self) -> Iterator[None]:
        with self._idle:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def finish_request(self, request: Any, client_address: Any) -> None:
        connection: socket.socket = request
        connection.settimeout(self.settings.socket_timeout)
        if self.tls is not None:
            try:
                connection = self.tls.wrap_socket(connection, server_side=True)
            except (ssl.SSLError, OSError) as error:
                log.debug("TLS handshake with %s failed: %s", client_address[0], type(error).__name__)
                return
        with self._connections_lock:
            self._connections.add(connection)
        try:
            _RequestHandler(connection, client_address, self)
        finally:
            with self._connections_lock:
                self._connections.discard(connection)
            if connection is not request:
                _close_quietly(connection)

    def close_idle_connections(self) -> None:
        with self._connections_lock:
            open_connections = list(self._connections)
        for connection in open_connections:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def _close_quietly(connection: socket.socket) -> None:
    with suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()


def tls_context(settings: SubscriptionServerSettings) -> ssl.SSLContext | None:
    if not settings.tls_cert_file or not settings.tls_key_file:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    except (OSError, ssl.SSLError) as error:
        raise ConfigurationError(
            f"cannot load the server's TLS certificate: {type(error).__name__}"
        ) from error
    return context


def jwks_ssl_context(settings: SubscriptionServerSettings) -> ssl.SSLContext:
    try:
        return ssl.create_default_context(cafile=settings.jwks_ca_file)
    except (OSError, ssl.SSLError) as error:
        raise ConfigurationError(
            f"cannot load the CA bundle for token keys: {type(error).__name__}"
        ) from error


class SubscriptionServer:
    """The running server: `start` serves in a background thread, `serve_forever` in the caller's."""

    def __init__(self, settings: SubscriptionServerSettings, service: SubscriptionService) -> None:
        self.settings = settings
        self.service = service
        try:
            self._httpd = _HttpServer(settings, service, tls_context(settings))
        except OSError as error:
            raise ConfigurationError(
                f"cannot listen on {settings.host}:{settings.port}: {error.strerror}"
            ) from error
        self._thread: threading.Thread | None = None
        self._serving = threading.Event()
        self._stopped = False

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def scheme(self) -> str:
        return "https" if self._httpd.tls else "http"

    def start(self) -> None:
        self._serving.set()  # before the thread runs: a `stop` right away must still end its loop
        self._thread = threading.Thread(target=self.serve_forever, name="subscription-server", daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        log.info("subscription server listening on %s://%s:%d", self.scheme, self.settings.host, self.port)
        self._serving.set()
        self._httpd.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish (up to `shutdown_grace`), close the rest."""
        if self._stopped:
            return
        self._stopped = True
        self._httpd.stopping = True
        if self._serving.is_set():  # `shutdown` waits for a serve loop, which must have begun
            self._httpd.shutdown()
        if not self._httpd.wait_idle(self.settings.shutdown_grace):
            log.warning("stopping with requests still in flight after %.0fs", self.settings.shutdown_grace)
        self._httpd.close_idle_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> SubscriptionServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def build_subscription_server(
    settings: SubscriptionServerSettings,
    kube: KubeClient,
    ledger: TenantLedger,
    metrics: SubscriptionMetrics | None = None,
    now: Callable[[], dt.datetime] | None = None,
) -> SubscriptionServer:
    """A server wired to the cluster (binding Secrets, subscription contexts, pending callbacks) and
    to `ledger` (the tenant records)."""
    jwks = JwksCache(
        jwks_ssl_context(settings),
        ttl=settings.jwks_ttl,
        fetch_timeout=settings.jwks_timeout,
        refetch_interval=settings.jwks_refetch_interval,
    )
    service = SubscriptionService(
        ledger=ledger,
        credentials=CredentialReader(kube),
        verifier=TokenVerifier(jwks, leeway=settings.leeway),
        cluster=ClusterSide(kube),
        metrics=metrics or SubscriptionMetrics(),
        settings=HandlerSettings(
            callback_timeout=settings.callback_timeout, namespaces=frozenset(settings.namespaces)
        ),
    )
    if now is not None:
        service.now = now
    return SubscriptionServer(settings, service)
