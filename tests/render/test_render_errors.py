"""Bad input and bad output locations: exact messages, exit codes, and nothing half-written.

Each case runs the installed CLI on a real broken source or chart (the embedded Helm engine
really fails to render) and checks the whole stderr, the documented exit code, and that a repo
rendered before is left byte-identical. The atomicity case injects a write failure through the
writer's filesystem interface, the one seam the writer offers for this.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from btp_gitops.generator.core.errors import OutputNotWritable
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.repo import LocalFilesystem
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import RenderRequest, render_into_repo
from tests.conftest import CHART, RunCli, read_tree
from tests.render.conftest import MakeSource
from tests.support.yaml_errors import PARSER, matches

CONFIG_REF = "document 1 (BtpOperatorConfig kyma-system/btp-operator)"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.fixture
def rendered_repo(tmp_path: Path, run_cli: RunCli, make_source: MakeSource) -> Path:
    """A repo rendered from the good example, to check that failures leave it untouched."""
    out = tmp_path / "repo"
    assert run_cli("render", make_source(name="good"), "--out", out, "--commit").returncode == 0
    return out


def _assert_failure(
    result: subprocess.CompletedProcess[str],
    exit_code: int,
    stderr: str,
    repo: Path,
    before: dict[str, bytes],
) -> None:
    assert result.returncode == exit_code, result.stderr
    assert matches(result.stderr, stderr), result.stderr  # exact but for the parser's words
    assert result.stdout == ""
    assert read_tree(repo) == before
    assert not [p for p in repo.glob("clusters/.*")], "staging or backup directories left behind"


def test_malformed_yaml(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource, rendered_repo: Path
) -> None:
    source = make_source()
    (source / "broken.yaml").write_text("apiVersion: v1\nkind: [\n")
    (source / "notes.yaml").write_text("a: 1\na: 2\n")
    before = read_tree(rendered_repo)
    result = run_cli("render", "source", "--out", rendered_repo, cwd=tmp_path)
    _assert_failure(
        result,
        ExitCode.INPUT,
        "error: cannot read source documents (2 problems)\n"
        f"  source/broken.yaml: document 1: invalid YAML: line 3, column 1: {PARSER}\n"
        "  source/notes.yaml: document 1: invalid YAML: line 2, column 1: found duplicate key 'a'\n",
        rendered_repo,
        before,
    )


def test_unknown_fields_and_wrong_types_are_all_reported(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource, rendered_repo: Path
) -> None:
    source = make_source()
    config = source / "btpoperatorconfig.yaml"
    _edit(config, "  enableLimitedCache: true", '  enableLimitedCache: "yes"\n  colour: blue')
    _edit(config, "    mode: cert-manager", "    mode: acme\n    sise: 3")
    _edit(config, "  clusterId: 3f9d2c1e-7a4b-4e2f-9c8d-1b2a3c4d5e6f", "  clusterId: 42")
    (source / "other.yaml").write_text(
        "apiVersion: operator.kyma-project.io/v1beta9\nkind: BtpOperator\nmetadata:\n  name: x\n"
    )
    before = read_tree(rendered_repo)
    result = run_cli("render", "source", "--out", rendered_repo, cwd=tmp_path)
    where = f"source/btpoperatorconfig.yaml: {CONFIG_REF}"
    _assert_failure(
        result,
        ExitCode.INPUT,
        "error: invalid source documents (6 problems)\n"
        f"  {where}: spec.certificates.mode: must be one of 'cert-manager', 'gardener', 'self-signed', got 'acme'\n"
        f"  {where}: spec.certificates.sise: unknown field\n"
        f"  {where}: spec.clusterId: must be of type string, got integer\n"
        f"  {where}: spec.colour: unknown field\n"
        f"  {where}: spec.enableLimitedCache: must be of type boolean, got string\n"
        "  source/other.yaml: document 1 (BtpOperator x): apiVersion: unknown kind "
        "operator.kyma-project.io/v1beta9/BtpOperator "
        "(supported apiVersions of BtpOperator: operator.kyma-project.io/v1alpha1)\n",
        rendered_repo,
        before,
    )


def test_missing_chart(tmp_path: Path, run_cli: RunCli, make_source: MakeSource, rendered_repo: Path) -> None:
    make_source(chart_dir=Path("charts/none"))
    before = read_tree(rendered_repo)
    result = run_cli("render", "source", "--out", rendered_repo, cwd=tmp_path)
    _assert_failure(
        result,
        ExitCode.CHART,
        "error: chart not found: source/charts/none has no Chart.yaml "
        f"(requested by source/btpoperatorconfig.yaml: {CONFIG_REF}: spec.chart.path)\n",
        rendered_repo,
        before,
    )


def test_chart_template_that_fails_to_render(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource, rendered_repo: Path
) -> None:
    chart = tmp_path / "broken-chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "zz_broken.yaml").write_text("{{ .Values.nope.deeper }}\n")
    make_source(chart_dir=chart)
    before = read_tree(rendered_repo)
    result = run_cli("render", "source", "--allow-path", chart, "--out", rendered_repo, cwd=tmp_path)
    _assert_failure(
        result,
        ExitCode.CHART,
        f"error: chart broken-chart (requested by source/btpoperatorconfig.yaml: {CONFIG_REF}: spec.chart.path) "
        "failed to render: sap-btp-operator/templates/zz_broken.yaml:1:10\n"
        '  executing "sap-btp-operator/templates/zz_broken.yaml" at <.Values.nope.deeper>:\n'
        "    nil pointer evaluating interface {}.deeper\n",
        rendered_repo,
        before,
    )


def test_self_signed_certificates_are_refused_for_git(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource, rendered_repo: Path
) -> None:
    make_source(certificates={"mode": "self-signed"})
    before = read_tree(rendered_repo)
    result = run_cli("render", "source", "--out", rendered_repo, cwd=tmp_path)
    _assert_failure(
        result,
        ExitCode.INPUT,
        "error: self-signed certificates cannot be rendered into Git\n"
        f"  source/btpoperatorconfig.yaml: {CONFIG_REF}: spec.certificates.mode: 'self-signed' would put a CA "
        "private key into the repository; use 'cert-manager' or 'gardener' for render, and keep "
        "'self-signed' for `btp-gitops post-render`, whose output goes to the cluster\n",
        rendered_repo,
        before,
    )


def test_unwritable_output_directory(tmp_path: Path, run_cli: RunCli, make_source: MakeSource) -> None:
    make_source()
    (tmp_path / "not-a-dir").write_text("a file where the repo should be\n")
    result = run_cli("render", "source", "--out", "not-a-dir/repo", cwd=tmp_path)
    assert result.returncode == ExitCode.OUTPUT
    assert result.stderr == "error: cannot write output directory not-a-dir/repo/clusters: Not a directory\n"
    assert (tmp_path / "not-a-dir").read_text() == "a file where the repo should be\n"


class FailingFilesystem(LocalFilesystem):
    """Fails the Nth file write, as a full disk would."""

    def __init__(self, fail_at: int) -> None:
        self.writes = 0
        self.fail_at = fail_at

    def write_bytes(self, path: Path, data: bytes) -> None:
        self.writes += 1
        if self.writes == self.fail_at:
            raise OSError(28, "No space left on device")
        super().write_bytes(path, data)


class FailingMoveIn(LocalFilesystem):
    """Fails the second rename of a new file into the tree, after the first one was done: the
    writer must put the previous tree back."""

    def __init__(self) -> None:
        self.moves = 0

    def move_in_at(self, source_dir: int, source_name: str, parent: int, name: str) -> None:
        self.moves += 1
        if self.moves == 2:
            raise OSError(5, "Input/output error")
        super().move_in_at(source_dir, source_name, parent, name)


@pytest.mark.parametrize(
    "fs",
    [FailingFilesystem(fail_at=2), FailingMoveIn()],
    ids=["write", "move-in"],
)
def test_a_write_that_fails_midway_leaves_the_old_tree(
    tmp_path: Path, make_source: MakeSource, rendered_repo: Path, fs: LocalFilesystem
) -> None:
    source = make_source(name="changed", clusterId="another-cluster")
    before = read_tree(rendered_repo)
    request = RenderRequest(sources=(source,), out=rendered_repo, cluster="default")
    with pytest.raises(OutputNotWritable):
        render_into_repo(request, EmbeddedHelm(), load_schema_registry(), fs)
    assert read_tree(rendered_repo) == before
    assert not [p for p in rendered_repo.glob("clusters/.*")], "staging or backup directories left behind"
    assert not list((rendered_repo / "clusters").glob(".*"))
