"""`btp-gitops render`: source custom resources -> GitOps repo.

load sources -> validate -> render each domain -> lay out files -> guard -> write -> commit

Validation and each domain's rules report together: a stage that finds problems skips only the
documents it failed (pipeline.source_checks, core.collected_problems), and the render fails once,
after every domain was checked, with every problem.

`render_into_repo` holds the output's lock (io.repo) from reading the previous tree to the
commit: it finishes a journal a killed run left, scans the cluster directory once (the writer
rereads only what changed since), and decides the layout: a populated directory rendered before
tenants were sharded stays flat until `--migrate-layout` (core.ownership.shards_tenants).
`render_cluster` is everything before writing, which `diff` shares. Apps a domain keeps as the
previous render wrote them (a Kyma module that cannot be resolved, waits for a maintenance window
or may not go down a version) are carried over byte for byte (`carry_over`) and stay owned; their
problems ride on the result (exit 9 after writing, or exit 3 before it with `--strict`). The
credential guard (transforms.guards) and `reject_unsafe_paths` run on the laid-out tree, and
only after both passed are the render cache's entries and pack written (pipeline.cached_sources).
"""

from __future__ import annotations

import dataclasses
import functools
import gc
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.core.collected_problems import CollectedProblems
from btp_gitops.generator.core.errors import (
    InvalidSpec,
    Problem,
    RenderWouldEmpty,
    raise_if_problems,
)
from btp_gitops.generator.core.layout import TENANTS_DIR, app_directory, app_files, app_path, staged_app_files
from btp_gitops.generator.core.names import (
    NameRule,
    name_message,
    object_name_message,
    path_message,
    require_cluster_name,
)
from btp_gitops.generator.core.objects import Manifest, describe, object_key
from btp_gitops.generator.core.ownership import (
    MANIFEST_FILE,
    is_manifest,
    manifest_files,
    removal_refusal,
    shards_tenants,
)
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress, counted
from btp_gitops.generator.core.report import AppRender, Level, Note, report_dict
from btp_gitops.generator.core.source_contents import KnownKinds, Skipped, SourceSorting
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.core.validation import SchemaRegistry
from btp_gitops.generator.domains.btp_operator import render_btp_operator
from btp_gitops.generator.domains.cap import (
    always_make,
    application_inputs,
    render_cap_applications,
)
from btp_gitops.generator.domains.kyma import (
    DEFAULT_MIN_WINDOW,
    KymaContext,
    KymaPlan,
    KymaReport,
    PolicyText,
    plan_kyma_modules,
    render_kyma_modules,
)
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.containment import ContainedCharts, SourceRoots
from btp_gitops.generator.io.render_cache import RenderCache
from btp_gitops.generator.io.repo import (
    DEFAULT_LOCK_TIMEOUT,
    LocalFilesystem,
    TreeChanges,
    directory_lock,
    git_scan,
    prepared_parent,
    recover_leftovers,
    write_subtree,
)
from btp_gitops.generator.io.sources import load_sources
from btp_gitops.generator.pipeline.cached_sources import (
    CachedSources,
    PackLayout,
    ReusedApp,
    check_cached_records,
    load_cached_sources,
    thawed,
)
from btp_gitops.generator.pipeline.commit_message import commit_message
from btp_gitops.generator.pipeline.previous_tree import DecodedFiles, owned_previous
from btp_gitops.generator.pipeline.reused_output import (
    HeldBlobs,
    HeldFiles,
    Unchanged,
    check_reused_output,
    held_directories,
    held_in_work_tree,
    lay_out_cluster,
)
from btp_gitops.generator.pipeline.source_checks import checked_sources
from btp_gitops.generator.pipeline.tenant_renders import TenantRenders
from btp_gitops.generator.pipeline.wiring import app_stages, cluster_wiring
from btp_gitops.generator.transforms.guards import assert_no_credentials
from btp_gitops.generator.transforms.metadata import drop_empty_metadata_maps
from btp_gitops.generator.transforms.ordering import flux_stages
from btp_gitops.generator.wiring.objects import ARGOCD, DEFAULT_TARGET, FLUX, TargetOptions

