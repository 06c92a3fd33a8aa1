"""The attack table: hostile requests against `btp-gitops subscription-server` as a real process, over
real sockets, with the real API server and a real bare Git remote behind it (the issuer of token keys
is conftest's local stand-in for XSUAA).

Each row is one attack and what must hold afterwards: the answer (or the closed connection), nothing
written to Git or the cluster when the request is refused, the process's memory not grown by what
the attacker sent, the server still answering a legitimate request, and every line the process
logged a JSON object without a traceback.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.controller.clients.cluster_side import callback_names
from btp_gitops.controller.kube import CONFIG_MAP, SECRET, KubeClient
from btp_gitops.controller.records import consumer_tenant_name
from btp_gitops.controller.subscription.ledger import DEFAULT_CONTEXT_SECRET_SUFFIX
from tests.controller.subscription.conftest import APP, Bindings, Sources, bearer, run_git, saas_payload
from tests.controller.subscription.peers import Pki, TokenFactory
from tests.controller.subscription.test_process import CLI
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import free_port

pytestmark = pytest.mark.kube

TENANT = "3e2d1c0b-aaaa-4bbb-8ccc-0d1e2f3a4b5c"
OTHER_TENANT = "9a8b7c6d-eeee-4fff-8000-112233445566"
PATH = f"/provision/tenants/{TENANT}"
FLOOD_LIMIT = 64 << 20  # an attacker sends up to this; the server must stop reading long before
MEMORY_SLACK = 24 << 20  # growth of the server's resident memory an attack may cause at most


@dataclass
class Served:
    process: subprocess.Popen[str]
    port: int
    log: Path
    sources: Sources
    kube: KubeClient
    namespace: str
    tokens: TokenFactory

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.headers, response.read()
        finally:
            connection.close()

    def subscribe(self, tenant: str, sub_domain: str, **overrides: Any) -> tuple[int, bytes]:
        body = json.dumps(saas_payload(tenant, sub_domain, **overrides)).encode()
        headers = {**bearer(self.tokens()), "Content-Type": "application/json"}
        status, _, answer = self.request("PUT", f"/provision/tenants/{tenant}", body, headers)
        return status, answer

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def log_entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def wait_for_log(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for entry in self.log_entries():
                if predicate(entry):
                    return entry
            time.sleep(0.1)
        raise AssertionError("the expected log line did not come:\n" + self.log.read_text()[-4000:])

    def healthy(self) -> bool:
        return self.request("GET", "/healthz")[0] == 200


ServerStarter = Callable[..., Served]


@pytest.fixture
def start_server(
    kube_api: KubeAPI,
    kube: KubeClient,
    kube_namespace: str,
    sources: Sources,
    pki: Pki,
    bindings: Bindings,
    tokens: TokenFactory,
    tmp_path: Path,
) -> Iterator[ServerStarter]:
    started: list[Served] = []

    def start(*extra: str) -> Served:
        port = free_port()
        log = tmp_path / f"server-{len(started)}.log"
        args = [
            str(CLI), "subscription-server", "--kubeconfig", str(kube_api.kubeconfig),
            "--source-repo", str(sources.remote), "--workdir", str(tmp_path / f"workdir-{len(started)}"),
            "--address", f"127.0.0.1:{port}", "--jwks-ca-file", str(pki.ca_file), "--log-format", "json",
            *extra,
        ]  # fmt: skip
        with log.open("w") as stderr:
            process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        served = Served(process, port, log, sources, kube, kube_namespace, tokens)
        started.append(served)
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError):
                if served.request("GET", "/readyz")[0] == 200:
                    return served
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.1)

    yield start
    for served in started:
        if served.process.poll() is None:
            served.process.terminate()
            try:
                served.process.wait(30)
            except subprocess.TimeoutExpired:
                served.process.kill()
                served.process.wait(10)
        # Never a raw traceback: every line is a JSON object, none carries an exception.
        for entry in served.log_entries():
            assert "exception" not in entry, entry
        for token in tokens.made:
            assert token not in served.log.read_text()


# --- raw sockets ----------------------------------------------------------------------------------------


def request_head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def flood(sock: socket.socket, block: bytes) -> int:
    """Send `block` again and again until the server stops taking it (closed, or not reading) or
    FLOOD_LIMIT is sent; the bytes sent."""
    sock.settimeout(3)
    sent = 0
    with contextlib.suppress(OSError):  # reset, broken pipe, or timeout: the server stopped reading
        while sent < FLOOD_LIMIT:
            sock.sendall(block)
            sent += len(block)
    return sent


def read_answer(sock: socket.socket, timeout: float = 30) -> bytes:
    sock.settimeout(timeout)
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.") else 0


def answered(served: Served, status: int) -> Callable[[dict[str, Any]], bool]:
    return lambda entry: entry["message"].startswith(f"PUT /provision/tenants/{{tenantId}} {status} ")


@dataclass
class CountingListener:
    """A TCP port that accepts and closes at once, counting connections (a token key host that fails)."""

    sock: socket.socket = field(default_factory=lambda: socket.create_server(("127.0.0.1", 0)))
    accepted: int = 0

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.sock.accept()
                self.accepted += 1
                connection.close()


@contextlib.contextmanager
def counting_listener() -> Iterator[CountingListener]:
    listener = CountingListener()
    thread = threading.Thread(target=listener.serve, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        listener.sock.close()
        thread.join(5)


def json_headers(served: Served, **extra: str) -> dict[str, str]:
    return {**bearer(served.tokens()), "Content-Type": "application/json", **extra}


# --- the table ------------------------------------------------------------------------------------------


def negative_chunk_size(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    before, head = served.rss(), served.sources.head()
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        headers = json_headers(served, **{"Transfer-Encoding": "chunked"})
        sock.sendall(request_head("PUT", PATH, headers) + b"-1\r\n")
        sent = flood(sock, b"x" * 65536)
        read_answer(sock, 5)

    assert sent < FLOOD_LIMIT
    served.wait_for_log(
        lambda e: "could not read" in e["message"] or answered(served, 400)(e)
    )  # the parser refused it, or the body read did
    assert served.rss() - before < MEMORY_SLACK
    assert served.sources.head() == head
    assert served.healthy()


def negative_chunk_size_without_a_token(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        head = request_head("PUT", PATH, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        sock.sendall(head)  # no byte of the body yet: the answer comes from the head alone
        answer = read_answer(sock, 10)

    assert status_of(answer) == 401
    assert answer.endswith(b'{"error":"the request has no Authorization header"}')
    assert b"Connection: close" in answer  # the body is never read: the connection ends instead
    assert served.healthy()


def endless_chunks(start: ServerStarter, tmp_path: Path) -> None:
    served = start("--max-body-bytes", "100000")
    before = served.rss()
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        sock.sendall(request_head("PUT", PATH, json_headers(served, **{"Transfer-Encoding": "chunked"})))
        sent = flood(sock, b"%x\r\n%s\r\n" % (4096, b"y" * 4096))

    assert sent < FLOOD_LIMIT
    served.wait_for_log(answered(served, 413))
    assert served.rss() - before < MEMORY_SLACK
    assert served.healthy()


def oversized_content_length(start: ServerStarter, tmp_path: Path) -> None:
    served = start("--max-body-bytes", "100000")
    head = served.sources.head()
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        sock.sendall(request_head("PUT", PATH, json_headers(served, **{"Content-Length": str(10**12)})))
        answer = read_answer(sock, 10)

    assert status_of(answer) == 413  # answered from the header alone, before any byte of the body
    assert answer.endswith(b'{"error":"the body exceeds 100000 bytes"}')
    assert served.sources.head() == head


def slow_body(start: ServerStarter, tmp_path: Path) -> None:
    served = start("--body-timeout", "2")
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        sock.sendall(request_head("PUT", PATH, json_headers(served, **{"Content-Length": "1000"})))
        started = time.monotonic()
        closed = False
        sock.settimeout(0.5)
        while time.monotonic() - started < 20:
            try:
                sock.sendall(b"{")
                if sock.recv(65536):
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break

    assert closed
    assert time.monotonic() - started < 10
    served.wait_for_log(answered(served, 408))


def slowloris_headers(start: ServerStarter, tmp_path: Path) -> None:
    served = start("--idle-timeout", "2")
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        sock.sendall(b"PUT " + PATH.encode() + b" HTTP/1.1\r\nHost: a\r\n")
        started = time.monotonic()
        sock.settimeout(0.5)
        closed = False
        while time.monotonic() - started < 20:
            try:
                sock.sendall(b"X")  # one byte of a header line that never ends
                if sock.recv(65536) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break

    assert closed
    assert time.monotonic() - started < 10
    assert served.healthy()


def idle_connections(start: ServerStarter, tmp_path: Path) -> None:
    served = start("--idle-timeout", "120")
    idle: list[socket.socket] = []
    try:
        for n in range(2000):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
            if n % 2:
                sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # half a request head
            idle.append(sock)
        started = time.monotonic()
        status, body = served.subscribe(TENANT, "idle-acme")
        seconds = time.monotonic() - started
        assert status == 202, body
        assert seconds < 20
        for sock in idle[:50]:  # they are held, not reset
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
    finally:
        for sock in idle:
            sock.close()


def wrong_iss(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    head = served.sources.head()
    token = served.tokens(claims={"iss": "https://evil.example.com/oauth/token"})
    body = json.dumps(saas_payload(TENANT, "acme")).encode()
    status, _, answer = served.request(
        "PUT", PATH, body, {**bearer(token), "Content-Type": "application/json"}
    )

    assert (status, json.loads(answer)) == (
        401,
        {"error": "the bearer token's issuer (iss) is outside the UAA domain of the application"},
    )
    assert served.sources.head() == head


def wrong_content_type(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    head = served.sources.head()
    body = json.dumps(saas_payload(TENANT, "acme")).encode()
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = bearer(served.tokens())
        if content_type:
            headers["Content-Type"] = content_type
        status, _, answer = served.request("PUT", PATH, body, headers)
        assert (status, json.loads(answer)) == (
            415,
            {"error": "the body must be JSON (Content-Type: application/json)"},
        ), content_type
    assert served.sources.head() == head


def unknown_jku_hosts(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    body = json.dumps(saas_payload(TENANT, "acme")).encode()
    with counting_listener() as outside, counting_listener() as failing:
        # Not within the UAA domain (localhost): refused before any fetch.
        token = served.tokens(header={"jku": f"https://127.0.0.1:{outside.port}/token_keys"})
        status, _, answer = served.request(
            "PUT", PATH, body, {**bearer(token), "Content-Type": "application/json"}
        )
        assert status == 401, answer
        # Within the domain but failing: fetched once, then answered from the failure cache.
        retry_after = []
        for _ in range(3):
            token = served.tokens(header={"jku": f"https://localhost:{failing.port}/token_keys"})
            status, headers, answer = served.request(
                "PUT", PATH, body, {**bearer(token), "Content-Type": "application/json"}
            )
            assert status == 503, answer
            retry_after.append(int(headers["Retry-After"]))
        assert (outside.accepted, failing.accepted) == (0, 1)
        assert all(seconds >= 1 for seconds in retry_after)


def oversized_guid(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    head = served.sources.head()
    status, answer = served.subscribe(TENANT, "acme", globalAccountGUID="g" * 400_000)

    assert status == 400
    assert json.loads(answer)["error"].startswith("globalAccountGUID: ")
    assert served.sources.head() == head
    assert (
        served.kube.get(
            SECRET, consumer_tenant_name(APP, TENANT) + DEFAULT_CONTEXT_SECRET_SUFFIX, served.namespace
        )
        is None
    )


def _nothing_left_of(served: Served, tenant: str) -> None:
    name = consumer_tenant_name(APP, tenant)
    assert served.kube.get(SECRET, name + DEFAULT_CONTEXT_SECRET_SUFFIX, served.namespace) is None
    assert all(served.kube.get(CONFIG_MAP, n, served.namespace) is None for n in callback_names(name))
    assert served.sources.show(f"apps/{APP}/tenants/{name}.yaml") is None


def subdomain_conflict(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    assert served.subscribe(TENANT, "acme")[0] == 202
    head = served.sources.head()

    status, answer = served.subscribe(OTHER_TENANT, "acme")

    assert status == 409, answer
    assert "subdomain acme is taken by CAPTenant" in json.loads(answer)["error"]
    assert served.sources.head() == head
    _nothing_left_of(served, OTHER_TENANT)


def subdomain_conflict_found_by_the_write(start: ServerStarter, tmp_path: Path) -> None:
    """Another writer records the subdomain after the server's last look: the write finds it."""
    served = start()
    assert served.subscribe(TENANT, "first")[0] == 202  # the server's index is of this head
    checkout = tmp_path / "other-writer"
    run_git(tmp_path, "clone", "--quiet", str(served.sources.remote), str(checkout))
    name = consumer_tenant_name(APP, "c0ffee00-0000-4000-8000-000000000001")
    record = checkout / "apps" / APP / "tenants" / f"{name}.yaml"
    record.write_text(
        "apiVersion: sme.sap.com/v1alpha1\nkind: CAPTenant\n"
        f"metadata:\n  name: {name}\n  namespace: {served.namespace}\n"
        f"spec:\n  capApplicationInstance: {APP}\n  subDomain: raced\n"
        "  tenantId: c0ffee00-0000-4000-8000-000000000001\n"
    )
    run_git(checkout, "add", "--all")
    run_git(checkout, "commit", "--quiet", "-m", "another writer")
    run_git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    head = served.sources.head()

    status, answer = served.subscribe(OTHER_TENANT, "raced")

    assert status == 409, answer
    assert served.sources.head() == head
    _nothing_left_of(served, OTHER_TENANT)


