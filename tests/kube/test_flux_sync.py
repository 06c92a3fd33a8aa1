"""A real Flux syncs a rendered repository: the GitOps loop end to end.

Flux's source-controller and kustomize-controller (built from their Go modules by
scripts/build-tools.sh) run against a kube-apiserver of their own (started here, not the session's
shared one: Flux applies cluster-scoped objects and keeps reconciling), reading a Git repository
that `git http-backend` serves on 127.0.0.1. The sources are a CAP application with tenants and
the BTP operator module, rendered with `--target flux --emit-wiring`; the test applies only the
bootstrap (the GitRepository and the root Kustomization) and then changes nothing but Git:

1. every rendered object appears in the API server, applied by Flux, and every Kustomization is
   Ready at the pushed commit, no stage before the one it depends on;
2. a tenant added to the sources appears, and no other object changes (resourceVersions of the
   rendered objects, generations of the Flux objects);
3. a tenant removed from the sources is pruned: its Kustomizations are deleted by the root, and
   their objects by Flux; those with the controller's finalizer wait for it, as documented, and
   go once the test (playing the controller) removes it;
4. the same over a private repository (`--flux-secret-ref`, HTTP basic auth): without the Secret
   the GitRepository is not Ready and nothing is applied.

There is no kubelet, scheduler or controller-manager, and no operator runs that would set the
custom resources' Ready conditions: health checks are off (`--flux-no-wait`, so every
Kustomization has `wait: false`), or no stage would ever be Ready. The GitRepository polls every
2 s and kustomize-controller re-checks a dependency every second (`--requeue-dependency`), so a
commit is applied within seconds; the Kustomizations' own interval (drift correction, and the
retry after a failed apply) stays a minute, see SYNC_OPTIONS. Every wait is bounded and says what
it waited for, with the controllers' logs about each object it still waits for.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from btp_gitops.generator.core.layout import app_directory, app_path
from tests.conftest import CLI, EXAMPLES, ROOT
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.dry_run import (
    RenderedObject,
    ServedResources,
    create_namespace,
    namespaces_used,
    object_path,
    rendered_objects,
    request,
    wait_until_served,
)
from tests.support.flux import (
    FLUX_NAMESPACE,
    FluxControllers,
    controller_log_about,
    flux_crds,
    running_flux,
)
from tests.support.git_http import GitHttpRemote
from tests.support.kubeapi import KubeAPI, install_crds, start_kube_api

pytestmark = [pytest.mark.kube, pytest.mark.tools, pytest.mark.crds, pytest.mark.slow]

CLUSTER = "demo"
ROOT_KUSTOMIZATION = f"btp-gitops-{CLUSTER}"
SYNC_TIMEOUT = 300.0  # seconds for Flux to apply or prune a commit on a loaded 2-core machine
POLL = 0.5
# A new commit does not wait for a Kustomization's interval: kustomize-controller enqueues every
# Kustomization of a GitRepository when its revision changes. The interval is the periodic
# re-apply, and each one first marks the Kustomization Ready=Unknown "Reconciliation in progress"
# (and its dependents Ready=False "dependency not ready" if they look meanwhile). At 5 s the ~25
# stages asked for 5 applies a second of the controller's 4 workers, more than they do on this
# machine: some Kustomizations were always mid-apply (the test used to fail waiting for all of them
# to be Ready at once; docs/gitops/flux.md#how-often-flux-re-applies).
SYNC_OPTIONS = (
    "--flux-interval",
    "1m",
    "--flux-source-interval",
    "2s",
    "--flux-timeout",
    "1m",
    "--flux-no-wait",
)
# The kinds the rendered CAP application and BTP operator use, besides our own and the BTP
# operator's CRDs (the latter are rendered and applied by Flux itself).
THIRD_PARTY = (
    "cert-manager",
    "istio",
    "gardener-cert",
    "gardener-dns",
    "prometheus-operator",
    "external-secrets",
)
SECRET = "gitops-auth"
USERNAME, PASSWORD = "flux", "test-password-not-a-secret"
NEW_TENANT = """\
apiVersion: sme.sap.com/v1alpha1
kind: CAPTenant
metadata:
  name: hooli
  namespace: bookshop
  annotations:
    sme.sap.com/subscription-context-secret: hooli-subscription-context
