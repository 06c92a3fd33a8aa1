"""Fixtures of the CAP deletion tests: the example CAP application (examples/cap-app) rendered by
the `btp-gitops` CLI for the test's namespace, its CRs created in the real API server, and the
test in the kubelet's place, finishing Jobs through their status subresource.

The example's version 1.1.0 gets a two-step deprovisioning (the custom `notify-upgrade` step,
allowed to fail, then `tenant-job`) so that step order and continueOnFailure are exercised. It
is rendered twice: as deployed (the CRs Git puts in the cluster) and with every tenant marked for
deprovisioning, a provider record included: that render's Jobs are what the controller must
create when the CRs are deleted abruptly instead. The CAPTenants in the cluster get the status
their records have in Git, as the controller records it.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.controller.cap.deletion import (
    CapApplicationFinalizer,
    CapDeletionSettings,
    CapTenantFinalizer,
    CapVersionFinalizer,
)
from btp_gitops.controller.kube import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    EVENT,
    JOB,
    KubeClient,
    KubeObject,
    Resource,
)
from btp_gitops.controller.runtime import ObjectKey
from tests.conftest import CLI, EXAMPLES, RunCli
from tests.support.crds import OUR_CRDS, load_crds
from tests.support.kubeapi import KubeAPI, install_crds

APPLICATION = "bookshop"
CLUSTER = "demo"
CAP_CRD_FILES = (
    "capapplications.sme.sap.com.yaml",
    "capapplicationversions.sme.sap.com.yaml",
    "captenants.sme.sap.com.yaml",
)
DEPROVISION = "btp-gitops.io/deprovision"
TWO_STEP_DEPROVISIONING = [
    {"workloadName": "notify-upgrade", "continueOnFailure": True},
    {"workloadName": "tenant-job"},
]
PROVIDER_RECORD: dict[str, Any] = {
    "apiVersion": "sme.sap.com/v1alpha1",
    "kind": "CAPTenant",
    "metadata": {"name": "bookshop-provider", "namespace": APPLICATION},
    "spec": {
        "capApplicationInstance": APPLICATION,
        "subDomain": "bookshop-provider",
        "tenantId": "6f5e4d3c-2b1a-4098-b7c6-d5e4f3a2b1c0",
    },
}
TENANTS = ("acme", "bookshop-provider", "globex", "initech")
FAST = CapDeletionSettings(check_interval=0.2, blocked_interval=0.5, step_warning_after=3600.0)


def _load_all(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _write_all(path: Path, documents: list[dict[str, Any]]) -> None:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def example_source(target: Path, namespace: str, *, mark_every_tenant: bool) -> Path:
    """A copy of examples/cap-app in `namespace`, with the two-step deprovisioning on 1.1.0."""
    shutil.copytree(EXAMPLES / "cap-app", target)
    for path in sorted(target.rglob("*.yaml")):
        documents = _load_all(path)
        for document in documents:
            meta = document["metadata"]
            if meta.get("namespace") == APPLICATION:
                meta["namespace"] = namespace
            if document["kind"] == "CAPApplicationVersion" and document["spec"]["version"] == "1.1.0":
                document["spec"]["tenantOperations"]["deprovisioning"] = TWO_STEP_DEPROVISIONING
            if mark_every_tenant and document["kind"] == "CAPTenant":
                meta.setdefault("annotations", {})[DEPROVISION] = "true"
        _write_all(path, documents)
    if mark_every_tenant:
        provider = copy.deepcopy(PROVIDER_RECORD)
        provider["metadata"]["namespace"] = namespace
        provider["metadata"]["annotations"] = {DEPROVISION: "true"}
        _write_all(target / "tenants" / "bookshop-provider.yaml", [provider])
    return target


@dataclass(frozen=True)
class RenderedExample:
    """The two renders of the example for one namespace, and the Git statuses of its tenants."""

    namespace: str
    deployed: Path  # clusters/<cluster> of the render as deployed
    deprovisioning: Path  # clusters/<cluster> of the render with every tenant marked
    git_statuses: dict[str, dict[str, Any]]

    def _objects(self, tree: Path, app: str, kind: str) -> list[KubeObject]:
        found = []
        # An app of its own in the cluster directory, a tenant's in its shard directory (core.layout).
        directories = [tree / app] if (tree / app).is_dir() else list(tree.glob(f"tenants/*/*/{app}"))
        for path in sorted(p for directory in directories for p in directory.glob("*.yaml")):
            found += [d for d in _load_all(path) if d.get("kind") == kind]
        return found

    def application(self) -> KubeObject:
        return self._objects(self.deployed, f"cap.{self.namespace}.{APPLICATION}", "CAPApplication")[0]

    def versions(self) -> list[KubeObject]:
        return self._objects(self.deployed, f"cap.{self.namespace}.{APPLICATION}", "CAPApplicationVersion")

    def tenant(self, name: str) -> KubeObject:
        return self._objects(self.deployed, f"cap-tenant.{self.namespace}.{name}", "CAPTenant")[0]

    def expected_jobs(self, tenant: str) -> list[KubeObject]:
        """The tenant's deprovisioning Jobs as the marked render has them, in step order."""
        jobs = self._objects(self.deprovisioning, f"cap-tenant.{self.namespace}.{tenant}", "Job")
        assert jobs, f"the marked render has no Jobs for {tenant}"
        assert {j["metadata"]["labels"]["sme.sap.com/tenant-operation-type"] for j in jobs} == {
            "deprovisioning"
        }
        return sorted(jobs, key=lambda j: int(j["metadata"]["labels"]["sme.sap.com/tenant-operation-step"]))

    def deployed_jobs(self, tenant: str) -> list[KubeObject]:
        """The tenant's operation Jobs as deployed (what its Git record renders)."""
        return self._objects(self.deployed, f"cap-tenant.{self.namespace}.{tenant}", "Job")

    def expected_job_names(self, tenant: str) -> list[str]:
        return [j["metadata"]["name"] for j in self.expected_jobs(tenant)]