if TYPE_CHECKING:
    from btp_gitops.generator.pipeline.validate import ValidateOptions


@dataclass(frozen=True, slots=True)
class KymaOptions:
    """`render --catalog DIR --maintenance-policy FILE --at TIME --restricted-modules NAMES
    --allow-module-removal`, for the Kyma modules domain."""

    catalogs: tuple[Path, ...] = ()
    maintenance_policy: PolicyText | None = None  # the file as the CLI read it
    at: datetime | None = None  # when maintenance windows are checked; None: now
    min_window: timedelta = DEFAULT_MIN_WINDOW  # a running window with less left is not entered
    restricted_modules: tuple[str, ...] = ()  # Lifecycle Manager's restricted-modules list
    allow_module_removal: bool = False  # remove modules even while an entry cannot be resolved


@dataclass(frozen=True, slots=True)
class RenderRequest:
    sources: tuple[Path, ...]
    out: Path
    cluster: str
    commit: bool = False
    validate: ValidateOptions | None = None  # validate the objects before writing them
    kyma: KymaOptions = KymaOptions()
    target: TargetOptions = DEFAULT_TARGET  # Argo CD or Flux layout, and the wiring
    allow_paths: tuple[Path, ...] = ()  # --allow-path: more roots sources may name files in
    allow_empty: bool = False  # may remove every app, or most objects, of a populated cluster
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT  # seconds to wait for another run writing --out
    strict: bool = False  # a Kyma module that cannot be resolved fails the render, nothing written
    migrate_layout: bool = False  # --migrate-layout: move the tenants of a flat repository into shards
    cache: RenderCache | None = None  # --cache-dir: tenant records rendered before (None: --no-cache)


@dataclass(slots=True)
class RenderResult:
    cluster: str
    apps: list[AppRender]
    files: dict[str, str]  # path relative to clusters/<cluster>/ -> text
    changes: TreeChanges = field(default_factory=TreeChanges)
    commit: str | None = None
    notes: list[Note] = field(default_factory=list)
    kymas: list[KymaReport] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)  # beside the apps (no objects), read back next time
    module_problems: list[Problem] = field(default_factory=list)  # Kyma modules not resolved (apps kept)
    skipped: list[Skipped] = field(default_factory=list)  # what under the source paths is no source
    blob_ids: dict[str, str] = field(default_factory=dict)  # the pack's (reused_output.ClusterLayout.claims)
    # With `leave_out_held` or `keep_held`: the app directories the previous tree holds as the pack
    # gives them, whose files are not in `files` (reused_output.held_directories, held_in_work_tree).
    held: frozenset[str] = frozenset()
    held_files: HeldFiles = field(default_factory=HeldFiles)  # with `keep_held`: theirs, not in `files`

    def report(self) -> dict[str, Any]:
        data = report_dict(self.cluster, self.apps, self.notes)
        data["kymas"] = [kyma.as_dict() for kyma in self.kymas]
        data["changes"] = {
            "added": list(self.changes.added),
            "changed": list(self.changes.changed),
            "removed": list(self.changes.removed),
        }
        data["commit"] = self.commit
        data["moduleProblems"] = [problem.render() for problem in self.module_problems]
        data["skipped"] = [skipped.as_dict() for skipped in self.skipped]
        return data

    def raise_if_strict(self, strict: bool) -> None:
        """With --strict, a module that could not be resolved fails the render like any input error."""
        if strict:
            raise_if_problems(
                InvalidSpec, "Kyma modules that cannot be resolved (--strict)", self.module_problems
            )


def cluster_subtree(cluster: str) -> str:
    return f"clusters/{require_cluster_name(cluster)}"