def overload(start: ServerStarter, tmp_path: Path) -> None:
    served = start("--max-concurrent", "1", "--max-queued", "0")
    tenants = [f"0000000{n:x}-1111-4222-8333-444455556666" for n in range(12)]
    results: dict[str, tuple[int, str]] = {}

    def subscribe(tenant: str) -> None:
        body = json.dumps(saas_payload(tenant, f"busy-{tenant[7]}")).encode()
        status, headers, _ = served.request("PUT", f"/provision/tenants/{tenant}", body, json_headers(served))
        results[tenant] = (status, headers.get("Retry-After", ""))

    threads = [threading.Thread(target=subscribe, args=(tenant,)) for tenant in tenants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    statuses = sorted(status for status, _ in results.values())
    assert set(statuses) == {202, 503}, statuses
    for tenant, (status, retry_after) in results.items():
        if status == 503:
            assert int(retry_after) >= 1
            _nothing_left_of(served, tenant)  # refused before any handler: nothing written
    assert served.healthy()  # the probes never wait for a worker


def client_disconnect(start: ServerStarter, tmp_path: Path) -> None:
    served = start()
    body = json.dumps(saas_payload(TENANT, "gone")).encode()
    headers = json_headers(served, **{"Content-Length": str(len(body))})
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        sock.sendall(request_head("PUT", PATH, headers) + body)
    # closed before the answer (the record's push takes longer than this)

    entry = served.wait_for_log(lambda e: "went away before its answer" in e["message"])
    assert entry["level"] == "info"
    assert served.healthy()


ATTACKS: dict[str, Callable[[ServerStarter, Path], None]] = {
    "negative chunk size": negative_chunk_size,
    "negative chunk size without a token": negative_chunk_size_without_a_token,
    "endless chunks": endless_chunks,
    "oversized Content-Length": oversized_content_length,
    "slow body": slow_body,
    "slowloris headers": slowloris_headers,
    "2,000 idle connections": idle_connections,
    "wrong iss": wrong_iss,
    "wrong content type": wrong_content_type,
    "unknown jku hosts": unknown_jku_hosts,
    "oversized GUID": oversized_guid,
    "subdomain conflict": subdomain_conflict,
    "subdomain conflict found by the write": subdomain_conflict_found_by_the_write,
    "overload": overload,
    "client disconnect": client_disconnect,
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack(attack: str, start_server: ServerStarter, tmp_path: Path) -> None:
    ATTACKS[attack](start_server, tmp_path)
