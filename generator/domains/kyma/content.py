"""A resolved module's objects: its manifests or chart, its default CR, labelled and ordered.

What Lifecycle Manager's Manifest did in the cluster happens here once, into one app directory
per module (`kyma-<module>`): every object gets the module labels, namespaced objects without a
namespace go to `kyma-system` and cluster-scoped ones lose theirs, the template's `spec.data`
becomes the default CR under `CreateAndDelete`, and sync stages put CRDs and namespaces first and
the default CR after the module's CRDs and operator (transforms.ordering).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from btp_gitops.generator.charts.deterministic import pinned_value_notes, render_chart_deterministically
from btp_gitops.generator.charts.renderer import ChartRenderer, ChartRequest
from btp_gitops.generator.core.errors import InvalidSpec, PathNotAllowed, Problem, SourceSyntaxError
from btp_gitops.generator.core.kinds import ScopeIndex
from btp_gitops.generator.core.layout import KUSTOMIZATION
from btp_gitops.generator.core.objects import Manifest, get_path, name_of
from btp_gitops.generator.core.report import AppRender, Note
from btp_gitops.generator.core.sources import SourceDocument, problem_at
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import load_trusted_document
from btp_gitops.generator.domains.kyma.model import (
    SYNC_NAMESPACE,
    ChartContent,
    CustomResourcePolicy,
    RawManifest,
    Template,
)
from btp_gitops.generator.domains.kyma.status import ResourceRef
from btp_gitops.generator.transforms.hooks import drop_uninstall_hooks
from btp_gitops.generator.transforms.metadata import add_labels, set_default_namespace
from btp_gitops.generator.transforms.ordering import (
    ARGOCD_SYNC_WAVE,
    annotate_argocd_stage,
    annotate_argocd_sync_waves,
    stage_of_directory,
)
from btp_gitops.generator.transforms.volatile import still_pinned

APP_PREFIX = "kyma-"

# Reads the YAML documents of files and directories (generator.io.sources.load_sources).
ReadManifests = Callable[[Sequence[Path]], list[SourceDocument]]


def app_name(module: str) -> str:
    """The app directory of a module; the prefix keeps it clear of other domains' apps."""
    return f"{APP_PREFIX}{module}"


def module_labels(module: str) -> dict[str, str]:
    return {
        "operator.kyma-project.io/managed-by": "kyma",
        "app.kubernetes.io/part-of": "Kyma",
        "app.kubernetes.io/component": module,
    }


@dataclass(frozen=True, slots=True)
class ModuleRender:
    """One module to render: the template resolution chose, and the Kyma's policy for its CR."""

    module: str
    template: Template
    policy: CustomResourcePolicy


def _where(template: Template, field_path: str) -> str:
    source = template.source
    return f"{source.file}: document {source.document} ({source.ref}): {field_path}"


def _raw_manifests(
    module: str, content: RawManifest, template: Template, read: ReadManifests
) -> list[Manifest]:
    try:
        documents = read([content.path])
    except (SourceSyntaxError, PathNotAllowed) as error:
        raise type(error)(
            f"cannot read the resources of module {module} ({_where(template, 'spec.rawManifest.path')})",
            error.problems,
        ) from error
    if not documents:
        raise InvalidSpec(
            f"cannot render module {module}",
            [problem_at(template.source, "spec.rawManifest.path", f"no manifests in {content.path}")],
        )
    return [Manifest(d.body, f"{d.file}#{d.document}") for d in documents]


def _chart_manifests(
    module: str, content: ChartContent, template: Template, engine: ChartRenderer
) -> tuple[list[Manifest], list[Note]]:
    request = ChartRequest(
        chart=content.path,
        release=content.release_name or module,
        namespace=SYNC_NAMESPACE,
        values=content.values,
        values_files=content.values_files,
        requested_by=_where(template, "spec.chart.path"),
        source=template.source,
        allow_empty=content.allow_empty,
    )
    _, manifests, pinned = render_chart_deterministically(engine, request)
    manifests, excluded_notes = drop_uninstall_hooks(manifests)
    notes = pinned_value_notes(still_pinned(pinned, manifests)) + excluded_notes
    return manifests, notes


def _default_cr(module: str, template: Template) -> Manifest:
    body = copy.deepcopy(template.data or {})
    if not name_of(body):
        raise InvalidSpec(
            f"cannot render the default CR of module {module}",
            [problem_at(template.source, "spec.data.metadata.name", "required field is missing")],
        )
    return Manifest(body, f"{template.source.file}#{template.source.document}: spec.data")


def render_module(module: ModuleRender, engine: ChartRenderer, read: ReadManifests) -> AppRender:
    """The app of one resolved module."""
    template = module.template
    notes: list[Note] = []
    if isinstance(template.content, RawManifest):
        manifests = _raw_manifests(module.module, template.content, template, read)
    elif isinstance(template.content, ChartContent):
        manifests, notes = _chart_manifests(module.module, template.content, template, engine)
    else:
        raise InvalidSpec(
            f"cannot render module {module.module}",
            [problem_at(template.source, "spec", "spec.rawManifest or spec.chart is required to render it")],
        )
    if module.policy is CustomResourcePolicy.CREATE_AND_DELETE and template.data is not None:
        manifests.append(_default_cr(module.module, template))
    manifests = set_default_namespace(manifests, SYNC_NAMESPACE, ScopeIndex())
    manifests = add_labels(manifests, module_labels(module.module))
    manifests = annotate_argocd_sync_waves(manifests)
    return AppRender(app_name(module.module), manifests, notes)


def kept_app(
    app: str, previous: Mapping[str, str], where: str, without: ResourceRef | None = None
) -> AppRender:
    """An app as the previous render wrote it (laid out again, the same bytes come out; the
    pipeline carries the files themselves over), or without one object (`without`: the default
    CR of a module being removed)."""
    manifests = []
    budget = AliasBudget()  # the alias limit holds for the whole app
    # Only this app's files are read (`previous` may read each file when it is asked for).
    for path in sorted(path for path in previous if path.startswith(f"{app}/")):
        text = previous[path]
        # Kustomizations are laid out again: the app's own, and Flux's one per stage directory.
        if path.rsplit("/", 1)[-1] != KUSTOMIZATION:
            try:
                body = load_trusted_document(text, budget)
            except (yaml.YAMLError, RecursionError):
                body = None
            if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
                # The tree may hold a file a person put there: say which, instead of guessing.
                raise InvalidSpec(
                    f"cannot keep app {app} as it was rendered before",
                    [Problem(f"{where}/{path}", "not a Kubernetes object: fix or remove the file")],
                )
            if without is not None and without.matches(body):
                continue
            manifest = Manifest(body, f"{where}/{path}")
            # Laid out for Flux, the stage is the directory (the sync wave was taken off): put it back.
            parts = path.split("/")
            stage = stage_of_directory(parts[1]) if len(parts) == 3 else None
            if stage is not None and ARGOCD_SYNC_WAVE not in (
                get_path(body, "metadata", "annotations") or {}
            ):
                manifest = annotate_argocd_stage(manifest, stage.stage, stage.step)
            manifests.append(manifest)
    return AppRender(app, manifests)
