"""Issue #8's whole loop, through the real processes: a SaaS registry subscribe answered by
`btp-gitops subscription-server`, the record rendered by `btp-gitops render`, its Jobs completed,
the outcome recorded and called back by `btp-gitops controller`; then the unsubscribe, the same way,
until the record leaves Git.

Covers, in one run against the real kube-apiserver and a bare Git remote on disk:

- PUT /provision/tenants/{id} (signed token, STATUS_CALLBACK) -> 202 with the record on the remote,
  the subscription-context Secret and the pending-callback ConfigMap in the cluster;
- the rendered tenant app (`cap-tenant.<ns>.<tenant>`) holds the CAPTenant and the provisioning Job;
  once the Job is Complete the controller records Ready / provisioning / the version in the record,
  mirrors it onto the cluster's CAPTenant, and calls back SUCCEEDED with the subscription URL and
  `additionalOutput`, each PUT after a client-credentials token of the saas-registry binding;
- the controller killed with SIGKILL between the outcome and the callback: the peer refuses the
  first PUT (503), the test waits until the failed attempt is stored on the ConfigMap, kills the
  process and starts a new one on the same workdir; it retries once the stored retry time is due
  (not before), writes nothing more to Git, and exactly one callback is accepted;
- the next render stops rendering the completed provisioning (Argo CD prunes its Job);
- DELETE /provision/tenants/{id} -> 202, the record marked; the render holds the deprovisioning
  Job; once it is Complete the record is removed from the remote before the one SUCCEEDED
  callback arrives (the peer looks at the remote when the PUT arrives), and the pending callback
  is gone; nothing else is called back;
- both processes stop cleanly on SIGTERM, and no token or client secret is in their logs.

- then the render drops the tenant's app and the test prunes it as Argo CD would: the CAPTenant's
  finalizer releases it at once, without a second deprovisioning (its status, marked by the
  controller just before the record left Git, says the deprovisioning is done; the status mirror
  must not copy the stale record's status back over it, which it once did).

Faked, as everywhere in these tests: XSUAA (the local HTTPS issuer of peers.py publishing the token
keys) and the SaaS registry (the peers.py registry: token endpoint and callback receiver; here its
answers to callback PUTs are scripted and it notes what the remote shows when each arrives). The
test itself plays Argo CD (server-side apply of the rendered CAPApplication, versions, version
gates, CAPTenant and tenant Jobs; prune) and the kubelet (Job statuses): nothing else runs them.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from kubernetes import client as k8s

from btp_gitops.controller.cap.callbacks import DELIVERY_ANNOTATION
from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.kube import (
    APPLY_PATCH,
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    CONFIG_MAP,
    JOB,
    SECRET,
    KubeClient,
    KubeObject,
    Resource,
)
from btp_gitops.controller.records import consumer_tenant_name
from btp_gitops.generator.domains.cap.identity import OWNER_IDENTIFIER
from btp_gitops.generator.domains.cap.tenants.names import TENANT_OPERATION_TYPE
from tests.conftest import EXAMPLES, ROOT
from tests.controller.subscription.conftest import (
    APP,
    SAAS_CLIENT_ID,
    SecretWatch,
    bare_remote,
    bearer,
    saas_payload,
)
from tests.controller.subscription.peers import Pki, SaasRegistry, TokenFactory, running_saas_registry
from tests.controller.tenant_operations.conftest import finish_job
from tests.support.crds import load_crds, our_crd_files
from tests.support.kubeapi import KubeAPI, install_crds
from tests.support.waiting import free_port

pytestmark = pytest.mark.kube

CLI = Path(sys.executable).parent / "btp-gitops"
MODULE_RESOURCES = ROOT / "module-resources"
WAIT = 60.0  # every wait of this test is bounded by this
TENANT_ID = "3c2b1a09-8f7e-4d6c-b5a4-938271605f4e"
SUB_DOMAIN = "umbrella"
APP_DOMAIN = "bookshop.apps.example.com"
VERSION = "bookshop-1-1-0"  # the newest version of the example: provisioning runs on it
ADDITIONAL_OUTPUT = {"supportUrl": "https://support.example.com"}
PROVISIONING_CALLBACK = "/saas-manager/v1/subscription-callback/7a6b5c4d-provision/result"
DEPROVISIONING_CALLBACK = "/saas-manager/v1/subscription-callback/8b7c6d5e-deprovision/result"
ARGO_MANAGER = "argocd-controller"
SYNCED_KINDS = {
    "CAPApplication": CAP_APPLICATION,
    "CAPApplicationVersion": CAP_APPLICATION_VERSION,
    "CAPTenant": CAP_TENANT,
    "ConfigMap": CONFIG_MAP,
    "Job": JOB,
}


# --- the SaaS registry: scripted answers, and what the remote showed when a callback arrived -----------


@dataclass(frozen=True)
class Arrival:
    path: str
    body: dict[str, Any]
    token: str
    answered: int
    record: dict[str, Any] | None  # the tenant's record on the remote when the PUT arrived
    at: dt.datetime


class ScriptedRegistry(SaasRegistry):
    """The peers.py SaaS registry, whose answer to each callback PUT comes from `script` (then 200).
    The peer reads `callback_status` once per PUT it recorded, after recording it, before answering:
    that is when `observe` looks at the remote."""

    def __init__(self, client_id: str, client_secret: str) -> None:
        self.script: list[int] = []
        self.arrivals: list[Arrival] = []
        self.observe: Callable[[], dict[str, Any] | None] = lambda: None
        self._default = 200
        super().__init__(client_id, client_secret)

    @property
    def callback_status(self) -> int:
        seen = self.observe()
        with self.lock:
            answer = self.script.pop(0) if self.script else self._default
            last = self.callbacks[-1]
            arrival = Arrival(
                last["path"], last["body"], last["token"], answer, seen, dt.datetime.now(dt.UTC)
            )
            self.arrivals.append(arrival)
        return answer

    @callback_status.setter
    def callback_status(self, value: int) -> None:
        self._default = value

    def arrived(self, path: str) -> list[Arrival]:
        with self.lock:
            return [a for a in self.arrivals if a.path == path]


@pytest.fixture
def saas_registry(secrets_never_logged: SecretWatch) -> Iterator[ScriptedRegistry]:
    """Overrides the conftest's registry (the `bindings` fixture points the saas-registry binding at it)."""
    registry = ScriptedRegistry(SAAS_CLIENT_ID, f"saas-secret-{os.urandom(8).hex()}")
    secrets_never_logged.values.append(registry.client_secret)
    secrets_never_logged.sources.append(registry.issued)
    with running_saas_registry(registry) as running:
        yield running  # type: ignore[misc]