def source_roots(sources: tuple[Path, ...], kyma: KymaOptions, allow_paths: tuple[Path, ...]) -> SourceRoots:
    """Where sources may name files: what the command line gave, and the charts that ship."""
    bundled_chart = bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART)
    return SourceRoots.of(sources, kyma.catalogs, allow_paths, [bundled_chart])


def render_domains(
    sources: SourceSet,
    engine: ChartRenderer,
    kyma: KymaPlan,
    roots: SourceRoots,
    *,
    tenants: TenantRenders | None = None,
    checks: CollectedProblems | None = None,
) -> list[AppRender]:
    """Every domain's apps. Each domain reads only its own kinds, and files only inside `roots`.
    A domain whose sources break its rules renders nothing: its problems go to `checks` and the
    other domains are still rendered (and checked); without `checks`, they are raised at once."""
    contained = ContainedCharts(engine, roots)
    # The render cache's one seam with the CAP domain: each tenant's app is had through
    # `tenants.app_of`, which takes the apps in `tenants.known` and keeps those it makes.
    tenant_app_of = tenants.app_of if tenants is not None else always_make
    collected = checks if checks is not None else CollectedProblems()
    btp_chart = bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART)
    none: list[AppRender] = []
    apps = [
        *collected.run(lambda: render_btp_operator(sources, contained, btp_chart), none),
        *collected.run(
            lambda: render_kyma_modules(kyma, contained, lambda paths: load_sources(paths, roots=roots)), none
        ),
        *collected.run(lambda: render_cap_applications(sources, tenant_app_of), none),
    ]
    if checks is None:
        collected.raise_if_any()
    return apps


def reject_unsafe_paths(apps: list[AppRender], files: dict[str, str]) -> None:
    """The last check before anything is written or printed: every app directory is a DNS-1123
    subdomain, every object's name one Kubernetes accepts (its file is named after it) and every
    path a plain relative one. The sources' names were checked where they were read; this holds
    whatever a domain or a chart made of them. An app reused from the render pack passed when it
    was rendered (`files` then leaves out its files: the caller knows them)."""
    apps = [app for app in apps if not isinstance(app, ReusedApp)]
    problems = [
        Problem(
            file=app.manifests[0].origin if app.manifests else app.app,
            message=f"app directory {message}",
        )
        for app in apps
        if (message := name_message(app.app, NameRule.SUBDOMAIN)) is not None
    ]
    problems += [
        Problem(
            file=app.manifests[0].origin if app.manifests else app.app,
            message=f"app group {message}",
        )
        for app in apps
        if app.group is not None and (message := name_message(app.group, NameRule.SUBDOMAIN)) is not None
    ]
    problems += [
        Problem(
            file=app.manifests[0].origin if app.manifests else app.app,
            message=f"an app may not be named {TENANTS_DIR!r} (the directory of the tenants' shards)",
        )
        for app in apps
        if app.group is None and app.app == TENANTS_DIR
    ]
    for app in apps:
        for manifest in app.manifests:
            metadata = manifest.body.get("metadata")
            metadata = metadata if isinstance(metadata, dict) else {}
            name, namespace = metadata.get("name"), metadata.get("namespace")
            message = object_name_message(name)
            if message is None and namespace not in (None, ""):
                message = name_message(namespace, NameRule.LABEL)
                field = "metadata.namespace"
            else:
                field = "metadata.name"
            if message is not None:
                problems.append(
                    Problem(
                        file=manifest.origin,
                        object_ref=describe(manifest.body),
                        field_path=field,
                        message=message,
                    )
                )
    problems += [Problem(file=path, message=message) for path in files if (message := path_message(path))]
    raise_if_problems(InvalidSpec, "the rendered tree would have unsafe paths", problems)


def object_keys(app: AppRender) -> list[str]:
    """The keys of the app's objects (core.objects.ObjectKey.text), in its objects' order."""
    if isinstance(app, ReusedApp):
        return app.packed.keys  # as the render that packed it found them
    return [object_key(manifest.body).text() for manifest in app.manifests]


