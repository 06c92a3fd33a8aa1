"""Writing a rendered tree into the output repo, atomically.

The whole `clusters/<cluster>/` directory is built in a staging directory next to it, then swapped
in with two renames; if anything fails before the swap, the previous tree is untouched, and a
failed second rename is rolled back. Files the render no longer produces disappear with the old
tree, so stale files never survive.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from btp_gitops.generator.core.errors import OutputNotWritable


class LocalFilesystem:
    """The filesystem operations the writer needs; tests pass a subclass that fails on purpose."""

    def make_dirs(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)

    def write_bytes(self, path: Path, data: bytes) -> None:
        path.write_bytes(data)

    def rename(self, source: Path, target: Path) -> None:
        os.rename(source, target)

    def remove_tree(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class TreeChanges:
    """Paths relative to the subtree, and the previous bytes of changed and removed files."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    previous: dict[str, bytes] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)


def read_tree(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    return {
        PurePosixPath(path.relative_to(root)).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def diff_trees(old: dict[str, bytes], new: dict[str, bytes]) -> TreeChanges:
    added = tuple(sorted(set(new) - set(old)))
    removed = tuple(sorted(set(old) - set(new)))
    changed = tuple(sorted(p for p in set(new) & set(old) if new[p] != old[p]))
    return TreeChanges(added, changed, removed, {p: old[p] for p in (*changed, *removed)})


def _prepare_root(root: Path, fs: LocalFilesystem) -> None:
    try:
        fs.make_dirs(root)
    except OSError as error:
        raise OutputNotWritable(f"cannot write output directory {root}: {error.strerror or error}") from error
    if not os.access(root, os.W_OK):
        raise OutputNotWritable(f"cannot write output directory {root}: permission denied")


def write_subtree(
    root: Path, subtree: str, files: dict[str, str], fs: LocalFilesystem | None = None
) -> TreeChanges:
    """Make `root/subtree` contain exactly `files` (relative path -> text). Atomic per subtree."""
    fs = fs or LocalFilesystem()
    target = root / subtree
    _prepare_root(target.parent, fs)
    encoded = {path: text.encode("utf-8") for path, text in files.items()}
    changes = diff_trees(read_tree(target), encoded)
    if changes.empty and target.is_dir():
        return changes
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
    except OSError as error:
        raise OutputNotWritable(f"cannot write output directory {target.parent}: {error.strerror}") from error
    trash = target.parent / f".{target.name}.old-{staging.name.rsplit('-', 1)[-1]}"
    try:
        for relative, data in sorted(encoded.items()):
            path = staging / relative
            fs.make_dirs(path.parent)
            fs.write_bytes(path, data)
        had_previous = target.exists()
        if had_previous:
            fs.rename(target, trash)
        try:
            fs.rename(staging, target)
        except OSError:
            if had_previous:
                fs.rename(trash, target)
            raise
    except OSError as error:
        raise OutputNotWritable(f"cannot write {target}: {error.strerror or error}") from error
    finally:
        fs.remove_tree(staging)
        fs.remove_tree(trash)
    return changes
