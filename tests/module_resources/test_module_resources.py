"""`btp-gitops module-resources`: the BTP Manager CI artifact, from a real chart.

Covers the layout (apply/ per template, named as the template is, in install order with `# Source:`
lines and blanked images; delete/to-delete.yml; excluded/to-exclude.yml; the release record), the
committed module-resources/ staying in sync with charts/sap-btp-operator, and the to-delete rule
over a sequence of chart releases. The embedded Helm engine renders the real chart; nothing is
faked.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.charts.deterministic import render_chart_deterministically
from btp_gitops.generator.charts.renderer import ChartRequest, manifests_of
from btp_gitops.generator.io.helm import EmbeddedHelm
from tests.conftest import CHART, ROOT, RunCli, read_tree, tree_as_yaml


def _generate(run_cli: RunCli, chart: Path, out: Path, *options: str) -> None:
    result = run_cli("module-resources", "--chart", chart, "--out", out, *options)
    assert result.returncode == 0, result.stderr


def _release(chart: Path, version: str) -> None:
    """Bump the chart's version, as a new upstream release of the chart does."""
    chart_yaml = chart / "Chart.yaml"
    meta = yaml.safe_load(chart_yaml.read_text())
    meta["version"] = version
    chart_yaml.write_text(yaml.safe_dump(meta))


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _identities(text: str) -> list[tuple[str, str, str]]:
    return [(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in _documents(text)]


def test_module_resources_snapshot(tmp_path: Path, run_cli: RunCli, yaml_snapshot: object) -> None:
    _generate(run_cli, CHART, tmp_path / "module-resources")
    tree = read_tree(tmp_path / "module-resources")
    assert sorted(tree) == [
        ".release.yml",
        "apply/configmap.yaml",
        "apply/crd.yaml",
        "apply/deployment.yaml",
        "apply/rbac.yaml",
        "apply/secret.yaml",
        "apply/service.yaml",
        "apply/service_account.yaml",
        "apply/webhook.yaml",
        "delete/to-delete.yml",
        "excluded/to-exclude.yml",
    ]
    assert tree_as_yaml(tree) == yaml_snapshot


def test_layout_rules(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "module-resources"
    _generate(run_cli, CHART, out)
    for path in sorted((out / "apply").iterdir()):
        text = path.read_text()
        chunks = text.split("---\n")[1:]
        assert chunks and all(
            c.startswith(f"# Source: sap-btp-operator/templates/{path.name}\n") for c in chunks
        )
    rbac_kinds = [kind for kind, _, _ in _identities((out / "apply/rbac.yaml").read_text())]
    assert rbac_kinds == sorted(
        rbac_kinds, key=["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].index
    )
    deployment = _documents((out / "apply/deployment.yaml").read_text())[0]
    assert [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]] == [""]
    excluded = _documents((out / "excluded/to-exclude.yml").read_text())
    assert [(d["kind"], d["metadata"]["name"]) for d in excluded] == [
        ("Job", "sap-btp-operator-pre-delete-cleanup")
    ]
    assert "pre-delete" in excluded[0]["metadata"]["annotations"]["helm.sh/hook"]
    assert (out / "delete/to-delete.yml").read_text() == ""


def test_committed_module_resources_match_the_chart(tmp_path: Path, run_cli: RunCli) -> None:
    """Regenerating the project's module-resources/ from its chart must change nothing."""
    out = tmp_path / "module-resources"
    shutil.copytree(ROOT / "module-resources", out)
    _generate(run_cli, CHART, out)
    assert read_tree(out) == read_tree(ROOT / "module-resources"), (
        "module-resources/ is stale: run `btp-gitops module-resources --chart charts/sap-btp-operator`"
    )


EXTRA = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {{{{ .Release.Namespace }}}}\n"
)


def _apply_files(out: Path) -> list[str]:
    return sorted(path.name for path in (out / "apply").iterdir())


def _apply_identities(tree: dict[str, bytes]) -> dict[str, list[tuple[str, str, str]]]:
    return {k: _identities(v.decode()) for k, v in tree.items() if k.startswith("apply/")}


def _to_delete(out: Path) -> list[tuple[str, str, str]]:
    return sorted(_identities((out / "delete/to-delete.yml").read_text()))


def test_a_sequence_of_chart_releases(tmp_path: Path, run_cli: RunCli) -> None:
    """Each release's apply/ file names are the templates' own, and to-delete.yml is the previous
    release's apply/ minus this one's: objects added, removed, renamed, moved between template
    files, templates named `.yaml` and `.yml`."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    templates = chart / "templates"
    out = tmp_path / "module-resources"
    base_files = [
        "configmap.yaml",
        "crd.yaml",
        "deployment.yaml",
        "rbac.yaml",
        "secret.yaml",
        "service.yaml",
        "service_account.yaml",
        "webhook.yaml",
    ]

    # 1.0.0: one more template, named .yml, holding two ConfigMaps.
    _release(chart, "1.0.0")
    (templates / "extra.yml").write_text(EXTRA.format(name="extra") + "---\n" + EXTRA.format(name="mover"))
    _generate(run_cli, chart, out)
    assert _apply_files(out) == sorted([*base_files, "extra.yml"])
    assert _to_delete(out) == []
    assert yaml.safe_load((out / ".release.yml").read_text()) == {
        "chart": "sap-btp-operator",
        "release": "sap-btp-operator",
        "version": "1.0.0",
    }

    # 1.1.0: the metrics Service goes (metrics off), the leader-election Role is renamed (and its
    # RoleBinding, whose name it prefixes), ConfigMap `mover` moves to a new template moved.yaml.
    _release(chart, "1.1.0")
    values = chart / "values.yaml"
    values.write_text(
        values.read_text().replace(
            "  # When false, metrics are disabled (`--metrics-bind-address=0`).\n  enabled: true",
            "  enabled: false",
        )
    )
    rbac = templates / "rbac.yaml"
    rbac.write_text(
        rbac.read_text().replace("sap-btp-operator-leader-election-role", "sap-btp-operator-election-role")
    )
    (templates / "extra.yml").write_text(EXTRA.format(name="extra"))
    (templates / "moved.yaml").write_text(EXTRA.format(name="mover"))
    _generate(run_cli, chart, out)
    assert "--metrics-bind-address=0" in (out / "apply/deployment.yaml").read_text()
    assert _apply_files(out) == sorted([*base_files, "extra.yml", "moved.yaml"])
    assert _identities((out / "apply/moved.yaml").read_text()) == [("ConfigMap", "kyma-system", "mover")]
    assert _to_delete(out) == [
        ("Role", "kyma-system", "sap-btp-operator-leader-election-role"),
        ("RoleBinding", "kyma-system", "sap-btp-operator-leader-election-rolebinding"),
        ("Service", "kyma-system", "sap-btp-operator-controller-manager-metrics-service"),
    ]

    # Regenerating the same release changes nothing: the list is kept, not emptied.
    before = read_tree(out)
    _generate(run_cli, chart, out)
    assert read_tree(out) == before

    # 1.2.0 produces the same objects: its to-delete is empty.
    _release(chart, "1.2.0")
    _generate(run_cli, chart, out)
    assert _to_delete(out) == []
    assert _apply_identities(read_tree(out)) == _apply_identities(before)

    # 1.3.0 drops the .yml template: its file goes, its object is listed, nothing cumulative.
    _release(chart, "1.3.0")
    (templates / "extra.yml").unlink()
    _generate(run_cli, chart, out)
    assert "extra.yml" not in _apply_files(out)
    assert _to_delete(out) == [("ConfigMap", "kyma-system", "extra")]

    # 1.3.0 regenerated after one more change to the same release: the list keeps `extra` and
    # gains what the regeneration stopped producing.
    (templates / "moved.yaml").unlink()
    _generate(run_cli, chart, out)
    assert _to_delete(out) == [("ConfigMap", "kyma-system", "extra"), ("ConfigMap", "kyma-system", "mover")]

    # Another release tag for the same chart version is a new release: nothing changed, nothing to delete.
    _generate(run_cli, chart, out, "--release", "sap-btp-operator-next")
    assert _to_delete(out) == []
    assert yaml.safe_load((out / ".release.yml").read_text())["release"] == "sap-btp-operator-next"


def test_an_artifact_without_the_release_record_is_migrated(tmp_path: Path, run_cli: RunCli) -> None:
    """An artifact without .release.yml (BTP Manager's own, or one an earlier btp-gitops wrote with
    apply/*.yml names) and a last step's to-delete: its files take the templates' names, and the
    list is computed afresh from its apply/, as BTP Manager's script does: the old entries go."""
    out = tmp_path / "module-resources"
    _generate(run_cli, CHART, out)
    legacy_delete = (
        "---\n# Source: sap-btp-operator/templates/gone.yaml\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone\n  namespace: kyma-system\n"
    )
    for path in sorted((out / "apply").iterdir()):
        path.rename(path.with_suffix(".yml"))
    (out / ".release.yml").unlink()
    (out / "delete/to-delete.yml").write_text(legacy_delete)

    _generate(run_cli, CHART, out)
    assert all(name.endswith(".yaml") for name in _apply_files(out))
    assert read_tree(out) == read_tree(ROOT / "module-resources")


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("release: [unclosed\n", "not valid YAML"),
        ("release: r\nchart: c\n", "release, chart and version"),
        ("- a list\n", "release, chart and version"),
    ],
)
def test_an_unreadable_release_record_is_an_input_error(
    tmp_path: Path, run_cli: RunCli, record: str, message: str
) -> None:
    out = tmp_path / "module-resources"
    _generate(run_cli, CHART, out)
    before = read_tree(out)
    (out / ".release.yml").write_text(record)
    result = run_cli("module-resources", "--chart", CHART, "--out", out)
    assert result.returncode == 3, result.stderr
    assert ".release.yml" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr
    assert read_tree(out) == {**before, ".release.yml": record.encode()}


def test_same_name_in_another_namespace_or_group_is_not_a_match(tmp_path: Path, run_cli: RunCli) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: {{ .Release.Namespace }}\n"
    )
    out = tmp_path / "module-resources"
    _generate(run_cli, chart, out)
    (chart / "templates" / "extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: elsewhere\n"
    )
    _generate(run_cli, chart, out)
    assert _identities((out / "delete/to-delete.yml").read_text()) == [("ConfigMap", "kyma-system", "extra")]


def test_a_chart_rendering_the_same_text_twice_gives_that_render_and_pins_nothing() -> None:
    """charts.deterministic: with every random input pinned by values (the cluster id), the two
    renders are the same text, which is parsed once (the shortcut module-resources takes with
    BTP Manager's overrides): the objects are those of one render and nothing is pinned; with the
    id left to `uuidv4`, the id and the checksum over it still are."""
    engine = EmbeddedHelm()
    pinned_id = ChartRequest(
        chart=CHART, release="sap-btp-operator", namespace="kyma-system", values={"cluster": {"id": "c-1"}}
    )
    _, manifests, pinned = render_chart_deterministically(engine, pinned_id)
    assert pinned == []
    assert [m.body for m in manifests] == [m.body for m in manifests_of(engine.render_chart(pinned_id))]
    config = next(m.body for m in manifests if m.body["kind"] == "ConfigMap")
    assert config["data"]["CLUSTER_ID"] == "c-1"
    random_id = ChartRequest(chart=CHART, release="sap-btp-operator", namespace="kyma-system")
    _, _, pinned = render_chart_deterministically(engine, random_id)
    assert sorted(p.field_path for p in pinned) == [
        "data.CLUSTER_ID",
        "spec.template.metadata.annotations.checksum/config",
    ]


def test_a_chart_object_kubernetes_would_refuse_is_a_chart_error(tmp_path: Path, run_cli: RunCli) -> None:
    """Labels and data keys of the chart's output are checked as the API server checks them: every
    problem at once, naming the template, the object and the field; nothing written."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "odd.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: odd\n  namespace: {{ .Release.Namespace }}\n"
        "  labels:\n    team/owner/extra: a\n    tier: two words\ndata:\n  a b: one\n"
    )
    out = tmp_path / "module-resources"
    result = run_cli("module-resources", "--chart", chart, "--out", out)
    assert result.returncode == 4, result.stderr
    where = "sap-btp-operator/templates/odd.yaml: document 1 (ConfigMap kyma-system/odd): "
    assert [line.strip() for line in result.stderr.splitlines()[1:]] == [
        f"{where}metadata.labels: label key 'team/owner/extra' is not a qualified name: an optional "
        "DNS-1123 subdomain and '/', then at most 63 of A-Z, a-z, 0-9, '-', '_' and '.', starting "
        "and ending with a letter or digit",
        f"{where}metadata.labels.tier: label value 'two words' must be empty or at most 63 of A-Z, "
        "a-z, 0-9, '-', '_' and '.', starting and ending with a letter or digit",
        f"{where}data: key 'a b' must be at most 253 of A-Z, a-z, 0-9, '-', '_' and '.', and not '.' or '..'",
    ]
    assert not out.exists()
