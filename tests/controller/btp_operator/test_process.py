"""`btp-gitops controller` as a real process against the real API server: probes and metrics,
SIGTERM, two replicas with leader election (one acts; the standby takes over after the leader is
killed with SIGKILL), and a controller killed with SIGKILL in the middle of a hard delete whose
successor finishes the deprovisioning. The test plays the SAP BTP service operator (it clears
its finalizer) and nothing else is faked."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from btp_gitops.controller.btp_operator.status import current_reason
from btp_gitops.controller.kube import BTP_OPERATOR, LEASE, SERVICE_INSTANCE, Conflict, KubeClient
from btp_gitops.generator.core.exit_codes import ExitCode
from tests.controller.btp_operator.cluster import (
    MODULE_NAMESPACE,
    MODULE_RESOURCES,
    ModuleCluster,
    ServiceOperand,
)
from tests.support.crds import load_crds, our_crd_files
from tests.support.kubeapi import KubeAPI, install_crds
from tests.support.waiting import free_port, wait_until

pytestmark = pytest.mark.kube

CLI = Path(sys.executable).parent / "btp-gitops"
LEASE_NAME = "btp-gitops-controller"


@dataclass
class Controller:
    process: subprocess.Popen[str]
    port: int
    name: str
    log: Path

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
        except OSError:
            return 0, ""

    def log_lines(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]


@pytest.fixture
def start_controller(kube_api: KubeAPI, kube_namespace: str, tmp_path: Path) -> Iterator[object]:
    started: list[Controller] = []

    def start(name: str, *extra: str) -> Controller:
        port = free_port()
        log = tmp_path / f"{name}-{len(started)}.log"
        args = [
            str(CLI), "controller", "--kubeconfig", str(kube_api.kubeconfig), "--namespace", kube_namespace,
            "--probe-address", f"127.0.0.1:{port}", "--module-resources", str(MODULE_RESOURCES),
            "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "0.2", "--log-format", "json",
            *extra,
        ]  # fmt: skip
        env = {**os.environ, "POD_NAME": name}
        with log.open("w") as stderr:
            process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, text=True, env=env)
        controller = Controller(process, port, name, log)
        started.append(controller)
        return controller

    yield start
    for controller in started:
        if controller.process.poll() is None:
            controller.process.kill()
            controller.process.wait(10)


@pytest.fixture
def crds_for_every_reconciler(kube_api: KubeAPI, cluster: ModuleCluster) -> None:
    with kube_api.api_client() as api:
        install_crds(api, load_crds(our_crd_files()))


def _holder(kube: KubeClient, namespace: str) -> str:
    lease = kube.get(LEASE, LEASE_NAME, namespace) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


@pytest.mark.usefixtures("crds_for_every_reconciler")
def test_probes_metrics_and_a_clean_stop(
    start_controller: object, cluster: ModuleCluster, kube: KubeClient, kube_namespace: str
) -> None:
    assert callable(start_controller)
    cluster.create_module_cr()
    controller: Controller = start_controller("solo")
    wait_until(lambda: controller.get("/readyz")[0] == 200, 60, "readiness")
    wait_until(lambda: _holder(kube, kube_namespace).startswith("solo_"), 30, "the lease")
    assert controller.get("/healthz") == (200, "ok\n")
    wait_until(
        lambda: "btp_gitops_controller_reconcile_total{" in controller.get("/metrics")[1], 30, "a reconcile"
    )
    status, metrics = controller.get("/metrics")
    assert status == 200 and 'reconciler="btp-operator"' in metrics
    controller.process.send_signal(signal.SIGTERM)
    assert controller.process.wait(20) == 0
    assert _holder(kube, kube_namespace) == ""  # released: a standby need not wait for expiry
    messages = [str(line["message"]) for line in controller.log_lines()]
    assert any(
        m.startswith("starting reconcilers: btp-operator, outdated-module-resources") for m in messages
    )


@pytest.mark.usefixtures("crds_for_every_reconciler")
def test_one_leader_and_failover_after_sigkill(
    start_controller: object, kube: KubeClient, kube_namespace: str
) -> None:
    assert callable(start_controller)
    first: Controller = start_controller("replica-a")
    wait_until(
        lambda: _holder(kube, kube_namespace).startswith("replica-a_"), 30, "the first replica to lead"
    )
    second: Controller = start_controller("replica-b")
    wait_until(lambda: second.get("/readyz")[0] == 200, 30, "the standby to be ready")
    time.sleep(1.5)
    assert _holder(kube, kube_namespace).startswith("replica-a_")
    assert not any(str(line["message"]).startswith("starting reconcilers") for line in second.log_lines())
    first.process.kill()
    first.process.wait(10)
    wait_until(lambda: _holder(kube, kube_namespace).startswith("replica-b_"), 30, "the standby to take over")
    wait_until(
        lambda: any(str(line["message"]).startswith("starting reconcilers") for line in second.log_lines()),
        30,
        "the new leader to start its reconcilers",
    )
    lease = kube.get(LEASE, LEASE_NAME, kube_namespace) or {}
    assert lease["spec"]["leaseTransitions"] == 1


@pytest.mark.usefixtures("crds_for_every_reconciler")
def test_a_leader_whose_lease_is_taken_exits_with_lease_lost(
    start_controller: object, kube: KubeClient, kube_namespace: str
) -> None:
    """Another holder on a valid Lease ends the leader at once, with its own exit code (8): the
    Pod restarts as a candidate."""
    assert callable(start_controller)
    leader: Controller = start_controller("victim")
    wait_until(lambda: _holder(kube, kube_namespace).startswith("victim_"), 30, "the lease")

    def take_the_lease() -> bool:
        lease = kube.get(LEASE, LEASE_NAME, kube_namespace) or {}
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease["spec"] = {
            **lease["spec"],
            "holderIdentity": "thief",
            "leaseDurationSeconds": 3600,
            "renewTime": now,
        }
        try:
            kube.replace(LEASE, lease)
        except Conflict:
            return False  # the leader renewed in between: try again on the newer Lease
        return True

    wait_until(take_the_lease, 30, "the lease to be taken")
    assert leader.process.wait(60) == ExitCode.LEASE_LOST
    assert "is held by 'thief' now: stopping" in leader.log.read_text()
    assert _holder(kube, kube_namespace) == "thief"  # a stopping leader releases only its own Lease


@pytest.mark.usefixtures("crds_for_every_reconciler")
def test_sigkill_during_hard_delete_then_a_new_process_finishes(
    start_controller: object,
    cluster: ModuleCluster,
    operand: ServiceOperand,
    kube: KubeClient,
    kube_namespace: str,
) -> None:
    assert callable(start_controller)
    cluster.create_required_secret(
        clientid="id", clientsecret="s3cret-value", sm_url="https://sm.example", tokenurl="https://t.example",
        cluster_id="c1",
    )  # fmt: skip
    cluster.create_operator(available=True)
    cluster.create_module_cr(**{"force-delete": "true"})
    cluster.create_instance(kube_namespace, "db")
    cluster.create_binding(kube_namespace, "db-binding", "db")
    first: Controller = start_controller("first", "--no-leader-elect")
    wait_until(lambda: current_reason(cluster.module_cr() or {}) == "ReconcileSucceeded", 60, "Ready")
    kube.delete(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE)

    def instance_deletion_issued() -> bool:
        instance = kube.get(SERVICE_INSTANCE, "db", kube_namespace) or {}
        return bool((instance.get("metadata") or {}).get("deletionTimestamp"))

    # The operand does not answer yet: the hard delete is issued and waits for it.
    wait_until(instance_deletion_issued, 60, "the hard delete of the instance")
    assert current_reason(cluster.module_cr() or {}) == "HardDeleting"
    first.process.kill()
    first.process.wait(10)

    operand.start()  # the service operator finishes the deletions it was asked for
    second: Controller = start_controller("second", "--no-leader-elect")
    wait_until(lambda: cluster.module_cr() is None, 60, "the BtpOperator to be released")
    assert kube.list(SERVICE_INSTANCE, kube_namespace) == []
    assert ("ServiceInstance", f"{kube_namespace}/db") in operand.finished
    assert all("s3cret-value" not in line for line in second.log.read_text().splitlines())


@pytest.mark.parametrize("election", ["--leader-elect", "--no-leader-elect"])
def test_an_unreachable_source_repository_ends_the_process(
    start_controller: object, tmp_path: Path, election: str
) -> None:
    """Leading without the source repository would record nothing: the process exits instead of
    idling (with leader election the failure happens in the election thread, and must not hang)."""
    assert callable(start_controller)
    missing = tmp_path / "no-such-remote.git"
    controller: Controller = start_controller("broken", election, "--source-repo", str(missing))
    assert controller.process.wait(60) == ExitCode.OUTPUT  # the one GitError; 1 means "changes found"
    assert f"error: cannot fetch branch main from {missing}" in controller.log.read_text()


def bare_source_repo(directory: Path) -> Path:
    """A bare remote whose branch main has one empty commit: enough for the CAP Git reconcilers."""
    remote, seed = directory / "sources.git", directory / "seed"
    identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    for command in (
        ["git", "init", "--quiet", "--bare", "--initial-branch=main", str(remote)],
        ["git", "init", "--quiet", "--initial-branch=main", str(seed)],
        ["git", "-C", str(seed), *identity, "commit", "--quiet", "--allow-empty", "-m", "Sources"],
        ["git", "-C", str(seed), "push", "--quiet", str(remote), "main:main"],
    ):
        subprocess.run(command, check=True, capture_output=True)
    return remote


@pytest.mark.usefixtures("crds_for_every_reconciler")
@pytest.mark.parametrize(
    ("election", "with_source_repo"),
    [
        pytest.param("--leader-elect", False, id="leader-elect"),
        pytest.param("--no-leader-elect", False, id="no-leader-elect"),
        pytest.param("--leader-elect", True, id="leader-elect-with-source-repo"),
    ],
)
def test_sigterm_stops_quietly(
    start_controller: object, tmp_path: Path, election: str, with_source_repo: bool
) -> None:
    """The kubelet's SIGTERM is an ordinary stop: the watches the stop interrupts are not
    reported as failures (they were about ten ProtocolError warnings, and urllib3's "connection
    pool is full"), the signal is logged once at info, and the exit code is 0. With a source
    repository the CAP Git reconcilers watch too, and its writer stops with them."""
    assert callable(start_controller)
    source: list[str] = []
    if with_source_repo:
        remote = bare_source_repo(tmp_path)
        source = ["--source-repo", str(remote), "--workdir", str(tmp_path / "workdir")]
    controller: Controller = start_controller("stopping", election, *source)
    wait_until(
        lambda: any(
            str(line["message"]).startswith("starting reconcilers") for line in controller.log_lines()
        ),
        60,
        "the reconcilers to start",
    )
    wait_until(lambda: controller.get("/readyz")[0] == 200, 60, "every watch to list")

    # Twice, as `timeout` and other supervisors do (to the process, then to its process group):
    # the stop is one event, logged once.
    controller.process.send_signal(signal.SIGTERM)
    controller.process.send_signal(signal.SIGTERM)

    assert controller.process.wait(30) == 0
    text = controller.log.read_text()
    assert all(line.startswith("{") for line in text.splitlines()), f"a line that is no log entry:\n{text}"
    entries = controller.log_lines()
    signals = [entry for entry in entries if "signal" in str(entry["message"])]
    # What the stop logs: from the signal on. The API server is shared by this worker's tests, so a
    # controller watching every namespace also delivers pending callbacks other tests left behind
    # (their CAPApplication is in no repository of this one): those warnings are about that work,
    # not about the stop, whenever they fall.
    foreign = ("btp_gitops.controller.cap.callbacks", "btp_gitops.controller.events")
    stopping = entries[entries.index(signals[0]) :] if signals else entries
    loud = [
        entry
        for entry in stopping
        if entry["level"] not in ("debug", "info") and entry.get("logger") not in foreign
    ]
    assert not loud, "warnings or errors while stopping:\n" + "\n".join(map(json.dumps, loud))
    assert [(entry["level"], entry["message"]) for entry in signals] == [
        ("info", f"received signal {signal.SIGTERM.value}: stopping")
    ]
