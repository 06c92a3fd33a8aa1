"""`btp-gitops import` over dumps of a whole cluster where all three operators ran: CAP Operator's
application, Lifecycle Manager's Kyma and catalog, BTP Manager's module request with its Secret and
ConfigMap. One run writes the three operators' sources side by side, lists what the user must still
fetch, never shows a credential, and the sources render as one cluster once the raw manifests are in.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import RunCli, read_tree, tree_as_yaml
from tests.migration.lifecycle_manager_objects import runtime_objects
from tests.migration.test_btp_operator_import import (
    CREDENTIALS,
    btp_operator,
    manager_secret,
    operator_configmap,
)
from tests.migration.test_import_from_dir import operator_dump, write_dumps
from tests.migration.test_kyma_import import fetch_raw_manifests


def _write_operator_dumps(directory: Path) -> None:
    """Lifecycle Manager's and BTP Manager's objects as `kubectl get ... -o yaml` gives them."""
    kyma_objects = [live.body for live in runtime_objects()]
    (directory / "kyma.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": kyma_objects})
    )
    btp = [btp_operator().body, manager_secret().body, operator_configmap().body]
    (directory / "btp-manager.yaml").write_text(yaml.safe_dump_all(btp))


def test_a_whole_clusters_dumps_import_into_sources_of_all_three_operators(
    run_cli: RunCli, tmp_path: Path
) -> None:
    dumps = tmp_path / "dumps"
    write_dumps(dumps, operator_dump())
    _write_operator_dumps(dumps)

    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = sorted(str(p.relative_to(tmp_path / "sources")) for p in (tmp_path / "sources").rglob("*.yaml"))
    assert {path.split("/", 1)[0] for path in written} == {"btp-operator", "cap", "kyma"}
    assert "kyma/kyma.yaml" in written and "btp-operator/btpoperatorconfig.yaml" in written
    # Each template's raw manifest is a step left to the user, named with where it goes; not a skip.
    to_do = [line for line in result.stderr.splitlines() if line.startswith("to do: ")]
    assert to_do and all("before rendering" in line for line in to_do)
    assert "warning: skipped ModuleTemplate" not in result.stderr
    assert "to do before a render" in result.stdout
    # No credential of BTP Manager's Secret anywhere: files, stdout, stderr.
    everything = result.stdout + result.stderr
    everything += "".join(p.read_text() for p in (tmp_path / "sources").rglob("*") if p.is_file())
    for value in CREDENTIALS.values():
        assert value not in everything

    as_json = run_cli("import", "--from-dir", "dumps", "--out", "again", "-o", "json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert sorted(item["object"] for item in report["followUps"]) == sorted(
        line.removeprefix("to do: ").split(" (", 1)[0] for line in to_do
    )

    # Once fetched, the three operators' sources render together into one cluster.
    fetch_raw_manifests(tmp_path / "sources")
    rendered = run_cli("render", "sources", "--out", "repo", "--cluster", "prod", "-q", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    apps = {p.name for p in (tmp_path / "repo/clusters/prod").iterdir() if p.is_dir()}
    assert {"btp-operator", "kyma-greeter", "cap.bookshop.bookshop"} <= apps


def test_the_imported_tree_is_the_same_bytes_every_time_and_reviewed_as_a_snapshot(
    run_cli: RunCli, tmp_path: Path, yaml_snapshot: object
) -> None:
    dumps = tmp_path / "dumps"
    write_dumps(dumps, operator_dump())
    _write_operator_dumps(dumps)
    trees = []
    for out in ("first", "second"):
        result = run_cli("import", "--from-dir", "dumps", "--out", out, "-q", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        trees.append(read_tree(tmp_path / out))
    assert trees[0] == trees[1]
    assert tree_as_yaml(dict(trees[0])) == yaml_snapshot