# --- the source repository -------------------------------------------------------------------------------


def example_sources(namespace: str) -> dict[str, str]:
    """examples/cap-app in `namespace`, without its tenant records, with a subscription domain and
    an additional output for the provisioning callback."""
    files: dict[str, str] = {}
    for path in sorted((EXAMPLES / "cap-app").glob("*.yaml")):
        files[path.name] = path.read_text().replace("namespace: bookshop", f"namespace: {namespace}")
    app = yaml.safe_load(files["capapplication.yaml"])
    app["metadata"]["annotations"] = {
        "sme.sap.com/subscription-domain": APP_DOMAIN,
        "sme.sap.com/saas-additional-output": json.dumps(ADDITIONAL_OUTPUT),
    }
    files["capapplication.yaml"] = yaml.safe_dump(app, sort_keys=False)
    return files


@dataclass
class Remote:
    bare: Path

    def show(self, relative: str) -> str | None:
        status, out, _ = git.Git(self.bare).execute(
            ["git", "show", f"main:{relative}"], with_extended_output=True, with_exceptions=False
        )
        return str(out) if int(status) == 0 else None

    def record(self, tenant: str) -> dict[str, Any] | None:
        text = self.show(f"tenants/{tenant}.yaml")
        return yaml.safe_load(text) if text is not None else None

    def head(self) -> str:
        return str(git.Git(self.bare).execute(["git", "rev-parse", "refs/heads/main"]))


@pytest.fixture
def remote(tmp_path: Path, kube_namespace: str) -> Remote:
    directory = tmp_path / "sources"
    directory.mkdir()
    return Remote(bare_remote(directory, example_sources(kube_namespace)))


# --- the processes -----------------------------------------------------------------------------------------


