"""Containment, tried as a hostile source would, through the installed CLI.

Names: every value that becomes a path segment (`--cluster`, Kyma module names, the Kyma record's
apps, source and rendered object names, template file names, Helm 4 filename annotations) is
refused when it is not what Kubernetes allows, with its value and where it came from.

Reads: a source may name files (chart, values files, raw manifests) only inside the roots given on
the command line, after resolving symbolic links; a link leaving them is refused wherever it is
met. Canary files outside the roots must never reach stdout, stderr or the rendered repo, and the
same sources render once `--allow-path` names the outside directory.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import CHART, CLI, EXAMPLES, RunCli, read_tree

CANARY = f"canary-{uuid.uuid4().hex[:12]}"
BAD_NAMES = {
    "dot-dot": "..",
    "dot": ".",
    "empty": "",
    "absolute": "/etc",
    "slash": "a/../../b",
    "newline": "a\nb",
    "trailing-newline": "demo\n",  # a `$` in a pattern matches before it
    "control": "a\x01b",
    "upper-case": "Demo",
    "too-long": "n" * 64,  # not hex: a long run of hex digits is redacted from messages as a token
}
MODULE_LABEL = "operator.kyma-project.io/module-name"


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): (b"<dir>" if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
        if not p.is_symlink() or p.exists()
    }


def _assert_no_canary(result: Any, out: Path | None = None) -> None:
    assert CANARY not in result.stdout
    assert CANARY not in result.stderr
    if out is not None and out.exists():
        assert all(CANARY.encode() not in data for data in read_tree(out).values())


def _write_yaml(path: Path, *documents: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def _configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "kyma-system"},
        "data": {"secret": CANARY},
    }


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Beside the source root: a canary manifest, a directory of them, values and two charts."""
    root = tmp_path / "outside"
    _write_yaml(root / "canary.yaml", _configmap("canary"))
    _write_yaml(root / "manifests" / "canary.yaml", _configmap("canary-dir"))
    (root / "values.yaml").write_text(f"canary: {CANARY}\n")
    (root / "btp-values.yaml").write_text(f"# {CANARY}\n{{}}\n")  # the SAP chart's schema takes no canary
    shutil.copytree(CHART, root / "chart")
    chart = root / "kchart"
    _write_yaml(chart / "Chart.yaml", {"apiVersion": "v2", "name": "kchart", "version": "0.1.0"})
    (chart / "templates").mkdir()
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-chart\n"
        'data:\n  secret: {{ .Values.canary | default "none" | quote }}\n'
    )
    return root


# --- names -------------------------------------------------------------------------------------


CLUSTER_CASES = [
    *(pytest.param("render", value, id=f"render-{key}") for key, value in BAD_NAMES.items()),
    *(
        pytest.param(command, BAD_NAMES[key], id=f"{command}-{key}")
        for command in ("render-stdout", "diff")
        for key in ("dot-dot", "absolute", "empty", "control")
    ),
]


@pytest.mark.parametrize(("command", "value"), CLUSTER_CASES)
def test_cluster_flag_is_a_dns_label(tmp_path: Path, run_cli: RunCli, command: str, value: str) -> None:
    out = tmp_path / "work" / "out"
    out.mkdir(parents=True)
    before = _files(tmp_path)
    source = EXAMPLES / "btp-operator"
    args: dict[str, list[str | Path]] = {
        "render": ["render", source, "--out", out],
        "render-stdout": ["render", source, "--stdout"],
        "diff": ["diff", source, "--against", out],
    }
    result = run_cli(*args[command], "--cluster", value, cwd=tmp_path)
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert result.stderr.startswith(f"error: --cluster {repr(value)[:61]}"), result.stderr
    assert "is not a DNS-1123 label" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert _files(tmp_path) == before


