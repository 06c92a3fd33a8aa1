"""`btp-gitops render`: source custom resources -> GitOps repo.

load sources -> validate -> render each domain -> lay out files -> guard -> write -> commit
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.core.charts import ChartRenderer
from generator.core.errors import InvalidSpec, Problem
from generator.core.layout import app_files
from generator.core.objects import describe, object_key
from generator.core.report import AppRender, Note, report_dict
from generator.core.sources import SourceSet
from generator.core.validation import SchemaRegistry, validate_sources
from generator.core.yamlio import load_trusted_document
from generator.domains.btp_operator import render_btp_operator
from generator.io.git import SourceRevision, commit_subtree, source_revisions
from generator.io.repo import LocalFilesystem, TreeChanges, write_subtree
from generator.io.sources import load_sources
from generator.transforms.guards import assert_no_credentials
from generator.transforms.metadata import drop_empty_metadata_maps


@dataclass(frozen=True, slots=True)
class RenderRequest:
    sources: tuple[Path, ...]
    out: Path
    cluster: str
    commit: bool = False


@dataclass(slots=True)
class RenderResult:
    cluster: str
    apps: list[AppRender]
    files: dict[str, str]  # path relative to clusters/<cluster>/ -> text
    changes: TreeChanges = field(default_factory=TreeChanges)
    commit: str | None = None
    notes: list[Note] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        data = report_dict(self.cluster, self.apps, self.notes)
        data["changes"] = {
            "added": list(self.changes.added),
            "changed": list(self.changes.changed),
            "removed": list(self.changes.removed),
        }
        data["commit"] = self.commit
        return data


def cluster_subtree(cluster: str) -> str:
    return f"clusters/{cluster}"


def render_domains(sources: SourceSet, engine: ChartRenderer) -> list[AppRender]:
    """Every domain's apps. Each domain reads only its own kinds."""
    return [*render_btp_operator(sources, engine)]


def reject_duplicate_objects(apps: list[AppRender]) -> None:
    """Two apps, or one app twice, must never write the same cluster object."""
    seen: dict[tuple[str, str, str, str], str] = {}
    problems = []
    for app in apps:
        for manifest in app.manifests:
            key = tuple(object_key(manifest.body))
            if key in seen:
                problems.append(
                    Problem(
                        file=manifest.origin,
                        object_ref=describe(manifest.body),
                        message=f"rendered twice (apps {seen[key]} and {app.app})",
                    )
                )
            seen[key] = app.app  # type: ignore[index]
    if problems:
        raise InvalidSpec("the sources render the same object more than once", problems)


def lay_out_cluster(apps: list[AppRender]) -> dict[str, str]:
    files: dict[str, str] = {}
    for app in apps:
        if not app.manifests:
            continue
        drop_empty_metadata_maps(app.manifests)
        for name, text in app_files(app.manifests).items():
            files[f"{app.app}/{name}"] = text
    return dict(sorted(files.items()))


def render_cluster(
    sources: tuple[Path, ...], cluster: str, engine: ChartRenderer, schemas: SchemaRegistry
) -> RenderResult:
    """Everything up to, not including, writing: pure apart from reading the sources and charts."""
    documents = load_sources(sources)
    validate_sources(documents, schemas)
    apps = render_domains(SourceSet.of(documents), engine)
    reject_duplicate_objects(apps)
    files = lay_out_cluster(apps)
    assert_no_credentials([m for app in apps for m in app.manifests], files)
    return RenderResult(cluster=cluster, apps=apps, files=files)


def describe_changes(changes: TreeChanges, files: dict[str, str]) -> list[str]:
    """`+ app: Kind ns/name` lines for the commit message."""

    def ref(path: str, text: str | bytes) -> str:
        if path.endswith("kustomization.yaml"):
            return f"{path.split('/', maxsplit=1)[0]}: kustomization"
        body = load_trusted_document(text.decode("utf-8") if isinstance(text, bytes) else text)
        return f"{path.split('/', maxsplit=1)[0]}: {describe(body) if isinstance(body, dict) else path}"

    lines = [f"+ {ref(p, files[p])}" for p in changes.added]
    lines += [f"~ {ref(p, files[p])}" for p in changes.changed]
    lines += [f"- {ref(p, changes.previous[p])}" for p in changes.removed]
    return lines


def commit_message(
    cluster: str, changes: TreeChanges, files: dict[str, str], revisions: list[SourceRevision]
) -> str:
    summary = (
        f"Render cluster {cluster}: {len(changes.added)} added, {len(changes.changed)} changed, "
        f"{len(changes.removed)} removed"
    )
    body = "\n".join(describe_changes(changes, files))
    trailers = [
        f"Source-Commit: {r.commit}{' (with uncommitted changes)' if r.dirty else ''}" for r in revisions
    ]
    return "\n\n".join(part for part in (summary, body, "\n".join(trailers)) if part) + "\n"


def render_into_repo(
    request: RenderRequest,
    engine: ChartRenderer,
    schemas: SchemaRegistry,
    fs: LocalFilesystem | None = None,
) -> RenderResult:
    result = render_cluster(request.sources, request.cluster, engine, schemas)
    subtree = cluster_subtree(request.cluster)
    result.changes = write_subtree(request.out, subtree, result.files, fs)
    if request.commit:
        revisions = source_revisions(list(request.sources))
        result.commit = commit_subtree(
            request.out,
            subtree,
            lambda staged: commit_message(request.cluster, staged, result.files, revisions),
        )
    return result