@dataclass
class Process:
    name: str
    args: list[str]
    port: int
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        with self.log.open("ab") as stderr:
            self.popen = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=stderr)
        return self

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        if self.running():
            assert self.popen is not None
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)

    def stop(self) -> int | None:
        """SIGTERM, as the kubelet stops a Pod; the exit code."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        return self.popen.returncode

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 25) -> str:
        state = "running" if self.running() else f"exited {self.popen.returncode if self.popen else '-'}"
        shown = "\n".join(self.text().splitlines()[-lines:])
        return f"--- {self.name} ({state}), last {lines} lines of {self.log}:\n{shown}"


@dataclass
class Processes:
    """Every process the test started, for log tails in failure messages and for teardown."""

    started: list[Process] = field(default_factory=list)

    def add(self, process: Process) -> Process:
        self.started.append(process)
        return process.start()

    def tails(self) -> str:
        return "\n".join(p.tail() for p in self.started)

    def wait_for(self, condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        """The first truthy value of `condition`, polled until `timeout`; else a failure naming
        `what`, with the tail of every process's log."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{self.tails()}")
            time.sleep(0.1)


@pytest.fixture
def processes() -> Iterator[Processes]:
    running = Processes()
    yield running
    for process in running.started:
        process.kill()


def http_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def start_server(
    processes: Processes, kube_api: KubeAPI, remote: Remote, pki: Pki, tmp_path: Path
) -> Process:
    port = free_port()
    args = [
        str(CLI), "subscription-server", "--kubeconfig", str(kube_api.kubeconfig),
        "--source-repo", str(remote.bare), "--workdir", str(tmp_path / "server-clone"),
        "--address", f"127.0.0.1:{port}", "--jwks-ca-file", str(pki.ca_file), "--log-format", "json",
    ]  # fmt: skip
    server = processes.add(Process("subscription-server", args, port, tmp_path / "server.log"))
    processes.wait_for(lambda: http_status(port, "/readyz") == 200, "the subscription server to be ready")
    return server


def start_controller(
    processes: Processes, kube_api: KubeAPI, namespace: str, remote: Remote, tmp_path: Path
) -> Process:
    """A controller process; every one shares the workdir, as restarts of one Pod share its volume."""
    port = free_port()
    number = sum(p.name.startswith("controller") for p in processes.started)
    args = [
        str(CLI), "controller", "--kubeconfig", str(kube_api.kubeconfig), "--namespace", namespace,
        "--no-leader-elect", "--source-repo", str(remote.bare), "--workdir", str(tmp_path / "controller-clone"),
        "--probe-address", f"127.0.0.1:{port}", "--module-resources", str(MODULE_RESOURCES),
        "--resync-period", "5", "--log-format", "json",
    ]  # fmt: skip
    name = f"controller-{number}"
    controller = processes.add(Process(name, args, port, tmp_path / f"{name}.log"))
    processes.wait_for(lambda: http_status(port, "/readyz") == 200, f"{name} to be ready")
    return controller