def _kyma_source(root: Path, label: str = "demo", module_name: str | None = None) -> Path:
    """A Kyma asking for module `demo`, and its template with raw manifests in `.content/`."""
    template: dict[str, Any] = {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "ModuleTemplate",
        "metadata": {"name": "demo-1.0.0", "namespace": "kyma-system", "labels": {MODULE_LABEL: label}},
        "spec": {"channel": "regular", "version": "1.0.0", "rawManifest": {"path": ".content"}},
    }
    if module_name is not None:
        template["spec"]["moduleName"] = module_name
    kyma = {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "Kyma",
        "metadata": {"name": "default", "namespace": "kyma-system"},
        "spec": {"channel": "regular", "modules": [{"name": "demo"}]},
    }
    _write_yaml(root / "kyma.yaml", kyma, template)
    _write_yaml(
        root / ".content" / "cm.yaml",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo"}, "data": {"a": "b"}},
    )
    return root


def test_a_clean_kyma_source_renders(tmp_path: Path, run_cli: RunCli) -> None:
    """The baseline the name cases below break one field of."""
    result = run_cli("render", _kyma_source(tmp_path / "src"), "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out/clusters/default/kyma-demo/configmap-demo.yaml").is_file()


@pytest.mark.parametrize("value", BAD_NAMES.values(), ids=BAD_NAMES.keys())
def test_module_name_label_is_a_dns_label(tmp_path: Path, run_cli: RunCli, value: str) -> None:
    source = _kyma_source(tmp_path / "src", label=value)
    result = run_cli("render", source, "--out", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT, result.stderr
    # A value no label may hold is refused when the document is read (core.label_syntax); one
    # that is a label value but no DNS label ('Demo', ''), by the module-name check.
    where = (
        f"src/kyma.yaml: document 2 (ModuleTemplate kyma-system/demo-1.0.0): metadata.labels.{MODULE_LABEL}: "
    )
    assert (
        f"{where}label value {repr(value)[:61]}" in result.stderr
        or f"{where}{repr(value)[:61]}" in result.stderr
    ), result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["..", "/abs", "a\nb", "Demo"])
