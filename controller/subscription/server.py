"""The subscription server's HTTP surface: settings, the routing table, and the aiohttp server.

Why aiohttp (its low-level `web.Server`, no router or middleware of its own): it is already in
every installation of the controller extra (the Kubernetes client depends on it), so serving HTTP
adds no package; its HTTP/1.1 parser (llhttp) and connection handling are production grade and
give the limits this internet-facing server needs: header line, field and count limits before any
handler runs, an idle timeout that starts when the connection opens (a client that never sends a
complete request head is closed), a listen backlog of our choosing, TLS on the event loop (a slow
handshake holds no thread), and a graceful stop that closes idle keep-alive connections at once.
What a framework would add (routing, middleware) is the small table below. Against uvicorn or
hypercorn with starlette: no package added to an internet-facing image, an idle timeout that
starts at the connection's opening (uvicorn's keep-alive timeout starts after a first response),
and our own admission count where uvicorn's `limit_concurrency` would answer 503 without
`Retry-After`.

The process is one interpreter, one GIL for the event loop, the handlers and the Git writer, so
what costs a request time under load is mostly waiting for it. While serving, the thread switch
interval is shortened (`switch_interval`) and the cyclic garbage collector leaves alone what was
alive when serving started and collects young objects less often (`gc_threshold`); request
threads are started by a thread of their own (`_RequestThreads`), never by the event loop.
Elsewhere, for the same reason: the ledger indexes each new commit from the index of the one
before (git_ledger), concurrent requests share reads of a binding Secret (controller.clients),
connections to the API server share one TLS context (controller.kube), and a token's unverified
header is remembered (auth; the whole token is still verified for every request).

The handlers stay synchronous: every callback ends in blocking Kubernetes writes and a wait for
the Git push of its record (seconds under load). Each admitted request runs in a thread of its own,
so the event loop only parses, reads bodies and writes answers; at most `max_concurrent` of them
work at once (`handlers.WorkSlots`), and a handler gives its slot up while it waits for the push of
its record, so the requests behind it reach the Git writer's next batch meanwhile. Requests
waiting for a slot are capped (`max_queued`), beyond which the answer is 503 with
`Retry-After`. Probes never wait behind them: /healthz and /metrics answer on the loop, /readyz on
a thread of its own.

Per request, before any handler: the route (404), the method (405 with `Allow`), the caller's
credentials in form only, without I/O (401), `Content-Type` of a body (415), `Content-Length`
against `max_body_bytes` (413, nothing read), then the body, read as it arrives (chunked too) and
never beyond `max_body_bytes` (413) or `body_timeout` (408). Every answer that leaves a body unread
closes the connection, so nothing unread is ever drained.

Routes (anything else on a known path: 405 with `Allow`; unknown paths: 404):

    PUT|DELETE  /provision/tenants/{tenantId}                           SaaS registry (bearer JWT)
    PUT|DELETE  /sms/provision/tenants/{tenantId}                       subscription manager (client cert)
    GET         /dependencies/{providerSubaccountId}/{appName}/         SaaS registry
    GET         /sms/dependencies/{providerSubaccountId}/{appName}/     subscription manager
    GET         /healthz  /readyz  /metrics

Every answer is JSON (`{"error": "..."}` for failures) except `/metrics` and the parser's own 400
for a request that is not HTTP. Each request logs one line: method, route template, status,
duration and the tenant id or app name from the path (ids, not secrets); never headers or bodies.
A client that went away before its answer logs one line too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import functools
import gc
import json
import logging
import queue
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from btp_gitops.controller.clients.cluster_side import ClusterSide
from btp_gitops.controller.clients.credentials import CredentialReader
from btp_gitops.controller.errors import AuthenticationFailed, ConfigurationError, TemporaryError
from btp_gitops.controller.kube import KubeClient
from btp_gitops.controller.subscription import handlers
from btp_gitops.controller.subscription.auth import JwksCache, TokenVerifier
from btp_gitops.controller.subscription.domains import DomainNotServed
from btp_gitops.controller.subscription.handlers import (
    HandlerSettings,
    NotFound,
    NotSubscribable,
    Request,
    Response,
    SubscriptionService,
    WorkSlots,
)
from btp_gitops.controller.subscription.ledger import TenantLedger
from btp_gitops.controller.subscription.metrics import SubscriptionMetrics
from btp_gitops.controller.subscription.payloads import InvalidPayload, SubscriptionKind
from btp_gitops.generator.core import BtpGitopsError

log = logging.getLogger("btp_gitops.subscription")

Handler = Callable[[SubscriptionService, Request, Mapping[str, str]], Response]

# How long a client should wait before retrying an answer the server could not give now.
OVERLOADED_RETRY_AFTER = 1
JSON_TYPES = ("application/json",)


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
    jwks_failure_ttl: float = 60.0  # a failed token key fetch is answered from memory this long
    jwks_fetch_rate: float = 1.0  # fetches of token key URLs no binding names, per second (burst 10)
    jwks_ca_file: str | None = None  # CA bundle for the issuers' token_keys (default: system CAs)
    jwks_timeout: float = 10.0
    leeway: float = 30.0  # clock skew accepted on exp / nbf / iat
    max_body_bytes: int = 1 << 20
    body_timeout: float = 30.0  # the whole body must arrive within this (slow bodies: 408)
    keepalive_timeout: float = 15.0  # idle connections, new ones without a request head too
    backlog: int = 2048  # connections the kernel queues before `accept`
    max_concurrent: int = 128  # handlers at work at once (a wait for Git does not count)
    max_queued: int = 1024  # requests admitted beyond those (a 1,000-tenant burst); beyond: 503
    max_header_line: int = 8190  # request line and each header field, bytes
    max_headers: int = 100
    shutdown_grace: float = 10.0  # how long `stop` waits for requests in flight
    # The interpreter's thread switch interval while serving (sys.setswitchinterval; None: leave
    # it). A handler back from the API server or Git needs the GIL for a moment, and by default
    # it waits up to 5 ms for it behind a thread at work (the Git writer indexing a commit, say),
    # several times per request: under load that is most of a callback's time outside the push.
    switch_interval: float | None = 0.001
    # The cyclic garbage collector while serving (None: left as it is). When serving starts,
    # everything alive (modules, settings, the clone's first index) is frozen out of its scans
    # (gc.freeze), and a collection of the youngest generation waits for this many new objects
    # (Python's default: 700). By default a full collection, every record's objects scanned with
    # every thread stopped, came every few hundred callbacks and took 100-250 ms under load: a
    # stall for every request in flight, most of the 50-client benchmark's p99.
    gc_threshold: int | None = 10_000

    def __post_init__(self) -> None:
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ConfigurationError("TLS needs both a certificate file and a key file")
        if self.switch_interval is not None and not 0 < self.switch_interval <= 1:
            raise ConfigurationError("the thread switch interval must be above 0 and at most 1 second")
        if self.gc_threshold is not None and self.gc_threshold < 1:
            raise ConfigurationError("the garbage collector's threshold must be at least 1")


@dataclass(frozen=True, slots=True)
class Route:
    template: str
    handlers: Mapping[str, Handler]
    kind: SubscriptionKind | None = None  # whose credentials (None: a probe, no credentials)
    body: bool = False  # the handlers read a JSON body
    bearer: bool = False  # answers 401/403 with a Bearer challenge

    @property
    def pattern(self) -> re.Pattern[str]:
        body = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.template.rstrip("/")))
        return re.compile(f"^{body}/?$")


SAAS, SMS = SubscriptionKind.SAAS, SubscriptionKind.SMS
ROUTES: tuple[Route, ...] = (
    Route(
        "/provision/tenants/{tenantId}",
        {"PUT": handlers.saas_subscribe, "DELETE": handlers.saas_unsubscribe},
        kind=SAAS,
        body=True,
        bearer=True,
    ),
    Route(
        "/sms/provision/tenants/{tenantId}",
        {"PUT": handlers.sms_subscribe, "DELETE": handlers.sms_unsubscribe},
        kind=SMS,
        body=True,
    ),
    Route(
        "/dependencies/{providerSubaccountId}/{appName}/",
        {"GET": handlers.saas_dependencies},
        kind=SAAS,
        bearer=True,
    ),
    Route(
        "/sms/dependencies/{providerSubaccountId}/{appName}/", {"GET": handlers.sms_dependencies}, kind=SMS
    ),
    Route("/healthz", {"GET": handlers.healthz}),
    Route("/readyz", {"GET": handlers.readyz}),
    Route("/metrics", {"GET": handlers.metrics}),
)
_COMPILED = tuple((route, route.pattern) for route in ROUTES)
_ON_THE_LOOP = frozenset({"/healthz", "/metrics"})  # no I/O: answered without a thread


def match_route(path: str) -> tuple[Route, dict[str, str]] | None:
    for route, pattern in _COMPILED:
        found = pattern.match(path)
        if found:
            return route, {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
    return None


class _Refused(Exception):
    """An answer decided before any handler ran (body limits, content type, overload)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(status, {"error": message}, headers=dict(headers or {}))


