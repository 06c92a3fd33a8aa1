"""The built wheel, installed into a clean venv outside the checkout, does every job on its own.

Each command runs from the installed console script with an environment that knows nothing of the
checkout, and where the checkout's CLI can do the same job, both must write the same bytes: a data
file left out of the wheel, or code that finds files relative to the repository, fails here.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from btp_gitops import __version__
from tests.conftest import CLI, EXAMPLES, ROOT, read_tree
from tests.support.tools import tool_path
from tests.support.wheel import InstalledProduct, install

CLUSTER_ID = "0c5a3f7e-1d2b-4c6a-9e8f-7a6b5c4d3e2f"


@pytest.fixture(scope="module")
def product(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledProduct:
    return install(built_wheel, tmp_path_factory.mktemp("installed"))


def checkout_cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *map(str, args)], check=False, capture_output=True, text=True, cwd=cwd, timeout=300
    )


def copy_example(name: str, into: Path) -> Path:
    """An example outside the checkout: relative paths inside it can't reach the repository."""
    return Path(shutil.copytree(EXAMPLES / name, into / name))


def test_the_wheel_has_one_top_level_package_and_its_data(built_wheel: Path) -> None:
    names = zipfile.ZipFile(built_wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"btp_gitops", f"btp_gitops-{__version__}.dist-info"}
    for shipped in (
        "btp_gitops/data/schemas/btpoperatorconfig.btp-gitops.io.v1alpha1.json",
        "btp_gitops/data/charts/sap-btp-operator/Chart.yaml",
        "btp_gitops/data/charts/btp-gitops/crds/btpoperatorconfigs.btp-gitops.io.yaml",
        "btp_gitops/data/module-resources/delete/to-delete.yml",
        "btp_gitops/py.typed",
    ):
        assert shipped in names


def test_imports_come_from_the_venv_and_clash_with_nothing(product: InstalledProduct) -> None:
    done = product.python(
        "import importlib.util, btp_gitops.generator.cli, btp_gitops.controller.cli\n"
        "print(btp_gitops.__file__)\n"
        "print([n for n in ('generator', 'controller') if importlib.util.find_spec(n)])\n"
    )
    assert done.returncode == 0, done.stderr
    location, clashing = done.stdout.splitlines()
    assert Path(location).is_relative_to(product.venv)
    assert clashing == "[]"


