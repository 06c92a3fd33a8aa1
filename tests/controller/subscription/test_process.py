"""`btp-gitops subscription-server` as a real process: flags to a running server, a subscribe with a
signed token answered 202 once the record is on the bare remote, probes, and a clean SIGTERM. The
issuer (token keys over HTTPS) is the local stand-in of conftest; nothing else is faked."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from btp_gitops.controller.records import consumer_tenant_name
from tests.controller.subscription.conftest import APP, Bindings, Sources, bearer, saas_payload
from tests.controller.subscription.peers import Pki, TokenFactory
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import free_port

pytestmark = pytest.mark.kube

CLI = Path(sys.executable).parent / "btp-gitops"
TENANT = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"


def _request(
    port: int, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(
            method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
        )
        response = connection.getresponse()
        return response.status, response.read()
    except OSError:
        return 0, b""
    finally:
        connection.close()


@pytest.fixture
def server_process(
    kube_api: KubeAPI, sources: Sources, pki: Pki, bindings: Bindings, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], int, Path]]:
    port = free_port()
    log = tmp_path / "server.log"
    args = [
        str(CLI), "subscription-server", "--kubeconfig", str(kube_api.kubeconfig),
        "--source-repo", str(sources.remote), "--workdir", str(tmp_path / "workdir"),
        "--address", f"127.0.0.1:{port}", "--jwks-ca-file", str(pki.ca_file), "--log-format", "json",
    ]  # fmt: skip
    with log.open("w") as stderr:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    deadline = time.monotonic() + 60
    while _request(port, "GET", "/readyz")[0] != 200:
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the server did not become ready"
        time.sleep(0.1)
    yield process, port, log
    if process.poll() is None:
        process.kill()
        process.wait(10)


def test_a_subscription_through_the_process(
    server_process: tuple[subprocess.Popen[str], int, Path], sources: Sources, tokens: TokenFactory
) -> None:
    process, port, log = server_process
    assert _request(port, "GET", "/healthz")[0] == 200
    headers = bearer(tokens())
    status, body = _request(
        port,
        "PUT",
        f"/provision/tenants/{TENANT}",
        json.dumps(saas_payload(TENANT, "umbrella")).encode(),
        headers,
    )
    assert status == 202, body
    name = consumer_tenant_name(APP, TENANT)
    record = sources.show(f"apps/{APP}/tenants/{name}.yaml")
    assert record is not None and yaml.safe_load(record)["spec"]["subDomain"] == "umbrella"
    status, metrics = _request(port, "GET", "/metrics")
    assert status == 200 and b'code="202"' in metrics
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0
    text = log.read_text()
    assert headers["Authorization"].split()[1] not in text  # the token is never logged


def test_without_a_source_repository_it_refuses_to_start(kube_api: KubeAPI) -> None:
    done = subprocess.run(
        [str(CLI), "subscription-server", "--kubeconfig", str(kube_api.kubeconfig), "--log-format", "text"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == "error: the subscription server records tenants in Git: pass --source-repo"