spec:
  capApplicationInstance: bookshop
  subDomain: hooli
  tenantId: 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
"""
Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


def key(obj: RenderedObject) -> Key:
    return (obj.api_version, obj.kind, obj.namespace or "", obj.name)


def is_flux(obj: RenderedObject) -> bool:
    return obj.api_version.split("/")[0].endswith(".toolkit.fluxcd.io")


# --- the cluster and the repository --------------------------------------------------------------


@dataclass
class FluxCluster:
    kube: KubeAPI
    client: k8s.ApiClient
    served: ServedResources
    flux: FluxControllers


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[FluxCluster]:
    """A kube-apiserver of this test's own with the CRDs the output and Flux need, and Flux."""
    kube, stop_kube = start_kube_api(tmp_path / "kube")
    try:
        with kube.api_client() as client:
            crds = [*load_crds([*our_crd_files(), *third_party_crd_files(*THIRD_PARTY)]), *flux_crds()]
            install_crds(client, crds, timeout=180)
            served = ServedResources(client)
            for crd in crds:  # Established comes a moment before discovery serves the kind
                for version in crd["spec"]["versions"]:
                    if version.get("served"):
                        api_version = f"{crd['spec']['group']}/{version['name']}"
                        wait_until_served(served, api_version, crd["spec"]["names"]["kind"])
            create_namespace(client, FLUX_NAMESPACE)
            with running_flux(kube, tmp_path / "flux") as flux:
                yield FluxCluster(kube, client, served, flux)
    finally:
        stop_kube()


@dataclass
class GitOpsRepo:
    """The sources, the work tree `render --commit` writes, and the bare repository Flux reads."""

    sources: Path
    work: Path
    bare: Path
    url: str
    private: bool

    @property
    def cluster_dir(self) -> Path:
        return self.work / "clusters" / CLUSTER

    def render_and_push(self) -> str:
        """Render the sources, commit, push to the served repository; the commit's SHA."""
        secret = ("--flux-secret-ref", SECRET) if self.private else ()
        result = subprocess.run(
            [
                str(CLI),
                "render",
                str(self.sources),
                "--out",
                str(self.work),
                "--cluster",
                CLUSTER,
                "--target",
                "flux",
                "--emit-wiring",
                "--repo-url",
                self.url,
                *SYNC_OPTIONS,
                *secret,
                "--commit",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
            timeout=300,
        )
        assert result.returncode == 0, f"render failed:\n{result.stdout}\n{result.stderr}"
        git(self.work, "push", "--quiet", str(self.bare), "HEAD:refs/heads/main")
        return git(self.work, "rev-parse", "HEAD")

    def changed_files(self, before: str, after: str) -> dict[str, str]:
        """Files of the cluster directory changed between two commits: path -> A, M or D."""
        out = git(
            self.work, "diff", "--name-status", "--no-renames", before, after, "--", f"clusters/{CLUSTER}"
        )
        return {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines()}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)} failed in {cwd}:\n{done.stderr}"
    return done.stdout.strip()


@pytest.fixture
def served_git(tmp_path: Path) -> Iterator[GitHttpRemote]:
    root = tmp_path / "remote"
    root.mkdir()
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", "gitops.git")
    remote = GitHttpRemote(root)
    try:
        yield remote
    finally:
        remote.stop()


def gitops_repo(tmp_path: Path, remote: GitHttpRemote, *, private: bool) -> GitOpsRepo:
    sources = tmp_path / "sources"
    shutil.copytree(EXAMPLES / "cap-app", sources / "cap-app")
    shutil.copytree(EXAMPLES / "btp-operator", sources / "btp-operator")
    return GitOpsRepo(
        sources, tmp_path / "work", remote.root / "gitops.git", remote.url("gitops.git"), private
    )


# --- reading the cluster -------------------------------------------------------------------------


