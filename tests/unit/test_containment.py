"""Unit tests of `generator.io.containment`: what a render may read, called in-process.

tests/render/test_containment.py proves the same through the CLI (sources, charts, values files
and raw manifests outside the roots); these cases reach every branch quickly, so that a mutation
run of the module (docs/mutation-testing.md) can afford them for every mutant. Real directories
and links; the Helm engine is a recorder, since only what reaches it matters here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from btp_gitops.generator.charts.renderer import ChartRequest, RenderedChart
from btp_gitops.generator.core.errors import PathNotAllowed, Problem
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.io.containment import OUTSIDE, ContainedCharts, SourceRoots, display_path

RENDERED = RenderedChart(name="c", version="1.0.0", app_version="1", templates={}, crds={})


class Recorder:
    """A ChartRenderer that only records what it was asked to render."""

    def __init__(self) -> None:
        self.requests: list[ChartRequest] = []

    def render_chart(self, request: ChartRequest) -> RenderedChart:
        self.requests.append(request)
        return RENDERED


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`inside/` (the root, with a chart) and `outside/`, the working directory at `tmp_path`."""
    monkeypatch.chdir(tmp_path)
    chart = tmp_path / "inside" / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "values.yaml").write_text("a: 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "values.yaml").write_text("a: 2\n")
    return tmp_path


def test_display_path_is_relative_inside_the_working_directory(world: Path) -> None:
    assert display_path(world / "inside" / "chart") == "inside/chart"
    assert display_path(Path("inside/../outside")) == "outside"
    assert display_path(Path("/")) == "/"


def test_roots_are_resolved_and_deduplicated(world: Path) -> None:
    (world / "link").symlink_to(world / "inside")
    roots = SourceRoots.of([world / "inside", world / "link"], [Path("inside")])
    assert roots.roots == ((world / "inside").resolve(),)


def test_contains_follows_links_and_refuses_loops(world: Path) -> None:
    roots = SourceRoots.of([world / "inside"])
    assert roots.contains(world / "inside" / "chart" / "values.yaml")
    assert not roots.contains(world / "outside" / "values.yaml")
    (world / "inside" / "out").symlink_to(world / "outside")
    assert not roots.contains(world / "inside" / "out" / "values.yaml")
    (world / "inside" / "loop").symlink_to(world / "inside" / "loop")
    assert not roots.contains(world / "inside" / "loop")


def test_check_named_raises_at_the_problem_given(world: Path) -> None:
    roots = SourceRoots.of([world / "inside"])
    problem = Problem(file="s.yaml", message="m")
    roots.check_named(world / "inside" / "chart", problem)
    with pytest.raises(PathNotAllowed) as caught:
        roots.check_named(world / "outside" / "values.yaml", problem)
    assert caught.value.message == "a source names a file outside the source roots"
    assert caught.value.problems == (problem,)


def test_check_link_names_the_target(world: Path) -> None:
    roots = SourceRoots.of([world / "inside"])
    (world / "inside" / "ok").symlink_to(world / "inside" / "chart")
    roots.check_link(world / "inside" / "ok")
    (world / "inside" / "out").symlink_to(world / "outside")
    with pytest.raises(PathNotAllowed) as caught:
        roots.check_link(world / "inside" / "out")
    assert caught.value.message == "a symbolic link leaves the source roots"
    assert [(p.file, p.message) for p in caught.value.problems] == [
        ("inside/out", f"a symbolic link to {world / 'outside'} ({(world / 'outside').resolve()}), {OUTSIDE}")
    ]
    (world / "inside" / "loop").symlink_to(world / "inside" / "loop")
    with pytest.raises(PathNotAllowed) as looped:
        roots.check_link(world / "inside" / "loop")
    assert looped.value.problems[0].message == (
        f"a symbolic link to {world / 'inside' / 'loop'} (a loop of links), {OUTSIDE}"
    )


def test_check_tree_finds_hidden_links_and_walks_each_directory_once(world: Path) -> None:
    roots = SourceRoots.of([world / "inside"])
    chart = world / "inside" / "chart"
    (chart / "again").symlink_to(chart)  # inside the roots: followed, and not walked twice
    (chart / "templates" / "up").symlink_to(world / "inside")
    roots.check_tree(chart)
    (chart / "templates" / ".hidden").symlink_to(world / "outside" / "values.yaml")
    with pytest.raises(PathNotAllowed) as caught:
        roots.check_tree(chart)
    assert [p.file for p in caught.value.problems] == ["inside/chart/templates/.hidden"]


def test_check_tree_follows_a_link_to_a_directory_that_holds_a_link_out(world: Path) -> None:
    roots = SourceRoots.of([world / "inside"])
    (world / "inside" / "shared").mkdir()
    (world / "inside" / "shared" / "bad").symlink_to(world / "outside")
    (world / "inside" / "chart" / "shared").symlink_to(world / "inside" / "shared")
    with pytest.raises(PathNotAllowed) as caught:
        roots.check_tree(world / "inside" / "chart")
    assert [p.file for p in caught.value.problems] == ["inside/chart/shared/bad"]


def test_outside_says_why(world: Path) -> None:
    roots = SourceRoots.of([world / "inside"])
    assert roots.outside(world / "outside" / "values.yaml") == OUTSIDE
    (world / "inside" / "out").symlink_to(world / "outside")
    assert roots.outside(world / "inside" / "out") == f"leads to outside, {OUTSIDE}"
    (world / "inside" / "loop").symlink_to(world / "inside" / "loop")
    assert roots.outside(world / "inside" / "loop") == f"a loop of symbolic links, {OUTSIDE}"


def _source(world: Path) -> SourceDocument:
    body = {"kind": "BtpOperatorConfig", "metadata": {"name": "c", "namespace": "n"}}
    return SourceDocument(file="s.yaml", document=1, body=body, directory=world)


def test_contained_charts_render_inside_the_roots(world: Path) -> None:
    engine = Recorder()
    charts = ContainedCharts(engine, SourceRoots.of([world / "inside"]))
    chart = world / "inside" / "chart"
    request = ChartRequest(chart=chart, release="r", namespace="n", values_files=(chart / "values.yaml",))
    assert charts.render_chart(request) is RENDERED
    assert engine.requests == [request]


@pytest.mark.parametrize("where", ["chart", "values"])
def test_contained_charts_refuse_at_the_field_of_the_source(world: Path, where: str) -> None:
    engine = Recorder()
    charts = ContainedCharts(engine, SourceRoots.of([world / "inside"]))
    inside, outside = world / "inside" / "chart", world / "outside"
    chart = outside if where == "chart" else inside
    values = (inside / "values.yaml", outside / "values.yaml")
    request = ChartRequest(
        chart=chart, release="r", namespace="n", values_files=values, source=_source(world), field="spec.x"
    )
    with pytest.raises(PathNotAllowed) as caught:
        charts.render_chart(request)
    shown = "outside" if where == "chart" else "outside/values.yaml"
    field = "spec.x.path" if where == "chart" else "spec.x.valuesFiles[1]"
    assert [(p.file, p.object_ref, p.field_path, p.message) for p in caught.value.problems] == [
        ("s.yaml", "BtpOperatorConfig n/c", field, f"{shown}: {OUTSIDE}")
    ]
    assert engine.requests == []


def test_contained_charts_without_a_source_point_at_the_file(world: Path) -> None:
    charts = ContainedCharts(Recorder(), SourceRoots.of([world / "inside"]))
    request = ChartRequest(chart=world / "outside", release="r", namespace="n")
    with pytest.raises(PathNotAllowed) as caught:
        charts.render_chart(request)
    assert [(p.file, p.message) for p in caught.value.problems] == [("outside", OUTSIDE)]


def test_contained_charts_check_links_inside_a_chart_directory_only(world: Path) -> None:
    engine = Recorder()
    charts = ContainedCharts(engine, SourceRoots.of([world / "inside"]))
    chart = world / "inside" / "chart"
    (chart / "templates" / "leak.yaml").symlink_to(world / "outside" / "values.yaml")
    with pytest.raises(PathNotAllowed):
        charts.render_chart(ChartRequest(chart=chart, release="r", namespace="n"))
    packaged = world / "inside" / "chart.tgz"  # a packaged chart is a file: nothing to walk
    packaged.write_bytes(b"")
    charts.render_chart(ChartRequest(chart=packaged, release="r", namespace="n"))
    assert [r.chart for r in engine.requests] == [packaged]
    assert os.path.islink(chart / "templates" / "leak.yaml")


def test_check_tree_walks_each_directory_once_however_many_links_lead_to_it(world: Path) -> None:
    roots = SourceRoots.of([world / "inside"])
    chart = world / "inside" / "chart"
    (chart / "again").symlink_to(chart / "templates")
    walked: list[str] = []
    original = os.walk

    def counting(top: Path, **options: bool) -> Iterator[tuple[str, list[str], list[str]]]:
        for parent, dirs, files in original(top, **options):
            walked.append(os.path.relpath(parent, chart))
            yield parent, dirs, files

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "walk", counting)
        roots.check_tree(chart)
    assert len(walked) == 2, walked  # the chart, and its templates through one of the two names