def render_example(run_cli: RunCli, work: Path, namespace: str) -> RenderedExample:
    trees = {}
    for label, marked in (("deployed", False), ("deprovisioning", True)):
        source = example_source(work / f"source-{label}", namespace, mark_every_tenant=marked)
        result = run_cli("render", source, "--out", work / f"out-{label}", "--cluster", CLUSTER)
        assert result.returncode == 0, result.stderr
        trees[label] = work / f"out-{label}" / "clusters" / CLUSTER
    statuses = {
        doc["metadata"]["name"]: doc["status"]
        for path in sorted((EXAMPLES / "cap-app" / "tenants").glob("*.yaml"))
        for doc in _load_all(path)
        if "status" in doc
    }
    return RenderedExample(namespace, trees["deployed"], trees["deprovisioning"], statuses)


def _run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *map(str, args)], capture_output=True, text=True, check=False, timeout=300
    )


@pytest.fixture(scope="module")
def offline_example(tmp_path_factory: pytest.TempPathFactory) -> RenderedExample:
    """The example rendered for its own namespace, for the tests that need no API server."""
    return render_example(_run_cli, tmp_path_factory.mktemp("cap-example"), APPLICATION)


@pytest.fixture(scope="session")
def cap_crds(kube_api: KubeAPI) -> None:
    with kube_api.api_client() as api:
        install_crds(api, load_crds([OUR_CRDS / name for name in CAP_CRD_FILES]))


@pytest.fixture
def kube(kube_api: KubeAPI, cap_crds: None) -> Iterator[KubeClient]:
    client = KubeClient(kube_api.api_client())
    yield client
    client.close()


@pytest.fixture
def example(run_cli: RunCli, tmp_path: Path, kube_namespace: str) -> RenderedExample:
    return render_example(run_cli, tmp_path, kube_namespace)


# --- the cluster side ----------------------------------------------------------------------------------


def finish_job(kube: KubeClient, namespace: str, name: str, *, succeeded: bool = True) -> None:
    """What the Job controller writes once the kubelet reports the pod's end."""
    now = "2024-01-01T00:00:00Z"
    if succeeded:
        status = {
            "startTime": now,
            "completionTime": now,
            "succeeded": 1,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
                {"type": "Complete", "status": "True", "lastTransitionTime": now},
            ],
        }
    else:
        status = {
            "startTime": now,
            "failed": 1,
            "conditions": [
                {"type": "FailureTarget", "status": "True", "lastTransitionTime": now},
                {"type": "Failed", "status": "True", "lastTransitionTime": now},
            ],
        }
    kube.patch_status(JOB, name, status, namespace)


def as_an_older_render(obj: KubeObject) -> KubeObject:
    """A rendered CR without the finalizers the render now writes."""
    older = copy.deepcopy(obj)
    older["metadata"].pop("finalizers", None)
    return older


