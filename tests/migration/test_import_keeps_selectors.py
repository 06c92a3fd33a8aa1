"""`btp-gitops import` marks the versions CAP Operator reconciled with the generation its
Deployments' pod selectors hold (`btp-gitops.io/cap-operator-generation`), through the CLI.

CAP Operator's marks on a version are its identity labels and its controller reference to the
CAPApplication; a version without them (one btp-gitops applied) is imported as it is. A version
with them but no usable `metadata.generation` gets no annotation and a comment saying its
Deployments would be recreated. The imported sources render Deployments whose selector holds the
generation, which is what keeps them at the switch (tests/kube/test_cutover_plan.py proves that
on the API server).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.domains.cap import model as cap_model
from btp_gitops.generator.migration import cap as cap_import
from tests.conftest import RunCli
from tests.migration.cap_operator import as_left_by_operator, server_metadata
from tests.migration.sources import OPERATOR_TENANT_STATUS, source_objects
from tests.migration.test_import_from_dir import write_dumps

ANNOTATION = "btp-gitops.io/cap-operator-generation"
VERSION_FILE = "sources/cap/bookshop/bookshop/version-{}.yaml"


def dump(**generations: Any) -> list[dict[str, Any]]:
    """CAP Operator's objects as dumped, each version's generation as given by its spec.version
    (`v1_1_0=5`); a version given `None` has no generation at all."""
    objects = server_metadata(as_left_by_operator(source_objects(), OPERATOR_TENANT_STATUS))
    for body in objects:
        if body["kind"] != "CAPApplicationVersion":
            continue
        key = "v" + body["spec"]["version"].replace(".", "_")
        if key in generations:
            if generations[key] is None:
                del body["metadata"]["generation"]
            else:
                body["metadata"]["generation"] = generations[key]
    return objects


def import_dumps(run_cli: RunCli, tmp_path: Path, objects: list[dict[str, Any]]) -> None:
    write_dumps(tmp_path / "dumps", objects)
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def version_file(tmp_path: Path, version: str) -> tuple[str, dict[str, Any]]:
    """The comment above the version's document (its lines joined) and the document."""
    text = (tmp_path / VERSION_FILE.format(version)).read_text()
    (body,) = [d for d in yaml.safe_load_all(text) if d]
    comment = " ".join(line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
    return comment, body


def test_the_render_reads_the_annotation_the_import_writes() -> None:
    # The import may not import the CAP domain (import-linter's layers): two constants, one name.
    written_by_import = cap_import.CAP_OPERATOR_GENERATION_ANNOTATION
    assert written_by_import == cap_model.CAP_OPERATOR_GENERATION_ANNOTATION == ANNOTATION


def test_each_reconciled_version_gets_its_live_generation_and_its_deployments_keep_their_selector(
    run_cli: RunCli, tmp_path: Path
) -> None:
    import_dumps(run_cli, tmp_path, dump(v1_0_0=1, v1_1_0=5))
    for version, generation in (("1.0.0", "1"), ("1.1.0", "5")):
        text, body = version_file(tmp_path, version)
        assert body["metadata"]["annotations"] == {ANNOTATION: generation}
        assert f'{ANNOTATION}: "{generation}" added: CAP Operator reconciled this version' in text
        assert "the switch updates them in place" in text
    rendered = run_cli("render", "sources", "--stdout", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    deployments = {
        d["metadata"]["name"]: d
        for d in yaml.safe_load_all(rendered.stdout)
        if d and d["kind"] == "Deployment"
    }
    srv = deployments["bookshop-1-1-0-srv"]
    assert srv["spec"]["selector"]["matchLabels"]["sme.sap.com/owner-generation"] == "5"
    assert srv["spec"]["selector"]["matchLabels"]["team"] == "bookshop"  # the workload's own label
    assert (
        deployments["bookshop-1-0-0-srv"]["spec"]["selector"]["matchLabels"]["sme.sap.com/owner-generation"]
        == "1"
    )


def test_the_controller_reference_alone_marks_a_version_cap_operator_reconciled(
    run_cli: RunCli, tmp_path: Path
) -> None:
    objects = dump(v1_1_0=2)
    for body in objects:
        if body["kind"] == "CAPApplicationVersion":
            body["metadata"]["labels"] = {}
    import_dumps(run_cli, tmp_path, objects)
    _, body = version_file(tmp_path, "1.1.0")
    assert body["metadata"]["annotations"] == {ANNOTATION: "2"}


def test_a_version_btp_gitops_applied_is_imported_without_the_annotation(
    run_cli: RunCli, tmp_path: Path
) -> None:
    # The example's versions with what the API server adds, and none of CAP Operator's marks.
    objects = server_metadata(source_objects())
    for body in objects:
        if body["kind"] == "CAPApplicationVersion":
            body["metadata"]["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "0", "controller": True}
            ]
    import_dumps(run_cli, tmp_path, objects)
    for version in ("1.0.0", "1.1.0"):
        text, body = version_file(tmp_path, version)
        assert "annotations" not in body["metadata"]
        assert ANNOTATION not in text


def test_a_users_own_annotations_stay_beside_it(run_cli: RunCli, tmp_path: Path) -> None:
    objects = dump(v1_1_0=3)
    for body in objects:
        if body["kind"] == "CAPApplicationVersion":
            body["metadata"]["annotations"]["zz.example.com/owner"] = "team-bookshop"
            body["metadata"]["annotations"]["aa.example.com/ticket"] = "OPS-1"
    import_dumps(run_cli, tmp_path, objects)
    _, body = version_file(tmp_path, "1.1.0")
    assert list(body["metadata"]["annotations"].items()) == [
        ("aa.example.com/ticket", "OPS-1"),
        (ANNOTATION, "3"),
        ("zz.example.com/owner", "team-bookshop"),
    ]


@pytest.mark.parametrize("generation", [None, 0, -4, "5", True, 1.5, 2**63])
def test_without_a_usable_generation_no_annotation_and_a_comment_says_the_deployments_are_recreated(
    run_cli: RunCli, tmp_path: Path, generation: Any
) -> None:
    import_dumps(run_cli, tmp_path, dump(v1_1_0=generation))
    text, body = version_file(tmp_path, "1.1.0")
    assert "annotations" not in body["metadata"]
    comment = text
    assert "no usable metadata.generation was read" in comment
    assert "deletes and recreates the Deployments CAP Operator made" in comment
    # The other version, with its generation, is annotated as before.
    _, other = version_file(tmp_path, "1.0.0")
    assert other["metadata"]["annotations"] == {ANNOTATION: "1"}
    rendered = run_cli("render", "sources", "-q", "--out", "repo", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr


def test_the_same_dumps_give_the_same_bytes(run_cli: RunCli, tmp_path: Path) -> None:
    objects = dump(v1_1_0=9)
    import_dumps(run_cli, tmp_path / "first", copy.deepcopy(objects))
    import_dumps(run_cli, tmp_path / "second", list(reversed(objects)))
    first = (tmp_path / "first" / VERSION_FILE.format("1.1.0")).read_text()
    second = (tmp_path / "second" / VERSION_FILE.format("1.1.0")).read_text()
    assert first.split("\n", 1)[1] == second.split("\n", 1)[1]  # the first line names the dump file