def test_module_name_field_is_a_dns_label(tmp_path: Path, run_cli: RunCli, value: str) -> None:
    source = _kyma_source(tmp_path / "src", module_name=value)
    result = run_cli("render", source, "--out", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "(ModuleTemplate kyma-system/demo-1.0.0): spec.moduleName" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_record_cannot_name_an_app_outside_the_cluster(tmp_path: Path, run_cli: RunCli) -> None:
    source, out = _kyma_source(tmp_path / "src"), tmp_path / "out"
    assert run_cli("render", source, "--out", out).returncode == 0
    record_path = out / "clusters/default/.kyma-modules.json"
    record = json.loads(record_path.read_text())
    record["modules"][0]["app"] = "../../escape"
    record_path.write_text(json.dumps(record))
    (tmp_path / "escape").mkdir()
    # Skip-reconciliation keeps every app of the record: the record alone names the directory.
    kyma = yaml.safe_load_all((source / "kyma.yaml").read_text())
    documents = list(kyma)
    documents[0]["metadata"]["labels"] = {"operator.kyma-project.io/skip-reconciliation": "true"}
    _write_yaml(source / "kyma.yaml", *documents)
    before = _files(tmp_path)
    for args in (("render", source, "--out", out), ("diff", source, "--against", out)):
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == ExitCode.INPUT, result.stderr
        assert (
            "  clusters/default/.kyma-modules.json: modules[0].app: '../../escape' is not a DNS-1123 "
            "subdomain"
        ) in result.stderr
    assert _files(tmp_path) == before


CAP_NAMES = [
    ("capapplication.yaml", 0, "metadata.name", "book..shop"),
    ("tenants/acme.yaml", 0, "metadata.name", "ac..me"),
    ("domains.yaml", 0, "metadata.name", "-x-"),
    ("capapplication.yaml", 0, "metadata.namespace", "Book"),
]


@pytest.mark.parametrize(("file", "index", "field", "value"), CAP_NAMES)
def test_cap_names_become_app_directories_only_when_kubernetes_would_take_them(
    tmp_path: Path, run_cli: RunCli, file: str, index: int, field: str, value: str
) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLES / "cap-app", source)
    documents = list(yaml.safe_load_all((source / file).read_text()))
    documents[index]["metadata"][field.split(".")[1]] = value
    _write_yaml(source / file, *documents)
    result = run_cli("render", source, "--out", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert f"src/{file}: document {index + 1} (" in result.stderr
    assert f"{field}: " in result.stderr
    assert repr(value) in result.stderr  # in our words, or the schema's where its pattern refuses it
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["..", "a/../../b", "a\x01b"])
def test_rendered_object_names_kubernetes_refuses_are_refused(
    tmp_path: Path, run_cli: RunCli, name: str
) -> None:
    source = _kyma_source(tmp_path / "src")
    _write_yaml(
        source / ".content" / "cm.yaml",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}},
    )
    result = run_cli("render", source, "--stdout", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert f"metadata.name: {name!r}" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "filename", ["../../../escape.yaml", "/etc/escape.yaml", "a/./b.yaml", "a\x01.yaml"]
)  # an annotation that is not a string at all is refused by shape (tests/post_render/test_broken_objects.py)
def test_post_render_refuses_helm4_filenames_outside_the_chart(run_cli: RunCli, filename: str) -> None:
    stream = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "x",
                "annotations": {"postrenderer.helm.sh/postrender-filename": filename},
            },
        }
    )
    import subprocess  # noqa: PLC0415 - stdin is needed here, the fixture has none

    result = subprocess.run(
        [str(CLI), "post-render"], input=stream, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert (
        "<stdin>: document 1 (ConfigMap x): metadata.annotations.postrenderer.helm.sh/postrender-filename: "
        f"{filename!r}"
    ) in result.stderr
    assert result.stdout == ""


def test_module_resources_refuses_a_template_name_with_control_characters(
    tmp_path: Path, run_cli: RunCli
) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    _write_yaml(chart / "templates" / "evil\x01.yaml", _configmap("evil"))
    result = run_cli("module-resources", "--chart", chart, "--out", tmp_path / "mr", cwd=tmp_path)
    assert result.returncode == ExitCode.CHART, result.stderr
    assert result.stderr.startswith("error: template 'sap-btp-operator/templates/evil\\x01.yaml' holds")
    assert not (tmp_path / "mr").exists()


# --- reads -------------------------------------------------------------------------------------

Setup = Callable[[Path, Path], list[str | Path]]  # (source dir, outside dir) -> the render's SOURCE args


def _btp_source(source: Path, **chart: Any) -> None:
    shutil.copytree(EXAMPLES / "btp-operator", source)
    config_path = source / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["spec"]["chart"] = chart
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def _btp(**chart: Any) -> Setup:
    def setup(source: Path, outside: Path) -> list[str | Path]:
        _btp_source(source, **_absolute(chart, outside))
        return [source]

    return setup


def _btp_link(link: str, target: str, **chart: Any) -> Setup:
    def setup(source: Path, outside: Path) -> list[str | Path]:
        _btp_source(source, **chart)
        (source / link).symlink_to(outside / target)
        return [source]

    return setup


def _btp_chart_with_link(source: Path, outside: Path) -> list[str | Path]:
    _btp_source(source, path=".chart")
    shutil.copytree(CHART, source / ".chart")
    (source / ".chart" / "templates" / "zz-canary.yaml").symlink_to(outside / "canary.yaml")
    return [source]


def _btp_chart_with_linked_dir(source: Path, outside: Path) -> list[str | Path]:
    """A link inside the roots, to a directory that holds a link out of them: Helm follows both."""
    _btp_source(source, path=".chart")
    shutil.copytree(CHART, source / ".chart")
    (source / ".inner").mkdir()
    (source / ".inner" / "zz-canary.yaml").symlink_to(outside / "canary.yaml")
    (source / ".chart" / "templates" / "inner").symlink_to(source / ".inner")
    return [source]


def _kyma(content: dict[str, Any], link: tuple[str, str] | None = None) -> Setup:
    def setup(source: Path, outside: Path) -> list[str | Path]:
        _kyma_source(source)
        documents = list(yaml.safe_load_all((source / "kyma.yaml").read_text()))
        spec = documents[1]["spec"]
        del spec["rawManifest"]
        spec.update({key: _absolute(value, outside) for key, value in content.items()})
        _write_yaml(source / "kyma.yaml", *documents)
        if link:
            (source / link[0]).symlink_to(outside / link[1])
        return [source]

    return setup


def _kyma_chart_inside(chart: dict[str, Any]) -> Setup:
    """A Kyma module whose chart is a copy inside the source (`.kchart`)."""

    def setup(source: Path, outside: Path) -> list[str | Path]:
        args = _kyma({"chart": chart})(source, outside)
        shutil.copytree(outside / "kchart", source / ".kchart")
        return args

    return setup


def _absolute(value: Any, outside: Path) -> Any:
    """`{outside}` in a path field stands for the outside directory's absolute path."""
    if isinstance(value, str):
        return value.replace("{outside}", str(outside))
    if isinstance(value, dict):
        return {k: _absolute(v, outside) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v, outside) for v in value]
    return value


