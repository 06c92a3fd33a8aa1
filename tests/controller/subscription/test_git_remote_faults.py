"""The subscription server when its Git remote misbehaves: the real server on loopback, the real API
server, tenant records pushed over HTTP to `git http-backend` on 127.0.0.1 (tests.support.git_http),
which the tests make hang, close its port, or take a push and withhold the answer.

Covers: a hung remote and an unreachable one answer 503 with `Retry-After` within the Git timeout,
record nothing, withdraw the callback, and turn `/readyz` 503 (JSON naming why) until the remote
answers again; a push whose answer is lost after it landed is a 202 with the callback kept; a push
that may have landed while the remote cannot be asked is a 503 that keeps the callback, and the
retry (the SaaS registry's) answers 202 for the one record that landed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from btp_gitops.controller.clients.cluster_side import Operation, callback_names, pending_callback_name
from btp_gitops.controller.records import consumer_tenant_name
from tests.controller.subscription.conftest import (
    APP,
    Running,
    ServerFactory,
    Sources,
    SourcesFactory,
    bearer,
    saas_payload,
)
from tests.controller.subscription.peers import TokenFactory
from tests.support.git_http import GitHttpRemote

pytestmark = pytest.mark.kube

TENANT = "5d1f0a2b-7c3e-4d8f-9a1b-2c3d4e5f6a7b"
CALLBACK = "/saas-manager/v1/subscription-callback/1234/result"
TIMEOUT = 5.0  # long enough for a fetch over HTTP (a CGI per request) on a busy machine
RECORD = f"apps/{APP}/tenants/{consumer_tenant_name(APP, TENANT)}.yaml"


@pytest.fixture
def http_sources(sources_factory: SourcesFactory) -> Iterator[tuple[Sources, GitHttpRemote]]:
    served: list[GitHttpRemote] = []

    def over_http(bare: Path) -> str:
        served.append(GitHttpRemote(bare.parent))
        return served[-1].url(bare.name, user_info="writer:remote-password")

    sources = sources_factory(url_of=over_http, network_timeout=TIMEOUT, probe_interval=0.2)
    yield sources, served[0]
    served[0].stop()


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def subscribe(running: Running, tokens: TokenFactory) -> tuple[int, dict[str, str], object, float]:
    started = time.monotonic()
    answer = running.client.send(
        "PUT", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "acme"), bearer(tokens(), CALLBACK)
    )
    return answer.status, dict(answer.headers), answer.json, time.monotonic() - started


def subscribe_as_the_registry_retries(
    running: Running, tokens: TokenFactory, seconds: float = 30
) -> tuple[int, object]:
    """The SaaS registry's retry: the same request again after each 503 (at most a second apart
    here, whatever its Retry-After), until another answer or `seconds`: (status, body).

    Needed after the remote recovers: a request the remote held when `serve()` let it go is closed
    unanswered (as a recovering remote drops what it held), and a Git command of the server that
    sent it just before then fails; that request is a 503, and its retry is what must succeed."""
    deadline = time.monotonic() + seconds
    while True:
        status, headers, body, _ = subscribe(running, tokens)
        if status != 503 or time.monotonic() > deadline:
            return status, body
        time.sleep(min(float(headers.get("Retry-After", "1")), 1.0))


def callbacks(running: Running) -> list[str]:
    names = callback_names(consumer_tenant_name(APP, TENANT))
    return [name for name in names if running.config_map(name) is not None]


def provisioning_callback(running: Running) -> dict[str, str]:
    config_map = running.config_map(
        pending_callback_name(consumer_tenant_name(APP, TENANT), Operation.PROVISIONING)
    )
    assert config_map is not None, "the provisioning callback was withdrawn"
    data: dict[str, str] = config_map["data"]
    return data


def readyz(running: Running) -> tuple[int, object, str | None]:
    answer = running.client.send("GET", "/readyz")
    return answer.status, answer.json, answer.headers.get("Retry-After")


@pytest.mark.parametrize("fault", ["hung", "closed port"])
def test_a_remote_that_does_not_answer_is_a_quick_503_and_readyz_follows_it(
    server_factory: ServerFactory,
    http_sources: tuple[Sources, GitHttpRemote],
    tokens: TokenFactory,
    fault: str,
) -> None:
    sources, remote = http_sources
    running = server_factory(sources)
    assert readyz(running)[0] == 200
    if fault == "hung":
        remote.hang()
    else:
        remote.close()

    status, headers, body, took = subscribe(running, tokens)

    assert status == 503, body
    assert int(headers["Retry-After"]) >= 1
    assert took < TIMEOUT + 5, took
    assert isinstance(body, dict) and body["reason"] == ("GitTimeout" if fault == "hung" else "GitError")
    assert sources.show(RECORD) is None
    assert callbacks(running) == []  # nothing recorded: the callback is withdrawn
    ready_status, ready_body, retry_after = readyz(running)
    assert ready_status == 503 and retry_after is not None
    assert isinstance(ready_body, dict) and "source repository is unreachable" in ready_body["error"]
    assert "remote-password" not in str(ready_body)

    if fault == "hung":
        remote.serve()
    else:
        remote.reopen()
    wait_for(lambda: readyz(running)[0] == 200, 15, "/readyz to recover")
    status, body = subscribe_as_the_registry_retries(running, tokens)
    assert status == 202, body
    assert sources.show(RECORD) is not None


def test_a_push_whose_answer_is_lost_after_it_landed_is_a_202(
    server_factory: ServerFactory, http_sources: tuple[Sources, GitHttpRemote], tokens: TokenFactory
) -> None:
    sources, remote = http_sources
    running = server_factory(sources)
    remote.lose_push_ack()

    status, _, body, _ = subscribe(running, tokens)

    assert status == 202, body
    assert remote.pushes_landed == 1
    assert yaml.safe_load(sources.show(RECORD) or "")["spec"]["subDomain"] == "acme"
    assert provisioning_callback(running)["callbackPath"] == CALLBACK


def test_a_push_that_may_have_landed_keeps_its_callback_and_the_retry_finds_the_record(
    server_factory: ServerFactory, http_sources: tuple[Sources, GitHttpRemote], tokens: TokenFactory
) -> None:
    sources, remote = http_sources
    running = server_factory(sources)
    remote.lose_push_ack(hang_after=True)  # the push lands; the fetch that would tell hangs

    status, headers, body, _ = subscribe(running, tokens)

    assert status == 503, body
    assert isinstance(body, dict) and body["reason"] == "OutcomeUnknown"
    assert int(headers["Retry-After"]) >= 1
    landed = sources.head()
    assert sources.show(RECORD) is not None  # it did land
    assert provisioning_callback(running)["callbackPath"] == CALLBACK  # and its callback stays

    remote.serve()
    wait_for(lambda: readyz(running)[0] == 200, 15, "/readyz to recover")
    status, body = subscribe_as_the_registry_retries(running, tokens)
    assert status == 202, body
    assert sources.head() == landed  # the record was there: nothing committed again
    assert provisioning_callback(running)["callbackPath"] == CALLBACK