def unavailable(reason: str, message: str, retry_after: float) -> Response:
    """Every 503 says when to try again (RFC 9110 `Retry-After`, whole seconds)."""
    return Response(
        503, {"error": message, "reason": reason}, headers={"Retry-After": str(max(1, int(retry_after)))}
    )


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
    if isinstance(error, DomainNotServed):  # CAP Operator's answer to a domain it does not serve
        return error_response(406, error.message)
    if isinstance(error, TemporaryError):
        log.warning("request not completed (%s): %s", error.reason, error.message)
        return unavailable(
            error.reason, "the request could not be completed now; try again later", error.delay
        )
    if isinstance(error, BtpGitopsError):  # ours, a GitError of the tenant records included
        log.warning("request failed (%s): %s", error.reason, error.message)
        return unavailable(error.reason, "the request could not be completed", OVERLOADED_RETRY_AFTER)
    log.error("unexpected error handling a request", exc_info=error)
    return error_response(500, "internal error")


def handle(
    service: SubscriptionService, route: Route, request: Request, params: Mapping[str, str]
) -> Response:
    """One request's handler, in a worker thread: its answer, errors included."""
    handler = route.handlers[request.method]
    try:
        return handler(service, request, params)
    except Exception as error:
        return response_for_error(error, route)


def handle_in_slot(
    service: SubscriptionService, route: Route, request: Request, params: Mapping[str, str]
) -> Response:
    """`handle` for a callback, in a request thread: it works only while it holds one of the
    `max_concurrent` slots (given up while it waits for the push of its record)."""
    with service.slots.working():
        return handle(service, route, request, params)


