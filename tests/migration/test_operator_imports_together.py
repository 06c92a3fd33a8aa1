"""Both operator translators over one cluster's objects: their files never collide, and the
merged sources render as one repository."""

from __future__ import annotations

from pathlib import Path

from btp_gitops.generator.migration import import_btp_operator, import_kyma, merge_results
from tests.conftest import RunCli
from tests.migration.lifecycle_manager_objects import runtime_objects
from tests.migration.result_files import write_result
from tests.migration.test_btp_operator_import import btp_operator, manager_secret, operator_configmap
from tests.migration.test_kyma_import import fetch_raw_manifests


def test_one_clusters_kyma_and_btp_operator_import_into_sources_that_render_together(
    run_cli: RunCli, tmp_path: Path
) -> None:
    objects = [*runtime_objects(), btp_operator(), manager_secret(), operator_configmap()]
    results = [import_kyma(objects), import_btp_operator(objects)]
    merged = merge_results(results)  # raises if two translators wrote one path
    assert merged == merge_results(list(reversed(results)))
    assert {path.split("/", 1)[0] for path in (f.path for f in merged.files)} == {"btp-operator", "kyma"}
    sources = tmp_path / "sources"
    write_result(merged, sources)
    fetch_raw_manifests(sources)
    rendered = run_cli("render", sources, "--out", tmp_path / "out", "--cluster", "runtime")
    assert rendered.returncode == 0, rendered.stderr
    apps = sorted(p.name for p in (tmp_path / "out/clusters/runtime").iterdir() if p.is_dir())
    assert apps == ["btp-operator", "kyma-auditlog", "kyma-greeter", "kyma-relay"]
