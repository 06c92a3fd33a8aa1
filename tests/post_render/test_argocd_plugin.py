"""The shipped Argo CD Config Management Plugin, run the way the CMP server runs it.

Argo CD itself cannot run here; the sidecar's contract is small enough to exercise directly: the
discover command runs in the app's source directory (inside the checked-out repository) and
matches on non-empty stdout, the generate command runs there with the ARGOCD_* variables
(`ARGOCD_APP_SOURCE_PATH`, the Application's parameters as `ARGOCD_APP_PARAMETERS` JSON and
`PARAM_<NAME>` variables, its plugin env as `ARGOCD_ENV_<NAME>`) and must print only manifests on
stdout. Covered: discovery of every source kind's directory and of nothing btp-gitops rendered
or a chart templates; generate for BTP operator, CAP and Kyma sources, equal to `render
--stdout`; every parameter reaching the render, and the ones that cannot work refused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.cli.argocd_parameters import PARAMETERS, application_place
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io.render_pack import pack_name
from tests.conftest import CLI, EXAMPLES, ROOT, RunCli

PLUGIN = ROOT / "argocd-cmp" / "plugin.yaml"


def plugin_spec() -> dict[str, Any]:
    plugin = yaml.safe_load(PLUGIN.read_text())
    assert (plugin["apiVersion"], plugin["kind"]) == ("argoproj.io/v1alpha1", "ConfigManagementPlugin")
    return plugin["spec"]  # type: ignore[no-any-return]


def parameter_env(parameters: list[dict[str, Any]]) -> dict[str, str]:
    """The variables Argo CD sets for an Application's plugin parameters: the JSON, and one
    `PARAM_` variable per value (name upper-cased, anything but letters and digits an underscore)."""

    def normal(name: str) -> str:
        return re.sub(r"[^A-Z0-9]", "_", name.upper())

    env = {"ARGOCD_APP_PARAMETERS": json.dumps(parameters)}
    for parameter in parameters:
        name = f"PARAM_{normal(parameter['name'])}"
        if "string" in parameter:
            env[name] = parameter["string"]
        for index, item in enumerate(parameter.get("array", [])):
            env[f"{name}_{index}"] = item
        for key, value in parameter.get("map", {}).items():
            env[f"{name}_{normal(key)}"] = value
    return env


def run_like_argocd(
    command: list[str], app_dir: Path, source_path: str = "btp-operator", **env: str
) -> subprocess.CompletedProcess[str]:
    environment = {
        "PATH": f"{CLI.parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(app_dir),
        "ARGOCD_APP_NAME": "btp-operator",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_SOURCE_PATH": source_path,
        "KUBE_VERSION": "1.34",
        **env,
    }
    return subprocess.run(
        command, check=False, cwd=app_dir, env=environment, capture_output=True, text=True, timeout=120
    )


def copied_example(tmp_path: Path) -> Path:
    """The example app as the repo-server checks it out (the chart path is relative to it)."""
    shutil.copytree(EXAMPLES / "btp-operator", tmp_path / "examples" / "btp-operator")
    shutil.copytree(ROOT / "charts" / "sap-btp-operator", tmp_path / "charts" / "sap-btp-operator")
    return tmp_path / "examples" / "btp-operator"


def discover(app_dir: Path) -> str:
    found = run_like_argocd(plugin_spec()["discover"]["find"]["command"], app_dir)
    assert found.returncode == 0, found.stderr
    assert found.stderr == ""
    return found.stdout.strip()


CAP_CHART_TEMPLATE = """apiVersion: sme.sap.com/v1alpha1
kind: CAPApplication
metadata:
  name: {{ .Release.Name }}
