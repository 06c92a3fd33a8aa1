"""The interface to a Helm engine: what to render, and what comes back.

Domains ask for charts through `ChartRenderer`; the pipeline passes in the embedded engine or the
`helm` CLI (generator.io.helm), so rendering logic never knows which one ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from btp_gitops.generator.core.errors import ChartRenderFailed, Problem
from btp_gitops.generator.core.object_shape import object_ref_of, shape_problems
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import load_trusted_document, split_documents


@dataclass(frozen=True, slots=True)
class ChartRequest:
    chart: Path
    release: str
    namespace: str
    values: dict[str, Any] = field(default_factory=dict)
    values_files: tuple[Path, ...] = ()
    requested_by: str = ""  # "file: document n (Kind ns/name)", for error messages
    source: SourceDocument | None = None  # the document that names the chart (None: a flag did)
    field: str = "spec.chart"  # where in `source`: `<field>.path`, `<field>.valuesFiles[i]`
    allow_empty: bool = False  # `<field>.allowEmpty`: the source says the chart may render no object


@dataclass(frozen=True, slots=True)
class RenderedChart:
    """Helm's output, one entry per template file that rendered to something."""

    name: str
    version: str
    app_version: str
    templates: dict[str, str]  # "<chart>/templates/<file>" -> rendered text (may hold several documents)
    crds: dict[str, str]  # "<chart>/crds/<file>" -> text


class ChartRenderer(Protocol):
    def render_chart(self, request: ChartRequest) -> RenderedChart: ...


def manifests_of(rendered: RenderedChart, include_crds: bool = True) -> list[Manifest]:
    """Parse a chart's output into manifests whose origin is the template they came from. Objects
    the API server would refuse for their shape (core.object_shape: labels, data keys) are
    refused here, all at once, naming the template, the object and the field."""
    sources = {**(rendered.crds if include_crds else {}), **rendered.templates}
    manifests: list[Manifest] = []
    problems: list[Problem] = []
    budget = AliasBudget()  # one for the whole chart: its templates are as untrusted as its values
    for origin, text in sources.items():
        for position, piece in enumerate(split_documents(text), start=1):
            try:
                body = load_trusted_document(piece, budget)
            except Exception as error:  # yaml.YAMLError; any parse failure is the chart's fault
                raise ChartRenderFailed(
                    f"{origin}: document {position} is not valid YAML: {error}"
                ) from error
            if body is None:
                continue
            if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
                raise ChartRenderFailed(
                    f"{origin}: document {position} is not a Kubernetes object (no metadata mapping)"
                )
            if body.get("kind") != "List":
                problems += [
                    Problem(origin, message, position, object_ref_of(body), field)
                    for field, message in shape_problems(body)
                ]
            manifests.append(Manifest(body, origin))
    if problems:
        raise ChartRenderFailed(f"chart {rendered.name}: objects Kubernetes would refuse", problems)
    return manifests
