"""kill -9 of a subscription-server replica in the middle of a burst (issue #18's test list).

Two real `btp-gitops subscription-server` processes on one bare remote and the real kube-apiserver
take a burst of subscribes and unsubscribes, spread over both; while replica A has requests in
flight it is killed with SIGKILL together with its Git commands (as a container dies), then started
again on the same working copy (an emptyDir outlives its container). Callers follow the documented
client retry (tests/controller/subscription/replicas.py: no answer or 503 -> the same request
again, after Retry-After, on the other replica).

Then: every tenant that got a 202 is recorded exactly once and as its last answer says; the
remote's history is whole (fsck, one branch, every commit since the seed touches only tenant
records, each a complete CAPTenant); the pending callbacks and subscription contexts of every
recorded tenant are in the cluster; the restarted replica answers right for every tenant."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from btp_gitops.controller.clients.cluster_side import (
    PENDING_CALLBACK_LABEL,
    Operation,
    pending_callback_name,
)
from btp_gitops.controller.kube import CONFIG_MAP, SECRET, KubeClient
from btp_gitops.controller.records import consumer_tenant_name
from btp_gitops.controller.subscription.handlers import CREATED, DELETED, UPDATED
from tests.controller.subscription.conftest import APP, Bindings, Sources, run_git
from tests.controller.subscription.peers import Pki, TokenFactory
from tests.controller.subscription.replicas import (
    Attempts,
    Replica,
    kill_container,
    launch_replica,
    send_with_retry,
    wait_for_child,
    wait_ready,
)
from tests.support.kubeapi import KubeAPI

pytestmark = [pytest.mark.kube, pytest.mark.slow]

TENANTS = 90
UNSUBSCRIBED = frozenset(range(0, TENANTS, 3))  # every third tenant is unsubscribed after its 202
KILL_AFTER = 25  # subscribes answered before replica A is killed
SUBSCRIBES_WITHIN = 300.0  # seconds for each of them, at most (send_with_retry gives up at 120)
TENANTS_DIR = f"apps/{APP}/tenants/"
DEPROVISION = "btp-gitops.io/deprovision"


def _tenant(number: int) -> str:
    return f"5a1d0c3e-0000-4b2c-8d4e-{number:012x}"


def _callback(number: int, operation: Operation) -> str:
    return f"/saas-manager/v1/subscription-callback/{number:04d}-{operation.value}/result"


@dataclass
class Cluster:
    """The replicas by name, swapped under a lock when A restarts."""

    members: dict[str, Replica]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pick(self, first: str) -> Callable[[int], Replica]:
        order = [first, "b" if first == "a" else "a"]

        def choose(attempt: int) -> Replica:
            with self.lock:
                return self.members[order[attempt % 2]]

        return choose


@pytest.fixture
def cluster(
    kube_api: KubeAPI, sources: Sources, pki: Pki, bindings: Bindings, tmp_path: Path
) -> Iterator[Cluster]:
    started = {
        name: launch_replica(
            name, kube_api.kubeconfig, sources.remote, tmp_path / f"workdir-{name}", pki.ca_file
        )
        for name in ("a", "b")
    }
    cluster = Cluster(started)
    try:
        for replica in started.values():
            wait_ready(replica)
        yield cluster
    finally:
        for replica in {*started.values(), *cluster.members.values()}:
            replica.stop()


def test_a_replica_killed_mid_burst_loses_nothing_and_leaves_nothing_half_written(
    cluster: Cluster,
    sources: Sources,
    tokens: TokenFactory,
    kube: KubeClient,
    kube_namespace: str,
    kube_api: KubeAPI,
    pki: Pki,
    tmp_path: Path,
) -> None:
    seed = sources.head()
    subscribed = threading.Semaphore(0)
    killed = threading.Event()

    def operation(number: int) -> list[tuple[str, Attempts]]:
        first = "a" if number % 2 == 0 else "b"
        tenant, sub_domain = _tenant(number), f"crash-{number}"

        def send(method: str, replica_first: str, op: Operation) -> Attempts:
            pick = cluster.pick(replica_first)
            return send_with_retry(pick, method, tenant, sub_domain, tokens, _callback(number, op))

        answers = [("subscribe", send("PUT", first, Operation.PROVISIONING))]
        subscribed.release()
        if number in UNSUBSCRIBED:
            other = "b" if first == "a" else "a"
            answers.append(("unsubscribe", send("DELETE", other, Operation.DEPROVISIONING)))
        return answers

    def killer() -> tuple[list[int], list[str], float]:
        for answered in range(KILL_AFTER):
            # bounded: a subscribe that fails never releases, and an unbounded wait here would
            # turn that failure into a hang of the pool's shutdown (and of the whole test run)
            if not subscribed.acquire(timeout=SUBSCRIBES_WITHIN):
                raise AssertionError(f"only {answered} subscribes answered: replica A was not killed")
        victim = cluster.members["a"]
        wait_for_child(victim, timeout=10)  # best effort: a kill during a Git command tests the most
        pids = kill_container(victim)
        killed.set()
        dot_git = tmp_path / "workdir-a" / ".git"
        locks = sorted(str(lock.relative_to(dot_git)) for lock in dot_git.rglob("*.lock"))
        started = time.monotonic()
        restarted = launch_replica(
            "a", kube_api.kubeconfig, sources.remote, tmp_path / "workdir-a", pki.ca_file
        )
        wait_ready(restarted)
        with cluster.lock:
            cluster.members["a"] = restarted
        return pids, locks, time.monotonic() - started

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        kill = pool.submit(killer)
        results = list(pool.map(operation, range(TENANTS), timeout=300))
        pids, locks, restart_seconds = kill.result(timeout=120)
    assert killed.is_set() and len(pids) >= 1
    restarted = cluster.members["a"]
    assert restarted.process.poll() is None
    # a Git command killed mid-way leaves its lock; the restart removes it (and says so)
    restart_log = restarted.log.read_text()
    for lock in locks:
        assert f"removed {lock}, left behind" in restart_log, (lock, restart_log[-2000:])
    print(f"killed {len(pids)} processes; locks left: {locks}; restarted in {restart_seconds:.1f} s")

    # every answer is final and right: 202, "created" unless an earlier attempt may have landed
    wrong = []
    retried = 0
    for number, answers in enumerate(results):
        for step, outcome in answers:
            retried += outcome.attempts > 1
            message = outcome.body.get("message") if isinstance(outcome.body, dict) else outcome.body
            if step == "subscribe":
                allowed = {CREATED, UPDATED} if outcome.attempts > 1 else {CREATED}
            else:
                allowed = {DELETED}
            if outcome.status != 202 or message not in allowed:
                wrong.append((number, step, outcome))
    assert not wrong, wrong
    print(f"requests that needed a retry: {retried}")
    assert retried >= 1, "no request met the killed replica: the kill came too late to test anything"

    # the remote: each tenant exactly once, as its last answer says
    listed = run_git(sources.remote, "ls-tree", "-r", "--name-only", "main", "--", TENANTS_DIR).split()
    expected = {f"{TENANTS_DIR}{consumer_tenant_name(APP, _tenant(n))}.yaml" for n in range(TENANTS)}
    assert sorted(listed) == sorted(expected)
    for number in range(TENANTS):
        record = yaml.safe_load(
            sources.show(f"{TENANTS_DIR}{consumer_tenant_name(APP, _tenant(number))}.yaml") or ""
        )
        assert record["spec"]["tenantId"] == _tenant(number)
        assert record["spec"]["subDomain"] == f"crash-{number}"
        marked = (record["metadata"].get("annotations") or {}).get(DEPROVISION) == "true"
        assert marked is (number in UNSUBSCRIBED), number

    # the remote's history: whole objects, one branch, only complete tenant records in every commit
    run_git(sources.remote, "fsck", "--full", "--strict", "--no-dangling")
    assert run_git(sources.remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]
    assert not (sources.remote / "refs" / "heads" / "main.lock").exists()
    commits = run_git(sources.remote, "rev-list", f"{seed}..main").split()
    assert commits
    for commit in commits:
        changed = run_git(sources.remote, "diff-tree", "--no-commit-id", "-r", "--name-status", commit)
        for line in changed.splitlines():
            status, path = line.split("\t")
            assert status in {"A", "M"} and path.startswith(TENANTS_DIR), (commit, line)
            document = yaml.safe_load(run_git(sources.remote, "show", f"{commit}:{path}"))
            assert document["kind"] == "CAPTenant", (commit, path)
            name = document["metadata"]["name"]
            assert path == f"{TENANTS_DIR}{name}.yaml"
            assert consumer_tenant_name(APP, document["spec"]["tenantId"]) == name

    # the cluster: every recorded tenant's context and pending callbacks, nothing lost to the kill
    for number in range(TENANTS):
        name = consumer_tenant_name(APP, _tenant(number))
        assert kube.get(SECRET, f"{name}-subscription-context", kube_namespace) is not None, name
        owed = [Operation.PROVISIONING] + ([Operation.DEPROVISIONING] if number in UNSUBSCRIBED else [])
        for op in owed:
            config_map = kube.get(CONFIG_MAP, pending_callback_name(name, op), kube_namespace)
            assert config_map is not None, (name, op)
            assert config_map["metadata"]["labels"][PENDING_CALLBACK_LABEL] == "true"
            assert config_map["data"]["tenantId"] == _tenant(number)
            assert config_map["data"]["callbackPath"] == _callback(number, op)
        if number not in UNSUBSCRIBED:
            assert (
                kube.get(CONFIG_MAP, pending_callback_name(name, Operation.DEPROVISIONING), kube_namespace)
                is None
            )

    # the restarted replica knows every tenant (no callback header: the cluster stays as checked)
    head = sources.head()
    for number in range(TENANTS):
        if number in UNSUBSCRIBED:
            status, body = restarted.send("DELETE", _tenant(number), f"crash-{number}", tokens())
            assert (status, body["message"]) == (202, DELETED), number
        else:
            status, body = restarted.send("PUT", _tenant(number), f"crash-{number}", tokens())
            assert (status, body["message"]) == (202, UPDATED), number
    assert sources.head() == head, "answering for known tenants changed the remote"
    assert restart_seconds < 60