@dataclass
class CapCluster:
    """The example's CRs in the test namespace, and what a test does to them."""

    kube: KubeClient
    example: RenderedExample

    @property
    def namespace(self) -> str:
        return self.example.namespace

    def deploy(self, *, with_git_statuses: bool = True, older_render: bool = False) -> None:
        """Create the CRs as Argo CD would, then record each tenant's Git status on it.

        `older_render`: as a btp-gitops that did not render the finalizers wrote them, so that
        only the controller's own add (its safety net) puts them on."""
        shape = as_an_older_render if older_render else copy.deepcopy
        self.kube.create(CAP_APPLICATION, shape(self.example.application()), self.namespace)
        for version in self.example.versions():
            self.kube.create(CAP_APPLICATION_VERSION, shape(version), self.namespace)
        for name in TENANTS:
            self.kube.create(CAP_TENANT, shape(self.example.tenant(name)), self.namespace)
            status = self.example.git_statuses.get(name)
            if with_git_statuses and status:
                self.kube.patch_status(CAP_TENANT, name, status, self.namespace)

    def get(self, resource: Resource, name: str) -> KubeObject | None:
        return self.kube.get(resource, name, self.namespace)

    def delete(self, resource: Resource, name: str) -> None:
        assert self.kube.delete(resource, name, self.namespace)

    def jobs(self, operation: str | None = None) -> dict[str, KubeObject]:
        selector = f"sme.sap.com/tenant-operation-type={operation}" if operation else None
        return {
            j["metadata"]["name"]: j for j in self.kube.list(JOB, self.namespace, label_selector=selector)
        }

    def tenant_jobs(self, tenant: str) -> list[str]:
        """Names of the deprovisioning Jobs of one tenant, sorted by step."""
        owner = f"{self.namespace}.{tenant}"
        found = [
            j
            for j in self.jobs("deprovisioning").values()
            if j["metadata"]["annotations"]["sme.sap.com/owner-identifier"] == owner
        ]
        found.sort(key=lambda j: int(j["metadata"]["labels"]["sme.sap.com/tenant-operation-step"]))
        return [j["metadata"]["name"] for j in found]

    def finish(self, job: str, *, succeeded: bool = True) -> None:
        finish_job(self.kube, self.namespace, job, succeeded=succeeded)

    def events(self, name: str, reason: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.kube.list(EVENT, self.namespace)
            if e["involvedObject"]["name"] == name and (reason is None or e["reason"] == reason)
        ]

    def _crs(self) -> list[KubeObject]:
        return [
            obj
            for resource in (CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT)
            for obj in self.kube.list(resource, self.namespace)
        ]

    def finalized(self) -> dict[tuple[str, str], list[str]]:
        """The finalizers of every CAP CR in the namespace, by (kind, name)."""
        return {(o["kind"], o["metadata"]["name"]): o["metadata"].get("finalizers", []) for o in self._crs()}

    def resource_versions(self) -> dict[tuple[str, str], str]:
        return {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in self._crs()}

    def remaining(self) -> list[tuple[str, str]]:
        return sorted(self.finalized())

    def condition(self, tenant: str) -> dict[str, Any]:
        obj = self.get(CAP_TENANT, tenant)
        assert obj is not None
        conditions = obj.get("status", {}).get("conditions") or []
        return next(c for c in conditions if c["type"] == "Deprovisioned")


@pytest.fixture
def cluster(kube: KubeClient, example: RenderedExample) -> CapCluster:
    return CapCluster(kube, example)


@dataclass
class Controller:
    """One life of the controller: its own client and reconciler instances, nothing carried over."""

    kube: KubeClient
    tenants: CapTenantFinalizer
    versions: CapVersionFinalizer
    applications: CapApplicationFinalizer

    @classmethod
    def start(cls, kube: KubeClient, settings: CapDeletionSettings = FAST) -> Controller:
        return cls(
            kube,
            CapTenantFinalizer(kube, settings),
            CapVersionFinalizer(kube, settings),
            CapApplicationFinalizer(kube, settings),
        )


ControllerFactory = Callable[[], Controller]


@pytest.fixture
def start_controller(kube_api: KubeAPI, cap_crds: None) -> Iterator[ControllerFactory]:
    """A new controller life on each call (a restart), each with its own API client."""
    clients: list[KubeClient] = []

    def start() -> Controller:
        client = KubeClient(kube_api.api_client())
        clients.append(client)
        return Controller.start(client)

    yield start
    for client in clients:
        client.close()


def reconcile_everything(controller: Controller, cluster: CapCluster) -> None:
    """One reconcile of every CAP CR the example has, as the initial list of a start queues them."""
    namespace = cluster.namespace
    controller.applications.reconcile(ObjectKey(namespace, APPLICATION))
    for version in cluster.example.versions():
        controller.versions.reconcile(ObjectKey(namespace, version["metadata"]["name"]))
    for name in TENANTS:
        controller.tenants.reconcile(ObjectKey(namespace, name))


def eventually(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
