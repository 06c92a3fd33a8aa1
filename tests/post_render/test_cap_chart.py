"""A CAP application packaged as a Helm chart of our own (cap_chart/), and a Kyma chart (kyma_chart/),
post-rendered by the real Helm 3 (executable) and Helm 4 (the plugin in helm-plugin/).

`helm template` and `helm install --dry-run=client` run as users run them. The CAP objects come
out expanded into their workloads, exactly as `render --stdout` renders the same objects (the
sources written from the chart's own `helm template` output), apart from the documented mapping
of sync waves to hooks; the chart's ConfigMap passes untouched; two runs give the same bytes.
Helm 4 files the hooks we add as hooks (its dry run lists them under HOOKS); Helm 3, which
post-renders after it set hooks aside, keeps them among the plain objects.

The dry runs talk to the test API server (Helm checks that it is reachable) but create nothing:
an install would have Helm 4 wait for the hook Jobs, which never finish without a kubelet.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import CLI, EXAMPLES
from tests.post_render.conftest import HelmHome, run_helm
from tests.post_render.test_source_domains import HOOK_KEYS, SYNC_WAVE, identity, without
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = pytest.mark.tools

HERE = Path(__file__).parent
CAP_CHART = HERE / "cap_chart"
KYMA_CHART = HERE / "kyma_chart"
KYMA = EXAMPLES / "kyma-modules"
NAMESPACE = "bookstore"
CAP_KINDS = {"CAPApplication", "CAPApplicationVersion", "CAPTenant", "Domain", "ClusterDomain"}


def post_renderer_args(helm: str, *args: str) -> list[str]:
    """Helm 3 runs our executable with `post-render` first; Helm 4 runs the plugin, which adds it."""
    if helm == "helm3":
        return ["--post-renderer", str(CLI), "--post-renderer-args", "post-render"] + [
            f"--post-renderer-args={arg}" for arg in args
        ]
    return ["--post-renderer", "btp-gitops"] + [f"--post-renderer-args={arg}" for arg in args]


def helm_ok(helm: str, home: HelmHome, *args: str | Path) -> str:
    result = run_helm(helm, home, *args, KUBECONFIG="/nonexistent/kubeconfig")
    assert result.returncode == 0, result.stderr
    return result.stdout


RELEASES = {CAP_CHART: "bookstore", KYMA_CHART: "platform"}


def template(helm: str, home: HelmHome, chart: Path, *args: str) -> str:
    return helm_ok(helm, home, "template", RELEASES[chart], chart, "-n", NAMESPACE, *args)


def documents(text: str) -> list[str]:
    """The documents of Helm's output, each from its `---` line."""
    return ["---" + piece for piece in re.split(r"^---", text, flags=re.MULTILINE)[1:] if piece.strip()]


def body(document: str) -> dict[str, Any]:
    loaded = yaml.safe_load(document)
    assert isinstance(loaded, dict)
    return loaded


def kinds(text: str) -> list[str]:
    return [body(d)["kind"] for d in documents(text)]


@pytest.fixture(scope="module")
def plain_template(helm_home: HelmHome) -> str:
    """The chart as Helm 3 templates it without a post-renderer: what the sources are made of."""
    return template("helm3", helm_home, CAP_CHART)


