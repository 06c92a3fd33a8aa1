"""What `render --commit` writes as the commit message: a summary line, one line per changed file
naming the app and the object (`+ app: Kind ns/name`), and the sources' commits as trailers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import yaml

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.objects import describe
from btp_gitops.generator.core.yamlio import load_trusted_document
from btp_gitops.generator.io.repo import TreeChanges

if TYPE_CHECKING:
    from btp_gitops.generator.io.git import SourceRevision


MAX_DESCRIBED_CHANGES = 500


def describe_changes(changes: TreeChanges, files: dict[str, str]) -> list[str]:
    """`+ app: Kind ns/name` lines for the commit message."""

    def ref(path: str, text: str | bytes) -> str:
        app = app_path(path).app if "/" in path else path
        if path.endswith("kustomization.yaml"):
            return f"{app}: kustomization"
        if "/" not in path:  # a record beside the apps (.kyma-modules.json), not an object
            return path
        try:
            body = load_trusted_document(
                text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
            )
        except (yaml.YAMLError, RecursionError):
            body = None  # a file that is not YAML (a person put it there): named by its path
        described = (
            describe(body) if isinstance(body, dict) and isinstance(body.get("metadata"), dict) else path
        )
        return f"{app}: {described}"

    listed: list[tuple[str, str, str | bytes]] = [("+", p, files[p]) for p in changes.added]
    listed += [("~", p, files[p]) for p in changes.changed]
    listed += [("-", p, changes.previous[p]) for p in changes.removed]
    # A commit message is one command-line argument (at most 128 KiB) and a few hundred lines are
    # all a reader takes in; the rest is counted, and not parsed.
    lines = [f"{sign} {ref(path, text)}" for sign, path, text in listed[:MAX_DESCRIBED_CHANGES]]
    if len(listed) > MAX_DESCRIBED_CHANGES:
        lines.append(f"... and {len(listed) - MAX_DESCRIBED_CHANGES} more")
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
