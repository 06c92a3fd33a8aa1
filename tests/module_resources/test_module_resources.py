"""`btp-gitops module-resources`: the BTP Manager CI artifact, from a real chart.

Covers the layout (apply/ per template in install order with `# Source:` lines and blanked images,
delete/to-delete.yml, excluded/to-exclude.yml), the committed module-resources/ staying in sync
with charts/sap-btp-operator, and the to-delete rule across chart changes. The embedded Helm
engine renders the real chart; nothing is faked.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import CHART, ROOT, RunCli, read_tree, tree_as_yaml


def _generate(run_cli: RunCli, chart: Path, out: Path) -> None:
    result = run_cli("module-resources", "--chart", chart, "--out", out)
    assert result.returncode == 0, result.stderr


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _identities(text: str) -> list[tuple[str, str, str]]:
    return [(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in _documents(text)]


def test_module_resources_snapshot(tmp_path: Path, run_cli: RunCli, yaml_snapshot: object) -> None:
    _generate(run_cli, CHART, tmp_path / "module-resources")
    tree = read_tree(tmp_path / "module-resources")
    assert sorted(tree) == [
        "apply/configmap.yml",
        "apply/crd.yml",
        "apply/deployment.yml",
        "apply/rbac.yml",
        "apply/secret.yml",
        "apply/service.yml",
        "apply/service_account.yml",
        "apply/webhook.yml",
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
            c.startswith(f"# Source: sap-btp-operator/templates/{path.stem}.yaml\n") for c in chunks
        )
    rbac_kinds = [kind for kind, _, _ in _identities((out / "apply/rbac.yml").read_text())]
    assert rbac_kinds == sorted(
        rbac_kinds, key=["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].index
    )
    deployment = _documents((out / "apply/deployment.yml").read_text())[0]
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


def test_to_delete_lists_exactly_what_the_chart_stopped_producing(tmp_path: Path, run_cli: RunCli) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    out = tmp_path / "module-resources"
    _generate(run_cli, chart, out)

    # Remove the metrics Service (metrics disabled), rename the leader-election
    # Role and its RoleBinding (the name is a prefix of the binding's), add a new ConfigMap.
    values = chart / "values.yaml"
    values.write_text(
        values.read_text().replace(
            "  # When false, metrics are disabled (`--metrics-bind-address=0`).\n  enabled: true",
            "  enabled: false",
        )
    )
    rbac = chart / "templates" / "rbac.yaml"
    rbac.write_text(
        rbac.read_text().replace("sap-btp-operator-leader-election-role", "sap-btp-operator-election-role")
    )
    (chart / "templates" / "extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: {{ .Release.Namespace }}\n"
    )
    _generate(run_cli, chart, out)
    removed = sorted(_identities((out / "delete/to-delete.yml").read_text()))
    metrics_removed = "--metrics-bind-address=0" in (out / "apply/deployment.yml").read_text()
    assert metrics_removed
    assert removed == [
        ("Role", "kyma-system", "sap-btp-operator-leader-election-role"),
        ("RoleBinding", "kyma-system", "sap-btp-operator-leader-election-rolebinding"),
        ("Service", "kyma-system", "sap-btp-operator-controller-manager-metrics-service"),
    ]
    assert (out / "apply/extra.yml").exists()

    # Regenerating the same chart keeps the list (idempotent), it does not empty it.
    before = read_tree(out)
    _generate(run_cli, chart, out)
    assert read_tree(out) == before

    # The next change is computed against the previous apply/ only (not cumulative).
    (chart / "templates" / "extra.yaml").unlink()
    _generate(run_cli, chart, out)
    assert _identities((out / "delete/to-delete.yml").read_text()) == [("ConfigMap", "kyma-system", "extra")]


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
