"""`btp-gitops diff`: render in memory and compare with the rendered repo at a Git ref or directory.

read the tree to compare with -> render (nothing written) -> compare object by object -> report

The tree to compare with is `clusters/<cluster>/` of a directory (a checkout of the GitOps repo)
or of a commit of a Git repository, read from Git's objects without a checkout. It is also what
the render reads back as its previous state (Kyma's records), exactly as `render` reads the
repo it writes into, so the diff shows what `render` would write there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.core.ownership import MANIFEST_FILE
from btp_gitops.generator.core.validation import SchemaRegistry
from btp_gitops.generator.diff.compare import ClusterDiff, compare_trees
from btp_gitops.generator.diff.report import DiffTitle, json_report, markdown_report, text_report
from btp_gitops.generator.io.git import read_tree_at
from btp_gitops.generator.io.repo import DEFAULT_LOCK_TIMEOUT, check_no_links, directory_lock, read_tree
from btp_gitops.generator.pipeline.render import KymaOptions, RenderResult, cluster_subtree, render_cluster
from btp_gitops.generator.transforms.guards import assert_no_private_key_in_text
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


@dataclass(frozen=True, slots=True)
class DiffResult:
    title: DiffTitle
    diff: ClusterDiff
    render: RenderResult


def tree_to_compare(request: DiffRequest) -> tuple[str, dict[str, bytes]]:
    """(how to name it in the report, its files relative to `clusters/<cluster>/`).

    The writer's ownership manifest is left out: it is no object, and the render in memory does
    not produce it. Links are not followed (a link's target could be any file of the machine).
    """
    subtree = cluster_subtree(request.cluster)
    directory = Path(request.against)
    if directory.is_dir():
        check_no_links(directory, subtree)
        label = f"directory {request.against}"
        clusters = (directory / subtree).parent
        if clusters.is_dir():  # a render writing there now: read its old tree or its new one
            with directory_lock(clusters, DEFAULT_LOCK_TIMEOUT, shared=True):
                files = read_tree(directory / subtree)
        else:
            files = {}
    else:
        found = read_tree_at(request.repo, request.against, subtree)
        label, files = f"{request.against} ({found.commit[:_SHORT_COMMIT]})", found.files
    return label, {path: data for path, data in files.items() if path != MANIFEST_FILE}


def diff_cluster(request: DiffRequest, engine: ChartRenderer, schemas: SchemaRegistry) -> DiffResult:
    label, old = tree_to_compare(request)
    previous = {path: data.decode("utf-8", errors="replace") for path, data in old.items()}
    result = render_cluster(
        request.sources,
        request.cluster,
        engine,
        schemas,
        kyma=request.kyma,
        previous=previous,
        target=request.target,
        allow_paths=request.allow_paths,
    )
    new = {**result.files, **result.records}
    diff = compare_trees(old, new, prefix=f"{cluster_subtree(request.cluster)}/")
    return DiffResult(DiffTitle(request.cluster, label), diff, result)


def diff_report(result: DiffResult, output: str, max_length: int) -> str:
    """The report as it will be printed (text, markdown or json), checked for private keys.

    Both sides are masked before any text is made (diff.masking) and the rendered side has
    passed the credential guard; a key in the report would mean the masking missed one, and the
    report is refused rather than posted.
    """
    if output == "json":
        text = json.dumps(json_report(result.diff, result.title), indent=2, sort_keys=True) + "\n"
    elif output == "markdown":
        text = markdown_report(result.diff, result.title, max_length)
    else:
        text = text_report(result.diff, result.title)
    assert_no_private_key_in_text(f"the {output} diff report", text)
    return text
