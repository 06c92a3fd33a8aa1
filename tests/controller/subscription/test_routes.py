"""The HTTP surface itself, over real sockets: routing (405 with Allow on every route, 404 for unknown
paths), 400 for every kind of bad body or parameter (never a crash), probes and Prometheus metrics,
HEAD, keep-alive, chunked bodies, oversized bodies, protocol garbage, TLS, and a stop that does not
wait for idle keep-alive connections. Binding Secrets and the Git ledger are real; XSUAA is the
local issuer of the fixtures.
"""

from __future__ import annotations

import gc
import http.client
import json
import socket
import ssl
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.controller.gitstore import RepoSettings, SourceRepo
from btp_gitops.controller.subscription.git_ledger import GitTenantLedger
from btp_gitops.controller.subscription.server import SubscriptionServer, SubscriptionServerSettings
from tests.controller.subscription.conftest import (
    PROVIDER_SUBACCOUNT,
    Running,
    ServerFactory,
    SmsPki,
    Sources,
    bearer,
    saas_payload,
    sms_payload,
    xfcc,
)
from tests.controller.subscription.peers import Pki, TokenFactory

pytestmark = pytest.mark.kube

TENANT = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
ROUTES = {
    f"/provision/tenants/{TENANT}": {"PUT", "DELETE"},
    f"/sms/provision/tenants/{TENANT}": {"PUT", "DELETE"},
    f"/dependencies/{PROVIDER_SUBACCOUNT}/bookshop/": {"GET"},
    f"/sms/dependencies/{PROVIDER_SUBACCOUNT}/bookshop/": {"GET"},
    "/healthz": {"GET"},
    "/readyz": {"GET"},
    "/metrics": {"GET"},
}
METHODS = ("GET", "PUT", "DELETE", "POST", "PATCH", "OPTIONS", "HEAD")


@pytest.mark.parametrize(
    ("path", "method"),
    [(path, method) for path, allowed in ROUTES.items() for method in METHODS if method not in allowed],
)
def test_other_methods_are_405(path: str, method: str, running: Running) -> None:
    answer = running.client.send(method, path, b"{}")

    assert answer.status == 405
    assert set(answer.headers["Allow"].split(", ")) == ROUTES[path]
    if method != "HEAD":
        assert answer.json["error"].startswith(f"method {method} is not allowed on /")


def test_unknown_paths_are_404(running: Running) -> None:
    for path in ("/", "/provision", "/provision/tenants/", "/provision/tenants/a/b", "/dependencies/x/"):
        answer = running.client.send("GET", path)
        assert (answer.status, answer.json) == (404, {"error": "no such route"})