def reject_duplicate_objects(apps: list[AppRender], keys: list[list[str]] | None = None) -> None:
    """Two apps, or one app twice, must never write the same cluster object (`keys`: each app's
    `object_keys`, when the caller has them)."""
    seen: dict[str, str] = {}
    problems = []
    for app, app_keys in zip(apps, keys if keys is not None else map(object_keys, apps), strict=True):
        for index, key in enumerate(app_keys):
            if key in seen:
                manifest = app.manifests[index]
                problems.append(
                    Problem(
                        file=manifest.origin,
                        object_ref=describe(manifest.body),
                        message=f"rendered twice (apps {seen[key]} and {app.app})",
                    )
                )
            seen[key] = app.app
    if problems:
        raise InvalidSpec("the sources render the same object more than once", problems)


def lay_out_app(manifests: list[Manifest], target: str) -> dict[str, str]:
    """One app directory: flat with sync waves (Argo CD), or in stage directories (Flux)."""
    if target != FLUX:
        return app_files(manifests)
    placed = flux_stages(manifests)
    # The sync wave may have been an object's only annotation.
    drop_empty_metadata_maps([manifest for manifest, _ in placed])
    return staged_app_files([(manifest, stage.directory) for manifest, stage in placed])


def lay_out_apps(
    apps: list[AppRender],
    target: str = ARGOCD,
    progress: Progress = NO_PROGRESS,
    held: frozenset[str] = frozenset(),
) -> list[dict[str, str]]:
    """Each app's files, named inside its directory (an app reused from the render pack: as the
    render that packed it laid them out; none for one whose directory is `held`)."""
    laid_out: list[dict[str, str]] = []
    for app in counted(apps, progress, "writing apps", len(apps)):
        if isinstance(app, ReusedApp):
            left_out = held and app_directory(app.app, app.group) in held
            laid_out.append({} if left_out else app.packed.files)
        elif not app.manifests:
            laid_out.append({})
        else:
            drop_empty_metadata_maps(app.manifests)
            laid_out.append(lay_out_app(app.manifests, target))
    return laid_out


def cluster_files(apps: list[AppRender], laid_out: list[dict[str, str]]) -> dict[str, str]:
    """The files of the cluster directory: each app's in its directory, in path order."""
    files: dict[str, str] = {}
    for app, named in zip(apps, laid_out, strict=True):
        if named:
            directory = app_directory(app.app, app.group)
            for name, text in named.items():
                files[f"{directory}/{name}"] = text
    return {path: files[path] for path in sorted(files)}


def kyma_context(
    options: KymaOptions, catalog: list[SourceDocument], previous: Mapping[str, str], where: str
) -> KymaContext:
    return KymaContext(
        catalog=tuple(catalog),
        maintenance_policy=options.maintenance_policy,
        at=options.at or datetime.now(UTC),
        previous=previous,
        where=where,
        min_window=options.min_window,
        restricted_modules=frozenset(options.restricted_modules),
        allow_module_removal=options.allow_module_removal,
    )


def carry_over(files: dict[str, str], apps: frozenset[str], previous: Mapping[str, str]) -> dict[str, str]:
    """`files` with the kept apps' files exactly as the previous render wrote them: a module that
    could not be resolved (or waits, or may not go down a version) keeps its bytes, whatever this
    version of btp-gitops would lay out, so Argo CD and Flux see nothing to change or prune."""
    if not apps:
        return files
    fresh = {path: text for path, text in files.items() if app_path(path).app not in apps}
    kept = {path: previous[path] for path in previous if "/" in path and app_path(path).app in apps}
    return dict(sorted({**fresh, **kept}.items()))


class _PackTextsChanged(Exception):
    """The render pack's texts are not the ones its header names (io.packed_app.PackBlob)."""