def read(cluster: FluxCluster, obj: RenderedObject) -> dict[str, Any] | None:
    resource = cluster.served.lookup(obj.api_version, obj.kind)
    assert resource is not None, f"the API server does not serve {obj.kind} in {obj.api_version}"
    reply = request(cluster.client, "GET", object_path(obj, resource))
    if reply.status == 404:
        return None
    assert reply.status == 200, f"GET {obj.describe()}: {reply.message()}"
    return reply.body


def ready(body: dict[str, Any] | None) -> dict[str, Any] | None:
    """The Ready condition of a Flux object."""
    for condition in (body or {}).get("status", {}).get("conditions", []):
        if condition.get("type") == "Ready":
            return dict(condition)
    return None


def synced_at(body: dict[str, Any] | None, commit: str) -> bool:
    """Ready at `commit` for the object's current spec: a Kustomization applied it, a GitRepository
    fetched it."""
    if body is None:
        return False
    condition = ready(body)
    status = body.get("status", {})
    revision = str(status.get("lastAppliedRevision") or status.get("artifact", {}).get("revision") or "")
    return (
        condition is not None
        and condition.get("status") == "True"
        and revision.endswith(f":{commit}")
        and status.get("observedGeneration") == body["metadata"]["generation"]
    )


def state(cluster: FluxCluster, objects: list[RenderedObject]) -> dict[Key, str]:
    """What changes when an object is written: the resourceVersion of a rendered object, the
    generation of a Flux object (whose status the controllers update all the time)."""
    found = {}
    for obj in objects:
        body = read(cluster, obj)
        assert body is not None, f"{obj.describe()} is missing"
        metadata = body["metadata"]
        found[key(obj)] = (
            f"generation {metadata['generation']}" if is_flux(obj) else metadata["resourceVersion"]
        )
    return found


def describe_flux(cluster: FluxCluster, waiting: list[RenderedObject]) -> str:
    """The Flux objects still waited for: their Ready condition now, and what the controller that
    reconciles each one last logged about it."""
    lines = []
    for obj in waiting:
        body = read(cluster, obj)
        condition = ready(body) or {}
        status = (body or {}).get("status", {})
        lines.append(
            f"  {obj.kind} {obj.name}: "
            + (
                "missing"
                if body is None
                else f"Ready={condition.get('status')} {condition.get('message')!r}, last applied "
                f"{status.get('lastAppliedRevision') or status.get('artifact', {}).get('revision')}"
            )
        )
        controller = cluster.flux.source if obj.kind == "GitRepository" else cluster.flux.kustomize
        lines.extend(f"    {line}" for line in controller_log_about(controller.log_path, obj.name))
    return "\n".join(lines)


def wait_for_sync(cluster: FluxCluster, repo: GitOpsRepo, commit: str) -> dict[str, int]:
    """Wait until every Flux object has been seen Ready at `commit` and every rendered object
    exists; the poll at which each Flux object was first seen Ready at the commit.

    Each Flux object counts from the first time it is seen Ready at the commit, not only when all
    are at once: kustomize-controller marks a Kustomization Ready=Unknown at the start of every
    reconciliation, the periodic ones included, and its dependents Ready=False while they wait for
    it, so with enough stages some are mid-reconciliation whenever one looks."""
    objects = rendered_objects(repo.cluster_dir)
    flux_objects = [obj for obj in objects if is_flux(obj)]
    first_ready: dict[str, int] = {}
    deadline = time.monotonic() + SYNC_TIMEOUT
    poll = 0
    missing: list[str] = []
    while True:
        for obj in flux_objects:
            if obj.name not in first_ready and synced_at(read(cluster, obj), commit):
                first_ready[obj.name] = poll
        waiting = [obj for obj in flux_objects if obj.name not in first_ready]
        if not waiting:
            missing = [obj.describe() for obj in objects if not is_flux(obj) and read(cluster, obj) is None]
            if not missing:
                return first_ready
        assert cluster.flux.running(), f"a Flux controller exited:\n{cluster.flux.logs()}"
        if time.monotonic() > deadline:
            raise AssertionError(
                f"Flux did not sync commit {commit} within {SYNC_TIMEOUT:g}s.\n"
                f"Flux objects never seen Ready at it:\n{describe_flux(cluster, waiting)}\n"
                f"{len(missing)} rendered objects missing, e.g.: {missing[:8]}\n{cluster.flux.logs()}"
            )
        poll += 1
        time.sleep(POLL)


