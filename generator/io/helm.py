"""Helm engines: Helm's own Go engine embedded in-process (default) or the `helm` CLI.

Both render offline (`lookup` returns nothing, no cluster is contacted) and give the same
`RenderedChart`: one text per template file, without NOTES.txt, partials or empty output.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from typing import Any

import yaml

from btp_gitops.generator.charts.renderer import ChartRequest, RenderedChart
from btp_gitops.generator.core.errors import ChartNotFound, ChartRenderFailed, Problem, SourceSyntaxError
from btp_gitops.generator.core.yamlio import dump_object, load_values_document, yaml_problem_location
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
    """Helm's Go engine in-process through helm-python-sdk: no binary, no subprocess."""

    def render_chart(self, request: ChartRequest) -> RenderedChart:
        import helm_python  # noqa: PLC0415 - loading the native library costs ~0.1 s; only when used

        _check_chart_dir(request)
        values = user_values(request)
        try:
            with helm_python.Chart.load(str(request.chart)) as chart:
                metadata = chart.metadata
                rendered = chart.render(
                    values, name=request.release, namespace=request.namespace, is_install=True
                )
                crds = {f"{metadata['name']}/{c['name']}": c["data"] for c in chart.crds}
        except helm_python.HelmChartLoadError as error:
            raise ChartNotFound(f"cannot load chart {display_path(request.chart)}: {error}") from error
        except helm_python.HelmError as error:
            raise ChartRenderFailed(
                f"chart {display_path(request.chart)}{_requested_by(request)} failed to render: {error}"
            ) from error
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

    def __init__(self, binary: str = "helm") -> None:
        self.binary = binary

    def render_chart(self, request: ChartRequest) -> RenderedChart:
        _check_chart_dir(request)
        metadata = _chart_metadata(request)
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
            try:
                completed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
            except FileNotFoundError as error:
                raise ChartRenderFailed(f"helm CLI not found: {self.binary}") from error
        if completed.returncode != 0:
            raise ChartRenderFailed(
                f"chart {display_path(request.chart)}{_requested_by(request)} failed to render with "
                f"{self.binary}: {completed.stderr.strip()}"
            )
        templates: dict[str, str] = {}
        crds: dict[str, str] = {}
        pieces = _SOURCE_COMMENT.split(completed.stdout)
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