"""


@pytest.mark.parametrize(
    ("sources", "group"),
    [
        (EXAMPLES / "btp-operator", "btp-gitops.io"),
        (EXAMPLES / "cap-app", "sme.sap.com"),
        (EXAMPLES / "cap-services-only", "sme.sap.com"),
        (EXAMPLES / "cap-app" / "tenants", "sme.sap.com"),
        (EXAMPLES / "kyma-modules", "operator.kyma-project.io"),
        (EXAMPLES / "kyma-beta.yaml", "operator.kyma-project.io"),  # a directory of one Kyma
    ],
)
def test_discover_matches_a_directory_of_every_source_kind(tmp_path: Path, sources: Path, group: str) -> None:
    app = tmp_path / "repo" / "app"
    if sources.is_file():
        app.mkdir(parents=True)
        shutil.copy(sources, app)
    else:
        shutil.copytree(sources, app)
    found = discover(app)
    assert found.startswith("./")
    assert re.search(rf"^apiVersion: *{re.escape(group)}/", (app / found).read_text(), re.MULTILINE)


def test_discover_leaves_rendered_trees_and_charts_alone(tmp_path: Path, run_cli: RunCli) -> None:
    """Argo CD asks plugins first: a rendered app directory (CAPApplications and Kyma's BtpOperator
    among its objects), a rendered cluster or repository, and a chart templating CAP kinds must go
    to Kustomize, Helm or the directory reader as before."""
    repo = tmp_path / "gitops"
    sources = (EXAMPLES / "btp-operator", EXAMPLES / "cap-app", EXAMPLES / "kyma-modules")
    for target in ("argocd", "flux"):
        rendered = run_cli(
            "render", *sources, "--out", repo, "--cluster", target, "--target", target, cwd=ROOT
        )
        assert rendered.returncode == 0, rendered.stderr
    chart = tmp_path / "cap-chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: bookshop\nversion: 1.0.0\n")
    (chart / "templates" / "capapplication.yaml").write_text(CAP_CHART_TEMPLATE)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")

    not_ours = [repo, chart, ROOT / "charts" / "sap-btp-operator", plain]
    not_ours += [p for p in (repo / "clusters").rglob("*") if p.is_dir()]
    assert any("cap.bookshop" in p.name for p in not_ours)  # rendered CAPApplications among them

    assert {str(p): discover(p) for p in not_ours} == {str(p): "" for p in not_ours}


def test_generate_prints_the_rendered_objects_only(tmp_path: Path, run_cli: RunCli) -> None:
    app = copied_example(tmp_path)
    generated = run_like_argocd(plugin_spec()["generate"]["command"], app)
    assert generated.returncode == 0, generated.stderr
    documents = list(yaml.safe_load_all(generated.stdout))
    assert all(isinstance(d, dict) and d.get("kind") and d.get("metadata") for d in documents)
    assert "Kustomization" not in {d["kind"] for d in documents}
    rendered = run_cli("render", app, "--out", tmp_path / "repo", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    files = sorted((tmp_path / "repo" / "clusters" / "default").rglob("*.yaml"))
    in_repo = [yaml.safe_load(f.read_text()) for f in files if f.name != "kustomization.yaml"]
    assert documents == in_repo


def test_generate_passes_extra_arguments_from_the_application(tmp_path: Path) -> None:
    app = copied_example(tmp_path)
    generated = run_like_argocd(
        plugin_spec()["generate"]["command"], app, ARGOCD_ENV_BTP_GITOPS_ARGS="--no-such-option"
    )
    assert generated.returncode == 2
    assert "--no-such-option" in generated.stderr
    assert generated.stdout == ""


# --- generate: CAP and Kyma sources, and the parameters -----------------------------------------


def stdout_render(run_cli: RunCli, app: Path, *args: str) -> str:
    local = run_cli("render", ".", "--stdout", *args, cwd=app)
    assert local.returncode == 0, local.stderr
    return local.stdout


def test_generate_renders_cap_sources(tmp_path: Path, run_cli: RunCli) -> None:
    app = tmp_path / "apps" / "bookshop"
    shutil.copytree(EXAMPLES / "cap-app", app)

    generated = run_like_argocd(plugin_spec()["generate"]["command"], app, source_path="apps/bookshop")

    assert generated.returncode == 0, generated.stderr
    kinds = {d["kind"] for d in yaml.safe_load_all(generated.stdout)}
    assert {"CAPApplication", "CAPApplicationVersion", "CAPTenant", "Deployment", "Job"} <= kinds
    assert generated.stdout == stdout_render(run_cli, app)


def test_each_request_finds_the_render_pack_the_last_one_left(tmp_path: Path) -> None:
    """Argo CD's CMP server unpacks the repository into a new temporary directory for every
    generate request and removes it after. The render pack is named after the Application and
    its source, not that directory: the next request finds it (one base pack, not one more per
    refresh), with a tenant added too; another Application keeps a pack of its own."""
    home = tmp_path / "sidecar-home"  # the sidecar's home: its cache lies outside every checkout
    packs = home / ".cache" / "btp-gitops" / "render" / "packs"

    def request(number: int, application: str = "bookshop", tenant: str | None = None) -> str:
        app = tmp_path / f"request-{number}" / "apps" / "bookshop"
        shutil.copytree(EXAMPLES / "cap-app", app)
        if tenant is not None:
            acme = yaml.safe_load((app / "tenants" / "acme.yaml").read_text())
            acme["metadata"]["name"] = acme["spec"]["subDomain"] = tenant
            acme["spec"]["tenantId"] = "5d0c1b2a-3e4f-4a5b-8c6d-7e8f9a0b1c2d"
            acme["metadata"]["labels"]["sme.sap.com/subscription-guid"] = (
                "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
            )
            (app / "tenants" / f"{tenant}.yaml").write_text(yaml.safe_dump(acme))
        generated = run_like_argocd(
            plugin_spec()["generate"]["command"],
            app,
            source_path="apps/bookshop",
            HOME=str(home),
            ARGOCD_APP_NAME=application,
            ARGOCD_APP_SOURCE_REPO_URL="https://git.example.com/platform.git",
        )
        assert generated.returncode == 0, generated.stderr
        shutil.rmtree(tmp_path / f"request-{number}")  # as the CMP server does after each request
        return generated.stdout

    def bases() -> set[str]:
        return {path.name for path in packs.glob("*.pack")}

    first = request(1)
    kept = bases()
    assert len(kept) == 1
    assert request(2) == first
    assert bases() == kept
    added = request(3, tenant="umbrella")
    assert "umbrella" in added and "umbrella" not in first
    assert bases() == kept
    request(4, application="bookshop-staging")
    assert len(bases()) == 2 and kept < bases()


def kyma_repository(tmp_path: Path) -> Path:
    """A Kyma in its own directory, its module catalog beside it (the app needs the parameter), and
    the modules' manifests beside that (the render may read them only with allow-path)."""
    repo = tmp_path / "repo"
    (repo / "clusters" / "beta").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "kyma-beta.yaml", repo / "clusters" / "beta" / "kyma.yaml")
    shutil.copytree(EXAMPLES / "kyma-modules" / "catalog", repo / "catalog")
    shutil.copytree(EXAMPLES / "kyma-modules" / ".modules", repo / ".modules")
    return repo / "clusters" / "beta"


