"""`--schemas DIR` (schema development) reads its files as any input is read (issue 31, item 4).

A FIFO named `*.json` is refused rather than waited on, a file that is not JSON or not a schema
is an input error naming it (exit 3), never a traceback; the same for `crds --schemas`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import EXAMPLES, ROOT, RunCli


@pytest.fixture
def schemas(tmp_path: Path) -> Path:
    copy = tmp_path / "schemas"
    shutil.copytree(ROOT / "schemas", copy)
    return copy


def _fifo(directory: Path) -> str:
    os.mkfifo(directory / "waiting.json")
    return "not a regular file"


def _malformed(directory: Path) -> str:
    (directory / "broken.json").write_text('{"$id": "broken", ')
    return "broken.json: not JSON"


def _not_a_schema(directory: Path) -> str:
    (directory / "list.json").write_text("[1, 2]")
    return "list.json: not a schema"


def _invalid_schema(directory: Path) -> str:
    (directory / "typed.json").write_text('{"$id": "typed", "type": 5}')
    return "typed.json: not a valid JSON Schema"


def _bad_kind(directory: Path) -> str:
    (directory / "kind.json").write_text('{"$id": "kind", "x-kubernetes-group-version-kind": {"group": 1}}')
    return "kind.json: x-kubernetes-group-version-kind must be a mapping of strings"


def _huge_number(directory: Path) -> str:
    (directory / "number.json").write_text('{"$id": "n", "maxLength": ' + "9" * 5000 + "}")
    return "number.json: not JSON"


@pytest.mark.parametrize(
    "plant", [_fifo, _malformed, _not_a_schema, _invalid_schema, _bad_kind, _huge_number]
)
def test_schema_files_that_cannot_be_schemas_are_input_errors(
    run_cli: RunCli, schemas: Path, tmp_path: Path, plant: object
) -> None:
    assert callable(plant)
    message = plant(schemas)
    for command in (
        ["render", EXAMPLES / "cap-app", "--stdout", "--no-cache", "--schemas", schemas],
        ["render", EXAMPLES / "cap-app", "--out", tmp_path / "out", "--no-cache", "--schemas", schemas],
    ):
        result = run_cli(*command)
        assert result.returncode == ExitCode.INPUT, result.stderr
        assert "Traceback" not in result.stderr
        assert "cannot read the schemas" in result.stderr and message in result.stderr
        assert result.stdout == ""
    assert not (tmp_path / "out" / "clusters").exists()


def test_crds_does_not_wait_on_a_fifo(run_cli: RunCli, schemas: Path, tmp_path: Path) -> None:
    os.mkfifo(schemas / "waiting.json")
    result = run_cli("crds", "--schemas", schemas, "--out", tmp_path / "crds")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "waiting.json: not a regular file" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_copy_of_the_shipped_schemas_renders_as_they_do(run_cli: RunCli, schemas: Path) -> None:
    shipped = run_cli("render", EXAMPLES / "cap-app", "--stdout", "--no-cache")
    copied = run_cli("render", EXAMPLES / "cap-app", "--stdout", "--no-cache", "--schemas", schemas)
    assert shipped.returncode == copied.returncode == 0, copied.stderr
    assert copied.stdout == shipped.stdout