def is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


class _RequestThreads(concurrent.futures.Executor):
    """A thread per request in progress, up to `limit`; threads are started by a thread of their
    own, never by the caller (the event loop): starting a thread waits until it runs, which on a
    loaded machine takes milliseconds, and a burst of 1,000 requests would stall the loop for
    seconds. Threads stay for the next burst; `shutdown` ends them."""

    def __init__(self, limit: int, name: str) -> None:
        self._limit = limit
        self._name = name
        self._work: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._threads = 0  # started or asked for
        self._busy = 0  # submitted and not finished
        self._stopped = False
        self._wanted: queue.SimpleQueue[bool] = queue.SimpleQueue()  # True: start one; False: stop
        self._starter = threading.Thread(target=self._start_threads, name=f"{name}-starter", daemon=True)
        self._starter.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self._stopped:
                raise RuntimeError("cannot take work after shutdown")
            self._busy += 1
            if self._threads < min(self._busy, self._limit):
                self._threads += 1
                self._wanted.put(True)
        self._work.put((future, functools.partial(fn, *args, **kwargs)))
        return future

    def _start_threads(self) -> None:
        number = 0
        while self._wanted.get():
            number += 1
            threading.Thread(target=self._serve, name=f"{self._name}_{number}", daemon=True).start()

    def _serve(self) -> None:
        while (item := self._work.get()) is not None:
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as error:
                    future.set_exception(error)
            del item, future, call
            with self._lock:
                self._busy -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            threads = self._threads
        self._wanted.put(False)
        if cancel_futures:
            while True:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in range(threads):
            self._work.put(None)
        if wait:
            self._starter.join()


