"""`btp-gitops module-resources`: the artifact BTP Manager users consume, from a module chart.

    render chart (twice, pin volatile values) -> split pre-delete hooks -> blank images
    -> apply/<template file>, excluded/to-exclude.yml, delete/to-delete.yml, .release.yml
    -> write atomically

`delete/to-delete.yml` is one release step, as BTP Manager's release script computes it: the
documents of the previous release's `apply/` that this release no longer produces, matched on
group, kind, namespace and name (empty when the object set did not change); the previous
`delete/` is not carried over. A release is the `--release` tag with the chart's name and
version, recorded in `.release.yml`. Regenerating the same release keeps its list (minus anything
produced again, plus anything the regeneration stopped producing), so the command is idempotent
and a re-run never loses a deletion; a new release, and an artifact without the record (BTP
Manager's own, or one written before the record existed), start afresh from the previous
`apply/`.

The format (file names, `# Source:` lines, reading back) is domains.btp_operator.artifact, which
the controller reads the artifact with too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from btp_gitops.generator.charts.deterministic import pinned_value_notes, render_chart_deterministically
from btp_gitops.generator.charts.renderer import ChartRenderer, ChartRequest
from btp_gitops.generator.core.errors import ChartRenderFailed, Problem, SourceSyntaxError
from btp_gitops.generator.core.kinds import install_rank
from btp_gitops.generator.core.names import path_message
from btp_gitops.generator.core.objects import Manifest, ObjectKey, kind_of, object_key
from btp_gitops.generator.core.report import Note
from btp_gitops.generator.domains.btp_operator import (
    APPLY,
    DELETE_FILE,
    EXCLUDE_FILE,
    EXCLUDED_HOOKS,
    RELEASE_FILE,
    SourcedDocument,
    apply_file_name,
    artifact_text,
    is_apply_file,
    parse_sourced_documents,
)
from btp_gitops.generator.io.repo import TreeChanges, read_tree, write_subtree
from btp_gitops.generator.transforms.guards import assert_no_credentials
from btp_gitops.generator.transforms.hooks import split_hooks
from btp_gitops.generator.transforms.workloads import blank_deployment_images


@dataclass(slots=True)
class ModuleResources:
    files: dict[str, str]
    notes: list[Note] = field(default_factory=list)
    changes: TreeChanges = field(default_factory=TreeChanges)


def _install_order(manifests: list[Manifest]) -> list[Manifest]:
    return sorted(manifests, key=lambda m: install_rank(kind_of(m.body)))  # stable: keeps template order


def _sourced_text(manifests: list[Manifest]) -> str:
    return artifact_text(SourcedDocument(m.origin, m.body) for m in manifests)


def _previous_documents(path: str, data: bytes) -> list[SourcedDocument]:
    """A file of the previous artifact read back; one that is not ours to read is an input error."""
    try:
        return parse_sourced_documents(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as error:
        detail = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else "not valid YAML"
        raise SourceSyntaxError(
            "cannot read the previous module resources",
            [Problem(path, f"{detail} (a file of --out): fix or remove it")],
        ) from error


def previous_apply_documents(previous: dict[str, bytes]) -> list[SourcedDocument]:
    return [
        document
        for path, data in sorted(previous.items())
        if path.startswith(f"{APPLY}/") and is_apply_file(path)
        for document in _previous_documents(path, data)
    ]


@dataclass(frozen=True, slots=True)
class Release:
    """What one artifact was made for: the `--release` tag and the chart's name and version."""

    tag: str
    chart: str
    version: str

    def record(self) -> str:
        body = yaml.safe_dump(
            {"release": self.tag, "chart": self.chart, "version": self.version}, sort_keys=True
        )
        return (
            "# The release btp-gitops module-resources made this artifact for. Regenerating the same\n"
            "# release keeps delete/to-delete.yml; a new release computes it from apply/ afresh.\n" + body
        )


def recorded_release(previous: dict[str, bytes]) -> Release | None:
    """The release the previous artifact records; None for an artifact without a record."""
    data = previous.get(RELEASE_FILE)
    if data is None:
        return None
    try:
        record: Any = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as error:
        raise SourceSyntaxError(
            "cannot read the previous module resources",
            [Problem(RELEASE_FILE, "not valid YAML (a file of --out): fix or remove it")],
        ) from error
    fields = ("release", "chart", "version")
    if not isinstance(record, dict) or not all(isinstance(record.get(key), str) for key in fields):
        raise SourceSyntaxError(
            "cannot read the previous module resources",
            [Problem(RELEASE_FILE, "expected a mapping with the strings release, chart and version")],
        )
    return Release(record["release"], record["chart"], record["version"])


def removed_documents(
    previous: dict[str, bytes], current_keys: set[ObjectKey], release: Release
) -> list[SourcedDocument]:
    """The delete list of `release`: see the module's docstring for the rule."""
    before = previous_apply_documents(previous)
    dropped = [d for d in before if object_key(d.body) not in current_keys]
    # Only a record of this very release says the previous list is this release's own; without
    # one (BTP Manager's artifact) the list is a past step's, which its script never carries over.
    kept: list[SourcedDocument] = []
    if DELETE_FILE in previous and recorded_release(previous) == release:
        kept = _previous_documents(DELETE_FILE, previous[DELETE_FILE])
    listed: dict[ObjectKey, SourcedDocument] = {}
    for document in kept + dropped:
        key = object_key(document.body)
        if key not in current_keys:
            listed.setdefault(key, document)  # the list's own copy first, as it was last written
    return list(listed.values())


def build_module_resources(
    manifests: list[Manifest], previous: dict[str, bytes], release: Release
) -> dict[str, str]:
    """Lay out apply/, delete/, excluded/ and the release record from the chart's manifests and
    the previous artifact."""
    kept, excluded = split_hooks(manifests, EXCLUDED_HOOKS)
    kept = blank_deployment_images(kept)
    by_file: dict[str, list[Manifest]] = {}
    for manifest in kept:
        name = apply_file_name(manifest.origin)
        # The template's path comes from the chart (or a `# Source:` line of the helm CLI's output).
        if (message := path_message(manifest.origin)) or (message := path_message(name)):
            raise ChartRenderFailed(f"template {message}: it cannot name a file of module-resources")
        by_file.setdefault(name, []).append(manifest)
    files = {name: _sourced_text(_install_order(group)) for name, group in by_file.items()}
    current_keys = {object_key(m.body) for m in kept}
    files[DELETE_FILE] = artifact_text(removed_documents(previous, current_keys, release))
    files[EXCLUDE_FILE] = _sourced_text(_install_order(excluded))
    files[RELEASE_FILE] = release.record()
    return dict(sorted(files.items()))


def generate_module_resources(
    *,
    chart: Path,
    values_files: tuple[Path, ...],
    release: str,
    namespace: str,
    out: Path,
    engine: ChartRenderer,
) -> ModuleResources:
    request = ChartRequest(chart=chart, release=release, namespace=namespace, values_files=values_files)
    rendered, manifests, pinned = render_chart_deterministically(engine, request)
    notes = pinned_value_notes(pinned)
    previous = read_tree(out)
    files = build_module_resources(manifests, previous, Release(release, rendered.name, rendered.version))
    # The artifact is committed (a workflow opens a PR with it): the same guard as a render.
    assert_no_credentials(manifests, files, placeholders=True)
    changes = write_subtree(out.parent, out.name, files)
    return ModuleResources(files=files, notes=notes, changes=changes)
