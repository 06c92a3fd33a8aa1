"""io.chart_schemas on the shapes a chart's schemas and subcharts take (the CLI tests are in
tests/render/test_chart_guard.py): where Helm's loader finds a schema, the check finds it too."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.generator.core.errors import ChartRenderFailed
from btp_gitops.generator.io import chart_schemas
from btp_gitops.generator.io.chart_schemas import check_schema_references

BAD = {"properties": {"a": {"$ref": "http://127.0.0.1:9/x.json"}}}
GOOD = {"definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s"}}}


def _archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def _chart(root: Path, schema: dict[str, Any] | str | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "Chart.yaml").write_text(f"apiVersion: v2\nname: {root.name}\nversion: 0.1.0\n")
    if schema is not None:
        text = schema if isinstance(schema, str) else json.dumps(schema)
        (root / "values.schema.json").write_text(text)
    return root


def _refused(chart: Path) -> str:
    with pytest.raises(ChartRenderFailed) as raised:
        check_schema_references(chart, "c")
    return str(raised.value)


def test_a_chart_without_schemas_or_with_fragments_passes(tmp_path: Path) -> None:
    check_schema_references(_chart(tmp_path / "none"), "c")
    check_schema_references(_chart(tmp_path / "good", GOOD), "c")


def test_a_subchart_directory_nested_twice(tmp_path: Path) -> None:
    chart = _chart(tmp_path / "c", GOOD)
    _chart(chart / "charts" / "a" / "charts" / "b", BAD)
    assert "c/charts/a/charts/b/values.schema.json refers to" in _refused(chart).replace(
        str(tmp_path) + "/", ""
    )


def test_names_helm_skips_are_skipped(tmp_path: Path) -> None:
    chart = _chart(tmp_path / "c", GOOD)
    _chart(chart / "charts" / "_helpers", BAD)
    _chart(chart / "charts" / ".hidden", BAD)
    check_schema_references(chart, "c")


def test_an_archive_inside_an_archive(tmp_path: Path) -> None:
    inner = _archive(
        {"inner/Chart.yaml": b"name: inner\n", "inner/values.schema.json": json.dumps(BAD).encode()}
    )
    outer = _archive({"outer/Chart.yaml": b"name: outer\n", "outer/charts/inner-0.1.0.tgz": inner})
    chart = _chart(tmp_path / "c", GOOD)
    (chart / "charts").mkdir()
    (chart / "charts" / "outer-0.1.0.tgz").write_bytes(outer)
    message = _refused(chart)
    assert "outer-0.1.0.tgz:charts/inner-0.1.0.tgz:values.schema.json refers to" in message


def test_a_directory_subchart_inside_an_archive(tmp_path: Path) -> None:
    outer = _archive(
        {"outer/Chart.yaml": b"name: outer\n", "outer/charts/d/values.schema.json": json.dumps(BAD).encode()}
    )
    chart = _chart(tmp_path / "c")
    (chart / "charts").mkdir()
    (chart / "charts" / "outer-0.1.0.tgz").write_bytes(outer)
    assert "outer-0.1.0.tgz:charts/d/values.schema.json refers to" in _refused(chart)


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"default": {"$ref": "file:///etc/hostname"}}},  # a property named like a keyword
        {"items": [{"$ref": "x.json"}]},
        {"$defs": {"enum": {"$recursiveRef": "http://x/"}}},
        '{"properties": {"a": {"$ref": "#/x", "$ref": "http://x/"}}}',  # a key twice: both are checked
        {"$schema": "http://json-schema.org/draft-07/schema#/../../x"},
    ],
)
def test_references_that_leave_the_schema(tmp_path: Path, schema: dict[str, Any] | str) -> None:
    assert "values.schema.json" in _refused(_chart(tmp_path / "c", schema))


def test_data_keywords_are_not_references(tmp_path: Path) -> None:
    schema = {
        "properties": {
            "a": {"default": {"$ref": "http://x/"}, "examples": [{"$ref": "y"}], "enum": [{"$schema": "z"}]}
        }
    }
    check_schema_references(_chart(tmp_path / "c", schema), "c")


def test_not_json_and_too_deep_are_refused(tmp_path: Path) -> None:
    assert "is not valid JSON" in _refused(_chart(tmp_path / "a", "{"))
    assert "nested too deeply" in _refused(_chart(tmp_path / "b", "[" * 100_000 + "]" * 100_000))


def test_archives_unpacking_past_the_budget_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chart_schemas, "MAX_ARCHIVE_BYTES", 64 * 1024)
    chart = _chart(tmp_path / "c")
    (chart / "charts").mkdir()
    for name in ("a", "b"):  # 40 KiB each: each fits, both together do not
        archive = _archive({f"{name}/Chart.yaml": b"name: x\n", f"{name}/README.md": b"x" * 40 * 1024})
        (chart / "charts" / f"{name}-0.1.0.tgz").write_bytes(archive)
    assert "archives unpack to more than" in _refused(chart)


def test_a_corrupt_archive_is_refused(tmp_path: Path) -> None:
    chart = _chart(tmp_path / "c")
    (chart / "charts").mkdir()
    (chart / "charts" / "x-0.1.0.tgz").write_bytes(b"not gzip")
    assert "not a readable chart archive" in _refused(chart)