def wait_until_gone(cluster: FluxCluster, objects: list[RenderedObject], what: str) -> list[dict[str, Any]]:
    """Wait until each Flux object is deleted and each other object deleted or marked for
    deletion; the latter still held by a finalizer."""
    deadline = time.monotonic() + SYNC_TIMEOUT
    while True:
        bodies = [(obj, read(cluster, obj)) for obj in objects]
        left = [
            obj
            for obj, body in bodies
            if body is not None and (is_flux(obj) or not body["metadata"].get("deletionTimestamp"))
        ]
        if not left:
            return [body for _, body in bodies if body is not None]
        assert cluster.flux.running(), f"a Flux controller exited:\n{cluster.flux.logs()}"
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: {len(left)} objects not pruned within {SYNC_TIMEOUT:g}s, e.g. "
                f"{[obj.describe() for obj in left[:8]]}\n{cluster.flux.logs()}"
            )
        time.sleep(POLL)


def apply_bootstrap(cluster: FluxCluster, repo: GitOpsRepo) -> None:
    """What the docs tell a user to apply once: the GitRepository and the root Kustomization."""
    wiring = repo.cluster_dir / ".wiring"
    for name in (f"gitrepository-{ROOT_KUSTOMIZATION}.yaml", f"kustomization-{ROOT_KUSTOMIZATION}.yaml"):
        [obj] = [o for o in rendered_objects(repo.cluster_dir) if o.path.endswith(f"/.wiring/{name}")]
        assert (wiring / name).is_file()
        resource = cluster.served.lookup(obj.api_version, obj.kind)
        assert resource is not None
        reply = request(
            cluster.client,
            "PATCH",
            object_path(obj, resource),
            query=[("fieldManager", "bootstrap")],
            body=obj.text,
            content_type="application/apply-patch+yaml",
        )
        assert reply.status in (200, 201), f"applying {name}: {reply.message()}"


def prepare_namespaces(cluster: FluxCluster, repo: GitOpsRepo) -> None:
    """The namespaces the apps are installed into belong to the cluster, not to the render."""
    for namespace in sorted(namespaces_used(rendered_objects(repo.cluster_dir), cluster.served)):
        create_namespace(cluster.client, namespace)


def first_reconciled(body: dict[str, Any] | None, commit: str) -> str:
    """When kustomize-controller first applied `commit` for this Kustomization (its status history;
    the Ready condition's lastTransitionTime moves with every reconciliation, so it cannot tell)."""
    for entry in (body or {}).get("status", {}).get("history", []):
        if str(entry.get("metadata", {}).get("revision", "")).endswith(f":{commit}"):
            return str(entry["firstReconciled"])
    raise AssertionError(f"no history entry for commit {commit} in {body and body.get('status')}")


def check_dependency_order(
    cluster: FluxCluster, repo: GitOpsRepo, first_ready: dict[str, int], commit: str
) -> None:
    """No Kustomization was seen Ready, or first applied the commit, before one it depends on."""
    stages = [obj for obj in rendered_objects(repo.cluster_dir) if obj.kind == "Kustomization"]
    dependent = [obj for obj in stages if obj.body["spec"].get("dependsOn")]
    assert dependent, "no Kustomization depends on another: the ordering is not exercised"
    by_name = {obj.name: obj for obj in stages}
    for obj in dependent:
        applied = first_reconciled(read(cluster, obj), commit)
        for dependency in obj.body["spec"]["dependsOn"]:
            name = dependency["name"]
            dep_applied = first_reconciled(read(cluster, by_name[name]), commit)
            assert first_ready[name] <= first_ready[obj.name], f"{obj.name} was Ready before {name}"
            assert dep_applied <= applied, (
                f"{obj.name} applied at {applied}, before {name} (at {dep_applied})"
            )


