"""post-render never hands Helm "nothing" by accident: a stream without objects (the chart rendered
none) is refused unless `--allow-empty` says it is meant (Helm 4 refuses an empty result itself), and a Kyma module chart rendered by a
`--helm-binary` that prints nothing is refused as `render` refuses it.

Through the installed CLI with the stream on stdin, and through real Helm 3 (`--post-renderer`)
and Helm 4 (the postrenderer/v1 plugin of helm-plugin/) on a chart whose only template its
values turn off.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import CLI, EXAMPLES
from tests.post_render.conftest import HelmHome, PostRender, run_helm
from tests.post_render.test_source_domains import KYMA_HEAD, helm3_stream

KYMA = EXAMPLES / "kyma-modules"
REFUSAL = (
    "error: <stdin>: the manifest stream holds no objects, so the chart rendered none (values that turn "
    "every template off?); passing nothing on would make `helm upgrade` delete every object of the "
    "release. If that is meant, pass --allow-empty (Helm 3: --post-renderer-args=--allow-empty; Helm 4 "
    "refuses an empty result in any case)\n"
)
COMMENT_ONLY = "---\n# Source: switch/templates/configmap.yaml\n"


@pytest.mark.parametrize("stream", ["", COMMENT_ONLY], ids=["empty", "comment-only"])
@pytest.mark.parametrize("domain", ["btp-operator", "cap"])
def test_a_stream_without_objects_is_refused_unless_allowed(
    post_render_cli: PostRender, stream: str, domain: str
) -> None:
    refused = post_render_cli(stream, "--domain", domain)
    assert (refused.returncode, refused.stdout, refused.stderr) == (ExitCode.CHART, "", REFUSAL)
    allowed = post_render_cli(stream, "--domain", domain, "--allow-empty")
    assert (allowed.returncode, allowed.stdout) == (ExitCode.OK, stream), allowed.stderr


def switch_chart(directory: Path) -> Path:
    """A chart whose one template renders only when `enabled` is set, as charts switch parts off."""
    chart = directory / "switch"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: switch\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("enabled: false\n")
    (chart / "templates" / "configmap.yaml").write_text(
        "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: switch\n{{- end }}\n"
    )
    return chart


@pytest.mark.tools
def test_helm3_with_a_chart_rendering_nothing_fails_naming_the_reason(
    helm_home: HelmHome, tmp_path: Path
) -> None:
    chart = switch_chart(tmp_path)
    post_renderer = ("--post-renderer", str(CLI), "--post-renderer-args", "post-render")
    refused = run_helm("helm3", helm_home, "template", "switch", chart, *post_renderer)
    assert refused.returncode != 0
    assert "the manifest stream holds no objects" in refused.stderr
    assert "exit status 4" in refused.stderr
    allowed = run_helm(
        "helm3", helm_home, "template", "switch", chart, *post_renderer, "--post-renderer-args=--allow-empty"
    )
    assert allowed.returncode == 0, allowed.stderr


@pytest.mark.tools
def test_helm4_plugin_with_a_chart_rendering_nothing_fails_with_our_reason(
    helm_home: HelmHome, tmp_path: Path
) -> None:
    chart = switch_chart(tmp_path)
    log = tmp_path / "post-render.log"
    refused = run_helm(
        "helm4", helm_home, "template", "switch", chart, "--post-renderer", "btp-gitops",
        BTP_GITOPS_PLUGIN_LOG=str(log),
    )  # fmt: skip
    assert refused.returncode != 0
    assert "the manifest stream holds no objects" in log.read_text()
    # Helm 4 refuses a post-renderer's empty output by itself: --allow-empty cannot make it pass.
    allowed = run_helm(
        "helm4", helm_home, "template", "switch", chart, "--post-renderer", "btp-gitops",
        "--post-renderer-args=--allow-empty", BTP_GITOPS_PLUGIN_LOG=str(log),
    )  # fmt: skip
    assert allowed.returncode != 0
    assert 'post-renderer "btp-gitops" produced empty output' in allowed.stderr


def test_kyma_module_chart_from_a_silent_helm_binary_is_refused(
    post_render_cli: PostRender, tmp_path: Path
) -> None:
    kyma = yaml.safe_load((KYMA / "kyma.yaml").read_text())
    kyma["metadata"]["labels"]["operator.kyma-project.io/beta"] = "true"
    kyma["spec"]["modules"] = [{"name": "relay"}]  # relay is rendered from a chart
    kyma_file = tmp_path / "kyma.yaml"
    kyma_file.write_text(yaml.safe_dump(kyma))
    stream = helm3_stream([kyma_file], chart="platform", head=KYMA_HEAD)
    shim = tmp_path / "helm"
    shim.write_text("#!/bin/sh\nexit 0\n")
    shim.chmod(0o755)
    args = ("--domain", "kyma", "--catalog", KYMA / "catalog", "--allow-path", KYMA)
    assert post_render_cli(stream, *args).returncode == ExitCode.OK
    refused = post_render_cli(stream, *args, "--helm-binary", shim)
    assert (refused.returncode, refused.stdout) == (ExitCode.CHART, ""), refused.stderr
    message, problem = refused.stderr.splitlines()
    assert message == (
        "error: chart relay 0.3.0 rendered no objects: a Helm binary that prints nothing (check "
        "--helm-binary) or values that turn every template off"
    )
    assert problem.endswith(  # the path as given, relative to the working directory
        "kyma-modules/catalog/relay.yaml: document 2 (ModuleTemplate kyma-system/relay-0.2.0): "
        "spec.chart.allowEmpty: not set; if the chart may render no objects, set spec.chart.allowEmpty: true"
    )