SAAS_BAD_BODIES: dict[str, tuple[bytes | dict[str, Any], str]] = {
    "empty": (b"", "the request has no body; a JSON object is expected"),
    "not json": (b"{nope", "the body is not JSON (line 1, column 2)"),
    "not utf-8": (b'{"a": "\xff"}', "the body is not UTF-8"),
    "an array": (b"[]", "a JSON object is expected, got an array"),
    "nesting too deep": (b"[" * 200_000, "the body nests too deeply"),
    "missing subdomain": (
        {k: v for k, v in saas_payload(TENANT, "acme").items() if k != "subscribedSubdomain"},
        "subscribedSubdomain: required field is missing",
    ),
    "tenant id a number": (
        saas_payload(TENANT, "acme", subscribedTenantId=42),
        "subscribedTenantId: expected a string, got a number",
    ),
    "app name null": (
        saas_payload(TENANT, "acme", subscriptionAppName=None),
        "subscriptionAppName: required field is missing",
    ),
    "empty guid": (saas_payload(TENANT, "acme", subscriptionGUID=" "), "subscriptionGUID: must not be empty"),
    "guid not a label value": (
        saas_payload(TENANT, "acme", subscriptionGUID="a/b"),
        "subscriptionGUID: letters, digits, '-', '_' or '.' (at most 63, starting and ending alphanumeric) are expected",
    ),
    "global account not a label value": (
        saas_payload(TENANT, "acme", globalAccountGUID="g" * 64),
        "globalAccountGUID: letters, digits, '-', '_' or '.' (at most 63, starting and ending alphanumeric) are expected",
    ),
    "app name too long": (
        saas_payload(TENANT, "acme", subscriptionAppName="a" * 256),
        "subscriptionAppName: at most 255 characters are expected",
    ),
    "tenant id beyond the schema's maxLength": (
        saas_payload(TENANT, "acme", subscribedTenantId="t" * 64),
        "subscribedTenantId: letters, digits, '-', '_' or '.' (at most 63, starting and ending alphanumeric) are expected",
    ),
    "path and body differ": (
        saas_payload("9f8e7d6c-0000-4000-8000-000000000000", "acme"),
        "subscribedTenantId: '9f8e7d6c-0000-4000-8000-000000000000' differs from the tenant id in the path",
    ),
    "subdomain not a dns label": (
        saas_payload(TENANT, "Acme_Corp"),
        "subscribedSubdomain: a DNS label (lowercase letters, digits and '-', at most 63) is expected",
    ),
    "params not an object": (
        saas_payload(TENANT, "acme", subscriptionParams="x"),
        "subscriptionParams: expected an object, got a string",
    ),
    "domain not a string": (
        saas_payload(TENANT, "acme", subscriptionParams={"subscriptionDomain": ["a"]}),
        "subscriptionParams.subscriptionDomain: expected a string, got an array",
    ),
    "domain not a dns name": (
        saas_payload(TENANT, "acme", subscriptionParams={"subscriptionDomain": "https://x"}),
        "subscriptionParams.subscriptionDomain: a DNS name (lowercase) is expected",
    ),
}


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
@pytest.mark.parametrize("case", list(SAAS_BAD_BODIES))
def test_bad_saas_bodies_are_400(case: str, method: str, running: Running, tokens: TokenFactory) -> None:
    body, message = SAAS_BAD_BODIES[case]
    head = running.sources.head()

    answer = running.client.send(method, f"/provision/tenants/{TENANT}", body, bearer(tokens()))

    assert (answer.status, answer.json) == (400, {"error": message})
    assert running.sources.head() == head


def test_bad_sms_bodies_and_parameters_are_400(running: Running, sms_pki: SmsPki) -> None:
    headers = {"X-Forwarded-Client-Cert": xfcc(sms_pki.client)}
    path = f"/sms/provision/tenants/{TENANT}"
    no_subscriber = {k: v for k, v in sms_payload(TENANT, "acme").items() if k != "subscriber"}
    numeric_tenant = sms_payload(TENANT, "acme")
    numeric_tenant["subscriber"]["app_tid"] = 7
    no_root = sms_payload(TENANT, "acme")
    no_root["rootApplication"] = []

    cases = [
        (running.client.send("PUT", path, no_subscriber, headers), "subscriber: required field is missing"),
        (
            running.client.send("PUT", path, numeric_tenant, headers),
            "subscriber.app_tid: expected a string, got a number",
        ),
        (
            running.client.send("PUT", path, no_root, headers),
            "rootApplication: expected an object, got an array",
        ),
        (
            running.client.send("DELETE", path, None, headers),
            "subscriptionGUID: the query parameter is required",
        ),
        (
            running.client.send("DELETE", f"{path}?subscriptionGUID=a&subscriptionGUID=b", None, headers),
            "subscriptionGUID: the query parameter is given more than once",
        ),
        (
            running.client.send(
                "DELETE", "/sms/provision/tenants/bad%2Fid?subscriptionGUID=a", None, headers
            ),
            "tenantId: letters, digits, '-', '_' or '.' (at most 63, starting and ending alphanumeric) are expected",
        ),
    ]

    for answer, message in cases:
        assert (answer.status, answer.json) == (400, {"error": message})


def test_probes(running: Running) -> None:
    assert (running.client.send("GET", "/healthz").json, running.client.send("GET", "/readyz").json) == (
        {"status": "ok"},
        {"status": "ready"},
    )


def test_readyz_is_503_until_the_records_can_be_read(
    server_factory: ServerFactory, sources: Sources, tmp_path: Path
) -> None:
    unstarted = SourceRepo(RepoSettings(url=str(sources.remote), workdir=tmp_path / "not-started"))
    running = server_factory(Sources(sources.remote, unstarted, GitTenantLedger(unstarted)))

    assert running.client.send("GET", "/healthz").status == 200
    answer = running.client.send("GET", "/readyz")
    assert (answer.status, answer.json) == (503, {"error": "the tenant records are not available yet"})
    assert int(answer.headers["Retry-After"]) >= 1