# --- the test ------------------------------------------------------------------------------------


@pytest.mark.parametrize("private", [False, True], ids=["public", "private-secret-ref"])
def test_flux_applies_and_prunes_what_btp_gitops_renders(
    tmp_path: Path, cluster: FluxCluster, served_git: GitHttpRemote, private: bool
) -> None:
    repo = gitops_repo(tmp_path, served_git, private=private)
    if private:
        served_git.require_basic_auth(USERNAME, PASSWORD)
    first = repo.render_and_push()
    prepare_namespaces(cluster, repo)
    apply_bootstrap(cluster, repo)
    objects = rendered_objects(repo.cluster_dir)
    source = next(obj for obj in objects if obj.kind == "GitRepository")
    if private:
        assert source.body["spec"]["secretRef"] == {"name": SECRET}
        check_private_source_needs_its_secret(cluster, served_git, repo, source)
    else:
        assert "secretRef" not in source.body["spec"]

    # 1. everything rendered is applied by Flux, stage after stage
    first_ready = wait_for_sync(cluster, repo, first)
    check_dependency_order(cluster, repo, first_ready, first)
    applied = [obj for obj in objects if not is_flux(obj)]
    managers = {
        entry["manager"]
        for obj in applied
        for entry in (read(cluster, obj) or {})["metadata"].get("managedFields", [])
        if entry["operation"] == "Apply"
    }
    assert managers == {"kustomize-controller"}, f"applied by {managers}, not only by Flux"
    before = state(cluster, objects)

    # 2. a tenant added in Git appears, nothing else changes
    (repo.sources / "cap-app" / "tenants" / "hooli.yaml").write_text(NEW_TENANT)
    second = repo.render_and_push()
    changed = repo.changed_files(first, second)
    tenant_dir = f"clusters/{CLUSTER}/{app_directory('cap-tenant.bookshop.hooli', 'bookshop.bookshop')}/"
    shard, group = tenant_dir.rsplit("/", 2)[0], tenant_dir.rsplit("/", 3)[0]
    # The ownership manifests: the cluster directory's lists the new stage Kustomizations of the
    # wiring; hooli's shard is a new one (no other tenant of the example is in it), so its manifest
    # is added and the group's, which lists the shards' manifests, changes.
    records = {
        f"clusters/{CLUSTER}/.wiring/kustomization.yaml",
        f"clusters/{CLUSTER}/.btp-gitops-files",
        f"{group}/.btp-gitops-files",
    }
    assert {path for path, status in changed.items() if status != "A"} == records, changed
    assert changed[f"{shard}/.btp-gitops-files"] == "A", changed
    assert all(
        path.startswith((tenant_dir, f"clusters/{CLUSTER}/.wiring/")) or path in records
        for path in changed
        if path != f"{shard}/.btp-gitops-files"
    )
    wait_for_sync(cluster, repo, second)
    with_tenant = rendered_objects(repo.cluster_dir)
    after = state(cluster, with_tenant)
    added = set(after) - set(before)
    assert {app_path(obj.path.split("/", 2)[2]).app for obj in with_tenant if key(obj) in added} == {
        "cap-tenant.bookshop.hooli",
        ".wiring",
    }
    assert any(k[1] == "CAPTenant" and k[3] == "hooli" for k in added)
    assert {k: after[k] for k in before} == before, "objects the new tenant does not touch were changed"

    # 3. a tenant removed from Git is pruned
    globex = [obj for obj in with_tenant if "/cap-tenant.bookshop.globex/" in obj.path]
    globex_stages = [
        obj
        for obj in with_tenant
        if obj.kind == "Kustomization" and obj.name.startswith("cap-tenant.bookshop.globex-")
    ]
    assert globex and globex_stages
    (repo.sources / "cap-app" / "tenants" / "globex.yaml").unlink()
    third = repo.render_and_push()
    removed = repo.changed_files(second, third)
    assert {path for path, status in removed.items() if status != "D"} == records, removed
    wait_for_sync(cluster, repo, third)
    held = wait_until_gone(cluster, [*globex_stages, *globex], "the removed tenant globex")
    # Only the controller's finalizers hold anything back (the CAPTenant waits for its
    # deprovisioning); playing the controller, the test lets them go.
    assert {tuple(body["metadata"].get("finalizers", [])) for body in held} <= {("sme.sap.com/captenant",)}, (
        held
    )
    for body in held:
        remove_finalizers(cluster, body)
    wait_until_absent(cluster, [*globex_stages, *globex])
    remaining = rendered_objects(repo.cluster_dir)
    assert {key(obj) for obj in remaining} == set(after) - {key(obj) for obj in [*globex, *globex_stages]}
    assert state(cluster, remaining) == {k: v for k, v in after.items() if k in {key(o) for o in remaining}}