def request(
    port: int, method: str, path: str, body: Mapping[str, Any], headers: Mapping[str, str]
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        connection.request(
            method,
            path,
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **headers},
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


# --- the cluster: CRDs, and Argo CD and the kubelet played by the test --------------------------------------


@pytest.fixture
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        yield client


@pytest.fixture
def crds(kube_api: KubeAPI) -> None:
    """Ours (CAP, BtpOperator) and the SAP BTP service operator's: the controller watches them all."""
    services = [d for d in yaml.safe_load_all((MODULE_RESOURCES / "apply" / "crd.yaml").read_text()) if d]
    with kube_api.api_client() as api:
        install_crds(api, load_crds(our_crd_files()) + services)


def render(remote: Remote, directory: Path) -> Path:
    """`btp-gitops render` of the remote's head, as CI renders the sources; the cluster's directory."""
    clone, out = directory / "sources", directory / "out"
    git.Repo.clone_from(str(remote.bare), clone).close()
    done = subprocess.run(
        [str(CLI), "render", str(clone), "--out", str(out), "--cluster", "e2e"],
        capture_output=True, text=True, timeout=WAIT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"render failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return out / "clusters" / "e2e"


def app_objects(cluster: Path, app: str) -> list[KubeObject]:
    """The objects of a rendered app (empty when the render has no such app)."""
    # An app of its own in the cluster directory, a tenant's in its shard directory (core.layout).
    directories = [cluster / app] if (cluster / app).is_dir() else list(cluster.glob(f"tenants/*/*/{app}"))
    return [
        yaml.safe_load(path.read_text())
        for directory in directories
        for path in sorted(directory.glob("*.yaml"))
        if path.name != "kustomization.yaml"
    ]


def of_kind(objects: list[KubeObject], kind: str) -> list[KubeObject]:
    return [o for o in objects if o["kind"] == kind]


def server_side_apply(api: k8s.ApiClient, resource: Resource, body: KubeObject) -> None:
    """What Argo CD does with a rendered object (server-side apply under its field manager)."""
    meta = body["metadata"]
    method, url, headers, _, _ = api.param_serialize(
        "PATCH",
        resource.path(meta.get("namespace"), meta["name"]),
        query_params=[("fieldManager", ARGO_MANAGER), ("force", "true")],
        header_params={"Accept": "application/json", "Content-Type": APPLY_PATCH},
        auth_settings=["BearerToken"],
    )
    response = api.rest_client.request(  # type: ignore[no-untyped-call]
        method, url, headers=headers, body=json.dumps(body), _request_timeout=30
    ).response
    assert response.status < 300, f"apply {resource.kind} {meta['name']}: {response.status} {response.data!r}"


@dataclass
class ArgoCd:
    """Syncs rendered apps into the cluster: the CAP kinds, version gates and tenant Jobs (the rest of
    a render, Deployments and Istio objects, plays no part here); prunes what it synced before and
    the render no longer holds. Jobs are created once, never updated (their pod template is
    immutable); a Job's status is the kubelet's business."""

    kube: KubeClient
    api: k8s.ApiClient
    synced: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # app -> (kind, name)

    def sync(self, cluster: Path, app: str, namespace: str) -> list[KubeObject]:
        wanted = [o for o in app_objects(cluster, app) if o["kind"] in SYNCED_KINDS]
        if app.startswith("cap."):  # the application's own Jobs (content) need pods: left out
            wanted = [o for o in wanted if o["kind"] != "Job"]
        for body in wanted:
            resource = SYNCED_KINDS[body["kind"]]
            if body["kind"] == "Job":
                if self.kube.get(JOB, body["metadata"]["name"], namespace) is None:
                    self.kube.create(JOB, body, namespace)
            else:
                server_side_apply(self.api, resource, body)
        names = {(o["kind"], o["metadata"]["name"]) for o in wanted}
        # Pruned in reverse sync-wave order, as Argo CD does: the Jobs (waves 10, ...) first.
        pruned = sorted(self.synced.get(app, set()) - names, key=lambda kn: (kn[0] != "Job", kn))
        for kind, name in pruned:
            self.kube.delete(SYNCED_KINDS[kind], name, namespace)
        self.synced[app] = names
        return wanted


def complete(kube: KubeClient, jobs: list[KubeObject]) -> None:
    """The kubelet and the Job controller: every Job ran its pod to success."""
    for job in jobs:
        finish_job(kube, job, "Complete")


def delivery_state(config_map: KubeObject | None) -> dict[str, Any]:
    """The delivery state the controller stored on a pending callback ({} when none)."""
    annotation = ((config_map or {}).get("metadata") or {}).get("annotations", {}).get(DELIVERY_ANNOTATION)
    return dict(json.loads(annotation)) if annotation else {}


def operation_of(job: KubeObject) -> str:
    return str(job["metadata"]["labels"][TENANT_OPERATION_TYPE])


# --- the loop -------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("crds", "bindings")
def test_subscribe_provision_callback_unsubscribe_deprovision_callback(
    kube_api: KubeAPI,
    api: k8s.ApiClient,
    kube: KubeClient,
    kube_namespace: str,
    remote: Remote,
    pki: Pki,
    tokens: TokenFactory,
    saas_registry: ScriptedRegistry,
    processes: Processes,
    secrets_never_logged: SecretWatch,
    tmp_path: Path,
) -> None:
    namespace, registry = kube_namespace, saas_registry
    tenant = consumer_tenant_name(APP, TENANT_ID)
    tenant_app = f"cap-tenant.{namespace}.{tenant}"
    registry.observe = lambda: remote.record(tenant)
    argo = ArgoCd(kube, api)
    server = start_server(processes, kube_api, remote, pki, tmp_path)
    controller = start_controller(processes, kube_api, namespace, remote, tmp_path)
    wait_for = processes.wait_for

    # The application is synced before anyone subscribes (its app is not the tenant's).
    argo.sync(render(remote, tmp_path / "render-0"), f"cap.{namespace}.{APP}", namespace)
    assert kube.get(CAP_APPLICATION, APP, namespace) is not None
    assert kube.get(CONFIG_MAP, f"{VERSION}-ready", namespace) is not None

    # 1. Subscribe: 202 only once the record is on the remote.
    payload = saas_payload(TENANT_ID, SUB_DOMAIN)
    status, body = request(
        server.port,
        "PUT",
        f"/provision/tenants/{TENANT_ID}",
        payload,
        bearer(tokens(), PROVISIONING_CALLBACK),
    )
    assert status == 202, f"{status} {body!r}\n{processes.tails()}"
    record = remote.record(tenant)
    assert record is not None, f"no record of {tenant} on the remote after the 202"
    assert record["spec"] == {"capApplicationInstance": APP, "subDomain": SUB_DOMAIN, "tenantId": TENANT_ID}
    assert "status" not in record
    assert kube.get(SECRET, f"{tenant}-subscription-context", namespace) is not None
    pending = kube.get(CONFIG_MAP, pending_callback_name(tenant, Operation.PROVISIONING), namespace)
    assert pending is not None and pending["data"]["callbackPath"] == PROVISIONING_CALLBACK

    # 2. Render and sync the tenant's app: the CAPTenant and the provisioning Job.
    synced = argo.sync(render(remote, tmp_path / "render-1"), tenant_app, namespace)
    jobs = of_kind(synced, "Job")
    assert [o["kind"] for o in synced if o["kind"] != "Job"] == ["CAPTenant"]
    assert jobs and {operation_of(j) for j in jobs} == {"provisioning"}, [j["metadata"] for j in jobs]
    assert all(j["metadata"]["annotations"][OWNER_IDENTIFIER] == f"{namespace}.{tenant}" for j in jobs)

    # 3. The kubelet: the Jobs complete. The registry refuses the first callback (503).
    registry.script = [503]
    time.sleep(1.0)  # the Jobs have been running for a while: nothing is recorded or called back
    assert "status" not in (remote.record(tenant) or {}) and registry.arrivals == []
    complete(kube, jobs)

    first = wait_for(
        lambda: registry.arrived(PROVISIONING_CALLBACK), "the first provisioning callback to arrive"
    )
    assert [(a.body["status"], a.answered) for a in first] == [("SUCCEEDED", 503)]
    expected_status = {
        "state": "Ready",
        "currentCAPApplicationVersionInstance": VERSION,
        "lastCompletedOperation": {"operation": "provisioning", "capApplicationVersionInstance": VERSION},
    }
    assert first[0].record is not None and first[0].record.get("status") == expected_status, (
        "the outcome must be in Git before its callback is sent"
    )

    def one_failed_attempt() -> dict[str, Any] | None:
        state = delivery_state(
            kube.get(CONFIG_MAP, pending_callback_name(tenant, Operation.PROVISIONING), namespace)
        )
        return state if state.get("attempts") == 1 and state.get("lastError") else None

    stored = wait_for(one_failed_attempt, "the failed attempt to be stored on the pending-callback ConfigMap")
    assert stored["status"] == "SUCCEEDED" and stored["retryAt"], stored

    # 4. SIGKILL between the recorded outcome and the accepted callback; a new process takes over.
    controller.kill()
    head = remote.head()
    controller = start_controller(processes, kube_api, namespace, remote, tmp_path)
    accepted = wait_for(
        lambda: [a for a in registry.arrived(PROVISIONING_CALLBACK) if a.answered == 200],
        "the restarted controller's provisioning callback to be accepted",
    )
    wait_for(
        lambda: (
            kube.get(CONFIG_MAP, pending_callback_name(tenant, Operation.PROVISIONING), namespace) is None
        ),
        "the pending provisioning callback to be gone",
    )
    assert len(accepted) == 1
    assert accepted[0].at >= dt.datetime.fromisoformat(stored["retryAt"]), "sent before the stored retry time"
    callback = accepted[0].body
    assert callback == {
        "status": "SUCCEEDED",
        "message": "Provisioning successful",
        "additionalOutput": ADDITIONAL_OUTPUT,
        "subscriptionUrl": f"https://{SUB_DOMAIN}.{APP_DOMAIN}",
    }
    assert remote.head() == head, "the restarted controller wrote the outcome again"
    record = remote.record(tenant)
    assert record is not None and record["status"] == expected_status
    wait_for(
        lambda: (kube.get(CAP_TENANT, tenant, namespace) or {}).get("status", {}).get("state") == "Ready",
        "the cluster's CAPTenant to show the recorded status",
    )
    live_status = (kube.get(CAP_TENANT, tenant, namespace) or {})["status"]
    assert {k: live_status.get(k) for k in expected_status} == expected_status

    # 5. The next render no longer holds the completed provisioning: its Job is pruned.
    synced = argo.sync(render(remote, tmp_path / "render-2"), tenant_app, namespace)
    assert of_kind(synced, "Job") == []
    assert all(kube.get(JOB, j["metadata"]["name"], namespace) is None for j in jobs)

    # 6. Unsubscribe: 202 once the record is marked.
    status, body = request(
        server.port,
        "DELETE",
        f"/provision/tenants/{TENANT_ID}",
        payload,
        bearer(tokens(), DEPROVISIONING_CALLBACK),
    )
    assert status == 202, f"{status} {body!r}\n{processes.tails()}"
    record = remote.record(tenant)
    assert record is not None
    assert record["metadata"]["annotations"]["btp-gitops.io/deprovision"] == "true"
    pending = kube.get(CONFIG_MAP, pending_callback_name(tenant, Operation.DEPROVISIONING), namespace)
    assert pending is not None and pending["data"]["operation"] == "deprovisioning"

    synced = argo.sync(render(remote, tmp_path / "render-3"), tenant_app, namespace)
    deprovisioning = of_kind(synced, "Job")
    assert deprovisioning and {operation_of(j) for j in deprovisioning} == {"deprovisioning"}
    live = kube.get(CAP_TENANT, tenant, namespace) or {}
    assert live["metadata"]["annotations"].get("btp-gitops.io/deprovision") == "true"
    complete(kube, deprovisioning)

    gone = wait_for(
        lambda: registry.arrived(DEPROVISIONING_CALLBACK), "the deprovisioning callback to arrive"
    )
    wait_for(
        lambda: (
            kube.get(CONFIG_MAP, pending_callback_name(tenant, Operation.DEPROVISIONING), namespace) is None
        ),
        "the pending deprovisioning callback to be gone",
    )
    assert remote.record(tenant) is None
    assert [(a.body["status"], a.answered, a.record) for a in gone] == [("SUCCEEDED", 200, None)], (
        "exactly one SUCCEEDED callback, sent after the record left the remote"
    )
    assert gone[0].body == {
        "status": "SUCCEEDED",
        "message": "Deprovisioning successful",
        "subscriptionUrl": f"https://{SUB_DOMAIN}.{APP_DOMAIN}",
    }
    # The cluster's CAPTenant says the deprovisioning is done (the mirror must not copy the stale
    # record's status back over it), so pruning the tenant's app releases it without a second one.
    wait_for(
        lambda: (
            ((kube.get(CAP_TENANT, tenant, namespace) or {}).get("status") or {})
            .get("lastCompletedOperation", {})
            .get("operation")
            == "deprovisioning"
        ),
        "the cluster's CAPTenant to record the deprovisioning",
    )
    time.sleep(1.0)  # a mirror pass racing the record's removal would have run by now
    live_status = (kube.get(CAP_TENANT, tenant, namespace) or {})["status"]
    assert live_status["lastCompletedOperation"] == {
        "operation": "deprovisioning",
        "capApplicationVersionInstance": VERSION,
    }
    final = argo.sync(render(remote, tmp_path / "render-4"), tenant_app, namespace)
    assert final == []  # the render has no app for the tenant any more: everything is pruned
    wait_for(lambda: kube.get(CAP_TENANT, tenant, namespace) is None, "the pruned CAPTenant to be released")
    assert [
        j["metadata"]["name"] for j in kube.list(JOB, namespace) if operation_of(j) == "deprovisioning"
    ] == []

    # Nothing else arrived: one refused and one accepted provisioning callback, one deprovisioning.
    time.sleep(1.0)
    assert [(a.path, a.answered) for a in registry.arrivals] == [
        (PROVISIONING_CALLBACK, 503),
        (PROVISIONING_CALLBACK, 200),
        (DEPROVISIONING_CALLBACK, 200),
    ]
    # Each PUT carried its own client-credentials token of the saas-registry binding.
    assert len({a.token for a in registry.arrivals}) == len(registry.arrivals)
    assert all(a.token in registry.issued for a in registry.arrivals)
    assert registry.token_requests and all(
        r["path"] == "/oauth/token"
        and r["form"] == {"grant_type": ["client_credentials"], "client_id": [SAAS_CLIENT_ID]}
        and r["content_type"] == "application/x-www-form-urlencoded"
        for r in registry.token_requests
    )

    assert controller.stop() == 0, processes.tails()
    assert server.stop() == 0, processes.tails()
    for process in processes.started:
        secrets_never_logged.assert_absent(process.text(), f"the log of {process.name}")