def test_metrics(running: Running, tokens: TokenFactory) -> None:
    running.client.send("PUT", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "acme"), bearer(tokens()))
    running.client.send("PUT", f"/provision/tenants/{TENANT}", b"{", bearer(tokens()))
    running.client.send("POST", "/healthz")
    running.metrics.count_callback("succeeded")
    running.metrics.count_callback("error")
    with pytest.raises(ValueError, match="callback outcome 'maybe' is not one of succeeded, failed, error"):
        running.metrics.count_callback("maybe")

    answer = running.client.send("GET", "/metrics")

    text = answer.body.decode()
    assert answer.headers["Content-Type"].startswith("text/plain; version=")
    for line in (
        'btp_gitops_subscription_requests_total{code="202",method="PUT"} 1.0',
        'btp_gitops_subscription_requests_total{code="400",method="PUT"} 1.0',
        'btp_gitops_subscription_requests_total{code="405",method="POST"} 1.0',
        "btp_gitops_subscription_requests_in_flight 1.0",  # the scrape itself
        'btp_gitops_subscription_callbacks_total{outcome="succeeded"} 1.0',
        'btp_gitops_subscription_callbacks_total{outcome="error"} 1.0',
        'btp_gitops_subscription_request_duration_seconds_count{method="PUT",route="/provision/tenants/{tenantId}"} 2.0',
    ):
        assert line in text.splitlines(), line


def test_head_gets_headers_only_and_keep_alive_reuses_the_connection(running: Running) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", running.server.port, timeout=30)
    try:
        first = running.client.send("HEAD", "/healthz", connection=connection)
        sock = connection.sock
        second = running.client.send("GET", "/healthz", connection=connection)
        third = running.client.send("GET", "/readyz", connection=connection)
        assert connection.sock is sock
    finally:
        connection.close()

    assert (first.status, first.body, int(first.headers["Content-Length"])) == (
        405,
        b"",
        len(b'{"error":"method HEAD is not allowed on /healthz"}'),
    )
    assert (second.status, third.status) == (200, 200)


def test_a_chunked_body_is_read(running: Running, tokens: TokenFactory) -> None:
    body = json.dumps(saas_payload(TENANT, "acme")).encode()
    connection = http.client.HTTPConnection("127.0.0.1", running.server.port, timeout=60)
    try:
        chunks: Iterator[bytes] = iter([body[:10], body[10:50], body[50:]])
        connection.request(
            "PUT",
            f"/provision/tenants/{TENANT}",
            body=chunks,
            headers={**bearer(tokens()), "Content-Type": "application/json"},
            encode_chunked=True,
        )
        response = connection.getresponse()
        status = response.status
        response.read()
    finally:
        connection.close()

    assert status == 202


def test_an_oversized_body_is_413_and_closes(server_factory: ServerFactory, tokens: TokenFactory) -> None:
    running = server_factory(max_body_bytes=1000)

    answer = running.client.send("PUT", f"/provision/tenants/{TENANT}", b"x" * 2000, bearer(tokens()))

    assert (answer.status, answer.json) == (413, {"error": "the body exceeds 1000 bytes"})
    assert answer.headers["Connection"] == "close"


