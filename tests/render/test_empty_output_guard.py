"""Mistakes that print nothing must not delete anything: a chart that renders no object, and a
render that would remove most objects of a cluster however they are spread over its apps.

Through the installed CLI, as users run it, on real sources rendered by the embedded Helm engine;
the broken `--helm-binary` is what a user would have: a script that prints nothing and exits 0.
Each refusal leaves the rendered tree byte for byte as it was.
"""

from __future__ import annotations

from pathlib import Path

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import EXAMPLES, RunCli, read_tree

CLUSTER = "c1"

KYMA = """\
apiVersion: operator.kyma-project.io/v1beta2
kind: Kyma
metadata:
  name: default
  namespace: kyma-system
spec:
  channel: regular
  modules:
  - name: alpha
  - name: beta
"""

# One ConfigMap per count: a module whose values say how many objects its chart renders.
CHART_FILES = {
    "Chart.yaml": "apiVersion: v2\nname: counter\nversion: 1.0.0\n",
    "values.yaml": "count: 1\n",
    "templates/configmaps.yaml": (
        "{{- range $i := until (int .Values.count) }}\n"
        "---\n"
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: {{ $.Release.Name }}-{{ $i }}\n"
        "data:\n"
        "  index: {{ $i | quote }}\n"
        "{{- end }}\n"
    ),
}


def module_template(module: str, count: int, allow_empty: bool = False) -> str:
    allow = "    allowEmpty: true\n" if allow_empty else ""
    return (
        "apiVersion: operator.kyma-project.io/v1beta2\n"
        "kind: ModuleTemplate\n"
        "metadata:\n"
        f"  name: {module}-regular\n"
        "  namespace: kyma-system\n"
        "spec:\n"
        "  channel: regular\n"
        "  version: 1.0.0\n"
        f"  moduleName: {module}\n"
        "  chart:\n"
        "    path: ../.modules/counter\n"
        f"    values:\n      count: {count}\n"
        f"{allow}"
    )


def kyma_sources(root: Path, counts: dict[str, int], allow_empty: bool = False) -> Path:
    """A Kyma asking for modules alpha and beta, each a `counter` chart (in a dot-directory: a source
    directory is read for objects) rendering `counts[module]`
    ConfigMaps; written again in place, so that a test changes what the next render gets."""
    (root / "catalog").mkdir(parents=True, exist_ok=True)
    (root / "kyma.yaml").write_text(KYMA)
    for name, text in CHART_FILES.items():
        (root / ".modules" / "counter" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / ".modules" / "counter" / name).write_text(text)
    for module, count in counts.items():
        (root / "catalog" / f"{module}.yaml").write_text(module_template(module, count, allow_empty))
    return root


def silent_helm(directory: Path) -> Path:
    """A broken helm shim: prints nothing, exits 0."""
    shim = directory / "helm"
    shim.write_text("#!/bin/sh\nexit 0\n")
    shim.chmod(0o755)
    return shim


def test_a_helm_binary_printing_nothing_is_refused_and_the_tree_stays(
    tmp_path: Path, run_cli: RunCli
) -> None:
    sources = (EXAMPLES / "btp-operator", EXAMPLES / "kyma-modules")
    first = run_cli("render", *sources, "--out", tmp_path / "repo", "--cluster", CLUSTER, cwd=tmp_path)
    assert first.returncode == ExitCode.OK, first.stderr
    before = read_tree(tmp_path / "repo")
    shim = silent_helm(tmp_path)
    for extra in ((), ("--commit",), ("--allow-empty",)):
        refused = run_cli(
            "render",
            *sources,
            "--out",
            tmp_path / "repo",
            "--cluster",
            CLUSTER,
            "--helm-binary",
            shim,
            *extra,
            cwd=tmp_path,
        )
        assert refused.returncode == ExitCode.CHART, refused.stdout + refused.stderr
        assert refused.stdout == ""
        assert refused.stderr.splitlines() == [
            "error: chart sap-btp-operator 0.1.0 rendered no objects: a Helm binary that prints nothing "
            "(check --helm-binary) or values that turn every template off",
            f"  {EXAMPLES / 'btp-operator' / 'btpoperatorconfig.yaml'}: document 1 (BtpOperatorConfig "
            "kyma-system/btp-operator): spec.chart.allowEmpty: not set; if the chart may render no "
            "objects, set spec.chart.allowEmpty: true",
        ]
        assert read_tree(tmp_path / "repo") == before


def test_module_resources_from_a_helm_binary_printing_nothing_is_refused(
    tmp_path: Path, run_cli: RunCli
) -> None:
    chart = EXAMPLES.parent / "charts" / "sap-btp-operator"
    first = run_cli("module-resources", "--chart", chart, "--out", tmp_path / "mr")
    assert first.returncode == ExitCode.OK, first.stderr
    before = read_tree(tmp_path / "mr")
    refused = run_cli(
        "module-resources", "--chart", chart, "--out", tmp_path / "mr", "--helm-binary", silent_helm(tmp_path)
    )
    assert refused.returncode == ExitCode.CHART, refused.stderr
    assert refused.stderr.startswith("error: chart sap-btp-operator 0.1.0 rendered no objects")
    assert read_tree(tmp_path / "mr") == before


