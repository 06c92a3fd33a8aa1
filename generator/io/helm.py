"""Helm engines: Helm's own Go engine embedded (default) or the `helm` CLI.

Both render in a child process bounded in memory, CPU time, wall-clock time and output size
(io.chart_limits), refuse a chart whose schemas refer outside themselves (io.chart_schemas), render
offline (`lookup` returns nothing, no cluster is contacted) and give the same
`RenderedChart`: one text per template file, without NOTES.txt, partials or empty output.
"""

from __future__ import annotations

import re
import tempfile
from typing import Any

import yaml

from btp_gitops.generator.charts.renderer import ChartRequest, RenderedChart
from btp_gitops.generator.core.errors import ChartNotFound, Problem, SourceSyntaxError
from btp_gitops.generator.core.yamlio import dump_object, load_values_document, yaml_problem_location
from btp_gitops.generator.io.chart_limits import ChartLimits
from btp_gitops.generator.io.input_files import UnreadableInput, read_input_text
from btp_gitops.generator.io.sources import display_path


def _check_chart_dir(request: ChartRequest) -> None:
    if not (request.chart / "Chart.yaml").is_file():
        raise ChartNotFound(
            f"chart not found: {display_path(request.chart)} has no Chart.yaml{_requested_by(request)}"
        )


def _read_values_files(request: ChartRequest) -> list[dict[str, Any]]:
    layers = []
    for path in request.values_files:
        shown = display_path(path)
        try:
            loaded = load_values_document(read_input_text(path))
        except UnreadableInput as error:
            raise SourceSyntaxError(
                "cannot read values file", [Problem(file=shown, message=error.reason)]
            ) from error
        except yaml.YAMLError as error:
            message = f"invalid YAML: {yaml_problem_location(error)}"
            raise SourceSyntaxError("invalid values file", [Problem(file=shown, message=message)]) from error
        except RecursionError as error:
            message = "invalid YAML: nested too deeply"
            raise SourceSyntaxError("invalid values file", [Problem(file=shown, message=message)]) from error
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise SourceSyntaxError(
                "invalid values file", [Problem(file=shown, message="expected a mapping")]
            )
        layers.append(loaded)
    return layers


def merge_values(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of user values: maps merge recursively, anything else replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = value
    return merged


def user_values(request: ChartRequest) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for layer in [*_read_values_files(request), request.values]:
        values = merge_values(values, layer)
    return values


def _keep_template(path: str, text: str) -> bool:
    return not path.endswith("NOTES.txt") and bool(text.strip())


class EmbeddedHelm:
    """Helm's Go engine through helm-python-sdk: no binary, rendered in a child process that the
    limits bound (io.chart_limits, io.helm_process), after its schemas' references are checked."""

    def __init__(self, limits: ChartLimits | None = None) -> None:
        self.limits = ChartLimits.from_environment() if limits is None else limits

    def render_chart(self, request: ChartRequest) -> RenderedChart:
        # The chart reader (tarfile, gzip) and the worker's process code are loaded when a chart
        # is rendered: every render builds an engine, most renders (CAP tenants) use none.
        from btp_gitops.generator.io.chart_schemas import check_schema_references  # noqa: PLC0415
        from btp_gitops.generator.io.helm_process import shared_worker  # noqa: PLC0415

        _check_chart_dir(request)
        describe = f"chart {display_path(request.chart)}{_requested_by(request)}"
        check_schema_references(request.chart, display_path(request.chart), _requested_by(request))
        values = user_values(request)
        reply = shared_worker(self.limits).render(
            {
                "chart": str(request.chart),
                "values": values,
                "release": request.release,
                "namespace": request.namespace,
            },
            describe,
        )
        metadata, rendered, crds = reply["metadata"], reply["templates"], reply["crds"]
        return RenderedChart(
            name=str(metadata["name"]),
            version=str(metadata["version"]),
            app_version=str(metadata.get("appVersion", "")),
            templates={path: text for path, text in sorted(rendered.items()) if _keep_template(path, text)},
            crds=dict(sorted(crds.items())),
        )


_SOURCE_COMMENT = re.compile(r"^# Source: (\S+)\s*$", re.MULTILINE)


class HelmCli:
    """The `helm` binary (v3 or v4): `helm template`, split back into templates by `# Source:`."""

    def __init__(self, binary: str = "helm", limits: ChartLimits | None = None) -> None:
        self.binary = binary
        self.limits = ChartLimits.from_environment() if limits is None else limits

    def render_chart(self, request: ChartRequest) -> RenderedChart:
        from btp_gitops.generator.io.chart_schemas import check_schema_references  # noqa: PLC0415 - as above
        from btp_gitops.generator.io.helm_process import run_helm_cli  # noqa: PLC0415

        _check_chart_dir(request)
        metadata = _chart_metadata(request)
        describe = f"chart {display_path(request.chart)}{_requested_by(request)}"
        check_schema_references(request.chart, display_path(request.chart), _requested_by(request))
        values = user_values(request)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as values_file:
            values_file.write(dump_object(values))
            values_file.flush()
            command = [
                self.binary,
                "template",
                request.release,
                str(request.chart),
                "--namespace",
                request.namespace,
                "--values",
                values_file.name,
                "--include-crds",
            ]
            stdout, _ = run_helm_cli(command, self.limits, describe)
        templates: dict[str, str] = {}
        crds: dict[str, str] = {}
        pieces = _SOURCE_COMMENT.split(stdout)
        for source, text in zip(pieces[1::2], pieces[2::2], strict=True):
            body = re.sub(r"\n---\s*$", "\n", text.strip("\n") + "\n")
            target = crds if "/crds/" in source else templates
            target[source] = target.get(source, "") + ("---\n" if source in target else "") + body
        return RenderedChart(
            name=str(metadata.get("name", "")),
            version=str(metadata.get("version", "")),
            app_version=str(metadata.get("appVersion", "")),
            templates={path: text for path, text in sorted(templates.items()) if _keep_template(path, text)},
            crds=dict(sorted(crds.items())),
        )


def _chart_metadata(request: ChartRequest) -> dict[str, Any]:
    """Chart.yaml, read within the input limits (the chart may come from an untrusted change)."""
    shown = display_path(request.chart / "Chart.yaml")
    try:
        metadata = load_values_document(read_input_text(request.chart / "Chart.yaml"))
    except UnreadableInput as error:
        raise ChartNotFound(f"cannot read {shown}{_requested_by(request)}: {error.reason}") from error
    except yaml.YAMLError as error:
        raise ChartNotFound(
            f"invalid {shown}{_requested_by(request)}: {yaml_problem_location(error)}"
        ) from error
    except RecursionError as error:
        raise ChartNotFound(f"invalid {shown}{_requested_by(request)}: nested too deeply") from error
    if not isinstance(metadata, dict):
        raise ChartNotFound(f"invalid {shown}{_requested_by(request)}: expected a mapping")
    return metadata


def _requested_by(request: ChartRequest) -> str:
    return f" (requested by {request.requested_by})" if request.requested_by else ""