def test_generate_renders_kyma_sources_with_the_catalog_parameter(tmp_path: Path, run_cli: RunCli) -> None:
    app = kyma_repository(tmp_path)
    generate = plugin_spec()["generate"]["command"]
    catalog = {"name": "catalog", "array": ["../../catalog"]}
    allow = {"name": "allow-path", "array": ["../../.modules"]}

    without = run_like_argocd(generate, app, source_path="clusters/beta")
    no_allow = run_like_argocd(generate, app, source_path="clusters/beta", **parameter_env([catalog]))
    generated = run_like_argocd(generate, app, source_path="clusters/beta", **parameter_env([catalog, allow]))

    # A module without templates is a module problem: not zero, so Argo CD fails the generation
    # instead of pruning the module's objects.
    assert without.returncode == ExitCode.MODULE_PROBLEMS and "no templates were found" in without.stderr
    assert no_allow.returncode == 3 and "outside the source roots (see --allow-path)" in no_allow.stderr
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == stdout_render(
        run_cli, app, "--catalog", "../../catalog", "--allow-path", "../../.modules"
    )
    names = {d["metadata"]["name"] for d in yaml.safe_load_all(generated.stdout)}
    assert {"greeter-operator", "relay-controller", "greeters.modules.example.com"} <= names


def test_the_announced_parameters_are_the_ones_generate_reads() -> None:
    announced = plugin_spec()["parameters"]["static"]
    shapes = [
        "array"
        if p.get("collectionType") == "array"
        else "boolean"
        if p.get("itemType") == "boolean"
        else "string"
        for p in announced
    ]
    assert [(p["name"], shape) for p, shape in zip(announced, shapes, strict=True)] == [
        (p.name, p.shape) for p in PARAMETERS
    ]
    assert all(p.get("title") and p.get("tooltip") for p in announced)


