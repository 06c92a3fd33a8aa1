"""The CRDs of charts/btp-gitops/crds: in step with schemas/, as snapshotted, and the `crds` command.

Covered: regenerating from schemas/ gives byte-identical files (the drift test); the BtpOperator
CRD as a reviewed snapshot; `btp-gitops crds` writes, reports, removes stale files and is a no-op
the second time; `--check` exits 1 listing missing, changed and stale files and 0 when in step
(text and JSON); a broken schema exits 3 naming the file and pointer; the real Helm CLI installs the
chart's CRDs as generated (`helm template --include-crds`, tools tier).

Nothing is faked: the installed console script runs on the checkout's schemas/ or on copies of it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from btp_gitops import __version__
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.pipeline.crds import check_crds, generate_crd_files, write_crds
from tests.conftest import ROOT, RunCli, read_tree
from tests.support.tools import tool_path

CHART = ROOT / "charts" / "btp-gitops"
CRDS = CHART / "crds"
SCHEMAS = ROOT / "schemas"
CONFIG_SCHEMA = "btpoperatorconfig.btp-gitops.io.v1alpha1.json"


def crd_file_names_declared_in_schemas() -> list[str]:
    """`<plural>.<group>.yaml` for every kind schemas/ declares, read straight from the JSON (not
    through the code under test), so that a new schema without a CRD fails the drift test."""
    names = set()
    for path in SCHEMAS.glob("*.json"):
        schema = json.loads(path.read_text())
        gvk, crd = schema.get("x-kubernetes-group-version-kind"), schema.get("x-kubernetes-crd")
        if gvk and crd:
            names.add(f"{crd['plural']}.{gvk['group']}.yaml")
    return sorted(names)


EXPECTED_FILES = crd_file_names_declared_in_schemas()


def test_chart_crds_match_the_schemas(tmp_path: Path) -> None:
    write_crds(SCHEMAS, tmp_path / "crds")
    expected, committed = read_tree(tmp_path / "crds"), read_tree(CRDS)
    drifting = sorted(
        name for name in expected.keys() | committed.keys() if expected.get(name) != committed.get(name)
    )
    assert not drifting, (
        f"charts/btp-gitops/crds drifts from schemas/ in {', '.join(drifting)}: "
        "run `.venv/bin/btp-gitops crds` and commit the result"
    )
    assert sorted(committed) == EXPECTED_FILES


def test_btp_operator_crd_snapshot(yaml_snapshot: object) -> None:
    assert generate_crd_files(SCHEMAS)["btpoperators.operator.kyma-project.io.yaml"] == yaml_snapshot


def test_check_is_clean_on_the_checkout(run_cli: RunCli) -> None:
    result = run_cli("crds", "--check")
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert result.stdout == f"CRDs in {CRDS} match the schemas\n"


def test_write_then_check(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "crds"
    missing = run_cli("crds", "--out", out, "--check")
    assert missing.returncode == ExitCode.CHANGES
    assert missing.stdout == (
        f"CRDs in {out} drift from the schemas (run `btp-gitops crds` to regenerate them):\n"
        + "".join(f"  {name}\n" for name in EXPECTED_FILES)
    )
    assert not out.exists(), "--check must not write"

    written = run_cli("crds", "--out", out)
    assert written.returncode == ExitCode.OK, written.stderr
    count = len(EXPECTED_FILES)
    assert written.stdout == f"wrote {out}: {count} CRDs; {count} added, 0 changed, 0 removed\n"
    assert read_tree(out) == read_tree(CRDS)

    again = run_cli("crds", "--out", out)
    assert again.stdout == f"wrote {out}: {count} CRDs; 0 added, 0 changed, 0 removed\n"
    assert run_cli("crds", "--out", out, "--check").returncode == ExitCode.OK


def test_check_reports_changed_and_stale_files_and_write_repairs_them(
    tmp_path: Path, run_cli: RunCli
) -> None:
    out = tmp_path / "crds"
    write_crds(SCHEMAS, out)
    (out / "widgets.example.com.yaml").write_text("kind: CustomResourceDefinition\n")
    edited = out / EXPECTED_FILES[0]
    edited.write_text(edited.read_text().replace("minLength: 1", "minLength: 2"))
    assert check_crds(SCHEMAS, out) == [EXPECTED_FILES[0], "widgets.example.com.yaml"]

    result = run_cli("crds", "--out", out, "--check", "--output", "json")
    assert result.returncode == ExitCode.CHANGES
    assert json.loads(result.stdout) == {
        "out": str(out),
        "drifting": [EXPECTED_FILES[0], "widgets.example.com.yaml"],
    }

    repaired = run_cli("crds", "--out", out, "--output", "json")
    assert repaired.returncode == ExitCode.OK, repaired.stderr
    assert json.loads(repaired.stdout) == {
        "out": str(out),
        "files": EXPECTED_FILES,
        "changes": {"added": [], "changed": [EXPECTED_FILES[0]], "removed": ["widgets.example.com.yaml"]},
    }
    assert read_tree(out) == read_tree(CRDS)


def test_a_schema_change_shows_as_drift(tmp_path: Path, run_cli: RunCli) -> None:
    schemas = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, schemas)
    config = schemas / CONFIG_SCHEMA
    document = json.loads(config.read_text())
    document["properties"]["spec"]["properties"]["clusterId"]["maxLength"] = 64
    config.write_text(json.dumps(document))
    result = run_cli("crds", "--schemas", schemas, "--out", CRDS, "--check")
    assert result.returncode == ExitCode.CHANGES
    assert result.stdout.splitlines()[1:] == [f"  {EXPECTED_FILES[0]}"]


def test_unconvertible_schema_exits_with_input_error(tmp_path: Path, run_cli: RunCli) -> None:
    schemas = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, schemas)
    config = schemas / CONFIG_SCHEMA
    document = json.loads(config.read_text())
    document["properties"]["spec"]["properties"]["clusterId"] = {
        "anyOf": [{"type": "string"}, {"type": "integer"}]
    }
    config.write_text(json.dumps(document))
    (schemas / "broken.json").write_text('{\n  "a" 1\n}\n')
    out = tmp_path / "crds"
    result = run_cli("crds", "--schemas", schemas, "--out", out)
    assert result.returncode == ExitCode.INPUT
    assert (
        result.stderr
        == f"error: cannot read schemas (1 problem)\n  {schemas}/broken.json: invalid JSON: line 2, column 7: Expecting ':' delimiter\n"
    )
    (schemas / "broken.json").unlink()
    result = run_cli("crds", "--schemas", schemas, "--out", out)
    assert result.returncode == ExitCode.INPUT
    assert result.stderr == (
        "error: schemas cannot be turned into CRDs (2 problems)\n"
        f"  {config}: #/properties/spec/properties/clusterId: no type: structural schemas need one (add `type`)\n"
        f"  {config}: #/properties/spec/properties/clusterId/anyOf: keyword 'anyOf' has no structural CRD equivalent\n"
    )
    assert not out.exists()


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["name"], chart["version"]) == ("v2", "btp-gitops", __version__)


@pytest.mark.tools
@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_helm_installs_the_generated_crds(helm: str) -> None:
    rendered = subprocess.run(
        [
            str(tool_path(helm)),
            "template",
            "btp-gitops",
            str(CHART),
            "--include-crds",
            # the chart refuses its bare defaults: a first install names the source repository
            "--set",
            "source.repo=https://git.example.com/platform/sources.git",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    # The chart also renders the controller; only its CRDs are compared with crds/.
    documents = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    installed = [doc for doc in documents if doc["kind"] == "CustomResourceDefinition"]
    assert len(installed) < len(documents)
    generated = [yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml"))]
    assert sorted(installed, key=lambda d: d["metadata"]["name"]) == generated
