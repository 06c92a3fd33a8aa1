"""`render --emit-wiring` and the Flux Kustomizations: what makes Argo CD or Flux sync the repo.

Snapshots of the wiring for both targets (rendered by the installed CLI), its place beside the
apps, the options that shape it, and its validation: offline against the pinned Argo CD and Flux
CRDs (`btp-gitops validate --crds .cache/crds/current`), and by server-side dry-run in a real
kube-apiserver with those CRDs installed. Each check is shown to refuse a broken object too.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from btp_gitops.generator.core.errors import InputError
from btp_gitops.generator.wiring.objects import argocd_application_name, check_argocd_names
from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree, tree_as_yaml
from tests.support.crds import load_crds, pinned_crds_dir, third_party_crd_files
from tests.support.dry_run import RenderedObject, ServedResources, create_namespace, dry_run_apply, refusals
from tests.support.kubeapi import KubeAPI, install_crds
from tests.support.tools import tool_path

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
        "--argocd-destination-name",
        "arn:aws:eks:eu-central-1:123456789012:cluster/prod",
        "--argocd-retry-limit",
        "10",
        "--argocd-retry-duration",
        "30s",
        "--argocd-retry-factor",
        "3",
        "--argocd-retry-max-duration",
        "1h",
    )
    [application_set] = [load(p) for p in (cluster / ".wiring").glob("applicationset-*.yaml")]
    assert application_set["metadata"] == {"name": f"btp-gitops-{CLUSTER}", "namespace": "gitops"}
    generator = application_set["spec"]["generators"][0]["git"]
    assert generator["revision"] == "release"
    assert generator["directories"] == [
        {"path": f"clusters/{CLUSTER}/*"},
        {"path": f"clusters/{CLUSTER}/tenants/*/*/*"},
        {"path": f"clusters/{CLUSTER}/.wiring", "exclude": True},
        {"path": f"clusters/{CLUSTER}/tenants", "exclude": True},
    ]
    template = application_set["spec"]["template"]["spec"]
    assert template["project"] == "platform"
    assert template["source"] == {"repoURL": REPO_URL, "targetRevision": "release", "path": "{{.path.path}}"}
    assert template["destination"] == {"name": "arn:aws:eks:eu-central-1:123456789012:cluster/prod"}
    retry = {"limit": 10, "backoff": {"duration": "30s", "factor": 3, "maxDuration": "1h"}}
    assert template["syncPolicy"]["retry"] == retry
    # The wiring's own Application: Argo CD's objects stay in Argo CD's cluster and namespace.
    [wiring] = [load(p) for p in (cluster / ".wiring").glob("application-*.yaml")]
    assert wiring["metadata"] == {"name": f"btp-gitops-{CLUSTER}", "namespace": "gitops"}
    assert wiring["spec"]["project"] == "platform"
    assert wiring["spec"]["destination"] == {
        "server": "https://kubernetes.default.svc",
        "namespace": "gitops",
    }
    assert wiring["spec"]["source"] == {
        "repoURL": REPO_URL,
        "targetRevision": "release",
        "path": f"clusters/{CLUSTER}",
    }
    assert wiring["spec"]["syncPolicy"] == {"automated": {"prune": True, "selfHeal": True}, "retry": retry}
    assert "finalizers" not in wiring["metadata"]


def test_argocd_destination_server_and_no_retry(tmp_path: Path, run_cli: RunCli) -> None:
    cluster = render(
        run_cli,
        tmp_path,
        *EMIT,
        "--argocd-destination-server",
        "https://10.0.0.1:6443",
        "--argocd-retry-limit",
        "0",
    )
    wiring = {load(p)["kind"]: load(p) for p in (cluster / ".wiring").glob("application*.yaml")}
    template = wiring["ApplicationSet"]["spec"]["template"]["spec"]
    assert template["destination"] == {"server": "https://10.0.0.1:6443"}
    assert "retry" not in template["syncPolicy"]
    assert "retry" not in wiring["Application"]["spec"]["syncPolicy"]


@pytest.mark.tools
def test_the_wiring_application_syncs_the_wiring_directory(tmp_path: Path, run_cli: RunCli) -> None:
    """What the wiring's Application reads (`clusters/<cluster>`, built by kustomize as Argo CD does
    with a kustomization.yaml) is exactly the ApplicationSet and that Application: the apps stay
    the ApplicationSet's."""
    cluster = render(run_cli, tmp_path, *EMIT, sources=FLUX_SOURCES)
    built = subprocess.run(
        [str(tool_path("kustomize")), "build", str(cluster)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    objects = [(o["kind"], o["metadata"]["name"]) for o in yaml.safe_load_all(built.stdout)]
    assert sorted(objects) == [
        ("Application", f"btp-gitops-{CLUSTER}"),
        ("ApplicationSet", f"btp-gitops-{CLUSTER}"),
    ]


@pytest.mark.tools
@pytest.mark.parametrize(
    ("cluster", "app"),
    [
        ("demo", "btp-operator"),
        ("demo", "cap.bookshop.bookshop"),
        ("production-eu10", "cap-tenant.bookshop.a-customer-with-a-long-subdomain-name"),
        # Cut at a dot: the hashed name must not keep it.
        ("c" * 40, "d" * 13 + ".x" + "y" * 30),
        ("a" * 63, "b" * 63),
    ],
)
def test_the_application_name_template_gives_the_names_the_render_checks(
    tmp_path: Path, run_cli: RunCli, cluster: str, app: str
) -> None:
    """The ApplicationSet controller names each Application with the template's Go/Sprig
    functions; Helm runs the same template engine and functions, so the template is run there
    with the directory name and compared with `argocd_application_name`: unique per cluster,
    a DNS-1123 subdomain of at most 63 characters."""
    result = run_cli(
        "render", EXAMPLES / "btp-operator", "--out", tmp_path / "repo", "--cluster", cluster, *EMIT, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    [path] = (tmp_path / "repo" / "clusters" / cluster / ".wiring").glob("applicationset-*.yaml")
    name_template = load(path)["spec"]["template"]["metadata"]["name"]
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: names\nversion: 0.1.0\n")
    # `.path.basename` as the git directory generator provides it.
    (chart / "templates" / "name.yaml").write_text(
        # Quoted: the template's `{{-` would eat the blank after `name:`.
        '{{- with dict "path" (dict "basename" .Values.basename) }}name: \''
        + name_template
        + "'\n{{- end }}\n"
    )
    helm = subprocess.run(
        [str(tool_path("helm4")), "template", "x", str(chart), "--set-string", f"basename={app}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert helm.returncode == 0, helm.stderr
    [document] = [d for d in yaml.safe_load_all(helm.stdout) if d]
    name = document["name"]
    assert name == argocd_application_name(cluster, app)
    assert len(name) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name)
    if len(f"{cluster}-{app}") <= 63:
        assert name == f"{cluster}-{app}"
    else:
        assert name.startswith(f"{cluster}-"[:54].rstrip(".-"))


def test_an_app_whose_application_would_take_the_wirings_name_is_refused() -> None:
    """`<cluster>-<app>` against `btp-gitops-<cluster>`: only contrived names meet, but they must
    not make the ApplicationSet fight the wiring's Application over one object."""
    check_argocd_names("demo", ["btp-operator", "gitops-demo", "btp-gitops"])
    with pytest.raises(
        InputError, match="app 'btp-gitops' of cluster 'btp-gitops' would get the Argo CD Application"
    ):
        check_argocd_names("btp-gitops", ["kyma-greeter", "btp-gitops"])


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
            (*EMIT, "--argocd-destination-name", "prod", "--argocd-destination-server", "https://a:6443"),
            "not allowed with argument --argocd-destination-name",
        ),
        ((*EMIT, "--argocd-destination-server", "kubernetes.default.svc"), "not an API server URL"),
        ((*EMIT, "--argocd-destination-server", "https://a/{{.path}}"), "not an API server URL"),
        ((*EMIT, "--argocd-destination-server", "https://a:port"), "not an API server URL"),
        ((*EMIT, "--argocd-destination-server", "https://[::1"), "not an API server URL"),
        ((*EMIT, "--argocd-destination-name", "in cluster"), "not a cluster name as Argo CD lists them"),
        ((*EMIT, "--argocd-destination-name", "{{.path.basename}}"), "not a cluster name"),
        ((*EMIT, "--argocd-retry-limit", "-1"), "give 0 to 100, not -1"),
        ((*EMIT, "--argocd-retry-factor", "1.5"), "not a whole number"),
        ((*EMIT, "--argocd-retry-duration", "5"), "not a duration like 5s"),
        ((*EMIT, "--argocd-retry-max-duration", "48h"), "give a duration from 1s to 24h"),
        (
            (*EMIT, "--argocd-retry-duration", "5m", "--argocd-retry-max-duration", "1m"),
            "--argocd-retry-max-duration 1m is shorter than --argocd-retry-duration 5m",
        ),
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


def go_path_match(pattern: str, name: str) -> bool:
    """Go's `path.Match`, which Argo CD's git directory generator applies to each directory of the
    repository, for the patterns the wiring writes: `*` (any run of characters but `/`) and
    literal characters. A pattern with any other metacharacter fails here rather than being
    matched wrongly."""
    assert not set(pattern) & set("?[]\\"), pattern
    return re.fullmatch("[^/]*".join(re.escape(part) for part in pattern.split("*")), name) is not None


def generated_directories(repo: Path, directories: list[dict[str, Any]]) -> set[str]:
    """What the git directory generator yields on `repo`: every directory (Argo CD's repo server
    skips those whose name starts with a dot) that matches an include and no exclude."""
    found = {
        path.relative_to(repo).as_posix()
        for path in repo.rglob("*")
        if path.is_dir() and not any(part.startswith(".") for part in path.relative_to(repo).parts)
    }
    includes = [d["path"] for d in directories if not d.get("exclude")]
    excludes = [d["path"] for d in directories if d.get("exclude")]
    return {
        directory
        for directory in found
        if any(go_path_match(p, directory) for p in includes)
        and not any(go_path_match(p, directory) for p in excludes)
    }


def test_the_application_set_finds_every_app_directory_and_only_those(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The tenants' shard directories are found by the generator as the other apps are, each
    Application named `<cluster>-<app>` after the directory's last part; `tenants/`, its group and
    shard directories and `.wiring/` are no Application."""
    cluster = render(run_cli, tmp_path, *EMIT, sources=FLUX_SOURCES)
    [path] = (cluster / ".wiring").glob("applicationset-*.yaml")
    directories = load(path)["spec"]["generators"][0]["git"]["directories"]
    app_directories = {
        p.parent.relative_to(tmp_path).as_posix()
        for p in cluster.rglob("kustomization.yaml")
        if p.parent != cluster and ".wiring" not in p.parts
    }
    tenants = {d for d in app_directories if d.startswith(f"clusters/{CLUSTER}/tenants/")}
    assert len(tenants) == 4  # three tenants and the provider's, in shard directories
    assert all(
        re.fullmatch(r"clusters/demo/tenants/bookshop\.bookshop/[0-9a-f]{2}/cap-tenant\.[^/]+", d)
        for d in tenants
    )

    assert generated_directories(tmp_path, directories) == app_directories
    names = sorted(argocd_application_name(CLUSTER, d.rsplit("/", 1)[1]) for d in app_directories)
    assert len(set(names)) == len(names)
    assert "demo-cap-tenant.bookshop.acme" in names
