"""controller.leader against the real API server: one leader at a time, takeover only after the
Lease expired, a clean release hands over at once, and a leader that sees another holder stops."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator

import pytest

from btp_gitops.controller.kube import LEASE, KubeClient
from btp_gitops.controller.leader import LeaderElector, LeaseSettings
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kube


@pytest.fixture
def kube(kube_api: KubeAPI) -> Iterator[KubeClient]:
    client = KubeClient(kube_api.api_client())
    yield client
    client.close()


def _settings(namespace: str, identity: str, **overrides: float) -> LeaseSettings:
    values = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.1, **overrides}
    return LeaseSettings(namespace=namespace, name="btp-gitops-controller", identity=identity, **values)


def test_only_one_candidate_acquires(kube: KubeClient, kube_namespace: str) -> None:
    first = LeaderElector(kube, _settings(kube_namespace, "one"))
    second = LeaderElector(kube, _settings(kube_namespace, "two"))
    assert first.try_acquire_or_renew() is True
    assert second.try_acquire_or_renew() is False
    assert first.try_acquire_or_renew() is True  # renewing
    lease = kube.get(LEASE, "btp-gitops-controller", kube_namespace) or {}
    assert lease["spec"]["holderIdentity"] == "one"
    assert lease["spec"]["leaseTransitions"] == 0


def test_takeover_only_after_expiry(kube: KubeClient, kube_namespace: str) -> None:
    now = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    first = LeaderElector(kube, _settings(kube_namespace, "one"), clock=lambda: now[0])
    second = LeaderElector(kube, _settings(kube_namespace, "two"), clock=lambda: now[0])
    assert first.try_acquire_or_renew()
    now[0] += dt.timedelta(seconds=1.9)
    assert second.try_acquire_or_renew() is False
    now[0] += dt.timedelta(seconds=0.2)
    assert second.try_acquire_or_renew() is True
    lease = kube.get(LEASE, "btp-gitops-controller", kube_namespace) or {}
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("two", 1)


def test_racing_candidates_on_an_expired_lease_one_wins(kube: KubeClient, kube_namespace: str) -> None:
    old = LeaderElector(
        kube, _settings(kube_namespace, "old"), clock=lambda: dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    )
    assert old.try_acquire_or_renew()
    candidates = [LeaderElector(kube, _settings(kube_namespace, f"c{i}")) for i in range(6)]
    results: list[bool] = []
    barrier = threading.Barrier(len(candidates))

    def race(elector: LeaderElector) -> None:
        barrier.wait()
        results.append(elector.try_acquire_or_renew())

    threads = [threading.Thread(target=race, args=(c,)) for c in candidates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1


def test_run_leads_hands_over_on_release_and_stops_when_lease_taken(
    kube: KubeClient, kube_namespace: str
) -> None:
    events: list[str] = []
    first = LeaderElector(kube, _settings(kube_namespace, "one"))
    second = LeaderElector(kube, _settings(kube_namespace, "two"))
    one = threading.Thread(
        target=first.run, args=(lambda: events.append("one+"), lambda: events.append("one-"))
    )
    one.start()
    deadline = time.monotonic() + 10
    while events != ["one+"] and time.monotonic() < deadline:
        time.sleep(0.05)
    two = threading.Thread(
        target=second.run, args=(lambda: events.append("two+"), lambda: events.append("two-"))
    )
    two.start()
    time.sleep(0.5)
    assert events == ["one+"]  # the second waits for the Lease
    first.stop()
    one.join(5)
    deadline = time.monotonic() + 5
    while "two+" not in events and time.monotonic() < deadline:
        time.sleep(0.05)
    assert events == ["one+", "one-", "two+"]
    # Someone else (an operator by hand, or a split brain) takes the Lease: the leader steps down.
    lease = kube.get(LEASE, "btp-gitops-controller", kube_namespace) or {}
    lease["spec"]["holderIdentity"] = "intruder"
    lease["spec"]["renewTime"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease["spec"]["leaseDurationSeconds"] = 60
    kube.replace(LEASE, lease)
    two.join(5)
    assert not two.is_alive()
    assert events[-1] == "two-"
