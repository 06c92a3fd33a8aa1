"""Chart rendering shared by every domain that installs a chart: render, then pin volatile output.

A chart that renders no object is refused unless its source says it may (`ChartRequest.allow_empty`,
the source's `spec.chart.allowEmpty`): a Helm binary that prints nothing and exits 0 (a broken
shim behind `--helm-binary`) looks exactly like that, and its empty output would remove every
object the chart rendered before, with nothing else to tell.
"""

from __future__ import annotations

from btp_gitops.generator.charts.renderer import ChartRenderer, ChartRequest, RenderedChart, manifests_of
from btp_gitops.generator.core.errors import EmptyChartOutput, Problem
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.core.sources import problem_at
from btp_gitops.generator.transforms.volatile import PinnedValue, pin_volatile_values


def render_chart_deterministically(
    engine: ChartRenderer, request: ChartRequest
) -> tuple[RenderedChart, list[Manifest], list[PinnedValue]]:
    """Render twice and pin whatever differs (uuidv4 cluster ids, checksums over them)."""
    first = engine.render_chart(request)
    second = engine.render_chart(request)
    pinned: list[PinnedValue] = []
    if second == first:  # the same text twice (values pin every random input): parse it once
        manifests = manifests_of(first)
    else:
        manifests, pinned = pin_volatile_values(manifests_of(first), manifests_of(second), first.name)
    if not manifests and not request.allow_empty:
        raise empty_chart_error(request, first)
    return first, manifests, pinned


def empty_chart_error(request: ChartRequest, rendered: RenderedChart) -> EmptyChartOutput:
    """The error for a chart that rendered no object, naming the chart and the source asking for it."""
    version = f" {rendered.version}" if rendered.version else ""
    chart = f"chart {rendered.name or request.chart.name}{version}"
    message = (
        f"{chart} rendered no objects: a Helm binary that prints nothing (check --helm-binary) or "
        "values that turn every template off"
    )
    if request.source is None:
        return EmptyChartOutput(f"{message}; the previous output is kept")
    problem: Problem = problem_at(
        request.source,
        f"{request.field}.allowEmpty",
        f"not set; if the chart may render no objects, set {request.field}.allowEmpty: true",
    )
    return EmptyChartOutput(message, [problem])


def pinned_value_notes(pinned: list[PinnedValue]) -> list[Note]:
    """One note per pinned value (pass only those that reach the output: volatile.still_pinned)."""
    return [
        Note(
            Level.INFO,
            "PinnedValue",
            f"{p.origin} ({p.object_ref})",
            f"{p.field_path} changes on every render; pinned to a stable value",
        )
        for p in pinned
    ]