@pytest.fixture(scope="module")
def rendered_by_render(plain_template: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """`render --stdout` of the chart's CAP objects, one source file per template."""
    sources = tmp_path_factory.mktemp("cap-chart-sources")
    for index, document in enumerate(documents(plain_template)):
        if body(document)["kind"] in CAP_KINDS:
            (sources / f"{index:02d}.yaml").write_text(document)
    result = subprocess.run(
        [str(CLI), "render", str(sources), "--stdout"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_same_as_render(
    post_rendered: str, by_render: str
) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """Every object of `render --stdout` is in the post-rendered output, equal but for the sync
    wave (render) and the hook annotations (post-render); returns the post-rendered CAP output."""
    rendered = {identity(b): b for b in map(body, documents(by_render))}
    post = {
        identity(b): b
        for b in map(body, documents(post_rendered))
        if b["kind"] != "ConfigMap" or identity(b) in rendered
    }
    assert set(post) == set(rendered)
    for key, expected in rendered.items():
        assert without(post[key], HOOK_KEYS) == without(expected, (SYNC_WAVE,)), key
    return post


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_template_expands_the_cap_objects_as_render_does(
    helm: str, helm_home: HelmHome, plain_template: str, rendered_by_render: str, yaml_snapshot: Any
) -> None:
    first = template(helm, helm_home, CAP_CHART, *post_renderer_args(helm, "--domain=cap"))
    second = template(helm, helm_home, CAP_CHART, *post_renderer_args(helm, "--domain=cap"))
    assert first == second
    post = assert_same_as_render(first, rendered_by_render)
    deployments = {key[3] for key in post if key[1] == "Deployment"}
    assert deployments == {"bookstore-2-1-0-server", "bookstore-2-1-0-router"}
    jobs = {key[3]: b["metadata"]["annotations"] for key, b in post.items() if key[1] == "Job"}
    assert jobs["bookstore-2-1-0-ui-content"]["helm.sh/hook-weight"] == "10"
    tenant_jobs = [a for name, a in jobs.items() if name != "bookstore-2-1-0-ui-content"]
    assert tenant_jobs and all(a["helm.sh/hook-weight"] == "1010" for a in tenant_jobs)
    # The chart's ConfigMap: the same document, Source comment and all, as without post-renderer.
    plain = template(helm, helm_home, CAP_CHART)
    settings = [d.rstrip() for d in documents(plain) if "name: bookstore-settings" in d]
    assert len(settings) == 1
    assert settings[0] in [d.rstrip() for d in documents(first)]
    assert first == yaml_snapshot


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_a_chart_for_a_cluster_without_gardener_dns_gets_no_dns_entries(
    helm: str, helm_home: HelmHome
) -> None:
    """The chart's value puts `btp-gitops.io/dns-manager: kubernetes` on its Domain: post-rendered,
    the Domain and the tenant make no DNSEntry (CAP Operator's DNS_MANAGER=kubernetes), and
    everything else is what the default renders."""
    kubernetes = ("--set", "domain.dnsManager=kubernetes")
    default = template(helm, helm_home, CAP_CHART, *post_renderer_args(helm, "--domain=cap"))
    without = template(helm, helm_home, CAP_CHART, *kubernetes, *post_renderer_args(helm, "--domain=cap"))
    assert kinds(default).count("DNSEntry") == 1  # the Wildcard domain's
    assert "DNSEntry" not in kinds(without)
    assert sorted(k for k in kinds(default) if k != "DNSEntry") == sorted(kinds(without))


@pytest.fixture(scope="module")
def cluster_with_crds(kube_api: KubeAPI) -> KubeAPI:
    """Helm 3 looks up every object's kind before a dry run: CAP Operator's and the third-party
    CRDs the rendered objects use are installed (nothing else is created)."""
    with kube_api.api_client() as client:
        install_crds(client, load_crds([*our_crd_files(), *third_party_crd_files()]), timeout=120)
    return kube_api


def dry_run(helm: str, home: HelmHome, kube_api: KubeAPI, *args: str) -> subprocess.CompletedProcess[str]:
    return run_helm(
        helm,
        home,
        "install",
        "bookstore",
        CAP_CHART,
        "-n",
        NAMESPACE,
        "--dry-run=client",
        *post_renderer_args(helm, *args),
        KUBECONFIG=str(kube_api.kubeconfig),
    )


@pytest.mark.kube
@pytest.mark.crds
def test_helm4_dry_run_files_the_jobs_as_hooks(helm_home: HelmHome, cluster_with_crds: KubeAPI) -> None:
    result = dry_run("helm4", helm_home, cluster_with_crds, "--domain=cap")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    hooks, manifest = out.split("\nMANIFEST:\n", 1)
    hooks = hooks.split("\nHOOKS:\n", 1)[1]
    assert sorted(kinds(hooks)) == ["Job", "Job", "Job"]
    assert "helm.sh/hook: post-install,post-upgrade" in hooks
    assert "Job" not in kinds(manifest)
    assert {"Deployment", "CAPApplication", "CAPTenant", "VirtualService"} <= set(kinds(manifest))
    assert "name: bookstore-settings" in manifest


@pytest.mark.kube
@pytest.mark.crds
def test_helm3_dry_run_keeps_the_jobs_among_the_plain_objects(
    helm_home: HelmHome, cluster_with_crds: KubeAPI
) -> None:
    """Helm 3 does not read hooks a post-renderer adds (docs/gitops/post-render.md): the Jobs are
    plain objects of the release, their hook annotations unread."""
    result = dry_run("helm3", helm_home, cluster_with_crds, "--domain=cap")
    assert result.returncode == 0, result.stderr
    head, manifest = result.stdout.split("\nMANIFEST:\n", 1)
    assert kinds(manifest).count("Job") == 3
    assert "kind: Job" not in head
    assert "helm.sh/hook: post-install,post-upgrade" in manifest


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_kyma_chart_with_catalog(helm: str, helm_home: HelmHome, tmp_path: Path, yaml_snapshot: Any) -> None:
    """The chart's Kyma becomes its modules, as `render --catalog` renders the same Kyma; the
    chart's ConfigMap passes untouched; the module's default CR is a post-install hook."""
    catalog = (f"--catalog={KYMA / 'catalog'}", f"--allow-path={KYMA}")
    args = post_renderer_args(helm, "--domain=kyma", *catalog)
    plain = template(helm, helm_home, KYMA_CHART)
    first = template(helm, helm_home, KYMA_CHART, *args)
    assert first == template(helm, helm_home, KYMA_CHART, *args)
    [kyma] = [d for d in documents(plain) if body(d)["kind"] == "Kyma"]
    (tmp_path / "kyma.yaml").write_text(kyma)
    by_render = subprocess.run(
        [str(CLI), "render", str(tmp_path / "kyma.yaml"), "--stdout", *catalog],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert by_render.returncode == 0, by_render.stderr
    post = assert_same_as_render(first, by_render.stdout)
    assert not any(key[1] == "Kyma" for key in post)
    assert {"CustomResourceDefinition", "Deployment", "DaemonSet", "Greeter"} <= {key[1] for key in post}
    [greeter] = [b for key, b in post.items() if key[1] == "Greeter"]
    assert greeter["metadata"]["annotations"]["helm.sh/hook"] == "post-install"
    settings = [d.rstrip() for d in documents(plain) if "name: platform-settings" in d]
    assert len(settings) == 1
    assert settings[0] in [d.rstrip() for d in documents(first)]
    assert first == yaml_snapshot


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_an_invalid_cap_object_fails_the_release(helm: str, helm_home: HelmHome, tmp_path: Path) -> None:
    """The chart templates a version CAP Operator would refuse: Helm fails and prints nothing. Helm 3
    shows our message, naming the template, the object and the field (Helm 4 keeps a plugin's
    stderr to itself: helm/helm#31843)."""
    values = tmp_path / "values.yaml"
    values.write_text("version: not-a-version\n")
    result = run_helm(
        helm,
        helm_home,
        "template",
        "bookstore",
        CAP_CHART,
        "-n",
        NAMESPACE,
        "-f",
        values,
        *post_renderer_args(helm, "--domain=cap"),
    )
    assert result.returncode != 0
    assert "apiVersion" not in result.stdout
    if helm == "helm3":
        assert "bookstore/templates/capapplicationversion.yaml" in result.stderr
        assert "CAPApplicationVersion bookstore/bookstore-not-a-version" in result.stderr
        assert "spec.version" in result.stderr
