"""Git at the edges, through GitPython: which commit the sources came from, and committing the
rendered tree (`render --commit`). A rendered tree at a ref (`diff --against REF`) is read by
io.git_blobs, with `git` itself.

`render --commit` stages only the cluster directory it wrote (a literal pathspec: other changes
in the user's work tree stay as they are) and commits only when Git sees a change, with the
message the pipeline builds from the staged changes (objects added, changed, removed, and a
`Source-Commit:` trailer per source repository).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git

from btp_gitops.generator.core.errors import GitError
from btp_gitops.generator.io.output_tree import MAX_TREE_FILE_BYTES, too_large
from btp_gitops.generator.io.repo import TreeChanges

_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "btp-gitops",
    "GIT_AUTHOR_EMAIL": "btp-gitops@localhost",
    "GIT_COMMITTER_NAME": "btp-gitops",
    "GIT_COMMITTER_EMAIL": "btp-gitops@localhost",
}


@dataclass(frozen=True, slots=True)
class SourceRevision:
    commit: str
    dirty: bool


def source_revisions(paths: list[Path]) -> list[SourceRevision]:
    """The HEAD commit of each Git repository the sources live in (none for plain directories)."""
    found: dict[str, SourceRevision] = {}
    for path in paths:
        try:
            repo = git.Repo(path if path.is_dir() else path.parent, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            continue
        with repo:
            if not repo.head.is_valid() or repo.working_tree_dir is None:
                continue
            relative = os.path.relpath(path.resolve(), repo.working_tree_dir)
            found[str(repo.working_tree_dir)] = SourceRevision(
                commit=repo.head.commit.hexsha,
                dirty=repo.is_dirty(untracked_files=True, path=relative),
            )
    return [found[key] for key in sorted(found)]


def _identity_env(repo: git.Repo) -> dict[str, str]:
    """Use the user's Git identity; fall back to a fixed one where none is configured (CI)."""
    reader = repo.config_reader()
    if reader.has_option("user", "name") and reader.has_option("user", "email"):
        return {}
    return {key: value for key, value in _FALLBACK_IDENTITY.items() if key not in os.environ}


def open_or_init(root: Path) -> git.Repo:
    """The repository the rendered tree belongs to.

    `root` inside an existing work tree (a GitOps repo, with `--out` pointing at it or a folder of
    it) commits there; but when that work tree ignores `root` (e.g. `--out out/gitops` inside a
    checkout whose .gitignore lists out/), or there is none, `root` becomes a repository of its own.
    """
    if not root.exists():
        raise GitError(f"output directory does not exist: {root}")
    try:
        enclosing = git.Repo(root, search_parent_directories=True)
    except git.InvalidGitRepositoryError:
        return git.Repo.init(root, initial_branch="main")
    top = Path(enclosing.working_tree_dir or root).resolve()
    relative = os.path.relpath(root.resolve(), top)
    if relative != "." and enclosing.ignored(relative):
        enclosing.close()
        return git.Repo.init(root, initial_branch="main")
    return enclosing


def staged_changes(repo: git.Repo, pathspec: str) -> TreeChanges:
    """What committing `pathspec` would change against HEAD, paths relative to `pathspec`."""
    prefix = pathspec.rstrip("/") + "/"
    if repo.head.is_valid():
        status = repo.git.diff("--cached", "--name-status", "--no-renames", "HEAD", "--", pathspec)
    else:
        status = "\n".join(
            f"A\t{p}" for p in repo.git.diff("--cached", "--name-only", "--", pathspec).splitlines()
        )
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    previous: dict[str, bytes] = {}
    for line in status.splitlines():
        code, path = line.split("\t", 1)
        relative = path.removeprefix(prefix)
        if code == "A":
            added.append(relative)
            continue
        size = int(repo.git.cat_file("-s", f"HEAD:{path}"))  # the header: nothing is read yet
        if size > MAX_TREE_FILE_BYTES:
            raise too_large(f"{path} at HEAD", size)
        previous[relative] = repo.git.show(f"HEAD:{path}").encode() + b"\n"
        (removed if code == "D" else changed).append(relative)
    return TreeChanges(tuple(sorted(added)), tuple(sorted(changed)), tuple(sorted(removed)), previous)


def commit_subtree(root: Path, subtree: str, build_message: Callable[[TreeChanges], str]) -> str | None:
    """Commit everything under `root/subtree`; return the new commit, or None when unchanged.

    Only that subtree is staged and committed: other changes in the user's work tree stay as they are.
    """
    try:
        with open_or_init(root) as repo:
            # The path is a path, never a pathspec pattern (`:(glob)`, `*`): only it is staged.
            repo.git.update_environment(GIT_LITERAL_PATHSPECS="1")
            top = Path(repo.working_tree_dir or root)
            pathspec = os.path.relpath((root / subtree).resolve(), top.resolve())
            repo.git.add("--all", "--", pathspec)
            changes = staged_changes(repo, pathspec)
            if changes.empty:
                return None
            message = build_message(changes)
            repo.git.commit("--quiet", "--no-verify", "-m", message, "--", pathspec, env=_identity_env(repo))
            return str(repo.head.commit.hexsha)
    except git.GitCommandError as error:
        raise GitError(
            f"cannot commit the rendered tree in {root}: {error.stderr.strip() or error}"
        ) from error