def render_cluster(
    sources: tuple[Path, ...],
    cluster: str,
    engine: ChartRenderer,
    schemas: SchemaRegistry,
    *,
    kyma: KymaOptions = KymaOptions(),
    previous: Mapping[str, str] | None = None,  # the cluster directory as the last render wrote it
    target: TargetOptions = DEFAULT_TARGET,
    progress: Progress = NO_PROGRESS,
    allow_paths: tuple[Path, ...] = (),
    shard_tenants: bool = True,  # ownership.shards_tenants: False keeps a flat repository flat
    cache: RenderCache | None = None,
    leave_out_held: bool = False,  # diff: RenderResult.held's apps are not laid out
    keep_held: bool = False,  # render --out: nor are they, and the writer leaves their files as they are
) -> RenderResult:
    """Everything up to, not including, writing: pure apart from reading the sources and charts,
    and, with a `cache`, reading tenant records rendered before and keeping the new ones
    (pipeline.cached_sources; the output is the same bytes either way)."""
    render = functools.partial(
        _render_cluster,
        sources,
        cluster,
        engine,
        schemas,
        kyma=kyma,
        previous=previous,
        target=target,
        progress=progress,
        allow_paths=allow_paths,
        cache=cache,
        shard_tenants=shard_tenants,
        leave_out_held=leave_out_held,
        keep_held=keep_held,
    )
    # A render makes few reference cycles, and most of what it makes lives until it returns: the
    # cycle collector, run again and again over 20,000 tenants' objects, would find nothing to
    # free and cost a tenth or more of a full render and of a warm one (see
    # cached_sources.load_cached_sources for the loading). What a render leaves is collected once
    # the collector runs again after it.
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            return render()
        except _PackTextsChanged:
            # Before anything of the pack was laid out, shown or written: as if it had been
            # ignored when read (io.render_pack), the render starts again without it.
            assert cache is not None
            cache.set_pack_aside()
            return render()
    finally:
        if cache is not None:
            cache.close()
            thawed()
        if enabled:
            gc.enable()


