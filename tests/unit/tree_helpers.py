"""Helpers shared by the writer tests: a repository written by the writer, and what is in it."""

from __future__ import annotations

from pathlib import Path

from btp_gitops.generator.io.repo import read_tree, write_subtree


def files_of(root: Path) -> dict[str, str]:
    """Every file below `root` as text, by its path relative to `root`."""
    return {k: v.decode() for k, v in read_tree(root).items()}


def hidden(parent: Path) -> list[str]:
    """The names of the dot-entries in `parent`: staging, journal and lock leftovers show here."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def written_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """A repository whose clusters/c1 the writer wrote with `files`; its root."""
    root = tmp_path / "repo"
    write_subtree(root, "clusters/c1", files)
    return root