class _Dispatcher:
    """The one aiohttp handler: routing, the checks before any handler, the body, the thread pool."""

    def __init__(self, settings: SubscriptionServerSettings, service: SubscriptionService) -> None:
        self.settings = settings
        self.service = service
        # A thread for every request admitted: at most `max_concurrent` of them work at once
        # (`SubscriptionService.slots`), the others wait for a slot or for the push of their record.
        self.workers = _RequestThreads(settings.max_concurrent + settings.max_queued, "subscription-request")
        self.probes = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="subscription-probe")
        self.admitted = 0  # requests holding or waiting for a worker thread (event loop only)
        self.stopping = False

    async def __call__(self, raw: web.BaseRequest) -> web.StreamResponse:
        started = time.perf_counter()
        path = raw.rel_url.raw_path
        matched = match_route(path)
        route = matched[0] if matched else None
        params = matched[1] if matched else {}
        refused = False
        with self.service.metrics.in_progress():
            try:
                response = await self._answer(raw, route, params)
            except _Refused as refusal:
                response, refused = refusal.response, True
        seconds = time.perf_counter() - started
        template = route.template if route else "unmatched"
        self.service.metrics.observe(raw.method, template, response.status, seconds)
        ids = " ".join(f"{k}={v}" for k, v in params.items() if k != "providerSubaccountId")
        suffix = f" {ids}" if ids else ""
        log.info("%s %s %d %.1fms%s", raw.method, template, response.status, seconds * 1000, suffix)
        if raw.transport is None or raw.transport.is_closing():
            log.info("%s %s: the client went away before its answer%s", raw.method, template, suffix)
        return self._http_response(raw, response, close=refused)

    async def _answer(self, raw: web.BaseRequest, route: Route | None, params: dict[str, str]) -> Response:
        if route is None:
            return error_response(404, "no such route")
        if raw.method not in route.handlers:
            allowed = ", ".join(route.handlers)
            message = f"method {raw.method} is not allowed on {route.template}"
            return error_response(405, message, {"Allow": allowed})
        if route.template in _ON_THE_LOOP:
            return handle(self.service, route, self._request(raw, b""), params)
        if route.kind is None:
            request = self._request(raw, b"")
            future = asyncio.get_running_loop().run_in_executor(
                self.probes, handle, self.service, route, request, params
            )
            return await future
        try:
            # The credentials' form before anything else, a body least of all (no I/O here).
            handlers.precheck(route.kind, raw.headers)
        except AuthenticationFailed as error:
            return response_for_error(error, route)
        body = await self._body(raw) if route.body and raw.method != "GET" else b""
        return await self._in_worker(route, self._request(raw, body), params)

    def _request(self, raw: web.BaseRequest, body: bytes) -> Request:
        query = urllib.parse.parse_qs(raw.rel_url.raw_query_string)
        return Request(raw.method, raw.rel_url.path, query, raw.headers, body)

    async def _in_worker(self, route: Route, request: Request, params: Mapping[str, str]) -> Response:
        limit = self.settings.max_concurrent + self.settings.max_queued
        if self.admitted >= limit or self.stopping:
            log.warning("refusing a request: %d requests are in progress or waiting", self.admitted)
            return unavailable("Overloaded", "the server is busy; try again later", OVERLOADED_RETRY_AFTER)
        self.admitted += 1
        try:
            call = functools.partial(handle_in_slot, self.service, route, request, params)
            return await asyncio.get_running_loop().run_in_executor(self.workers, call)
        finally:
            self.admitted -= 1

    async def _body(self, raw: web.BaseRequest) -> bytes:
        """The body within the limits, or `_Refused`; the body's media type is checked first."""
        if not raw.body_exists:
            return b""
        content_type = raw.headers.get("Content-Type", "")
        if not is_json(content_type):
            raise _Refused(error_response(415, "the body must be JSON (Content-Type: application/json)"))
        limit = self.settings.max_body_bytes
        if raw.content_length is not None and raw.content_length > limit:
            raise _Refused(error_response(413, f"the body exceeds {limit} bytes"))
        parts: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.settings.body_timeout):
                while chunk := await raw.content.readany():
                    size += len(chunk)
                    if size > limit:
                        raise _Refused(error_response(413, f"the body exceeds {limit} bytes"))
                    parts.append(chunk)
        except TimeoutError:
            message = f"the body did not arrive within {self.settings.body_timeout:.0f}s"
            raise _Refused(error_response(408, message)) from None
        except HttpProcessingError:
            raise _Refused(error_response(400, "the body is malformed")) from None
        except ConnectionError:
            raise _Refused(
                error_response(400, "the connection closed before the body was complete")
            ) from None
        return b"".join(parts)

    def _http_response(self, raw: web.BaseRequest, response: Response, close: bool) -> web.Response:
        payload = response.payload
        body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
        headers = {"Content-Type": response.content_type, "Cache-Control": "no-store", **response.headers}
        answer = web.Response(status=response.status, body=body, headers=headers)
        # A body refused, or still unread (a route that takes none), is never drained: close instead.
        if close or self.stopping or (raw.body_exists and not raw.content.is_eof()):
            answer.force_close()
        return answer