def _render_cluster(
    sources: tuple[Path, ...],
    cluster: str,
    engine: ChartRenderer,
    schemas: SchemaRegistry,
    *,
    kyma: KymaOptions,
    previous: Mapping[str, str] | None,
    target: TargetOptions,
    progress: Progress,
    allow_paths: tuple[Path, ...],
    cache: RenderCache | None,
    shard_tenants: bool,
    leave_out_held: bool,
    keep_held: bool,
) -> RenderResult:
    where = cluster_subtree(cluster)
    roots = source_roots(sources, kyma, allow_paths)
    cached: CachedSources | None = None
    sorting = SourceSorting(KnownKinds((kind.api_version, kind.kind) for kind in schemas.kinds()))
    if cache is None:
        documents = fresh = load_sources(sources, progress, sorting=sorting)
    else:
        cached = load_cached_sources(sources, cache, cache.scope(schemas, target.target), progress, sorting)
        documents, fresh = cached.documents, cached.fresh
    catalog = load_sources(kyma.catalogs, progress)
    # Every stage from here to the domains' rules collects its problems: a document that fails
    # one is skipped by the next, the others go on, and the run fails once with all of them.
    checks = CollectedProblems()
    source_set, catalog = checked_sources(
        documents, fresh, catalog, schemas=schemas, progress=progress, checks=checks
    )
    context = kyma_context(kyma, catalog, previous or {}, where)
    kyma_plan = checks.run(lambda: plan_kyma_modules(source_set, context), KymaPlan())
    progress.update("rendering", 0)
    inputs = application_inputs(source_set) if cached is not None else {}
    tenants = cached.renders(inputs) if cached is not None else None
    if cached is not None and tenants is not None:
        check_cached_records(cached.rendered_again(tenants), schemas)
    apps = render_domains(source_set, engine, kyma_plan, roots, tenants=tenants, checks=checks)
    keys = [object_keys(app) for app in apps]  # for the render pack too
    checks.run(lambda: reject_duplicate_objects(apps, keys), None)
    checks.raise_if_any()
    layout_notes = [] if shard_tenants else keep_flat(apps)
    held = held_directories(apps, _held_trees(previous)) if leave_out_held else frozenset()
    kept = held_in_work_tree(apps, _held_blobs(previous) or {}) if keep_held else HeldFiles()
    held = held.union(kept.apps)
    if cached is not None and not cached.pack_texts_hold(apps, held):
        raise _PackTextsChanged
    if held and isinstance(previous, DecodedFiles):
        previous.set_aside(held)  # at a ref, their files need never be listed (io.commit_tree)
    per_app = lay_out_apps(apps, target.target, progress, held)
    layout = lay_out_cluster(apps, per_app, _unchanged(previous), _held_blobs(previous))
    laid_out = carry_over(layout.files, kyma_plan.untouched_apps, previous or {})
    wiring = cluster_wiring(cluster, apps, target)
    files = {**laid_out, **wiring}
    # The names and paths of apps reused from the render pack were checked when the pack was read
    # (io.render_pack): the others' are checked here (with the Kyma files carried over, the wiring).
    rendered = [(a, named) for a, named in zip(apps, per_app, strict=True) if not isinstance(a, ReusedApp)]
    fresh_apps = [app for app, _ in rendered]
    checked = files
    if len(rendered) < len(apps):
        fresh_files = cluster_files(fresh_apps, [named for _, named in rendered])
        checked = {**carry_over(fresh_files, kyma_plan.untouched_apps, previous or {}), **wiring}
    # A credential is the graver finding: reported even where a name would also be refused. The
    # files of apps reused from the pack pass the same guard on their text (reused_output: a
    # pack is untrusted input).
    assert_no_credentials([m for app in fresh_apps for m in app.manifests], checked)
    check_reused_output(layout)
    reject_unsafe_paths(apps, {**checked, **kyma_plan.record_files})
    if cache is not None and cached is not None and tenants is not None:
        packed = cached.write_pack(cache, tenants, inputs, _pack_layout(apps, per_app, keys, target.target))
        cache.write_all(cached.entries(tenants, inputs, packed))
        layout.add_rendered(
            (record.app for where, record in packed.items() if where in tenants.rendered and record.app),
            _held_blobs(previous),
        )
    return RenderResult(
        cluster=cluster,
        apps=apps,
        files=files,
        kymas=list(kyma_plan.reports),
        records=dict(kyma_plan.record_files),
        module_problems=kyma_plan.problems,
        notes=[*layout_notes, *kyma_plan.notes],
        skipped=sorting.sorted_skipped(),
        blob_ids=layout.claims_in(files, wiring if laid_out is layout.files else None),
        held=held,
        held_files=kept,
    )


def _held_trees(previous: Mapping[str, str] | None) -> Mapping[str, str]:
    return previous.known_tree_ids() if isinstance(previous, DecodedFiles) else {}


def _held_blobs(previous: Mapping[str, str] | None) -> HeldBlobs | None:
    return previous.known_blob_ids() if isinstance(previous, DecodedFiles) else None


def _unchanged(previous: Mapping[str, str] | None) -> Unchanged | None:
    """How the guard of reused files tells a file that is neither written nor shown: with
    `render --out`, one the cluster directory holds byte for byte (the writer leaves it); with
    `diff`, one whose text is the compared tree's (no change, so not in the report)."""
    if previous is None:
        return None
    if isinstance(previous, DecodedFiles):
        return previous.holds
    return lambda path, text: previous.get(path) == text


def _pack_layout(
    apps: list[AppRender], per_app: list[dict[str, str]], keys: list[list[str]], target: str
) -> PackLayout:
    """Each app's files, object keys and Flux stages (Flux target) by app name, for the render
    pack: an app name that two apps share is left out (its record's app is then not packed)."""
    layout = PackLayout()
    shared: set[str] = set()
    for app, named, app_keys in zip(apps, per_app, keys, strict=True):
        if app.app in layout.files:
            shared.add(app.app)
        layout.files[app.app], layout.keys[app.app] = named, app_keys
    for name in shared:
        del layout.files[name], layout.keys[name]
    if target == FLUX:
        layout.stages = {app.app: app_stages(app) for app in apps if app.app in layout.files}
    return layout