def raw_exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_protocol_garbage_is_refused_and_closed(running: Running, caplog: pytest.LogCaptureFixture) -> None:
    tls_hello = raw_exchange(running.server.port, b"\x16\x03\x01 nonsense\r\n\r\n")
    many_headers = b"".join(b"X-%d: y\r\n" % n for n in range(150))
    too_many = raw_exchange(running.server.port, b"GET /healthz HTTP/1.1\r\n" + many_headers + b"\r\n")
    bad_length = raw_exchange(
        running.server.port, b"PUT /provision/tenants/x HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n"
    )
    long_line = raw_exchange(running.server.port, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: a\r\n\r\n")

    for answer in (tls_hello, too_many, bad_length, long_line):  # each read to its end: closed
        assert answer.split(b"\r\n", 1)[0].split(b" ")[1] in (b"400", b"414", b"431"), answer
    refused = [r for r in caplog.records if r.name == "btp_gitops.subscription.http"]
    assert refused
    assert all(r.exc_info is None and "could not read" in r.getMessage() for r in refused)
    assert running.client.send("GET", "/healthz").status == 200


def test_tls(server_factory: ServerFactory, pki: Pki, tmp_path: Path) -> None:
    cert, key = tmp_path / "server.pem", tmp_path / "server-key.pem"
    cert.write_text(pki.localhost.pem)
    key.write_bytes(pki.localhost.key_pem())
    running = server_factory(tls_cert_file=str(cert), tls_key_file=str(key))
    context = ssl.create_default_context(cafile=str(pki.ca_file))

    connection = http.client.HTTPSConnection("localhost", running.server.port, timeout=30, context=context)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b'{"status":"ok"}')
    finally:
        connection.close()
    with pytest.raises(ssl.SSLError):  # a client that does not trust the CA never gets through
        untrusting = http.client.HTTPSConnection("localhost", running.server.port, timeout=30)
        try:
            untrusting.request("GET", "/healthz")
        finally:
            untrusting.close()
    assert running.server.scheme == "https"


def test_stop_does_not_wait_for_idle_keep_alive_connections(server_factory: ServerFactory) -> None:
    running = server_factory(keepalive_timeout=120.0)
    connection = http.client.HTTPConnection("127.0.0.1", running.server.port, timeout=30)
    try:
        assert running.client.send("GET", "/healthz", connection=connection).status == 200
        started = time.monotonic()
        running.server.stop()
        assert time.monotonic() - started < 5
    finally:
        connection.close()


def test_stop_right_after_start_and_without_start(running: Running) -> None:
    service = running.server.service
    for start in (True, False):
        server = SubscriptionServer(SubscriptionServerSettings(host="127.0.0.1", port=0), service)
        if start:
            server.start()
        started = time.monotonic()
        server.stop()
        server.stop()
        assert time.monotonic() - started < 5


@pytest.fixture
def switch_interval() -> Iterator[float]:
    """The interpreter's thread switch interval and garbage collector thresholds, restored after
    the test (they are the process's); objects the server froze are thawed."""
    before = sys.getswitchinterval()
    thresholds = gc.get_threshold()
    yield before
    sys.setswitchinterval(before)
    gc.set_threshold(*thresholds)
    gc.unfreeze()


def test_serving_sets_the_thread_switch_interval_of_the_settings(
    server_factory: ServerFactory, switch_interval: float
) -> None:
    """Handlers back from I/O get the GIL within the configured interval (default 1 ms, not the
    interpreter's 5 ms); None leaves the interpreter's as it is; out-of-range values are refused."""
    sys.setswitchinterval(0.005)
    running = server_factory()
    assert running.client.send("GET", "/healthz").status == 200
    assert sys.getswitchinterval() == pytest.approx(SubscriptionServerSettings().switch_interval)
    running.server.stop()  # a process that goes on gets its own interval back
    assert sys.getswitchinterval() == pytest.approx(0.005)

    sys.setswitchinterval(0.004)
    running = server_factory(switch_interval=None)
    assert running.client.send("GET", "/healthz").status == 200
    assert sys.getswitchinterval() == pytest.approx(0.004)

    for wrong in (0.0, -1.0, 2.0):
        with pytest.raises(ConfigurationError, match="thread switch interval"):
            SubscriptionServerSettings(switch_interval=wrong)


def test_serving_freezes_what_is_alive_and_collects_young_objects_less_often(
    server_factory: ServerFactory, switch_interval: float
) -> None:
    """Once serving, the objects alive at the start are out of the collector's scans and the
    youngest generation is collected after `gc_threshold` new objects; None leaves both alone."""
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    running = server_factory(gc_threshold=5000)
    assert running.client.send("GET", "/healthz").status == 200
    assert gc.get_threshold() == (5000, 10, 10)
    assert gc.get_freeze_count() > 0
    running.server.stop()  # and its collector as it was
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0

    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    running = server_factory(gc_threshold=None)
    assert running.client.send("GET", "/healthz").status == 200
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
    with pytest.raises(ConfigurationError, match="garbage collector"):
        SubscriptionServerSettings(gc_threshold=0)