class _ProtocolLog(logging.Logger):
    """aiohttp's logger for requests its parser refused: one warning line, never a traceback (the
    parser's messages quote what the client sent, which may hold anything: only the kind is kept)."""

    def __init__(self) -> None:
        super().__init__("btp_gitops.subscription.http")
        self.parent = log  # its records go where the server's go (JSON lines)

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        self._refused(logging.WARNING, exc_info)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._refused(logging.WARNING, kwargs.get("exc_info", True))

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        if kwargs.get("exc_info"):  # non-HTTP traffic (TLS to the HTTP port): common, so at debug
            self._refused(logging.DEBUG, kwargs["exc_info"])
        else:
            super().debug(msg, *args, **kwargs)

    def _refused(self, level: int, exc_info: Any) -> None:
        error = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        kind = type(error).__name__ if error is not None else "unknown"
        self.log(level, "refused a request the HTTP parser could not read (%s)", kind)


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


def _listening_socket(settings: SubscriptionServerSettings) -> socket.socket:
    """Bound here, not when serving starts: the port is known (and a taken one reported) at once."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((settings.host, settings.port))
        sock.listen(settings.backlog)
    except OSError as error:
        sock.close()
        raise ConfigurationError(
            f"cannot listen on {settings.host}:{settings.port}: {error.strerror}"
        ) from error
    sock.setblocking(False)
    return sock


class SubscriptionServer:
    """The running server: `start` serves in a background thread, `serve_forever` in the caller's."""

    def __init__(self, settings: SubscriptionServerSettings, service: SubscriptionService) -> None:
        self.settings = settings
        self.service = service
        self._tls = tls_context(settings)
        self._socket = _listening_socket(settings)
        self._port = int(self._socket.getsockname()[1])
        self._dispatcher = _Dispatcher(settings, service)
        self._loop = asyncio.new_event_loop()
        self._stop_requested = asyncio.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._serving = False
        self._stopped = False

    @property
    def port(self) -> int:
        return self._port

    @property
    def scheme(self) -> str:
        return "https" if self._tls else "http"

    def start(self) -> None:
        with self._lock:
            if self._stopped or self._serving:
                return
            self._serving = True
        self._thread = threading.Thread(target=self._run, name="subscription-server", daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        with self._lock:
            if self._stopped or self._serving:
                return
            self._serving = True
        self._run()

    def _run(self) -> None:
        # Both settings are the process's: they hold while this server serves and are put back
        # afterwards, so a process that goes on (the controller, a test session) is left as found.
        interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
        if self.settings.switch_interval is not None:
            sys.setswitchinterval(self.settings.switch_interval)
        if self.settings.gc_threshold is not None:
            gc.freeze()  # what is alive now stays: later collections do not scan it
            gc.set_threshold(self.settings.gc_threshold, *thresholds[1:])
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()
            if self.settings.switch_interval is not None:
                sys.setswitchinterval(interval)
            if self.settings.gc_threshold is not None:
                gc.set_threshold(*thresholds)
                gc.unfreeze()

    async def _serve(self) -> None:
        server = web.Server(
            self._dispatcher,
            access_log=None,  # `_Dispatcher` logs each request itself, as JSON through our logging
            logger=_ProtocolLog(),
            keepalive_timeout=self.settings.keepalive_timeout,
            max_line_size=self.settings.max_header_line,
            max_field_size=self.settings.max_header_line,
            max_headers=self.settings.max_headers,
            lingering_time=0,  # never drain what a client sends after its answer
        )
        runner = web.ServerRunner(server, shutdown_timeout=self.settings.shutdown_grace)
        await runner.setup()
        site = web.SockSite(runner, self._socket, ssl_context=self._tls, backlog=self.settings.backlog)
        await site.start()
        log.info("subscription server listening on %s://%s:%d", self.scheme, self.settings.host, self.port)
        try:
            await self._stop_requested.wait()
        finally:
            self._dispatcher.stopping = True
            in_flight = self._dispatcher.admitted
            await runner.cleanup()  # stops accepting, closes idle connections, waits for the rest
            if in_flight:
                log.info("stopped with %d requests that were in flight", in_flight)
            self._dispatcher.workers.shutdown(wait=False, cancel_futures=True)
            self._dispatcher.probes.shutdown(wait=False, cancel_futures=True)

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish (up to `shutdown_grace`), close the rest."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            serving = self._serving
        if not serving:
            self._socket.close()
            self._loop.close()
            self._dispatcher.workers.shutdown(wait=False)
            self._dispatcher.probes.shutdown(wait=False)
            return
        self._loop.call_soon_threadsafe(self._stop_requested.set)
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
    kube.keep_connections(settings.max_concurrent)  # a connection for each handler at work
    jwks = JwksCache(
        jwks_ssl_context(settings),
        ttl=settings.jwks_ttl,
        fetch_timeout=settings.jwks_timeout,
        refetch_interval=settings.jwks_refetch_interval,
        failure_ttl=settings.jwks_failure_ttl,
        fetch_rate=settings.jwks_fetch_rate,
    )
    service = SubscriptionService(
        ledger=ledger,
        credentials=CredentialReader(kube),
        verifier=TokenVerifier(jwks, leeway=settings.leeway),
        cluster=ClusterSide(kube),
        metrics=metrics or SubscriptionMetrics(),
        slots=WorkSlots(settings.max_concurrent),
        settings=HandlerSettings(
            callback_timeout=settings.callback_timeout, namespaces=frozenset(settings.namespaces)
        ),
    )
    if now is not None:
        service.now = now
    return SubscriptionServer(settings, service)
