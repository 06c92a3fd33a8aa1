"""Subscription-server replicas as real `btp-gitops subscription-server` processes, for the tests
that run two of them on one remote (test_replicas.py, test_replica_crash.py), and the client retry
the docs promise callers (docs/subscription-server.md, "Client retry")."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.controller.subscription.conftest import bearer, saas_payload
from tests.support.waiting import free_port

CLI = Path(sys.executable).parent / "btp-gitops"


@dataclass(frozen=True)
class Replica:
    name: str
    port: int
    process: subprocess.Popen[str]
    log: Path

    def send(
        self,
        method: str,
        tenant_id: str,
        sub_domain: str,
        token: str,
        callback: str | None = None,
    ) -> tuple[int, Any]:
        status, _, body = self.exchange(method, tenant_id, sub_domain, token, callback)
        return status, body

    def exchange(
        self,
        method: str,
        tenant_id: str,
        sub_domain: str,
        token: str,
        callback: str | None = None,
    ) -> tuple[int, Mapping[str, str], Any]:
        """One request on a new connection: (status, headers, JSON body or raw bytes). A connection
        error (refused, reset, closed without an answer) is raised as OSError or HTTPException."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request(
                method,
                f"/provision/tenants/{tenant_id}",
                body=json.dumps(saas_payload(tenant_id, sub_domain)).encode(),
                headers={"Content-Type": "application/json", **bearer(token, callback)},
            )
            response = connection.getresponse()
            status, headers, body = response.status, dict(response.headers), response.read()
        finally:
            connection.close()
        try:
            return status, headers, json.loads(body)
        except ValueError:
            return status, headers, body

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush; whatever it was doing stops mid-way."""
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def ready(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def launch_replica(name: str, kubeconfig: Path, remote: Path, workdir: Path, ca_file: Path) -> Replica:
    """Start `btp-gitops subscription-server` on a free loopback port (not waiting for it)."""
    port = free_port()
    log = workdir.parent / f"replica-{name}.log"
    args = [
        str(CLI), "subscription-server", "--kubeconfig", str(kubeconfig),
        "--source-repo", str(remote), "--workdir", str(workdir),
        "--address", f"127.0.0.1:{port}", "--jwks-ca-file", str(ca_file), "--log-format", "json",
    ]  # fmt: skip
    with log.open("a") as stderr:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    return Replica(name, port, process, log)


def wait_ready(replica: Replica, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready(replica.port):
        assert replica.process.poll() is None, replica.log.read_text()
        assert time.monotonic() < deadline, f"replica {replica.name} did not become ready"
        time.sleep(0.1)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def _serves_the_remote(pid: int) -> bool:
    """Git's remote side of a local-path remote (receive-pack, upload-pack), which a real remote
    runs on its own host: a crash of the replica does not kill it there either."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return b"receive-pack" in command or b"upload-pack" in command


def kill_container(replica: Replica) -> list[int]:
    """SIGKILL the replica and, at the same moment, every process it started (its Git commands),
    as the kubelet or the OOM killer ends a container: nothing finishes, nothing cleans up. The
    remote's own side of a push or fetch is spared (it runs on the Git server). The pids killed."""
    tree = _children()
    doomed: list[int] = []
    pending = [replica.process.pid]
    while pending:
        pid = pending.pop()
        if pid != replica.process.pid and _serves_the_remote(pid):
            continue
        doomed.append(pid)
        pending.extend(tree.get(pid, []))
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    replica.process.wait(10)
    return doomed


def wait_for_child(replica: Replica, timeout: float) -> bool:
    """Wait until the replica runs a command of its own (a Git command: commit, push, fetch), so
    that a kill lands in the middle of a write; False when none came within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _children().get(replica.process.pid):
            return True
        time.sleep(0.002)
    return False


RETRY_STATUSES = frozenset({503})


@dataclass
class Attempts:
    """The answer a caller finally got after the documented retry, and what it took."""

    status: int
    body: Any
    attempts: int
    replicas: list[str]


def send_with_retry(
    pick: Callable[[int], Replica],
    method: str,
    tenant_id: str,
    sub_domain: str,
    token: Callable[[], str],
    callback: str | None,
    deadline: float = 120.0,
) -> Attempts:
    """The client retry of docs/subscription-server.md: the same request again when there was no
    answer (refused, reset, closed) or a 503, after its Retry-After (no answer: after a short
    pause), on whichever replica `pick(attempt)` gives; any other answer is final."""
    ends = time.monotonic() + deadline
    used: list[str] = []
    attempt = 0
    while True:
        replica = pick(attempt)
        used.append(replica.name)
        attempt += 1
        try:
            status, headers, body = replica.exchange(method, tenant_id, sub_domain, token(), callback)
        except (OSError, http.client.HTTPException):
            pause = 0.2
        else:
            if status not in RETRY_STATUSES:
                return Attempts(status, body, attempt, used)
            pause = float(headers["Retry-After"])
        assert time.monotonic() + pause < ends, f"{method} {tenant_id}: no final answer after {used}"
        time.sleep(pause)