def _source_link(name: str, target: str) -> Setup:
    def setup(source: Path, outside: Path) -> list[str | Path]:
        shutil.copytree(EXAMPLES / "btp-operator", source)
        (source / name).symlink_to(outside / target)
        return [source]

    return setup


def _btp_chart_loop(source: Path, _: Path) -> list[str | Path]:
    _btp_source(source, path=".chart")
    (source / ".chart").symlink_to(".chart")
    return [source]


def _source_link_loop(source: Path, _: Path) -> list[str | Path]:
    shutil.copytree(EXAMPLES / "btp-operator", source)
    (source / "loop.yaml").symlink_to("loop.yaml")
    return [source]


def _catalog_link(source: Path, outside: Path) -> list[str | Path]:
    _kyma_source(source)
    catalog = source.parent / "catalog"
    catalog.mkdir()
    (catalog / "evil.yaml").symlink_to(outside / "canary.yaml")
    return [source, "--catalog", catalog]


# (setup, what stderr names, renders with --allow-path outside)
READS: dict[str, tuple[Setup, str, bool]] = {
    "chart-dot-dot": (_btp(path="../outside/chart"), "spec.chart.path: outside/chart: outside", True),
    "chart-absolute": (_btp(path="{outside}/chart"), "spec.chart.path: outside/chart: outside", True),
    "chart-link-to-dir": (
        _btp_link(".chart", "chart", path=".chart"),
        "spec.chart.path: src/.chart: leads to outside/chart, outside",
        True,
    ),
    "chart-holding-a-link": (
        _btp_chart_with_link,
        "src/.chart/templates/zz-canary.yaml: a symbolic link",
        False,
    ),
    "chart-holding-a-linked-dir": (
        _btp_chart_with_linked_dir,
        "src/.chart/templates/inner/zz-canary.yaml: a symbolic link",
        False,
    ),
    "values-dot-dot": (
        _btp(valuesFiles=["../outside/btp-values.yaml"]),
        "spec.chart.valuesFiles[0]: outside/btp-values.yaml: outside",
        True,
    ),
    "values-link-to-file": (
        _btp_link(".values.yaml", "btp-values.yaml", valuesFiles=[".values.yaml"]),
        "spec.chart.valuesFiles[0]: src/.values.yaml: leads to outside/btp-values.yaml, outside",
        True,
    ),
    "raw-dot-dot-dir": (
        _kyma({"rawManifest": {"path": "../outside/manifests"}}),
        "spec.rawManifest.path)\n  outside/manifests: outside",
        True,
    ),
    "raw-absolute-file": (
        _kyma({"rawManifest": {"path": "{outside}/canary.yaml"}}),
        "spec.rawManifest.path)\n  outside/canary.yaml: outside",
        True,
    ),
    "raw-link-to-dir": (
        _kyma({"rawManifest": {"path": ".raw"}}, (".raw", "manifests")),
        "spec.rawManifest.path)\n  src/.raw: leads to outside/manifests, outside",
        True,
    ),
    "raw-dir-holding-a-link": (
        _kyma({"rawManifest": {"path": ".content"}}, (".content/zz.yaml", "canary.yaml")),
        "src/.content/zz.yaml: a symbolic link",
        True,
    ),
    "kyma-chart-dot-dot": (
        _kyma({"chart": {"path": "../outside/kchart"}}),
        "(ModuleTemplate kyma-system/demo-1.0.0): spec.chart.path: outside/kchart: outside",
        True,
    ),
    "kyma-values-absolute": (
        _kyma_chart_inside({"path": ".kchart", "valuesFiles": ["{outside}/values.yaml"]}),
        "spec.chart.valuesFiles[0]: outside/values.yaml: outside",
        True,
    ),
    "source-link-to-file": (
        _source_link("evil.yaml", "canary.yaml"),
        "src/evil.yaml: a symbolic link",
        False,
    ),
    "source-link-to-dir": (_source_link("evil", "manifests"), "src/evil: a symbolic link", False),
    "catalog-link-to-file": (_catalog_link, "catalog/evil.yaml: a symbolic link", False),
    "source-link-loop": (
        _source_link_loop,
        "src/loop.yaml: a symbolic link to loop.yaml (a loop of links)",
        False,
    ),
    "chart-link-loop": (
        _btp_chart_loop,
        "spec.chart.path: src/.chart: a loop of symbolic links, outside",
        False,
    ),
}