def wait_for_failing_source(cluster: FluxCluster, source: RenderedObject, why: str, says: str) -> None:
    """Wait until the GitRepository is Ready=False with a message containing `says`."""
    deadline = time.monotonic() + 120
    condition: dict[str, Any] | None = None
    while True:
        condition = ready(read(cluster, source))
        if (
            condition is not None
            and condition.get("status") == "False"
            and says in str(condition.get("message"))
        ):
            return
        assert time.monotonic() < deadline, (
            f"{why}: the GitRepository was not reported failing with {says!r} within 120s "
            f"(Ready: {condition})\n{cluster.flux.logs()}"
        )
        time.sleep(POLL)


def check_private_source_needs_its_secret(
    cluster: FluxCluster, remote: GitHttpRemote, repo: GitOpsRepo, source: RenderedObject
) -> None:
    """The remote refuses anonymous reads; without the Secret, and with wrong credentials, the
    GitRepository is not Ready and nothing is applied; with the right ones it syncs (later)."""
    anonymous = subprocess.run(
        ["git", "ls-remote", repo.url],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "GIT_TERMINAL_PROMPT": "0", "HOME": str(repo.work)},
    )
    assert anonymous.returncode != 0 and remote.refused, "the private remote answered an anonymous read"
    wait_for_failing_source(cluster, source, "without its Secret", f'"{SECRET}" not found')

    refused = remote.refused
    core = k8s.CoreV1Api(cluster.client)
    wrong = {"username": USERNAME, "password": "not-the-password"}
    core.create_namespaced_secret(
        FLUX_NAMESPACE, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name=SECRET), string_data=wrong)
    )
    wait_for_failing_source(cluster, source, "with a wrong password", "authentication required")
    assert remote.refused > refused, "source-controller failed without asking the remote"
    objects = rendered_objects(repo.cluster_dir)
    stages = [obj for obj in objects if obj.kind == "Kustomization" and obj.name != ROOT_KUSTOMIZATION]
    assert all(read(cluster, obj) is None for obj in stages), "stage Kustomizations applied without a source"

    right = {"username": USERNAME, "password": PASSWORD}
    core.replace_namespaced_secret(
        SECRET, FLUX_NAMESPACE, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name=SECRET), string_data=right)
    )


def remove_finalizers(cluster: FluxCluster, body: dict[str, Any]) -> None:
    """What the controller does once it has deprovisioned: let the object go."""
    obj = RenderedObject("cluster", "", body)
    resource = cluster.served.lookup(obj.api_version, obj.kind)
    assert resource is not None and resource.namespaced and obj.namespace
    group, version = obj.api_version.split("/")
    k8s.CustomObjectsApi(cluster.client).patch_namespaced_custom_object(
        group, version, obj.namespace, resource.plural, obj.name, {"metadata": {"finalizers": None}}
    )


def wait_until_absent(cluster: FluxCluster, objects: list[RenderedObject]) -> None:
    deadline = time.monotonic() + 60
    while left := [obj for obj in objects if read(cluster, obj) is not None]:
        assert time.monotonic() < deadline, (
            f"still there after their finalizers went: {[o.describe() for o in left]}"
        )
        time.sleep(POLL)
