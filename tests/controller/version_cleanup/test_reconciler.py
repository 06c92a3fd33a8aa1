"""VersionCleanupReconciler end to end with real components: the kube-apiserver (CAPApplication and
CAPApplicationVersion CRDs, version gate ConfigMaps, Events), a bare Git remote on disk with the
controller's SourceRepo, and a Prometheus server fed exact samples. Covers dry-run (Event, no
commit) against `true` (a commit the remote receives; a fresh clone lacks the version and still
renders), idempotence after a restart, the interval, rules not met, Prometheus unreachable,
tenants and readiness keeping versions, a tenant recorded between evaluation and commit, and one
run under the real Manager. Queries run at a fixed instant (EVALUATION_TIME); nothing is faked."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import git
import pytest
import yaml
from prometheus_client import CollectorRegistry

from btp_gitops.controller.cap.version_cleanup import (
    CLEANUP_DEFERRED,
    READY_FOR_DELETION,
    CleanupSettings,
    Refusal,
    VersionCleanupReconciler,
    guarded_removal,
)
from btp_gitops.controller.clients.prometheus import PrometheusClient
from btp_gitops.controller.errors import PrometheusUnavailable
from btp_gitops.controller.kube import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CONFIG_MAP,
    EVENT,
    KubeClient,
    KubeObject,
)
from btp_gitops.controller.runtime import DONE, Manager, ObjectKey, Outcome, RuntimeSettings
from tests.conftest import RunCli
from tests.controller.version_cleanup.builders import (
    Document,
    application,
    domain,
    gauge,
    push_documents,
    remote_log,
    tenant,
    version,
    version_name,
)
from tests.controller.version_cleanup.conftest import Sources, SourcesFactory
from tests.support.prometheus import EVALUATION_TIME, PrometheusFactory, Series, steady
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kube

INTERVAL = 600.0
SESSIONS_RULE = {"srv": {"metrics": [gauge("current_sessions", "5m", "0")]}}


def _scene(namespace: str, mode: str | None, *tenants: Document) -> list[Document]:
    """shop 1.0.0 (srv: no sessions may remain) and 1.1.0, with its domain and tenants."""
    return [
        application(namespace, mode=mode),
        domain(namespace),
        version(namespace, "1.0.0", rules=SESSIONS_RULE),
        version(namespace, "1.1.0"),
        *tenants,
    ]


def _sessions(namespace: str, value: float) -> list[Series]:
    return [steady("current_sessions", {"job": "shop-1-0-0-srv-svc", "namespace": namespace}, value)]


def _deploy(kube: KubeClient, documents: Iterable[Document], ready: Iterable[str]) -> None:
    """What the GitOps tool and the application's app put in the cluster: the CAPApplication and
    versions as rendered (no status), and the gates of the versions that became Ready."""
    for body in documents:
        namespace = body["metadata"]["namespace"]
        if body["kind"] == "CAPApplication":
            kube.create(CAP_APPLICATION, body, namespace)
        elif body["kind"] == "CAPApplicationVersion":
            kube.create(CAP_APPLICATION_VERSION, body, namespace)
            if body["spec"]["version"] in ready:
                gate = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"{body['metadata']['name']}-ready"},
                }
                kube.create(CONFIG_MAP, gate, namespace)


def _reconciler(kube: KubeClient, sources: Sources, prometheus_url: str) -> VersionCleanupReconciler:
    return VersionCleanupReconciler(
        kube,
        sources.repo,
        PrometheusClient(prometheus_url, timeout=2),
        CleanupSettings(interval=INTERVAL, unavailable_retry=30),
        clock=lambda: EVALUATION_TIME,
    )


def _events(kube: KubeClient, namespace: str, reason: str) -> list[KubeObject]:
    return [e for e in kube.list(EVENT, namespace) if e.get("reason") == reason]


def _clone(remote: Path, directory: Path) -> Path:
    git.Repo.clone_from(str(remote), directory).close()
    return directory


def _commit_message(remote: Path) -> str:
    repo = git.Repo(remote)
    try:
        return str(repo.commit("main").message)
    finally:
        repo.close()


# --- dry-run and true ------------------------------------------------------------------------------


@pytest.mark.tools
def test_dry_run_reports_the_version_and_commits_nothing(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    prometheus_with: PrometheusFactory,
) -> None:
    documents = _scene(kube_namespace, "dry-run", tenant(kube_namespace, "acme", current="1.1.0"))
    sources = sources_with(documents)
    _deploy(kube, documents, ready={"1.0.0", "1.1.0"})
    prometheus = prometheus_with(_sessions(kube_namespace, 0.0))

    outcome = _reconciler(kube, sources, prometheus.url).reconcile(ObjectKey(kube_namespace, "shop"))

    assert outcome == Outcome(requeue_after=INTERVAL)
    assert len(remote_log(sources.remote)) == 1
    [event] = _events(kube, kube_namespace, READY_FOR_DELETION)
    assert event["type"] == "Normal"
    assert event["involvedObject"]["kind"] == "CAPApplicationVersion"
    assert event["involvedObject"]["name"] == "shop-1-0-0"
    assert event["message"] == (
        f"dry-run: CAPApplicationVersion {kube_namespace}/shop-1-0-0 (1.0.0) is ready for deletion: "
        "srv: Gauge current_sessions (average over 5m): 0 <= 0; approuter: no deletion rules; "
        "not removed (sme.sap.com/enable-cleanup-monitoring is 'dry-run')"
    )


@pytest.mark.tools
def test_true_removes_the_version_by_a_commit_and_the_tree_still_renders(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    prometheus_with: PrometheusFactory,
    tmp_path: Path,
    run_cli: RunCli,
) -> None:
    documents = _scene(kube_namespace, "true", tenant(kube_namespace, "acme", current="1.1.0"))
    sources = sources_with(documents)
    _deploy(kube, documents, ready={"1.0.0", "1.1.0"})
    prometheus = prometheus_with(_sessions(kube_namespace, 0.0))

    outcome = _reconciler(kube, sources, prometheus.url).reconcile(ObjectKey(kube_namespace, "shop"))

    assert outcome == Outcome(requeue_after=INTERVAL)
    commits = remote_log(sources.remote)
    assert len(commits) == 2
    message = _commit_message(sources.remote)
    assert message.startswith(
        f"Remove CAPApplicationVersion {kube_namespace}/shop-1-0-0 (1.0.0): ready for deletion\n"
    )
    assert "The highest Ready version is shop-1-1-0 (1.1.0); no tenant runs on" in " ".join(message.split())
    assert "- srv: Gauge current_sessions (average over 5m): 0 <= 0\n" in message
    assert (
        f'  query: sum(avg_over_time(current_sessions{{job="shop-1-0-0-srv-svc",namespace="{kube_namespace}"}}[5m]))\n'
        in message
    )
    assert "- approuter: no deletion rules\n" in message
    assert "\nCleanup-Mode: true\n" in message

    clone = _clone(sources.remote, tmp_path / "fresh")
    app_dir = clone / kube_namespace / "shop"
    assert sorted(p.name for p in app_dir.iterdir()) == [
        "capapplication.yaml",
        "tenants",
        "version-1.1.0.yaml",
    ]
    out = tmp_path / "rendered"
    rendered = run_cli("render", clone, "--out", out, "--cluster", "demo")
    assert rendered.returncode == 0, rendered.stderr
    app_files = sorted(p.name for p in (out / "clusters" / "demo" / f"cap.{kube_namespace}.shop").iterdir())
    assert "capapplicationversion-shop-1-1-0.yaml" in app_files
    assert not [name for name in app_files if "shop-1-0-0" in name]

    [event] = _events(kube, kube_namespace, READY_FOR_DELETION)
    assert event["involvedObject"]["name"] == "shop-1-0-0"
    assert event["message"].endswith(f"; removed from the source repository in commit {commits[0][:12]}")


@pytest.mark.tools
def test_a_second_pass_changes_nothing(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    prometheus_with: PrometheusFactory,
) -> None:
    documents = _scene(kube_namespace, "true", tenant(kube_namespace, "acme", current="1.1.0"))
    sources = sources_with(documents)
    _deploy(kube, documents, ready={"1.0.0", "1.1.0"})
    prometheus = prometheus_with(_sessions(kube_namespace, 0.0))
    key = ObjectKey(kube_namespace, "shop")
    reconciler = _reconciler(kube, sources, prometheus.url)
    reconciler.reconcile(key)
    assert len(remote_log(sources.remote)) == 2

    # The same controller within the interval: nothing is evaluated, it waits for the rest of it.
    again = reconciler.reconcile(key)
    assert again.requeue_after is not None and 0 < again.requeue_after <= INTERVAL

    # A restarted controller, before the GitOps tool pruned the version from the cluster (its
    # gate and CAPApplicationVersion are still there): the sources no longer have it.
    restarted = _reconciler(kube, sources, prometheus.url)
    assert restarted.reconcile(key) == Outcome(requeue_after=INTERVAL)
    assert len(remote_log(sources.remote)) == 2
    assert len(_events(kube, kube_namespace, READY_FOR_DELETION)) == 1


# --- versions that stay ----------------------------------------------------------------------------------


@pytest.mark.tools
def test_rules_not_met_keep_the_version(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    prometheus_with: PrometheusFactory,
) -> None:
    documents = _scene(kube_namespace, "true", tenant(kube_namespace, "acme", current="1.1.0"))
    sources = sources_with(documents)
    _deploy(kube, documents, ready={"1.0.0", "1.1.0"})
    prometheus = prometheus_with(_sessions(kube_namespace, 0.5))

    outcome = _reconciler(kube, sources, prometheus.url).reconcile(ObjectKey(kube_namespace, "shop"))

    assert outcome == Outcome(requeue_after=INTERVAL)
    assert len(remote_log(sources.remote)) == 1
    assert _events(kube, kube_namespace, READY_FOR_DELETION) == []


def test_prometheus_unreachable_removes_nothing_and_retries(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    unreachable_prometheus_url: str,
) -> None:
    documents = _scene(kube_namespace, "true", tenant(kube_namespace, "acme", current="1.1.0"))
    sources = sources_with(documents)
    _deploy(kube, documents, ready={"1.0.0", "1.1.0"})

    with pytest.raises(PrometheusUnavailable) as unavailable:
        _reconciler(kube, sources, unreachable_prometheus_url).reconcile(ObjectKey(kube_namespace, "shop"))

    assert unavailable.value.delay == 30
    # The message names the query (long ones by their start and length, as every message of ours
    # quotes values) and the Prometheus that could not be reached.
    assert "query 'sum(avg_over_time(" in unavailable.value.message
    assert unreachable_prometheus_url in unavailable.value.message
    assert len(remote_log(sources.remote)) == 1
    assert _events(kube, kube_namespace, READY_FOR_DELETION) == []
    [deferred] = _events(kube, kube_namespace, CLEANUP_DEFERRED)
    assert deferred["type"] == "Warning"
    assert deferred["involvedObject"]["kind"] == "CAPApplication"


def test_tenants_and_readiness_keep_versions(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    unreachable_prometheus_url: str,
) -> None:
    # No deletion rules anywhere (so no Prometheus is needed): only the selection decides.
    # 1.0.0: acme runs on it; 1.1.0: free; 1.2.0: the highest Ready one; 2.0.0: not Ready yet.
    documents = [
        application(kube_namespace, mode="true"),
        domain(kube_namespace),
        *(version(kube_namespace, v) for v in ("1.0.0", "1.1.0", "1.2.0", "2.0.0")),
        tenant(kube_namespace, "acme", current="1.0.0", never_upgrade=True),
    ]
    sources = sources_with(documents)
    _deploy(kube, documents, ready={"1.0.0", "1.2.0"})

    _reconciler(kube, sources, unreachable_prometheus_url).reconcile(ObjectKey(kube_namespace, "shop"))

    assert len(remote_log(sources.remote)) == 2
    assert _commit_message(sources.remote).startswith(
        f"Remove CAPApplicationVersion {kube_namespace}/shop-1-1-0 (1.1.0)"
    )
    assert [e["involvedObject"]["name"] for e in _events(kube, kube_namespace, READY_FOR_DELETION)] == [
        "shop-1-1-0"
    ]


def test_without_the_annotation_or_the_cluster_object_nothing_happens(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    unreachable_prometheus_url: str,
) -> None:
    documents = [
        application(kube_namespace, mode=None),
        domain(kube_namespace),
        version(kube_namespace, "1.0.0"),
        version(kube_namespace, "1.1.0"),
    ]
    sources = sources_with(documents)
    reconciler = _reconciler(kube, sources, unreachable_prometheus_url)
    assert reconciler.reconcile(ObjectKey(kube_namespace, "shop")) == DONE  # not in the cluster yet
    _deploy(kube, documents, ready={"1.0.0", "1.1.0"})
    assert reconciler.reconcile(ObjectKey(kube_namespace, "shop")) == DONE  # not annotated
    assert len(remote_log(sources.remote)) == 1
    assert kube.list(EVENT, kube_namespace) == []


def test_a_tenant_recorded_before_the_commit_keeps_the_version(
    kube_namespace: str, sources_with: SourcesFactory, tmp_path: Path
) -> None:
    sources = sources_with(_scene(kube_namespace, "true"))
    # Between the evaluation and the commit, the subscription server records a tenant pinned to
    # 1.0.0: the removal is applied to the remote's newest tree and must see it.
    push_documents(
        sources.remote,
        tmp_path / "person",
        [tenant(kube_namespace, "late", pinned="1.0.0")],
        "Subscribe late",
    )
    refusal = Refusal()
    change = guarded_removal(kube_namespace, "shop", version_name("1.0.0"), refusal)
    outcome = sources.repo.apply(change, "Remove shop-1-0-0", timeout=60)
    assert outcome.commit is None
    assert refusal.reason == f"CAPTenant {kube_namespace}/late is being provisioned on it"
    assert len(remote_log(sources.remote)) == 2


# --- under the Manager -------------------------------------------------------------------------------------


@pytest.mark.tools
def test_the_manager_runs_the_cleanup(
    kube: KubeClient,
    kube_namespace: str,
    sources_with: SourcesFactory,
    prometheus_with: PrometheusFactory,
    tmp_path: Path,
) -> None:
    documents = _scene(kube_namespace, "true", tenant(kube_namespace, "acme", current="1.1.0"))
    sources = sources_with(documents)
    prometheus = prometheus_with(_sessions(kube_namespace, 0.0))
    reconciler = VersionCleanupReconciler(
        kube,
        sources.repo,
        PrometheusClient(prometheus.url, timeout=2),
        CleanupSettings(interval=INTERVAL, namespace=kube_namespace),
        clock=lambda: EVALUATION_TIME,
    )
    manager = Manager(kube, [reconciler], RuntimeSettings(workers=1), CollectorRegistry())
    manager.start()
    try:
        wait_until(manager.ready)
        _deploy(kube, documents, ready={"1.0.0", "1.1.0"})  # the watch brings the application
        wait_until(lambda: len(remote_log(sources.remote)) == 2)
        assert manager.healthy()
    finally:
        manager.stop()
    tree = _clone(sources.remote, tmp_path / "fresh") / kube_namespace / "shop"
    assert not (tree / "version-1.0.0.yaml").exists()
    remaining = yaml.safe_load((tree / "version-1.1.0.yaml").read_text())
    assert remaining["metadata"]["name"] == "shop-1-1-0"
