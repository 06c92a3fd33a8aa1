"""`btp-gitops module-resources`: the artifact BTP Manager users consume, from a module chart.

    render chart (twice, pin volatile values) -> split pre-delete hooks -> blank images
    -> apply/<template>.yml, excluded/to-exclude.yml, delete/to-delete.yml -> write atomically

`delete/to-delete.yml` lists the documents of the previous `apply/` that the chart no longer
produces, matched on group, kind, namespace and name. It describes one step (previous -> current),
as BTP Manager's did; re-running on an unchanged chart keeps the last step's list instead of
emptying it, so the command is idempotent and the committed artifact never drifts.

The format (file names, `# Source:` lines, reading back) is domains.btp_operator.artifact, which
the controller reads the artifact with too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from btp_gitops.generator.charts.deterministic import render_chart_deterministically
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
    SourcedDocument,
    apply_file_name,
    artifact_text,
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
        if path.startswith(f"{APPLY}/")
        for document in _previous_documents(path, data)
    ]


def removed_documents(previous: dict[str, bytes], current_keys: set[ObjectKey]) -> list[SourcedDocument]:
    """The delete list: previous apply/ documents whose identity the chart no longer produces."""
    before = previous_apply_documents(previous)
    before_keys = {object_key(d.body) for d in before}
    if before_keys == current_keys and DELETE_FILE in previous:
        # Same objects as last time: keep the last step's list (idempotent regeneration).
        kept = _previous_documents(DELETE_FILE, previous[DELETE_FILE])
        return [d for d in kept if object_key(d.body) not in current_keys]
    return [d for d in before if object_key(d.body) not in current_keys]


def build_module_resources(manifests: list[Manifest], previous: dict[str, bytes]) -> dict[str, str]:
    """Lay out apply/, delete/ and excluded/ from the chart's manifests and the previous artifact."""
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
    files[DELETE_FILE] = artifact_text(removed_documents(previous, current_keys))
    files[EXCLUDE_FILE] = _sourced_text(_install_order(excluded))
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
    _, manifests, notes = render_chart_deterministically(engine, request)
    previous = read_tree(out)
    files = build_module_resources(manifests, previous)
    # The artifact is committed (a workflow opens a PR with it): the same guard as a render.
    assert_no_credentials(manifests, files, placeholders=True)
    changes = write_subtree(out.parent, out.name, files)
    return ModuleResources(files=files, notes=notes, changes=changes)
