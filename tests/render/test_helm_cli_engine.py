"""The `helm` CLI engine (`--helm-binary`) gives the same repo as the embedded Helm engine.

Real components: helm v3 and v4 built from their Go modules by scripts/build-tools.sh, and the
embedded engine; both render charts/sap-btp-operator. Nothing is faked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree
from tests.support.tools import tool_path

pytestmark = pytest.mark.tools


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_cli_engine_renders_the_same_repo(tmp_path: Path, run_cli: RunCli, helm: str) -> None:
    embedded = run_cli("render", EXAMPLES / "btp-operator", "--out", tmp_path / "embedded", cwd=ROOT)
    assert embedded.returncode == 0, embedded.stderr
    cli = run_cli(
        "render",
        EXAMPLES / "btp-operator",
        "--out",
        tmp_path / "cli",
        "--helm-binary",
        tool_path(helm),
        cwd=ROOT,
    )
    assert cli.returncode == 0, cli.stderr
    assert read_tree(tmp_path / "cli") == read_tree(tmp_path / "embedded")


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_cli_engine_module_resources_match(tmp_path: Path, run_cli: RunCli, helm: str) -> None:
    chart = ROOT / "charts" / "sap-btp-operator"
    result = run_cli(
        "module-resources", "--chart", chart, "--out", tmp_path / "mr", "--helm-binary", tool_path(helm)
    )
    assert result.returncode == 0, result.stderr
    assert read_tree(tmp_path / "mr") == read_tree(ROOT / "module-resources")


def test_cli_engine_reports_template_failures(tmp_path: Path, run_cli: RunCli) -> None:
    chart = tmp_path / "chart"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: broken\nversion: 0.1.0\n")
    (chart / "templates").mkdir()
    (chart / "templates" / "x.yaml").write_text('{{ fail "no way" }}\n')
    result = run_cli(
        "module-resources", "--chart", chart, "--out", tmp_path / "mr", "--helm-binary", tool_path("helm3")
    )
    assert result.returncode == 4
    assert "failed to render with" in result.stderr
    assert "no way" in result.stderr
    assert not (tmp_path / "mr").exists()