@pytest.mark.parametrize("case", READS.keys())
def test_sources_read_only_inside_their_roots(
    tmp_path: Path, run_cli: RunCli, outside: Path, case: str
) -> None:
    setup, where, allowed = READS[case]
    source = tmp_path / "src"
    args = setup(source, outside)
    out = tmp_path / "out"
    for command in (["render", *args, "--out", out], ["render", *args, "--stdout"]):
        result = run_cli(*command, cwd=tmp_path)
        assert result.returncode == ExitCode.INPUT, result.stderr
        assert where in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        _assert_no_canary(result, out)
    assert not out.exists()
    if allowed:
        result = run_cli("render", *args, "--out", out, "--allow-path", outside, cwd=tmp_path)
        assert result.returncode == 0, result.stderr


def test_diff_reads_only_inside_its_roots(tmp_path: Path, run_cli: RunCli, outside: Path) -> None:
    source = tmp_path / "src"
    _kyma({"rawManifest": {"path": "../outside/manifests"}})(source, outside)
    (tmp_path / "repo").mkdir()
    result = run_cli("diff", source, "--against", tmp_path / "repo", "--new-cluster", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "outside/manifests: outside the source roots (see --allow-path)" in result.stderr
    _assert_no_canary(result)
    allowed = run_cli(
        "diff", source, "--against", tmp_path / "repo", "--new-cluster", "--allow-path", outside, cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stderr
    assert CANARY in allowed.stdout  # what --allow-path is for: now the outside file is read


def test_validate_refuses_links_leaving_its_paths(tmp_path: Path, run_cli: RunCli, outside: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "evil.yaml").symlink_to(outside / "canary.yaml")
    result = run_cli("validate", tree, cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "tree/evil.yaml: a symbolic link to " in result.stderr
    _assert_no_canary(result)


def test_links_inside_the_roots_are_read(tmp_path: Path, run_cli: RunCli) -> None:
    source = tmp_path / "src"
    _btp_source(source, valuesFiles=[".values.yaml"])
    (source / "values").mkdir()
    (source / "values" / "v.yml.txt").write_text("manager: {}\n")
    (source / ".values.yaml").symlink_to(source / "values" / "v.yml.txt")
    result = run_cli("render", source, "--stdout", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_a_file_source_is_a_root_by_itself(tmp_path: Path, run_cli: RunCli) -> None:
    """Given as a file, a source may not name the files beside it; given as its directory, it may."""
    source = tmp_path / "src"
    _btp_source(source, valuesFiles=["values.yml.txt"])
    (source / "values.yml.txt").write_text("{}\n")
    as_files = run_cli(
        "render", source / "btpoperator.yaml", source / "btpoperatorconfig.yaml", "--stdout", cwd=tmp_path
    )
    assert as_files.returncode == ExitCode.INPUT, as_files.stderr
    assert "spec.chart.valuesFiles[0]: src/values.yml.txt: outside the source roots" in as_files.stderr
    as_directory = run_cli("render", source, "--stdout", cwd=tmp_path)
    assert as_directory.returncode == 0, as_directory.stderr


def test_allow_path_must_exist(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("render", EXAMPLES / "btp-operator", "--stdout", "--allow-path", tmp_path / "nowhere")
    assert result.returncode == ExitCode.USAGE
    assert result.stderr == f"error: --allow-path {tmp_path / 'nowhere'}: no such file or directory\n"