def keep_flat(apps: list[AppRender]) -> list[Note]:
    """Lay the apps of groups out flat, as a repository rendered before the sharding holds them,
    and say how to move them (see ownership.shards_tenants)."""
    grouped = [app for app in apps if app.group is not None and app.object_count]
    # Copies, not the apps themselves: the render cache keeps the rendered apps with their group.
    for index, app in enumerate(apps):
        if isinstance(app, ReusedApp):
            apps[index] = app.regrouped(None)
        elif app.group is not None:
            apps[index] = dataclasses.replace(app, group=None)
    if not grouped:
        return []
    return [
        Note(
            Level.INFO,
            "FlatLayoutKept",
            f"{len(grouped)} tenant app(s)",
            "this cluster directory was rendered before tenant apps were sharded, so they stay in it. "
            "The wiring written now already finds both layouts: once the GitOps controller runs it, "
            "render with --migrate-layout to move the tenants into tenants/<group>/<shard>/ (see "
            "'Where the app directories sit' in docs/gitops/index.md)",
        )
    ]


def cluster_stream(result: RenderResult) -> str:
    """The rendered objects as one YAML stream, in file order, for `render --stdout` (Argo CD CMP).

    The per-app kustomization.yaml files are left out: on stdout, Argo CD wants only objects.
    """
    texts = [text for path, text in result.files.items() if not path.endswith("/kustomization.yaml")]
    # One join, with the separator: no copy of each text with its `---` (50 MB at 20,000 tenants).
    return "---\n" + "---\n".join(texts) if texts else ""


def validate_render(root: Path, files: dict[str, str], options: ValidateOptions) -> list[Note]:
    """Raise ManifestInvalid if the cluster would refuse a rendered object; kinds without a schema
    become warnings when allowed."""
    # The Kubernetes schemas and the manifest validator (jsonschema with them) are for --validate.
    from btp_gitops.generator.pipeline.validate import validate_rendered_files  # noqa: PLC0415

    report = validate_rendered_files(root, files, options)
    report.raise_if_invalid()
    return [
        Note(Level.WARNING, "MissingSchema", warning.object_ref or warning.file, warning.message)
        for warning in report.warnings
    ]


def moved_into_groups(previous: Mapping[str, str], apps: list[AppRender]) -> list[str]:
    """The apps the previous tree holds directly in the cluster directory that this render puts
    into a group's shard directory (a repository rendered before the tenants were sharded)."""
    grouped = [app.app for app in apps if app.group is not None and app.object_count]
    if not grouped:
        return []
    if TENANTS_DIR in grouped:  # an app named like the shards' directory: read each directory
        directories = {path.rpartition("/")[0] for path in previous}
        flat = {place.app for directory in directories if not (place := app_path(f"{directory}/-")).grouped}
    else:
        # Outside tenants/, the app of a path in a directory is its first part (core.layout.app_path).
        flat = {path.partition("/")[0] for path in previous if "/" in path}
    return sorted(name for name in grouped if name in flat)


def layout_move_note(moved: list[str], target: TargetOptions) -> list[Note]:
    """For Argo CD, a warning when tenants move: an ApplicationSet running in the cluster that
    does not know the shard directories deletes their Applications, and with them their objects."""
    if not moved or target.target != ARGOCD:
        return []
    shown = ", ".join(moved[:3]) + (" ..." if len(moved) > 3 else "")
    return [
        Note(
            Level.WARNING,
            "TenantsMoved",
            f"{len(moved)} tenant app(s): {shown}",
            "moved from the cluster directory into shard directories under tenants/: before Argo CD "
            "sees this commit, the ApplicationSet in the cluster must find the new directories, or it "
            "deletes these Applications and their objects (see 'Where the app directories sit' in "
            "docs/gitops/index.md)",
        )
    ]


