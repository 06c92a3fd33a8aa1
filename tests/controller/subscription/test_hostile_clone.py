"""`btp-gitops subscription-server` and `btp-gitops controller` as real processes facing a source
repository (a bare remote on disk) someone pushed symbolic links to, and the server facing request
bodies it cannot parse.

Covers:
- a committed `zero.yaml -> /dev/zero`, a committed record linked to a file outside the clone (a
  CAPTenant naming a canary) and a FIFO made in the clone directly (Git cannot commit one): the
  server starts, serves, answers a subscribe 503 `UnreadableSource`, logs each path as
  unreadable, pushes nothing, never shows the canary, and its peak memory stays that of an idle
  server; the controller (with the real API server) starts, becomes ready and reports the same
  paths from its reconciles, bounded alike. (Before: the first index read /dev/zero whole,
  exhausting memory on every replica.)
- a committed `tenants -> ../../outside` link (with the real API server, so the subscribe gets as
  far as writing its record): 503, nothing written outside the clone (before: 202, the record
  written through the link, outside the clone).
- bodies that are no JSON object (a 5,000-digit number, nesting 100,000 deep, invalid UTF-8, a
  top-level array, not JSON): 400 with a JSON error, before any authentication work, and no
  traceback in the log (before: the number gave 500 and a traceback).

The server tests without the API server give it a kubeconfig for a closed port (as
test_process_exit_codes does): nothing they send gets as far as the cluster, and any
authentication work would need it (the binding Secrets are read first), so a 400 is proof that
none was done; the token's key host, a counting listener, is never asked either. Every process
runs under an address-space limit and a watchdog on its resident memory, so a build that reads
/dev/zero fails the test instead of the machine.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import jwt
import pytest
import yaml

from tests.controller.subscription.conftest import (
    APP,
    Bindings,
    Sources,
    application_documents,
    bare_remote,
    bearer,
    saas_payload,
)
from tests.controller.subscription.peers import Pki, TokenFactory, rsa_key
from tests.controller.subscription.test_attacks import counting_listener
from tests.controller.subscription.test_end_to_end import MODULE_RESOURCES, crds, http_status
from tests.controller.subscription.test_process import CLI
from tests.controller.test_hostile_clone import push_links
from tests.controller.test_process_exit_codes import KUBECONFIG
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import free_port

__all__ = ["crds"]  # the fixture this module shares with test_end_to_end

ADDRESS_SPACE = 3 << 30  # a process that reads /dev/zero stops here (MemoryError), not the machine
RSS_ALARM = 1 << 30  # and the watchdog kills it once its resident memory passes this
PEAK_LIMIT = 250 << 20  # what a server or controller facing these trees may use at its peak
CANARY = "canary-0b9e8d7c6a"
CANARY_TENANT = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
NEW_TENANT = "3e2d1c0b-aaaa-4bbb-8ccc-0d1e2f3a4b5c"
NAMESPACE = "bookshop"  # of the application in the remotes made without the API server


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def memory_of(pid: int, field_name: str) -> int:
    """VmRSS or VmHWM (peak resident memory) of a process, in bytes (0 once it is gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass
class Watchdog:
    """Kills the process once its resident memory passes RSS_ALARM; `fired` says it did."""

    process: subprocess.Popen[str]
    fired: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self._stop.wait(0.01) and self.process.poll() is None:
            if memory_of(self.process.pid, "VmRSS") > RSS_ALARM:
                self.fired = True
                self.process.kill()

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Guarded:
    """A process started under the limits, with its log and watchdog."""

    process: subprocess.Popen[str]
    log: Path
    watchdog: Watchdog

    def peak(self) -> int:
        return memory_of(self.process.pid, "VmHWM")

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for_log(self, needle: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            assert self.process.poll() is None, f"exited {self.process.returncode}:\n{self.text()[-3000:]}"
            assert time.monotonic() < deadline, f"no log line with {needle!r}:\n{self.text()[-3000:]}"
            time.sleep(0.1)

    def entries(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.text().splitlines() if line.strip()]


GuardedStarter = Callable[[str, list[str], int], Guarded]


@pytest.fixture
def start_guarded(tmp_path: Path) -> Iterator[GuardedStarter]:
    started: list[Guarded] = []

    def start(name: str, args: list[str], port: int) -> Guarded:
        log = tmp_path / f"{name}.log"
        with log.open("w") as stderr:
            process = subprocess.Popen(
                [str(CLI), *args],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                text=True,
                preexec_fn=_limit_address_space,  # noqa: PLW1509 - a limit, set before exec
            )
        guarded = Guarded(process, log, Watchdog(process))
        started.append(guarded)
        deadline = time.monotonic() + 90
        while http_status(port, "/readyz") != 200:
            assert not guarded.watchdog.fired, f"{name} passed {RSS_ALARM} bytes of resident memory"
            assert process.poll() is None, f"{name} exited {process.returncode}:\n{guarded.text()[-3000:]}"
            assert time.monotonic() < deadline, f"{name} did not become ready:\n{guarded.text()[-3000:]}"
            time.sleep(0.1)
        return guarded

    yield start
    for guarded in started:
        guarded.watchdog.stop()
        if guarded.process.poll() is None:
            guarded.process.terminate()
            try:
                guarded.process.wait(30)
            except subprocess.TimeoutExpired:
                guarded.process.kill()
                guarded.process.wait(10)
        # Never a raw traceback: every line is a JSON object, none carries an exception.
        for entry in guarded.entries():
            assert "exception" not in entry, entry
        assert CANARY not in guarded.text()


def server_args(kubeconfig: Path, remote: Path, workdir: Path, port: int, *extra: str) -> list[str]:
    return [
        "subscription-server", "--kubeconfig", str(kubeconfig), "--source-repo", str(remote),
        "--workdir", str(workdir), "--address", f"127.0.0.1:{port}", "--log-format", "json", *extra,
    ]  # fmt: skip


def unreachable_cluster(tmp_path: Path) -> Path:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    return kubeconfig


def own_remote(tmp_path: Path) -> Path:
    """A bare remote with the application of conftest (namespace `bookshop`), no cluster needed."""
    directory = tmp_path / "sources"
    directory.mkdir()
    return bare_remote(directory, {f"apps/{APP}/capapplication.yaml": application_documents(NAMESPACE)})


def head_of(remote: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(remote), "rev-parse", "refs/heads/main"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def token_of_good_form(key_host_port: int) -> str:
    """A token the server's first check (its form, no I/O) lets through: RS256, a `jku` on
    localhost. Verifying it would fetch keys from `key_host_port`."""
    header = {"jku": f"https://localhost:{key_host_port}/token_keys", "kid": "key-1"}
    return jwt.encode({"sub": "someone"}, rsa_key(), algorithm="RS256", headers=header)


def canary_record(namespace: str) -> str:
    """A CAPTenant of the application kept outside the clone, named after the canary."""
    return yaml.safe_dump(
        {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "CAPTenant",
            "metadata": {"name": CANARY, "namespace": namespace},
            "spec": {"capApplicationInstance": APP, "subDomain": CANARY, "tenantId": CANARY_TENANT},
        }
    )


def hostile_links(remote: Path, namespace: str, tmp_path: Path) -> None:
    """zero.yaml -> /dev/zero and a record linked to a file outside every clone (`tmp_path/outside`,
    four levels up from `<clone>/apps/bookshop/tenants`), pushed to the remote."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "record.yaml").write_text(canary_record(namespace))
    links = {
        f"apps/{APP}/zero.yaml": "/dev/zero",
        f"apps/{APP}/tenants/linked.yaml": "../../../../outside/record.yaml",
    }
    push_links(remote, tmp_path, links)


def put(port: int, tenant: str, body: bytes, token: str) -> tuple[int, str, bytes]:
    """A SaaS registry PUT for `tenant`: status, Content-Type and body of the answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {**bearer(token), "Content-Type": "application/json"}
        connection.request("PUT", f"/provision/tenants/{tenant}", body=body, headers=headers)
        response = connection.getresponse()
        return response.status, str(response.headers["Content-Type"]), response.read()
    finally:
        connection.close()


def subscribe(port: int, token: str, tenant: str, sub_domain: str) -> tuple[int, dict[str, object]]:
    status, _, answer = put(port, tenant, json.dumps(saas_payload(tenant, sub_domain)).encode(), token)
    return status, json.loads(answer)


def test_the_server_serves_and_reports_links_and_a_fifo_in_its_clone(
    start_guarded: GuardedStarter, tmp_path: Path
) -> None:
    remote = own_remote(tmp_path)
    hostile_links(remote, NAMESPACE, tmp_path)
    head = head_of(remote)
    port, workdir = free_port(), tmp_path / "workdir-0"

    server = start_guarded("server", server_args(unreachable_cluster(tmp_path), remote, workdir, port), port)
    server.wait_for_log(f"apps/{APP}/zero.yaml: a symbolic link, which the controller never follows")
    os.mkfifo(workdir / "apps" / APP / "pipe.yaml")  # Git cannot commit one: made in the clone

    with counting_listener() as key_host:
        status, answer = subscribe(port, token_of_good_form(key_host.port), NEW_TENANT, CANARY)

    assert (status, answer) == (
        503,
        {"error": "the request could not be completed", "reason": "UnreadableSource"},
    )
    server.wait_for_log(f"apps/{APP}/pipe.yaml: not a regular file (a device, FIFO or socket)")
    text = server.text()
    assert f"apps/{APP}/tenants/linked.yaml: a symbolic link, which the controller never follows" in text
    assert CANARY not in text
    assert head_of(remote) == head
    assert server.peak() < PEAK_LIMIT, f"peak resident memory {server.peak()} bytes"


NOT_JSON_OBJECTS = {
    "a 5,000-digit number": (
        b'{"subscribedTenantId": ' + b"7" * 5000 + b"}",
        "the body holds a number too long to read",
    ),
    "nesting 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, "the body nests too deeply"),
    "invalid UTF-8": (b'{"subscribedTenantId": "\xff\xfe"}', "the body is not UTF-8"),
    "a top-level array": (b"[1, 2]", "a JSON object is expected, got an array"),
    "not JSON": (b"{'single': 'quotes'}", "the body is not JSON (line 1, column 2)"),
}


def test_bodies_that_are_no_json_object_are_400_before_any_authentication_work(
    start_guarded: GuardedStarter, tmp_path: Path
) -> None:
    remote = own_remote(tmp_path)
    port = free_port()
    args = server_args(unreachable_cluster(tmp_path), remote, tmp_path / "workdir-0", port)
    server = start_guarded("server", args, port)

    with counting_listener() as key_host:
        token = token_of_good_form(key_host.port)
        answers = {name: put(port, NEW_TENANT, body, token) for name, (body, _) in NOT_JSON_OBJECTS.items()}
        assert key_host.accepted == 0

    for name, (_, error) in NOT_JSON_OBJECTS.items():
        status, content_type, answer = answers[name]
        assert (status, content_type, json.loads(answer)) == (400, "application/json", {"error": error}), name
    assert "unexpected error" not in server.text()


@pytest.mark.kube
def test_a_committed_tenants_link_is_never_written_through(
    kube_api: KubeAPI,
    sources: Sources,
    pki: Pki,
    bindings: Bindings,
    tokens: TokenFactory,
    start_guarded: GuardedStarter,
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    push_links(
        sources.remote, tmp_path, {f"apps/{APP}/tenants": "../../../outside"}
    )  # from <clone>/apps/<app>
    head = sources.head()
    port = free_port()
    jwks = ("--jwks-ca-file", str(pki.ca_file))
    server = start_guarded(
        "server", server_args(kube_api.kubeconfig, sources.remote, tmp_path / "workdir-0", port, *jwks), port
    )

    status, answer = subscribe(port, tokens(), NEW_TENANT, "newco")

    assert list(outside.iterdir()) == []
    assert (status, answer.get("reason")) == (503, "UnreadableSource"), answer
    server.wait_for_log("tenants: a symbolic link, which the controller never follows in its clone")
    assert f"cannot write apps/{APP}/tenants/" in server.text()
    assert sources.head() == head


@pytest.mark.kube
def test_the_controller_starts_and_reports_links_in_its_clone(
    kube_api: KubeAPI,
    kube_namespace: str,
    sources: Sources,
    crds: None,
    start_guarded: GuardedStarter,
    tmp_path: Path,
) -> None:
    hostile_links(sources.remote, kube_namespace, tmp_path)
    port = free_port()
    args = [
        "controller", "--kubeconfig", str(kube_api.kubeconfig), "--namespace", kube_namespace,
        "--no-leader-elect", "--source-repo", str(sources.remote), "--workdir", str(tmp_path / "controller-clone"),
        "--probe-address", f"127.0.0.1:{port}", "--module-resources", str(MODULE_RESOURCES), "--log-format", "json",
    ]  # fmt: skip

    controller = start_guarded("controller", args, port)

    # The retirement reconciler looks at every namespace at start: its read of the tree reports.
    controller.wait_for_log(f"apps/{APP}/zero.yaml: a symbolic link, which the controller never follows")
    assert f"apps/{APP}/tenants/linked.yaml: a symbolic link" in controller.text()
    assert http_status(port, "/healthz") == 200
    assert controller.peak() < PEAK_LIMIT, f"peak resident memory {controller.peak()} bytes"
