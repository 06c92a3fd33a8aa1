"""What a render says about the chart it rendered must be true of the render.

A render keeps no `excluded/to-exclude.yml` (that file belongs to `module-resources`), so its note
about a left-out hook does not point there; and a value the BtpOperatorConfig pins (`clusterId`)
is not reported as one that "changes on every render", whether the chart takes it as a value or a
later step overwrites what the chart generated.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import CHART, EXAMPLES, RunCli

CLUSTER_ID = "3f9d2c1e-7a4b-4e2f-9c8d-1b2a3c4d5e6f"  # examples/btp-operator's clusterId


def _render(run_cli: RunCli, source: Path, out: Path, *options: str | Path) -> tuple[str, Path]:
    result = run_cli("render", source, "--out", out, "--cluster", "dev", *options)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr, out / "clusters" / "dev" / "btp-operator"


def _cluster_id(app: Path) -> str:
    configmap = yaml.safe_load((app / "configmap-sap-btp-operator-config.yaml").read_text())
    return str(configmap["data"]["CLUSTER_ID"])


def test_the_bundled_chart_gets_the_configs_cluster_id_and_nothing_is_pinned(
    tmp_path: Path, run_cli: RunCli
) -> None:
    notes, app = _render(run_cli, EXAMPLES / "btp-operator", tmp_path / "out")
    assert _cluster_id(app) == CLUSTER_ID
    assert "PinnedValue" not in notes
    hook_notes = [line for line in notes.splitlines() if "ExcludedHook" in line]
    assert hook_notes and all("pre_delete_job.yaml" in line for line in hook_notes)
    assert "to-exclude.yml" not in notes


def test_a_chart_that_ignores_the_cluster_id_value_has_only_its_own_volatile_output_reported(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """A chart generating CLUSTER_ID itself: the config overwrites it, so it is not reported; the
    chart's checksum over its own random ConfigMap does reach the output and is reported."""
    source = tmp_path / "source"
    shutil.copytree(EXAMPLES / "btp-operator", source)
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    configmap = chart / "templates" / "configmap.yaml"
    text = configmap.read_text()
    assert ".Values.cluster.id | default (uuidv4)" in text
    configmap.write_text(text.replace(".Values.cluster.id | default (uuidv4)", "uuidv4"))
    config_file = source / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_file.read_text())
    config["spec"]["chart"] = {"path": "../chart"}
    config_file.write_text(yaml.safe_dump(config))

    notes, app = _render(run_cli, source, tmp_path / "out", "--allow-path", chart)
    assert _cluster_id(app) == CLUSTER_ID
    pinned = [line for line in notes.splitlines() if "PinnedValue" in line]
    assert len(pinned) == 1, notes
    assert "Deployment kyma-system/sap-btp-operator-controller-manager" in pinned[0]
    assert "checksum/config" in pinned[0]