def refuse_emptying(where: Path, previous: Mapping[str, str], written: Collection[str]) -> None:
    removal = removal_refusal(previous, written)
    if removal is not None:
        raise RenderWouldEmpty(
            f"refusing to render over {where}: {removal.describe()}. If that is meant (not a wrong or "
            "empty source directory, a glob that matched nothing, or values that turned objects off by "
            "mistake), pass --allow-empty"
        )


def without_manifest(changes: TreeChanges) -> TreeChanges:
    """The changes a user reads about (summary, JSON, commit message): the ownership manifests are
    bookkeeping that changes with the file list, not rendered files."""

    def kept(paths: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(path for path in paths if not is_manifest(path))

    previous = {path: data for path, data in changes.previous.items() if not is_manifest(path)}
    return TreeChanges(kept(changes.added), kept(changes.changed), kept(changes.removed), previous)


def render_into_repo(
    request: RenderRequest,
    engine: ChartRenderer,
    schemas: SchemaRegistry,
    fs: LocalFilesystem | None = None,
    progress: Progress = NO_PROGRESS,
) -> RenderResult:
    """Render and write `clusters/<cluster>/`, holding the output's lock from reading the previous
    tree to committing, so that two renders into one repository run one after the other."""
    subtree = cluster_subtree(request.cluster)
    where = request.out / subtree
    with (
        prepared_parent(request.out, subtree, fs) as clusters,
        directory_lock(clusters, request.lock_timeout),
    ):
        recover_leftovers(clusters, request.cluster, fs)
        # In a Git work tree, the files Git vouches for are listed, not read (io.git_blobs).
        tree = git_scan(where)
        previous = owned_previous(where, tree)
        manifest = tree.files.get(MANIFEST_FILE)
        sharded = shards_tenants(
            manifest.decode("utf-8", errors="replace") if manifest is not None else None,
            previous.keys(),
            request.migrate_layout,
        )
        result = render_cluster(
            request.sources,
            request.cluster,
            engine,
            schemas,
            kyma=request.kyma,
            previous=previous,
            target=request.target,
            progress=progress,
            allow_paths=request.allow_paths,
            shard_tenants=sharded,
            cache=request.cache,
            keep_held=request.validate is None,  # --validate reads every file
        )
        result.raise_if_strict(request.strict)
        result.notes += layout_move_note(moved_into_groups(previous, result.apps), request.target)
        if request.validate is not None:
            progress.update("validating output", 0)
            result.notes += validate_render(where, result.files, request.validate)
        written = {**result.files, **result.records}
        kept = result.held_files
        present = kept.paths.union(written) if kept.paths else written
        if not request.allow_empty:
            refuse_emptying(where, previous, present)
        written.update(manifest_files(present, sharded=sharded))
        progress.update("writing the repo", 0)
        # The tree read above, under the lock still held: the writer reads again only what
        # changed since (a person's edit while this rendered, a link planted), see scan_tree.
        changes = write_subtree(
            request.out,
            subtree,
            written,
            fs,
            lock_timeout=request.lock_timeout,
            scanned=tree,
            claims=result.blob_ids,
            kept=kept,
        )
        # A kept file changed since the scan was written after all: its text, for the message.
        written.update(
            {path: kept.text(path) for path in (*changes.added, *changes.changed) if path not in written}
        )
        result.changes = without_manifest(changes)
        if request.commit:
            # GitPython (and its `git` lookup) costs start-up time every other render would pay.
            from btp_gitops.generator.io.git import commit_subtree, source_revisions  # noqa: PLC0415

            progress.update("committing", 0)
            revisions = source_revisions(list(request.sources))
            result.commit = commit_subtree(
                request.out,
                subtree,
                lambda staged: commit_message(request.cluster, without_manifest(staged), written, revisions),
            )
    return result
