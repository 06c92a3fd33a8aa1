"""`-o/--output text|json|yaml` on every command that prints a result, and errors in that format.

Each command's JSON and YAML are the same document; with json or yaml a failure is one document on
stdout too, `{"error": {...}, "exitCode": N}` (docs/errors.md), the exit code unchanged and the
message still on stderr for the log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES, ROOT, RunCli

BTP_OPERATOR = EXAMPLES / "btp-operator"


def _both(run_cli: RunCli, *command: str | Path, code: int = 0, cwd: Path | None = None) -> dict[str, Any]:
    """The command's result with -o json and with -o yaml (each in a fresh place `{output}`): the
    same document, but for the place named."""
    results = {}
    for output in ("json", "yaml"):
        args = [str(a).replace("{output}", output) for a in command]
        result = run_cli(*args, "-o", output, cwd=cwd)
        assert result.returncode == code, result.stderr
        results[output] = json.loads(result.stdout) if output == "json" else yaml.safe_load(result.stdout)
    assert json.dumps(results["yaml"]).replace("/yaml", "/json") == json.dumps(results["json"])
    report: dict[str, Any] = results["json"]
    return report


def test_render_prints_its_report_as_json_or_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    report = _both(run_cli, "render", BTP_OPERATOR, "--out", tmp_path / "{output}")
    assert report["cluster"] == "default"
    assert [app["app"] for app in report["apps"]] == ["btp-operator"]
    assert report["changes"]["added"] and not report["changes"]["removed"]


def test_diff_prints_its_report_as_json_or_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("render", BTP_OPERATOR, "--out", tmp_path / "repo").returncode == 0
    report = _both(run_cli, "diff", EXAMPLES / "cap-app", "--against", tmp_path / "repo", cwd=ROOT)
    assert report["changed"] is True
    assert report["summary"]["removed"] > 0 and report["summary"]["added"] > 0
    removed = [c for c in report["changes"] if c["change"] == "removed"]
    assert removed and all(c["oldPath"] and c["newPath"] is None for c in removed)


def test_validate_prints_its_report_as_json_or_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: 1\n"
    )
    report = _both(run_cli, "validate", "cm.yaml", code=3, cwd=tmp_path)
    assert report["valid"] is False and report["objects"] == 1
    assert report["kubernetesVersion"]
    assert [(p["file"], p["object"], p["field"]) for p in report["problems"]] == [
        ("cm.yaml", "ConfigMap a", "data.k")
    ]


def test_crds_prints_what_it_wrote_and_what_drifts_as_json_or_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    written = _both(run_cli, "crds", "--out", tmp_path / "{output}")
    assert written["files"] and written["changes"]["added"] == written["files"]
    checked = _both(run_cli, "crds", "--out", tmp_path / "json", "--check")
    assert checked["drifting"] == []


def test_module_resources_prints_what_it_wrote_as_json_or_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    report = _both(run_cli, "module-resources", "--out", tmp_path / "{output}")
    assert report["files"] and report["changes"]["added"]


BROKEN_SPEC = {"clusterId": 42, "colour": "blue"}


def _broken_source(tmp_path: Path) -> Path:
    """The BTP operator example with a number for clusterId and an unknown field."""
    source = tmp_path / "broken"
    source.mkdir()
    config = yaml.safe_load((BTP_OPERATOR / "btpoperatorconfig.yaml").read_text())
    config["spec"].update(BROKEN_SPEC)
    (source / "btpoperatorconfig.yaml").write_text(yaml.safe_dump(config))
    return source


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_a_failing_render_is_an_error_document_on_stdout_with_the_exit_code(
    run_cli: RunCli, tmp_path: Path, output: str
) -> None:
    source = _broken_source(tmp_path)
    result = run_cli("render", source, "--out", tmp_path / "repo", "--output", output, cwd=tmp_path)
    assert result.returncode == 3
    document = json.loads(result.stdout) if output == "json" else yaml.safe_load(result.stdout)
    assert document["exitCode"] == 3
    assert document["error"]["type"] == "SchemaViolation"
    assert document["error"]["message"] == "invalid source documents (2 problems)"
    fields = {(p["file"], p["document"], p["field"]) for p in document["error"]["problems"]}
    assert fields == {("broken/btpoperatorconfig.yaml", 1, f"spec.{name}") for name in BROKEN_SPEC}
    assert "error: invalid source documents (2 problems)" in result.stderr  # still in the log
    assert not (tmp_path / "repo" / "clusters").exists()


def test_a_refused_command_line_is_an_error_document_in_json_mode(run_cli: RunCli, tmp_path: Path) -> None:
    for args, message in [
        (
            ["render", "x", "--out", "y", "--target", "argo", "-o", "json"],
            "argument --target: invalid choice",
        ),
        (["validate", "--output=json"], "the following arguments are required: PATH"),
        (["render", "x", "--stdout", "-ojson"], "--stdout writes only manifests"),
    ]:
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 2, args
        document = json.loads(result.stdout)
        assert document["exitCode"] == 2
        assert document["error"]["type"] == "UsageError"
        assert document["error"]["message"].startswith(message), document
        assert message in result.stderr


def test_the_text_output_stays_text(run_cli: RunCli, tmp_path: Path) -> None:
    """Without -o, and with -o text, a failure is told on stderr only, as before."""
    source = _broken_source(tmp_path)
    for extra in ([], ["-o", "text"]):
        result = run_cli("render", source, "--out", tmp_path / "repo", *extra, cwd=tmp_path)
        assert (result.returncode, result.stdout) == (3, "")
        assert result.stderr.startswith("error: invalid source documents (2 problems)\n")
