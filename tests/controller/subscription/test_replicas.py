"""Two `btp-gitops subscription-server` processes (the chart's default of two replicas) on one bare
remote and the real kube-apiserver: each answers for the tenants the other recorded.

A replica's clone moves only when it pushes or fetches, so before the ledger fetched on a miss,
replica B answered 404 to the DELETE of a tenant A had just recorded, and "created" to a
re-subscribe of it. Nothing is faked but the token issuer (conftest's local stand-in)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.controller.records import consumer_tenant_name
from btp_gitops.controller.subscription.handlers import CREATED, DELETED, UPDATED
from tests.controller.subscription.conftest import APP, Bindings, BusyWriter, Sources
from tests.controller.subscription.peers import Pki, TokenFactory
from tests.controller.subscription.replicas import Replica, launch_replica, wait_ready
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kube

DEPROVISION = "btp-gitops.io/deprovision"


@pytest.fixture
def replicas(
    kube_api: KubeAPI, sources: Sources, pki: Pki, bindings: Bindings, tmp_path: Path
) -> Iterator[tuple[Replica, Replica]]:
    started = [
        launch_replica(name, kube_api.kubeconfig, sources.remote, tmp_path / f"workdir-{name}", pki.ca_file)
        for name in ("a", "b")
    ]
    try:
        for replica in started:
            wait_ready(replica)
        yield started[0], started[1]
    finally:
        for replica in started:
            replica.stop()


def _record(sources: Sources, tenant_id: str) -> dict[str, Any] | None:
    text = sources.show(f"apps/{APP}/tenants/{consumer_tenant_name(APP, tenant_id)}.yaml")
    return yaml.safe_load(text) if text is not None else None


def _marked(record: dict[str, Any]) -> bool:
    return (record["metadata"].get("annotations") or {}).get(DEPROVISION) == "true"


def _tenant(number: int) -> str:
    return f"7e0c2a4b-0000-4a1b-9c3d-{number:012x}"


def test_a_tenant_recorded_by_one_replica_is_deleted_through_the_other(
    replicas: tuple[Replica, Replica], sources: Sources, tokens: TokenFactory
) -> None:
    a, b = replicas
    tenant = _tenant(1)
    assert a.send("PUT", tenant, "one", tokens()) == (
        202,
        {
            "message": CREATED,
            "tenant": consumer_tenant_name(APP, tenant),
            "subscriptionUrl": "https://one.shop.example.com",
        },
    )
    status, body = b.send("DELETE", tenant, "one", tokens())
    assert (status, body) == (202, {"message": DELETED, "tenant": consumer_tenant_name(APP, tenant)})
    record = _record(sources, tenant)
    assert record is not None and _marked(record)


def test_a_resubscribe_through_the_other_replica_says_the_tenant_exists(
    replicas: tuple[Replica, Replica], sources: Sources, tokens: TokenFactory
) -> None:
    a, b = replicas
    tenant = _tenant(2)
    status, body = a.send("PUT", tenant, "two", tokens())
    assert (status, body["message"]) == (202, CREATED)
    status, body = b.send("PUT", tenant, "two-renamed", tokens())
    assert (status, body["message"], body["tenant"]) == (202, UPDATED, consumer_tenant_name(APP, tenant))
    record = _record(sources, tenant)
    assert record is not None and record["spec"]["subDomain"] == "two-renamed"


def test_a_burst_across_both_replicas_and_a_competing_writer(
    replicas: tuple[Replica, Replica], sources: Sources, tokens: TokenFactory, tmp_path: Path
) -> None:
    """50 tenants, each subscribed on one replica and unsubscribed on the other, every third one
    then subscribed again on the first: pairs run 10 at a time while a third writer pushes."""
    count = 50

    def pair(number: int) -> list[tuple[str, int, Any]]:
        first, second = replicas if number % 2 == 0 else replicas[::-1]
        tenant, sub_domain = _tenant(100 + number), f"burst-{number}"
        answers = [
            ("subscribe", *first.send("PUT", tenant, sub_domain, tokens())),
            ("unsubscribe", *second.send("DELETE", tenant, sub_domain, tokens())),
        ]
        if number % 3 == 0:
            answers.append(("resubscribe", *first.send("PUT", tenant, sub_domain, tokens())))
        return answers

    with (
        BusyWriter(sources.remote, tmp_path / "competitor") as competitor,
        concurrent.futures.ThreadPoolExecutor(10) as pool,
    ):
        results = list(pool.map(pair, range(count)))

    wrong = []
    for number, answers in enumerate(results):
        expected = [("subscribe", 202, CREATED), ("unsubscribe", 202, DELETED)]
        if number % 3 == 0:
            expected.append(("resubscribe", 202, UPDATED))
        got = [
            (step, status, body.get("message") if isinstance(body, dict) else body)
            for step, status, body in answers
        ]
        if got != expected:
            wrong.append((number, got))
    assert not wrong, wrong

    listed = sources.show(f"apps/{APP}/tenants/")
    assert listed is not None
    names = {line.strip() for line in listed.splitlines()[1:] if line.strip()}
    assert names == {f"{consumer_tenant_name(APP, _tenant(100 + n))}.yaml" for n in range(count)}
    for number in range(count):
        record = _record(sources, _tenant(100 + number))
        assert record is not None
        assert record["spec"]["subDomain"] == f"burst-{number}"
        assert _marked(record) is (number % 3 != 0), number
    kept = (sources.show("competitor.txt") or "").splitlines()
    assert kept == competitor.pushed  # every competing commit kept, in order
