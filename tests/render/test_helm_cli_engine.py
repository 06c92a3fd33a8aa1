"""The `helm` CLI engine (`--helm-binary`) gives the same repo as the embedded Helm engine, and is
held to the same guard: schema references checked, rendering under the chart limits.

Real components: helm v3 and v4 built from their Go modules by scripts/build-tools.sh, and the
embedded engine; both render charts/sap-btp-operator. Nothing is faked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import CHART, EXAMPLES, ROOT, RunCli, read_tree
from tests.render.test_chart_guard import BOMB, NESTED_RANGE, REPEAT, run_measured
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


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_cli_engine_refuses_a_schema_reference_to_a_server(tmp_path: Path, helm: str) -> None:
    """The schemas are checked before `helm template` runs: helm's own loader would fetch it."""
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    schema = json.loads((chart / "values.schema.json").read_text())
    schema["properties"]["probe"] = {"$ref": "http://127.0.0.1:9/x.json"}
    (chart / "values.schema.json").write_text(json.dumps(schema))
    result = run_measured(
        "module-resources", "--chart", "chart", "--out", "mr", "--helm-binary", tool_path(helm), cwd=tmp_path
    )
    assert result.returncode == 4, result.stderr
    assert 'chart/values.schema.json refers to "http://127.0.0.1:9/x.json"' in result.stderr
    assert not (tmp_path / "mr").exists()


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
@pytest.mark.parametrize(
    ("env", "template", "limit"),
    [
        ({"BTP_GITOPS_CHART_MEMORY_MIB": "256"}, REPEAT, "used more than 256 MiB of memory"),
        ({"BTP_GITOPS_CHART_CPU_SECONDS": "2"}, NESTED_RANGE, "used more than 2 s of CPU"),
        (
            {"BTP_GITOPS_CHART_OUTPUT_MIB": "1"},
            REPEAT.replace("(int .Values.size)", "262144"),
            "produced more than 1 MiB",
        ),
    ],
)
def test_cli_engine_renders_under_the_limits(
    tmp_path: Path, helm: str, env: dict[str, str], template: str, limit: str
) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "values.schema.json").unlink()
    (chart / "values.yaml").write_text((chart / "values.yaml").read_text() + "\nsize: 67108864\n")
    if template == NESTED_RANGE:
        (chart / "values.yaml").write_text(
            (chart / "values.yaml").read_text().replace("size: 67108864", "size: 20000")
        )
    (chart / "templates" / "bomb.yaml").write_text(BOMB % template)
    result = run_measured(
        "module-resources",
        "--chart",
        "chart",
        "--out",
        "mr",
        "--helm-binary",
        tool_path(helm),
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 4, result.stderr
    assert result.stderr.startswith("error: chart chart: rendering "), result.stderr
    assert limit in result.stderr
    assert result.peak_rss_mib < 1024 + 200
    assert not (tmp_path / "mr").exists()
    print(f"{helm} {limit}: {result.seconds:.1f} s, peak RSS {result.peak_rss_mib:.0f} MiB")  # the figures