def test_a_module_chart_rendering_nothing_needs_allow_empty_on_its_template(
    tmp_path: Path, run_cli: RunCli
) -> None:
    sources = kyma_sources(tmp_path / "src", {"alpha": 2, "beta": 2})
    out = tmp_path / "repo"
    assert run_cli("render", sources, "--out", out, "--cluster", CLUSTER).returncode == ExitCode.OK
    before = read_tree(out)

    kyma_sources(sources, {"alpha": 2, "beta": 0})
    refused = run_cli("render", sources, "--out", out, "--cluster", CLUSTER)
    assert refused.returncode == ExitCode.CHART, refused.stderr
    assert refused.stderr.splitlines()[1:] == [
        f"  {sources / 'catalog' / 'beta.yaml'}: document 1 (ModuleTemplate kyma-system/beta-regular): "
        "spec.chart.allowEmpty: not set; if the chart may render no objects, set spec.chart.allowEmpty: true"
    ]
    assert read_tree(out) == before

    kyma_sources(sources, {"alpha": 2, "beta": 0}, allow_empty=True)
    allowed = run_cli("render", sources, "--out", out, "--cluster", CLUSTER)
    assert allowed.returncode == ExitCode.OK, allowed.stderr
    cluster = out / "clusters" / CLUSTER
    assert not (cluster / "kyma-beta").exists()  # an app without objects has no directory
    assert sorted(p.name for p in (cluster / "kyma-alpha").iterdir()) == [
        "configmap-alpha-0.yaml",
        "configmap-alpha-1.yaml",
        "kustomization.yaml",
    ]


def test_removing_most_objects_from_every_app_needs_allow_empty(tmp_path: Path, run_cli: RunCli) -> None:
    sources = kyma_sources(tmp_path / "src", {"alpha": 5, "beta": 5})
    out = tmp_path / "repo"
    first = run_cli("render", sources, "--out", out, "--cluster", CLUSTER, cwd=tmp_path)
    assert first.returncode == ExitCode.OK, first.stderr
    before = read_tree(out)

    kyma_sources(sources, {"alpha": 1, "beta": 1})  # each app stays, with one object of five
    for extra in ((), ("--commit",)):
        refused = run_cli("render", "src", "--out", "repo", "--cluster", CLUSTER, *extra, cwd=tmp_path)
        assert refused.returncode == ExitCode.INPUT, refused.stdout + refused.stderr
        assert refused.stderr == (
            "error: refusing to render over repo/clusters/c1: it would remove 8 of the 10 objects there "
            "(from 2 app(s) that stay: kyma-alpha 4 of 5, kyma-beta 4 of 5). If that is meant (not a "
            "wrong or empty source directory, a glob that matched nothing, or values that turned objects "
            "off by mistake), pass --allow-empty\n"
        )
        assert read_tree(out) == before

    allowed = run_cli("render", sources, "--out", out, "--cluster", CLUSTER, "--allow-empty", cwd=tmp_path)
    assert allowed.returncode == ExitCode.OK, allowed.stderr
    assert "0 added, 2 changed, 8 removed" in allowed.stdout  # the two kustomizations, eight ConfigMaps
    cluster = out / "clusters" / CLUSTER
    assert sorted(p.name for p in (cluster / "kyma-beta").iterdir()) == [
        "configmap-beta-0.yaml",
        "kustomization.yaml",
    ]


def test_a_removal_spread_over_whole_apps_and_shrunk_ones_is_counted_together(
    tmp_path: Path, run_cli: RunCli
) -> None:
    sources = kyma_sources(tmp_path / "src", {"alpha": 3, "beta": 3})
    out = tmp_path / "repo"
    assert run_cli("render", sources, "--out", out, "--cluster", CLUSTER, cwd=tmp_path).returncode == 0
    before = read_tree(out)
    kyma_sources(sources, {"alpha": 2})  # beta goes (3 objects), alpha loses one of 3: 4 of 6
    (sources / "kyma.yaml").write_text(KYMA.replace("  - name: beta\n", ""))
    refused = run_cli("render", "src", "--out", "repo", "--cluster", CLUSTER, cwd=tmp_path)
    assert refused.returncode == ExitCode.INPUT, refused.stdout + refused.stderr
    assert (
        "it would remove 4 of the 6 objects there (1 app(s) as a whole: kyma-beta; from 1 app(s) that "
        "stay: kyma-alpha 1 of 3)"
    ) in refused.stderr
    assert read_tree(out) == before
