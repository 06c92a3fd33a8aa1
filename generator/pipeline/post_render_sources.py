"""post-render of the source domains (CAP applications, Kyma modules) over a Helm stream.

    stream ─┬─ the domain's sources ──> SourceDocuments ──> schemas ──> domain render ──> hooks ─┐
            │  (CAP Operator's kinds;     (namespace          names      (the functions           │
            │   Kyma and its catalog)      filled in)                     render calls)           │
            └─ every other object, untouched ─────────────────────────────────────────────────────┴─> stream

The objects a render reads are rendered exactly as `render` renders them, by the domain's own
functions; their stages are then expressed as Helm hooks where Helm needs them
(`transforms.ordering.helm_hooks`). Every other object of the stream is handed back as it came,
in its place. Rendered objects follow them in Helm's install order; each names the template of the
object it came from (`# Source:` for Helm 3, the filename annotation for Helm 4), objects shared
by several (a domain's Gateway) the post-renderer's own file.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.core.collected_problems import CollectedProblems
from btp_gitops.generator.core.errors import (
    InvalidSpec,
    Problem,
    SchemaViolation,
    UsageError,
    raise_if_problems,
)
from btp_gitops.generator.core.layout import sort_key
from btp_gitops.generator.core.names import metadata_name_problems
from btp_gitops.generator.core.objects import Manifest, annotations_of, describe, object_key
from btp_gitops.generator.core.report import AppRender, Level, Note
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.core.validation import SchemaRegistry, source_problems, validate_sources
from btp_gitops.generator.domains import cap, kyma
from btp_gitops.generator.io.containment import ContainedCharts
from btp_gitops.generator.io.sources import load_sources
from btp_gitops.generator.pipeline.post_render_domains import CAP, GENERATED_FILENAME
from btp_gitops.generator.pipeline.render import (
    KymaOptions,
    kyma_context,
    reject_duplicate_objects,
    source_roots,
)
from btp_gitops.generator.pipeline.source_checks import still_checked
from btp_gitops.generator.streams.helm import (
    FILENAME_ANNOTATION,
    SOURCE_PREFIX,
    HelmStream,
    StreamDocument,
)
from btp_gitops.generator.transforms.guards import assert_no_credentials
from btp_gitops.generator.transforms.metadata import drop_empty_metadata_maps
from btp_gitops.generator.transforms.ordering import HELM_HOOK, helm_hooks

_KYMA_KINDS = frozenset({kyma.KYMA, *kyma.CATALOG_KINDS})


@dataclass(frozen=True, slots=True)
class SourceDomainInputs:
    """What the source domains need besides the stream; the CLI reads it."""

    schemas: SchemaRegistry
    namespace: str | None = None  # for domain objects the chart left without one
    catalogs: tuple[Path, ...] = ()  # Kyma: --catalog files and directories
    engine: ChartRenderer | None = None  # Kyma: renders the modules' charts
    allow_paths: tuple[Path, ...] = ()
    restricted_modules: tuple[str, ...] = ()  # Kyma: Lifecycle Manager's restricted-modules list


def _reads(domain: str) -> Callable[[StreamDocument], bool]:
    if domain == CAP:
        return lambda document: cap.is_cap_source(document.body)
    return lambda document: (document.body.get("apiVersion"), document.body.get("kind")) in _KYMA_KINDS


def _cluster_scoped(body: dict[str, object]) -> bool:
    return (body.get("apiVersion"), body.get("kind")) in cap.CLUSTER_SCOPED_KINDS


@dataclass(frozen=True, slots=True)
class _Sources:
    documents: list[SourceDocument]
    templates: dict[str, str]  # a source's origin (file#document) -> the template it came from


def _template(document: StreamDocument) -> str | None:
    """The chart file a stream object came from, as Helm named it (Source comment or filename)."""
    if document.source:
        return document.source
    value = annotations_of(document.body).get(FILENAME_ANNOTATION) if "metadata" in document.body else None
    return value if isinstance(value, str) else None


def _as_source(document: StreamDocument, stream_name: str, namespace: str | None) -> SourceDocument:
    """A stream object as a source file's document: Helm's filename annotation is Helm's, not the
    user's (render would carry it into every derived object), and a chart that leaves the
    namespace to Helm gets --namespace, as Helm would apply it."""
    body = copy.deepcopy(document.body)
    metadata = body["metadata"]
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(FILENAME_ANNOTATION, None)
        if not annotations:
            del metadata["annotations"]
    if namespace and not metadata.get("namespace") and not _cluster_scoped(body):
        metadata["namespace"] = namespace
    file = f"{stream_name} ({_template(document) or f'document {document.position}'})"
    return SourceDocument(file=file, document=document.position, body=body, directory=Path.cwd())


def _namespace_problems(documents: list[SourceDocument]) -> list[Problem]:
    return [
        Problem(
            file=document.file,
            document=document.document,
            object_ref=document.ref,
            field_path="metadata.namespace",
            message="required: Helm does not tell a post-renderer the release namespace; set it in the "
            "template (namespace: {{ .Release.Namespace }}) or pass --namespace",
        )
        for document in documents
        if not document.body["metadata"].get("namespace") and not _cluster_scoped(document.body)
    ]


def _read_sources(
    stream: HelmStream, domain: str, stream_name: str, inputs: SourceDomainInputs
) -> tuple[_Sources, list[StreamDocument]]:
    reads = _reads(domain)
    documents, templates, others = [], {}, []
    for document in stream.documents:
        if not reads(document):
            others.append(document)
            continue
        source = _as_source(document, stream_name, inputs.namespace)
        documents.append(source)
        templates[f"{source.file}#{source.document}"] = _template(document) or GENERATED_FILENAME
    return _Sources(documents, templates), others


def _checked(
    sources: list[SourceDocument], schemas: SchemaRegistry, checks: CollectedProblems
) -> list[SourceDocument]:
    """The checks a render makes of its sources, plus the namespace Helm would otherwise fill in;
    the sources that passed them (pipeline.source_checks), their problems kept in `checks`."""
    checks.add(SchemaViolation, "invalid source documents", source_problems(sources, schemas))
    named = [d for d in sources if (d.file, d.document) not in checks.failed_documents()]
    problems = metadata_name_problems(named) + _namespace_problems(named)
    checks.add(InvalidSpec, "objects of the stream that cannot be rendered", problems)
    return still_checked(sources, checks.failed_documents())


def _render_cap(documents: list[SourceDocument]) -> list[tuple[AppRender, int]]:
    apps = cap.render_cap_applications(SourceSet.of(documents))
    return [(app, cap.release_tier(app)) for app in apps]


def _render_kyma(
    documents: list[SourceDocument], inputs: SourceDomainInputs, now: datetime
) -> list[tuple[AppRender, int]]:
    if not inputs.catalogs or inputs.engine is None:
        raise UsageError("Kyma objects are rendered from a module catalog: pass --catalog DIR")
    options = KymaOptions(catalogs=inputs.catalogs, at=now, restricted_modules=inputs.restricted_modules)
    catalog = load_sources(inputs.catalogs)
    validate_sources(catalog, inputs.schemas)
    raise_if_problems(InvalidSpec, "source names that cannot become objects", metadata_name_problems(catalog))
    # No earlier render is recorded beside a Helm release: every module is rendered at the version
    # the catalog resolves to (no downgrade guard, no maintenance window to wait for).
    plan = kyma.plan_kyma_modules(SourceSet.of(documents), kyma_context(options, catalog, {}, "post-render"))
    roots = source_roots((), options, inputs.allow_paths)
    apps = kyma.render_kyma_modules(
        plan, ContainedCharts(inputs.engine, roots), lambda paths: load_sources(paths, roots=roots)
    )
    return [(app, 0) for app in apps]


def _collisions(rendered: list[Manifest], others: list[StreamDocument], stream_name: str) -> list[Problem]:
    """A rendered object the chart also has: Helm would refuse the release, so say which."""
    passed = {tuple(object_key(document.body)): document for document in others}
    return [
        Problem(
            file=stream_name,
            document=passed[key].position,
            object_ref=describe(manifest.body),
            message=f"the chart has this object, and {manifest.origin} renders it too",
        )
        for manifest in rendered
        if (key := tuple(object_key(manifest.body))) in passed
    ]


def _stream_document(manifest: Manifest, templates: dict[str, str], helm4: bool) -> StreamDocument:
    template = templates.get(manifest.origin, GENERATED_FILENAME)
    if helm4:
        annotations_of(manifest.body)[FILENAME_ANNOTATION] = template
        comments: tuple[str, ...] = ()
    else:
        comments = (f"{SOURCE_PREFIX}{template}",)
    return StreamDocument(manifest.body, position=0, line=0, comments=comments, generated=True)


def _helm3_hook_notes(rendered: list[Manifest], helm4: bool) -> list[Note]:
    hooks = [m for m in rendered if HELM_HOOK in annotations_of(m.body)]
    if helm4 or not hooks:
        return []
    return [
        Note(
            Level.WARNING,
            "HooksNotRunByHelm3",
            f"{len(hooks)} hook(s), e.g. {describe(hooks[0].body)}",
            "Helm 3 runs the post-renderer after it set the hooks aside: the hooks added here are "
            "created with the other objects, unordered (Helm 4 runs them as hooks)",
        )
    ]


def post_render_sources(
    stream: HelmStream,
    domain: str,
    inputs: SourceDomainInputs,
    now: datetime,
    stream_name: str = "<stdin>",
) -> tuple[int, list[Note]]:
    """Render the domain's objects of `stream` in place; returns how many objects were added (the
    rendered ones, which replace the sources) and the notes."""
    sources, others = _read_sources(stream, domain, stream_name, inputs)
    if not sources.documents:
        return 0, []
    # Every problem of the checks, the domain's rules and the duplicates in one run (docs/errors.md).
    checks = CollectedProblems()
    documents = _checked(sources.documents, inputs.schemas, checks)
    none: list[tuple[AppRender, int]] = []
    placed = checks.run(
        lambda: _render_cap(documents) if domain == CAP else _render_kyma(documents, inputs, now), none
    )
    apps = [app for app, _ in placed]
    checks.run(lambda: reject_duplicate_objects(apps), None)
    checks.raise_if_any()
    rendered = [m for app, tier in placed for m in helm_hooks(app.manifests, tier)]
    drop_empty_metadata_maps(rendered)
    assert_no_credentials(rendered, {})
    raise_if_problems(
        InvalidSpec, "rendered objects the chart has too", _collisions(rendered, others, stream_name)
    )
    rendered.sort(key=lambda m: sort_key(m.body))
    helm4 = stream.annotated_by_helm4
    stream.documents = others + [_stream_document(m, sources.templates, helm4) for m in rendered]
    notes = [note for app in apps for note in app.notes] + _helm3_hook_notes(rendered, helm4)
    return len(rendered), notes