def test_version(product: InstalledProduct) -> None:
    done = product.run("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"btp-gitops {__version__}")


@pytest.mark.parametrize("example", ["btp-operator", "cap-app", "cap-services-only", "kyma-modules"])
def test_render_and_validate_an_example(product: InstalledProduct, example: str, tmp_path: Path) -> None:
    source = copy_example(example, tmp_path / "sources")
    installed, checkout = tmp_path / "installed", tmp_path / "checkout"
    done = product.run("render", source, "--out", installed, "--cluster", "demo")
    assert done.returncode == 0, done.stderr
    reference = checkout_cli("render", source, "--out", checkout, "--cluster", "demo", cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr
    rendered = read_tree(installed)
    assert rendered == read_tree(checkout)
    assert any(path.endswith(".yaml") and "/kustomization" not in path for path in rendered)

    # The render validates offline with what ships: built-in kinds, our CRDs, the third-party kinds.
    validated = product.run("validate", installed / "clusters" / "demo")
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_btp_operator_without_a_chart_path_renders_the_bundled_chart(
    product: InstalledProduct, tmp_path: Path
) -> None:
    source = copy_example("btp-operator", tmp_path)
    assert "chart" not in yaml.safe_load((source / "btpoperatorconfig.yaml").read_text())["spec"]
    done = product.run("render", source, "--out", tmp_path / "out", "--cluster", "demo")
    assert done.returncode == 0, done.stderr
    app = tmp_path / "out" / "clusters" / "demo" / "btp-operator"
    deployment = yaml.safe_load((app / "deployment-sap-btp-operator-controller-manager.yaml").read_text())
    chart = yaml.safe_load((ROOT / "charts" / "sap-btp-operator" / "Chart.yaml").read_text())
    assert deployment["metadata"]["labels"]["chart-version"] == chart["version"]


def test_module_resources_from_the_bundled_chart_match_the_shipped_artifact(
    product: InstalledProduct, tmp_path: Path
) -> None:
    out = tmp_path / "module-resources"
    shutil.copytree(ROOT / "module-resources", out)
    done = product.run("module-resources", "--out", out)
    assert done.returncode == 0, done.stderr
    assert read_tree(out) == read_tree(ROOT / "module-resources")


def test_a_source_directory_as_repositories_keep_it_with_the_output_inside(
    product: InstalledProduct, tmp_path: Path
) -> None:
    """A kustomization, a README, Helm values and a plain ConfigMap beside the sources, and `--out`
    inside them: every render reads the same sources and writes the same bytes, saying what it
    skipped; a misspelt kind of btp-gitops's is refused with the kind it probably meant."""
    source = copy_example("btp-operator", tmp_path)
    (source / "kustomization.yaml").write_text("resources:\n  - btpoperator.yaml\n")
    (source / "README.md").write_text("# sources\n")
    (source / "values.yaml").write_text("replicaCount: 2\n")
    (source / "settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n")
    runs = [
        product.run("render", "btp-operator", "--out", "btp-operator/out", cwd=tmp_path) for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr
    assert "0 added, 0 changed, 0 removed" in runs[1].stdout
    assert runs[1].stderr.splitlines() == [
        "note: skipped btp-operator/kustomization.yaml: a kustomization (kustomize's file), not a btp-gitops source",
        "note: skipped btp-operator/out/clusters/default: the output of a render (it holds .btp-gitops-files), "
        "not sources",
        "note: skipped btp-operator/settings.yaml: document 1 (ConfigMap settings): "
        "v1 ConfigMap is not a kind btp-gitops reads",
        "note: skipped btp-operator/values.yaml: Helm values (no document is a Kubernetes object), "
        "not a btp-gitops source",
    ]
    written = read_tree(source / "out")
    assert (
        product.run("render", "btp-operator", "--out", "btp-operator/out", "-q", cwd=tmp_path).returncode == 0
    )
    assert read_tree(source / "out") == written

    (source / "tenant.yaml").write_text(
        "apiVersion: sme.sap.com/v1alpha1\nkind: CapTenant\nmetadata:\n  name: t\n"
    )
    typo = product.run("render", "btp-operator", "--out", "btp-operator/out", cwd=tmp_path)
    assert typo.returncode == 3
    assert '(did you mean "CAPTenant"?' in typo.stderr
    assert read_tree(source / "out") == written


def test_diff_against_a_rendered_repo(product: InstalledProduct, tmp_path: Path) -> None:
    source = copy_example("btp-operator", tmp_path / "sources")
    repo = tmp_path / "gitops"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for key, value in (("user.name", "test"), ("user.email", "test@example.com")):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    done = product.run("render", source, "--out", repo, "--cluster", "demo", "--commit")
    assert done.returncode == 0, done.stderr

    same = product.run(
        "diff", source, "--against", "HEAD", "--repo", repo, "--cluster", "demo", "--exit-code"
    )
    assert same.returncode == 0, same.stdout + same.stderr

    config = source / "btpoperatorconfig.yaml"
    config.write_text(config.read_text().replace("3f9d2c1e-7a4b-4e2f-9c8d-1b2a3c4d5e6f", CLUSTER_ID))
    changed = product.run(
        "diff",
        source,
        "--against",
        "HEAD",
        "--repo",
        repo,
        "--cluster",
        "demo",
        "--exit-code",
        "--output",
        "json",
    )
    assert changed.returncode == 1, changed.stderr
    assert "sap-btp-operator-config" in changed.stdout


def test_a_misspelt_kyma_module_removes_nothing(product: InstalledProduct, tmp_path: Path) -> None:
    """Issue 33: greeter written greter would have removed greeter; the installed CLI refuses it
    (exit 3, the module meant named, the commit and the tree as they were) until asked for."""
    source = copy_example("kyma-modules", tmp_path / "sources")
    repo = tmp_path / "gitops"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for key, value in (("user.name", "test"), ("user.email", "test@example.com")):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    assert product.run("render", source, "--out", repo, "--commit").returncode == 0
    before, commit = read_tree(repo), _head(repo)
    kyma = source / "kyma.yaml"
    kyma.write_text(kyma.read_text().replace("- name: greeter", "- name: greter"))

    refused = product.run("render", source, "--out", repo, "--commit")

    assert refused.returncode == 3, refused.stderr
    assert refused.stderr.startswith("error: refusing to remove Kyma module greeter: ")
    assert (
        f"  {kyma}: document 1 (Kyma kyma-system/default): spec.modules[0].name: module greter: no "
        'templates were found: for module greter in channel regular (did you mean "greeter"?)\n'
    ) in refused.stderr
    assert (read_tree(repo), _head(repo)) == (before, commit)

    removed = product.run("render", source, "--out", repo, "--commit", "--allow-module-removal")
    assert removed.returncode == 9, removed.stderr
    assert _head(repo) != commit


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.tools
def test_post_render_behind_helm(product: InstalledProduct, tmp_path: Path) -> None:
    """Helm 3 runs the installed executable as its post-renderer on the chart the wheel ships."""
    located = product.python(
        "from btp_gitops.generator.io import bundled; print(bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART))"
    )
    chart = Path(located.stdout.strip())
    assert chart.is_relative_to(product.venv), located.stderr
    outputs = []
    for cli in (product.cli, CLI):
        done = subprocess.run(
            [
                str(tool_path("helm3")),
                "template",
                "sap-btp-operator",
                str(chart),
                "--namespace",
                "kyma-system",
                "--set",
                f"cluster.id={CLUSTER_ID}",
                "--post-renderer",
                str(cli),
                "--post-renderer-args",
                "post-render",
            ],
            capture_output=True,
            text=True,
            cwd=product.home,
            env={
                **product.env(),
                "HELM_CONFIG_HOME": str(tmp_path / "h"),
                "HELM_CACHE_HOME": str(tmp_path / "h"),
                "HELM_DATA_HOME": str(tmp_path / "h"),
            },
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    objects = [o for o in yaml.safe_load_all(outputs[0]) if o]
    # Helm's own uninstall hooks stay Helm's; every object of the module is labelled as BTP Manager's.
    module = [o for o in objects if "helm.sh/hook" not in o["metadata"].get("annotations", {})]
    assert len(module) > 10
    assert {o["metadata"]["labels"]["app.kubernetes.io/managed-by"] for o in module} == {"btp-manager"}
    [config] = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "sap-btp-operator-config"
    ]
    assert config["data"]["CLUSTER_ID"] == CLUSTER_ID


@pytest.mark.tools
def test_post_render_of_a_cap_chart_behind_helm(product: InstalledProduct, tmp_path: Path) -> None:
    """`--domain cap` from the installed executable: the CAP schemas and rules ship in the wheel,
    and it writes what the checkout's CLI writes for the chart of the post-render tests."""
    chart = Path(shutil.copytree(ROOT / "tests" / "post_render" / "cap_chart", tmp_path / "cap_chart"))
    outputs = []
    for cli in (product.cli, CLI):
        done = subprocess.run(
            [
                str(tool_path("helm3")),
                "template",
                "bookstore",
                str(chart),
                "--namespace",
                "bookstore",
                "--post-renderer",
                str(cli),
                "--post-renderer-args",
                "post-render",
                "--post-renderer-args=--domain=cap",
            ],
            capture_output=True,
            text=True,
            cwd=product.home,
            env={
                **product.env(),
                "HELM_CONFIG_HOME": str(tmp_path / "h"),
                "HELM_CACHE_HOME": str(tmp_path / "h"),
                "HELM_DATA_HOME": str(tmp_path / "h"),
            },
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    kinds = [o["kind"] for o in yaml.safe_load_all(outputs[0]) if o]
    assert kinds.count("Deployment") == 2
    assert kinds.count("Job") == 3


# --- issue 33, in a user's hands: the installed CLI, not the checkout's -------------------------


def test_a_helm_binary_printing_nothing_removes_nothing(product: InstalledProduct, tmp_path: Path) -> None:
    """A broken Helm wrapper (prints nothing, exits 0) once removed most of the cluster's files."""
    source = copy_example("btp-operator", tmp_path)
    repo = tmp_path / "repo"
    assert product.run("render", source, "--out", repo).returncode == 0
    before = read_tree(repo)
    silent = tmp_path / "silent-helm"
    silent.write_text("#!/bin/sh\nexit 0\n")
    silent.chmod(0o755)

    refused = product.run("render", source, "--out", repo, "--helm-binary", silent)

    assert refused.returncode == 4, refused.stderr
    assert "rendered no objects" in refused.stderr and "spec.chart.allowEmpty" in refused.stderr
    assert read_tree(repo) == before


def test_every_problem_of_every_stage_in_one_run_with_suggestions(
    product: InstalledProduct, tmp_path: Path
) -> None:
    """A misspelt field (schema), application (across objects) and version (a tenant's plan)."""
    source = copy_example("cap-app", tmp_path)
    globex, initech = source / "tenants" / "globex.yaml", source / "tenants" / "initech.yaml"
    globex.write_text(globex.read_text().replace("subDomain:", "subdomain:"))
    initech.write_text(
        initech.read_text().replace("capApplicationInstance: bookshop", "capApplicationInstance: bookshp")
    )

    refused = product.run("render", source, "--out", tmp_path / "repo")

    assert refused.returncode == 3, refused.stderr
    assert 'spec.subdomain: unknown field (did you mean "subDomain"?)' in refused.stderr
    assert '(did you mean "bookshop"?)' in refused.stderr
    assert not (tmp_path / "repo").exists()


def test_json_mode_prints_the_error_as_a_document_with_the_exit_code(
    product: InstalledProduct, tmp_path: Path
) -> None:
    source = copy_example("btp-operator", tmp_path)
    config = source / "btpoperatorconfig.yaml"
    config.write_text(config.read_text().replace("spec:\n", "spec:\n  colour: blue\n", 1))

    refused = product.run("render", source, "--out", tmp_path / "repo", "-o", "json")

    assert refused.returncode == 3, refused.stderr
    document = yaml.safe_load(refused.stdout)
    assert document["exitCode"] == 3
    [problem] = document["error"]["problems"]
    assert (problem["field"], problem["message"]) == ("spec.colour", "unknown field")


def test_the_command_line_follows_kubectl_and_helm(product: InstalledProduct) -> None:
    bare = product.run()
    assert bare.returncode == 0 and "render" in bare.stdout, bare.stderr

    abbreviated = product.run("render", "src", "--out", "repo", "--clust", "demo")
    assert abbreviated.returncode == 2
    assert '"--cluster"' in abbreviated.stderr  # named as the option probably meant, never taken for it

    script = product.run("completion", "bash")
    assert script.returncode == 0, script.stderr
    completed = subprocess.run(
        [
            "bash",
            "--norc",
            "--noprofile",
            "-c",
            'source /dev/stdin; COMP_WORDS=(btp-gitops ren); COMP_CWORD=1; _btp_gitops; printf "%s\\n" "${COMPREPLY[@]}"',
        ],
        input=script.stdout,
        capture_output=True,
        text=True,
        cwd=product.home,
        env=product.env(),
        check=False,
        timeout=60,
    )
    assert completed.stdout.split() == ["render"], completed.stderr
