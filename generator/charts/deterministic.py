"""Chart rendering shared by every domain that installs a chart: render, then pin volatile output."""

from __future__ import annotations

from btp_gitops.generator.charts.renderer import ChartRenderer, ChartRequest, RenderedChart, manifests_of
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.transforms.volatile import PinnedValue, pin_volatile_values


def render_chart_deterministically(
    engine: ChartRenderer, request: ChartRequest
) -> tuple[RenderedChart, list[Manifest], list[PinnedValue]]:
    """Render twice and pin whatever differs (uuidv4 cluster ids, checksums over them)."""
    first = engine.render_chart(request)
    second = engine.render_chart(request)
    if second == first:  # the same text twice (values pin every random input): parse it once
        return first, manifests_of(first), []
    manifests, pinned = pin_volatile_values(manifests_of(first), manifests_of(second), first.name)
    return first, manifests, pinned


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
