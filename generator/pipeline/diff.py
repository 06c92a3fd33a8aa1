"""`btp-gitops diff`: render in memory and compare with the rendered repo at a Git ref or directory.

read the tree to compare with -> render (nothing written) -> compare object by object -> report

The tree to compare with is `clusters/<cluster>/` of a directory (a checkout of the GitOps repo)
or of a commit of a Git repository, read from Git's objects without a checkout. It is also what
the render reads back as its previous state (Kyma's records), exactly as `render` reads the
repo it writes into, so the diff shows what `render` would write there.

The tree is checked to be what the command line means: before anything is rendered, that the
cluster directory exists (a misspelt `--cluster`, or a directory or ref that is no rendered
repository, would otherwise show every object as added), unless `--new-cluster` says it is not
rendered yet; and that it was laid out with the same `--target` and `--emit-wiring` (wiring.layout
reads that back from the tree), unless `--allow-layout-change` asks to see the change of layout.
At a ref, the layout is read after the render: by then the apps the commit holds as the render
pack gives them are known, and their files are never listed (io.commit_tree), their names
standing in for them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.core.ownership import MANIFEST_FILE, is_manifest, shards_tenants
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress
from btp_gitops.generator.core.validation import SchemaRegistry
from btp_gitops.generator.core.yamlio import dump_report
from btp_gitops.generator.diff.compare import (
    ClusterDiff,
    changed_apps,
    compare_changed_apps,
    compared_new_paths,
)
from btp_gitops.generator.diff.report import DiffTitle, json_report, markdown_report, text_report
from btp_gitops.generator.io.commit_tree import CommitBlobs, read_tree_at
from btp_gitops.generator.io.render_cache import RenderCache
from btp_gitops.generator.io.repo import (
    DEFAULT_LOCK_TIMEOUT,
    check_no_links,
    directory_lock,
    read_finished_tree,
)
from btp_gitops.generator.pipeline.previous_tree import DecodedFiles
from btp_gitops.generator.pipeline.render import KymaOptions, RenderResult, cluster_subtree, render_cluster
from btp_gitops.generator.pipeline.reused_output import check_claims, held_paths
from btp_gitops.generator.transforms.guards import assert_no_private_key_in_text
from btp_gitops.generator.wiring.layout import detect_layout
from btp_gitops.generator.wiring.objects import DEFAULT_TARGET, TargetOptions

_SHORT_COMMIT = 12


@dataclass(frozen=True, slots=True)
class DiffRequest:
    sources: tuple[Path, ...]
    against: str  # a directory (the GitOps repo's root) if one exists there, else a Git ref of `repo`
    cluster: str
    kyma: KymaOptions
    repo: Path | None = None  # the GitOps repo for a ref (a folder of a work tree); None: cwd's work tree
    target: TargetOptions = DEFAULT_TARGET
    allow_paths: tuple[Path, ...] = ()  # --allow-path: more roots sources may name files in
    new_cluster: bool = False  # --new-cluster: the cluster directory may not exist yet
    allow_layout_change: bool = False  # --allow-layout-change: compare across --target/--emit-wiring
    migrate_layout: bool = False  # --migrate-layout: render as `render --migrate-layout` would
    cache: RenderCache | None = None  # --cache-dir: tenant records rendered before (None: --no-cache)


@dataclass(frozen=True, slots=True)
class ComparedTree:
    """The tree a diff compares with, and what the checks need to know of where it was found."""

    label: str  # how the report names it
    # Relative to clusters/<cluster>/, the ownership manifest left out; at a ref, each blob is
    # read when needed (io.commit_tree.CommitBlobs).
    files: Mapping[str, bytes]
    found: bool  # clusters/<cluster> is a directory there
    clusters: tuple[str, ...] | None  # the directories in clusters/; None: there is no clusters/
    owned: bool  # it holds the ownership manifest a render writes
    manifest: str | None = None  # that manifest's text (ownership.shards_tenants reads it)


@dataclass(frozen=True, slots=True)
class DiffResult:
    title: DiffTitle
    diff: ClusterDiff
    render: RenderResult


def tree_to_compare(request: DiffRequest) -> ComparedTree:
    """The tree at `--against`, its files relative to `clusters/<cluster>/`.

    The writer's ownership manifest is left out: it is no object, and the render in memory does
    not produce it. Links are not followed (a link's target could be any file of the machine).
    """
    subtree = cluster_subtree(request.cluster)
    directory = Path(request.against)
    if directory.is_dir():
        check_no_links(directory, subtree)
        label = f"directory {request.against}"
        clusters_dir = (directory / subtree).parent
        found = (directory / subtree).is_dir()
        clusters = (
            tuple(sorted(p.name for p in clusters_dir.iterdir() if p.is_dir() and not p.is_symlink()))
            if clusters_dir.is_dir()
            else None
        )
        if clusters_dir.is_dir():  # a render writing there now: read what it leaves
            with directory_lock(clusters_dir, DEFAULT_LOCK_TIMEOUT, shared=True):
                files: Mapping[str, bytes] = (
                    read_finished_tree(clusters_dir, PurePosixPath(subtree).name) if found else {}
                )
        else:
            files = {}
    else:
        at = read_tree_at(request.repo, request.against, subtree)
        label, files, found, clusters = (
            f"{request.against} ({at.commit[:_SHORT_COMMIT]})",
            at.files,
            at.found,
            at.siblings,
        )
    manifest = files.get(MANIFEST_FILE)
    compared: Mapping[str, bytes]
    if isinstance(files, CommitBlobs):  # blob ids only, the app directories' listed when needed
        compared = files.without_named(MANIFEST_FILE)
    else:
        # A few hundred manifests among 80,000 files: found by their ending first (a method call
        # in C per path, not a function call), then by the rule.
        manifests = {path for path in files if path.endswith(MANIFEST_FILE) and is_manifest(path)}
        compared = {path: data for path, data in files.items() if path not in manifests}
    text = manifest.decode("utf-8", errors="replace") if manifest is not None else None
    return ComparedTree(label, compared, found, clusters, manifest is not None, text)


def check_tree(request: DiffRequest, tree: ComparedTree) -> None:
    """Refuse a comparison that would show the wrong thing: with a cluster directory that is not
    there or not rendered (see the module docstring; the layout: `check_layout`)."""
    where = f"clusters/{request.cluster} at {tree.label}"
    if not tree.found:
        if request.new_cluster:
            return
        if tree.clusters is None:
            reason = "there is no clusters/ directory: not a repository btp-gitops renders into"
        elif tree.clusters:
            reason = f"the clusters there are {', '.join(tree.clusters)}: is --cluster misspelt?"
        else:
            reason = "clusters/ holds no cluster directory"
        raise UsageError(
            f"{where} does not exist; {reason} (--new-cluster compares with an empty cluster directory, "
            "for a cluster not rendered yet)"
        )
    if not tree.owned and not request.new_cluster:
        raise UsageError(
            f"{where} was not written by `btp-gitops render` (it has no {MANIFEST_FILE}): not a "
            "rendered cluster directory (--new-cluster compares with it all the same)"
        )


def check_layout(request: DiffRequest, tree: ComparedTree, files: Mapping[str, bytes]) -> None:
    """Refuse a comparison with a cluster directory laid out for another target or wiring, read
    from `files` (the tree's, or what stands for them: `_HeldEvidence`)."""
    where = f"clusters/{request.cluster} at {tree.label}"
    layout = detect_layout(files)
    wanted = request.target
    if (
        layout is not None
        and (layout.target, layout.emit) != (wanted.target, wanted.emit)
        and not request.allow_layout_change
    ):
        asked = f"--target {wanted.target}" + (" --emit-wiring" if wanted.emit else "")
        raise UsageError(
            f"{where} was rendered with {layout.options} ({layout.evidence}), this diff renders "
            f"with {asked}: give the options the repository is rendered with, or "
            "--allow-layout-change to see the change of layout"
        )


def diff_cluster(
    request: DiffRequest, engine: ChartRenderer, schemas: SchemaRegistry, progress: Progress = NO_PROGRESS
) -> DiffResult:
    tree = tree_to_compare(request)
    check_tree(request, tree)
    label, old = tree.label, tree.files
    at_ref = isinstance(old, CommitBlobs)
    if not at_ref:
        check_layout(request, tree, old)
    previous = DecodedFiles(old)  # decoded when read; compared by blob id at a ref
    result = render_cluster(
        request.sources,
        request.cluster,
        engine,
        schemas,
        kyma=request.kyma,
        previous=previous,
        target=request.target,
        allow_paths=request.allow_paths,
        shard_tenants=shards_tenants(
            tree.manifest,
            old.outline() if isinstance(old, CommitBlobs) else old.keys(),
            request.migrate_layout,
        ),
        cache=request.cache,
        progress=progress,
        leave_out_held=True,
    )
    if isinstance(old, CommitBlobs):
        # At a ref, the layout is read once the render has set aside the apps the commit holds
        # as the pack gives them (by tree id): their files are never listed, and their names
        # stand in for them (`_HeldEvidence`). Those apps are on neither side: the render left
        # them out, and so does the comparison (reused_output.held_directories).
        check_layout(request, tree, _HeldEvidence(old, held_paths(result.apps, result.held)))
        old = old.without_directories(result.held)
    new = {**result.files, **result.records}
    # Only the apps in which a file differs are compared: the others' files are the same bytes on
    # both sides, so they hold the same objects (compare_changed_apps). At a ref, the files
    # compared are read in one go.
    claims, known = result.blob_ids, previous.known_blob_ids()

    def unchanged(path: str, text: str) -> bool:
        # By the render pack's blob id where the compared tree names one (a Git commit's), as the
        # guard of reused files decided what it searched (pipeline.reused_output).
        claim = claims.get(path)
        held = known.get(path) if claim is not None else None
        return held == claim if held is not None else previous.holds(path, text)

    # The files whose ids say so at once (80,000 of them in a warm render: not one call each).
    same = {path for path, claim in claims.items() if known.get(path) == claim}
    narrowed = changed_apps(old, new, unchanged, same)
    if isinstance(old, CommitBlobs):
        old.fetch(narrowed)
    # The texts shown must be the blobs the pack named (a claim decided what is compared).
    shown = compared_new_paths(old, new, narrowed)
    check_claims(new, claims, shown)
    diff = compare_changed_apps(old, new, narrowed, f"{cluster_subtree(request.cluster)}/", shown)
    problems = tuple(problem.render() for problem in result.module_problems)
    return DiffResult(DiffTitle(request.cluster, label, problems), diff, result)


class _HeldEvidence(Mapping[str, bytes]):
    """The compared tree's files as the layout is read from them: those listed, and one path per
    directory of each app set aside (its files are the pack's, by their tree id), which are no
    file to read (wiring.layout reads only `.wiring/`'s, and no app set aside is there)."""

    def __init__(self, listed: CommitBlobs, held: list[str]) -> None:
        self._listed = listed
        self._paths = [*listed, *held]

    def __getitem__(self, path: str) -> bytes:
        return self._listed[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def diff_report(result: DiffResult, output: str, max_length: int) -> str:
    """The report as it will be printed (text, markdown, json or yaml), checked for private keys.

    Both sides are masked before any text is made (diff.masking) and the rendered side has
    passed the credential guard; a key in the report would mean the masking missed one, and the
    report is refused rather than posted.
    """
    if output == "json":
        text = json.dumps(json_report(result.diff, result.title), indent=2, sort_keys=True) + "\n"
    elif output == "yaml":
        text = dump_report(json_report(result.diff, result.title))
    elif output == "markdown":
        text = markdown_report(result.diff, result.title, max_length)
    else:
        text = text_report(result.diff, result.title)
    assert_no_private_key_in_text(f"the {output} diff report", text)
    return text