def test_parameters_reach_the_render(tmp_path: Path, run_cli: RunCli) -> None:
    """Each parameter changes what the render does: cluster (the Kyma record names it), validate with
    kubernetes-version, allow-path, maintenance-policy and at (a module upgrade held back)."""
    app = kyma_repository(tmp_path)
    generate = plugin_spec()["generate"]["command"]
    catalog = {"name": "catalog", "array": ["../../catalog"]}
    allow = {"name": "allow-path", "array": ["../../.modules"]}

    def run(*parameters: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return run_like_argocd(
            generate, app, source_path="clusters/beta", **parameter_env([catalog, allow, *parameters])
        )

    bad_cluster = run({"name": "cluster", "string": "Not_A_Label"})
    assert bad_cluster.returncode == 2 and "Not_A_Label" in bad_cluster.stderr
    validated = run({"name": "validate", "string": "true"}, {"name": "kubernetes-version", "string": "1.2"})
    assert validated.returncode == 2 and "1.2" in validated.stderr, validated.stderr
    not_validated = run(
        {"name": "validate", "string": "false"}, {"name": "kubernetes-version", "string": "1.2"}
    )
    assert not_validated.returncode == 0, not_validated.stderr
    # A maintenance policy inside the repository is read; at: when its windows are checked.
    policy = app.parent.parent / "maintenance-policy.json"
    shutil.copy(EXAMPLES / "kyma-modules" / "maintenance-policy.json", policy)
    with_policy = run(
        {"name": "maintenance-policy", "string": "../../maintenance-policy.json"},
        {"name": "at", "string": "2025-10-11T21:30:00Z"},
    )
    assert with_policy.returncode == 0, with_policy.stderr
    assert with_policy.stdout == stdout_render(
        run_cli,
        app,
        "--catalog",
        "../../catalog",
        "--allow-path",
        "../../.modules",
        "--maintenance-policy",
        str(policy),
        "--at",
        "2025-10-11T21:30:00Z",
    )
    bad_time = run({"name": "at", "string": "yesterday"})
    assert bad_time.returncode == 2 and "--at 'yesterday'" in bad_time.stderr


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ("not json", "ARGOCD_APP_PARAMETERS: not JSON"),
        ('{"name": "cluster"}', "ARGOCD_APP_PARAMETERS: not a list of parameters"),
        ('[{"string": "x"}]', "ARGOCD_APP_PARAMETERS: entry 1 has no name"),
        (
            '[{"name": "helm-binary", "string": "./evil"}]',
            "Argo CD parameter 'helm-binary' is not one of the plugin's: cluster, catalog",
        ),
        (
            '[{"name": "catalog", "string": "../../catalog"}]',
            "Argo CD parameter catalog: give it as an array",
        ),
        ('[{"name": "cluster", "array": ["a"]}]', "Argo CD parameter cluster: give it as a string"),
        (
            '[{"name": "validate", "string": "yes"}]',
            "Argo CD parameter validate: give true or false, not 'yes'",
        ),
        (
            '[{"name": "cluster", "string": "a"}, {"name": "cluster", "string": "b"}]',
            "Argo CD parameter cluster is given twice",
        ),
        ('[{"name": "catalog", "array": ["/etc"]}]', "Argo CD parameter catalog: '/etc' is absolute"),
        (
            '[{"name": "allow-path", "array": ["../../.."]}]',
            "Argo CD parameter allow-path: '../../..' leads outside the repository",
        ),
        (
            '[{"name": "maintenance-policy", "string": "../../../policy.json"}]',
            "leads outside the repository",
        ),
    ],
)
def test_parameters_that_cannot_work_are_usage_errors(tmp_path: Path, parameters: str, message: str) -> None:
    app = kyma_repository(tmp_path)
    (tmp_path / "policy.json").write_text("{}")  # outside the repository: never read

    result = run_like_argocd(
        plugin_spec()["generate"]["command"],
        app,
        source_path="clusters/beta",
        ARGOCD_APP_PARAMETERS=parameters,
    )

    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("plugin_args", "message"),
    [
        ("--helm-binary ../../.modules/x", "--helm-binary cannot be used in Argo CD's plugin"),
        ("--allow-path /", "Argo CD plugin, --allow-path: '/' is absolute"),
        ("--catalog ../../../outside", "Argo CD plugin, --catalog: '../../../outside' leads outside"),
        ("--maintenance-policy ../../../policy.json", "Argo CD plugin, --maintenance-policy:"),
        ("--crds /tmp", "Argo CD plugin, --crds: '/tmp' is absolute"),
    ],
)
def test_the_plugin_env_cannot_reach_outside_the_repository(
    tmp_path: Path, plugin_args: str, message: str
) -> None:
    """BTP_GITOPS_ARGS comes from the Application, like the parameters: the same containment, and
    no helm binary of the repository's choosing run in the sidecar."""
    app = kyma_repository(tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "policy.json").write_text("{}")
    result = run_like_argocd(
        plugin_spec()["generate"]["command"],
        app,
        source_path="clusters/beta",
        ARGOCD_ENV_BTP_GITOPS_ARGS=plugin_args,
        **parameter_env([{"name": "catalog", "array": ["../../catalog"]}]),
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_the_plugin_env_may_name_paths_inside_the_repository(tmp_path: Path, run_cli: RunCli) -> None:
    app = kyma_repository(tmp_path)
    generated = run_like_argocd(
        plugin_spec()["generate"]["command"],
        app,
        source_path="clusters/beta",
        ARGOCD_ENV_BTP_GITOPS_ARGS="--catalog ../../catalog --allow-path ../../.modules",
    )
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == stdout_render(
        run_cli, app, "--catalog", "../../catalog", "--allow-path", "../../.modules"
    )


def test_a_link_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    app = kyma_repository(tmp_path)
    (app / "elsewhere").symlink_to(tmp_path)
    catalog = [{"name": "catalog", "array": ["elsewhere"]}]
    result = run_like_argocd(
        plugin_spec()["generate"]["command"], app, source_path="clusters/beta", **parameter_env(catalog)
    )
    assert result.returncode == 2
    assert "Argo CD parameter catalog: 'elsewhere' leads outside the repository" in result.stderr


def test_argocd_parameters_belong_to_the_plugins_stdout_render(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli(
        "render", EXAMPLES / "btp-operator", "--out", tmp_path / "out", "--argocd-parameters", cwd=ROOT
    )
    assert result.returncode == 2
    assert "--argocd-parameters is for Argo CD's plugin: it needs --stdout" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_pack_is_named_after_the_application_not_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    application = {
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_NAME": "bookshop",
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/platform.git",
        "ARGOCD_APP_SOURCE_PATH": "apps/bookshop",
    }
    place = application_place(application)
    assert place is not None
    assert application_place({**application, "ARGOCD_APP_NAME": ""}) is None  # not run by Argo CD
    others = [application_place({**application, name: "x"}) for name in application]
    assert len({place, *others}) == 1 + len(application)  # each field tells two sources apart
    names = []
    for directory in ("request-1", "request-2"):
        (tmp_path / directory).mkdir()
        monkeypatch.chdir(tmp_path / directory)
        names.append((pack_name("scope", [Path(".")]), pack_name("scope", [Path(".")], place)))
    assert names[0][0] != names[1][0]  # outside the plugin: one pack per working directory
    assert names[0][1] == names[1][1]  # in it: one per Application and source
