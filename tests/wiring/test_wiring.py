"""`render --emit-wiring` and the Flux Kustomizations: what makes Argo CD or Flux sync the repo.

Snapshots of the wiring for both targets (rendered by the installed CLI), its place beside the
apps, the options that shape it, and its validation: offline against the pinned Argo CD and Flux
CRDs (`btp-gitops validate --crds .cache/crds/current`), and by server-side dry-run in a real
kube-apiserver with those CRDs installed. Each check is shown to refuse a broken object too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree, tree_as_yaml
from tests.support.crds import load_crds, pinned_crds_dir, third_party_crd_files
from tests.support.dry_run import RenderedObject, ServedResources, create_namespace, dry_run_apply, refusals
from tests.support.kubeapi import KubeAPI, install_crds

CLUSTER = "demo"
REPO_URL = "https://github.com/example/platform-gitops.git"
EMIT = ("--emit-wiring", "--repo-url", REPO_URL)
# Sources whose apps use every stage but routing: CRDs, resources, custom resources, release
# jobs in two steps.
FLUX_SOURCES = (EXAMPLES / "kyma-modules", EXAMPLES / "cap-app")


def render(
    run_cli: RunCli, out: Path, *args: str | Path, sources: tuple[Path, ...] = (EXAMPLES / "btp-operator",)
) -> Path:
    result = run_cli("render", *sources, "--out", out, "--cluster", CLUSTER, *args, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return out / "clusters" / CLUSTER


def wiring_tree(cluster: Path) -> dict[str, bytes]:
    tree = read_tree(cluster)
    return {
        path: data
        for path, data in tree.items()
        if path.startswith(".wiring/") or path == "kustomization.yaml"
    }


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


# --- what is written ---------------------------------------------------------------------------


def test_argocd_wiring_matches_snapshot(tmp_path: Path, run_cli: RunCli, yaml_snapshot: object) -> None:
    cluster = render(run_cli, tmp_path, *EMIT)
    assert tree_as_yaml(wiring_tree(cluster)) == yaml_snapshot


def test_flux_wiring_matches_snapshot(tmp_path: Path, run_cli: RunCli, yaml_snapshot: object) -> None:
    """Two Kyma modules: one in two stages, one in three (its default CR after its CRD and
    operator). Release-job steps are covered in test_flux_layout.py."""
    cluster = render(run_cli, tmp_path, "--target", "flux", *EMIT, sources=(EXAMPLES / "kyma-modules",))
    assert tree_as_yaml(wiring_tree(cluster)) == yaml_snapshot


def test_the_argocd_default_layout_has_no_wiring(tmp_path: Path, run_cli: RunCli) -> None:
    cluster = render(run_cli, tmp_path)
    assert wiring_tree(cluster) == {}
    assert all(path.startswith("btp-operator/") or path == ".btp-gitops-files" for path in read_tree(cluster))


def test_flux_without_emit_wiring_reads_the_bootstrap_source(tmp_path: Path, run_cli: RunCli) -> None:
    cluster = render(run_cli, tmp_path, "--target", "flux", "--flux-source", "platform")
    kinds = {load(path)["kind"] for path in (cluster / ".wiring").glob("*-*.yaml")}
    assert kinds == {"Kustomization"}
    root = load(cluster / ".wiring" / f"kustomization-btp-gitops-{CLUSTER}.yaml")
    assert root["spec"]["path"] == f"./clusters/{CLUSTER}"
    assert root["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "platform"}
    stages = [load(path) for path in sorted((cluster / ".wiring").glob("kustomization-btp-operator-*.yaml"))]
    assert [obj["spec"]["sourceRef"] for obj in stages] == [{"kind": "GitRepository", "name": "platform"}] * 3
    crds, resources, custom_resources = stages
    assert crds["spec"]["path"] == f"./clusters/{CLUSTER}/btp-operator/00-crds"
    assert "dependsOn" not in crds["spec"]
    assert resources["spec"]["dependsOn"] == [{"name": "btp-operator-00-crds"}]
    assert resources["spec"]["wait"] is True and resources["spec"]["prune"] is True
    assert custom_resources["spec"]["path"] == f"./clusters/{CLUSTER}/btp-operator/20-custom-resources"
    assert custom_resources["spec"]["dependsOn"] == [{"name": "btp-operator-10-resources"}]


def test_argocd_options_shape_the_application_set(tmp_path: Path, run_cli: RunCli) -> None:
    cluster = render(
        run_cli,
        tmp_path,
        *EMIT,
        "--revision",
        "release",
        "--argocd-project",
        "platform",
        "--argocd-namespace",
        "gitops",
    )
    [application_set] = [load(p) for p in (cluster / ".wiring").glob("applicationset-*.yaml")]
    assert application_set["metadata"] == {"name": f"btp-gitops-{CLUSTER}", "namespace": "gitops"}
    generator = application_set["spec"]["generators"][0]["git"]
    assert generator["revision"] == "release"
    assert generator["directories"] == [
        {"path": f"clusters/{CLUSTER}/*"},
        {"path": f"clusters/{CLUSTER}/.wiring", "exclude": True},
    ]
    template = application_set["spec"]["template"]["spec"]
    assert template["project"] == "platform"
    assert template["source"] == {"repoURL": REPO_URL, "targetRevision": "release", "path": "{{.path.path}}"}


def test_the_flux_root_kustomization_applies_the_wiring_and_itself(tmp_path: Path, run_cli: RunCli) -> None:
    """The cluster directory's kustomization.yaml lists `.wiring` only, and `.wiring` lists the root
    Kustomization whose path is the cluster directory: once applied, it keeps itself, the
    GitRepository and every stage Kustomization in step with Git, pruning what leaves it."""
    cluster = render(run_cli, tmp_path, "--target", "flux", *EMIT)
    root = load(cluster / ".wiring" / f"kustomization-btp-gitops-{CLUSTER}.yaml")
    assert root["metadata"] == {"name": f"btp-gitops-{CLUSTER}", "namespace": "flux-system"}
    assert root["spec"]["path"] == f"./clusters/{CLUSTER}"
    assert root["spec"]["prune"] is True
    assert root["spec"]["sourceRef"] == {"kind": "GitRepository", "name": f"btp-gitops-{CLUSTER}"}
    assert "dependsOn" not in root["spec"]
    assert load(cluster / "kustomization.yaml")["resources"] == [".wiring"]
    listed = load(cluster / ".wiring" / "kustomization.yaml")["resources"]
    assert f"kustomization-btp-gitops-{CLUSTER}.yaml" in listed
    assert f"gitrepository-btp-gitops-{CLUSTER}.yaml" in listed


def test_flux_options_shape_the_wiring(tmp_path: Path, run_cli: RunCli, yaml_snapshot: object) -> None:
    cluster = render(
        run_cli,
        tmp_path,
        "--target",
        "flux",
        *EMIT,
        "--flux-secret-ref",
        "gitops-credentials",
        "--flux-service-account",
        "btp-gitops-applier",
        "--flux-interval",
        "2m30s",
        "--flux-source-interval",
        "15s",
        "--flux-timeout",
        "1h",
        "--flux-no-wait",
    )
    objects = [load(path) for path in sorted((cluster / ".wiring").glob("*-*.yaml"))]
    [source] = [obj for obj in objects if obj["kind"] == "GitRepository"]
    assert source["spec"]["secretRef"] == {"name": "gitops-credentials"}
    assert source["spec"]["interval"] == "15s"
    kustomizations = [obj["spec"] for obj in objects if obj["kind"] == "Kustomization"]
    assert len(kustomizations) == 4  # the root and three stages
    assert {spec["serviceAccountName"] for spec in kustomizations} == {"btp-gitops-applier"}
    assert {(spec["interval"], spec["timeout"], spec["wait"]) for spec in kustomizations} == {
        ("2m30s", "1h", False)
    }
    assert tree_as_yaml(wiring_tree(cluster)) == yaml_snapshot


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--emit-wiring",), "--emit-wiring needs --repo-url"),
        (("--stdout", "--target", "flux"), "--stdout is for Argo CD's plugin"),
        (("--stdout", *EMIT), "--stdout is for Argo CD's plugin"),
        (
            ("--stdout", "--flux-timeout", "5m"),
            "--flux-timeout shapes the Flux wiring: it needs --target flux",
        ),
        (("--flux-interval", "1m"), "--flux-interval shapes the Flux wiring: it needs --target flux"),
        ((*EMIT, "--flux-no-wait"), "--flux-no-wait shapes the Flux wiring: it needs --target flux"),
        (("--target", "flux", "--flux-secret-ref", "creds"), "--flux-secret-ref is set on the GitRepository"),
        (
            ("--target", "flux", "--flux-source-interval", "1m"),
            "--flux-source-interval is set on the GitRepository",
        ),
        (("--target", "flux", "--flux-interval", "10"), "not a positive duration like 30s"),
        (("--target", "flux", "--flux-timeout", "0s"), "not a positive duration like 30s"),
        (("--target", "flux", "--flux-timeout", "1d"), "not a positive duration like 30s"),
        (("--target", "flux", "--flux-service-account", "Applier"), "is not a DNS-1123 subdomain"),
        ((*EMIT, "--target", "flux", "--flux-secret-ref", "../creds"), "is not a DNS-1123 subdomain"),
    ],
)
def test_wiring_options_that_cannot_work_are_usage_errors(
    tmp_path: Path, run_cli: RunCli, args: tuple[str, ...], message: str
) -> None:
    out = () if "--stdout" in args else ("--out", tmp_path)
    result = run_cli("render", EXAMPLES / "btp-operator", *out, *args, cwd=ROOT)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "clusters").exists()


# --- offline validation ------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["argocd", "flux"])
@pytest.mark.crds
def test_the_wiring_is_valid_for_the_pinned_crds(tmp_path: Path, run_cli: RunCli, target: str) -> None:
    cluster = render(run_cli, tmp_path, "--target", target, *EMIT, sources=FLUX_SOURCES)

    result = run_cli("validate", cluster / ".wiring", "--crds", pinned_crds_dir("argo-cd", "flux"), cwd=ROOT)

    assert result.returncode == 0, result.stderr
    objects = len(list((cluster / ".wiring").glob("*-*.yaml")))
    assert objects >= (1 if target == "argocd" else 8)
    assert result.stdout.startswith(f"{objects} object{'s' if objects > 1 else ''} valid")


@pytest.mark.crds
def test_validation_refuses_a_broken_wiring_object(tmp_path: Path, run_cli: RunCli) -> None:
    cluster = render(run_cli, tmp_path, "--target", "flux", *EMIT)
    stage = cluster / ".wiring" / "kustomization-btp-operator-10-resources.yaml"
    stage.write_text(stage.read_text().replace("prune: true", "prune: 'yes'"))

    result = run_cli("validate", cluster / ".wiring", "--crds", pinned_crds_dir("argo-cd", "flux"), cwd=ROOT)

    assert result.returncode == 3
    assert "kustomization-btp-operator-10-resources.yaml" in result.stderr
    assert "spec.prune" in result.stderr


# --- server-side dry-run -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, load_crds(third_party_crd_files("argo-cd", "flux")), timeout=120)
        yield client


@pytest.mark.kube
@pytest.mark.parametrize("target", ["argocd", "flux"])
@pytest.mark.crds
def test_the_api_server_accepts_the_wiring(
    api: k8s.ApiClient, tmp_path: Path, run_cli: RunCli, target: str
) -> None:
    cluster = render(run_cli, tmp_path, "--target", target, *EMIT, sources=FLUX_SOURCES)

    refused = refusals(api, cluster / ".wiring")

    assert not refused, "refused by the API server:\n" + "\n".join(refused)


@pytest.mark.kube
@pytest.mark.crds
def test_the_api_server_refuses_a_broken_application_set(
    api: k8s.ApiClient, tmp_path: Path, run_cli: RunCli
) -> None:
    cluster = render(run_cli, tmp_path, *EMIT)
    [path] = (cluster / ".wiring").glob("applicationset-*.yaml")
    body = load(path)
    body["spec"]["template"]["spec"]["syncPolicy"]["automated"]["prune"] = "yes"
    create_namespace(api, body["metadata"]["namespace"])
    broken = RenderedObject(path.name, yaml.safe_dump(body), body)

    reason = dry_run_apply(api, ServedResources(api), broken)

    assert reason is not None
    assert "prune" in reason
