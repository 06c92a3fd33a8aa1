"""Writing a rendered tree into the output repo: only what changed, and so that it can't be lost.

`write_subtree` makes `root/<subtree>` (`clusters/<cluster>/` for a render) hold exactly the files
it is given. A directory that does not exist yet is built in a staging directory beside it and
renamed into place: it appears complete or not at all. An existing directory is changed in place,
file by file, and only where the bytes differ: a file whose bytes are the same is not touched
(same inode, same mtime), so `git status` and `git add` after a render that changed one tenant
look at that tenant's files only. The other way round, 80,000 rewritten files would make Git hash
every one of them again. The in-place write goes through a sealed journal, rolled forward after a
kill and back after an error (io.journal).

Nothing here follows a symbolic link: the tree is read with `O_NOFOLLOW` (io.output_tree, which
also bounds every read) and every change is made relative to a directory descriptor opened
component by component with `O_NOFOLLOW`, so a link planted on the way to a file is refused rather
than written through. Paths must be plain and relative (no `..`, no absolute path). Files are not
fsync'ed (as before): the guarantee is against a killed process, not a power cut.

Leftovers of older versions' runs (`.<name>.staging-*`; `.<name>.old-*`, from the whole-tree swap
they did, restored when the tree is missing) are removed or restored by the next write, under
the lock. The lock is `flock` on the parent directory (`clusters/` for a render): a second writer
waits up to a timeout, then fails. New directories get the user's umask, as `mkdir` would give
them.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Protocol

from btp_gitops.generator.core.errors import OutputLocked, OutputNotWritable, Problem, UnsafeOutput
from btp_gitops.generator.core.ownership import MANIFEST_FILE, owned_files
from btp_gitops.generator.io.git_blobs import VouchedBlobs, blob_id, start_work_tree_blobs, work_tree_blobs
from btp_gitops.generator.io.journal import (
    WritePlan,
    read_finished_tree,
    recover_leftovers,
    write_in_place,
)
from btp_gitops.generator.io.output_tree import (
    EncodedTexts,
    LocalFilesystem,
    ScannedTree,
    TreeChanges,
    TreeFiles,
    current_umask,
    diff_trees,
    read_tree,
    refreshed_scan,
    refuse_links,
    scan_tree,
    stage_directory,
    unplain_paths,
)

# Names other modules and tests take from here, where they were before the journal and the scan
# moved into modules of their own.
__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "KeptFiles",
    "LocalFilesystem",
    "ScannedTree",
    "TreeChanges",
    "WritePlan",
    "check_no_links",
    "diff_trees",
    "directory_lock",
    "git_scan",
    "prepared_parent",
    "read_finished_tree",
    "read_tree",
    "recover_leftovers",
    "refuse_removing_foreign",
    "scan_tree",
    "write_subtree",
]

DEFAULT_LOCK_TIMEOUT = 60.0


def check_no_links(root: Path, subtree: str) -> None:
    """Refuse a symbolic link on the way from `root` (trusted: the command line) to `root/subtree`.

    `clusters` and the cluster directory come from the repository, which may be a fork's pull
    request: a link there would make every write land outside the output.
    """
    relative = PurePosixPath(subtree)
    if relative.is_absolute() or not relative.parts or any(p in (".", "..") for p in relative.parts):
        raise UnsafeOutput(f"refusing to write {subtree!r}: not a plain relative path under {root}")
    path = root
    for part in relative.parts:
        path = path / part
        try:
            mode = path.lstat().st_mode
        except OSError:
            return  # missing (it will be created as a directory), or its parent is no directory
        if stat.S_ISLNK(mode):
            raise UnsafeOutput(
                f"refusing to use {path}: it is a symbolic link (to {os.readlink(path)}); btp-gitops "
                "reads and writes only real directories under the output directory"
            )


@contextmanager
def prepared_parent(root: Path, subtree: str, fs: LocalFilesystem | None = None) -> Iterator[Path]:
    """Check the way to `root/subtree` and create its parent, which is what gets locked; if the
    block fails, the directories created here are removed again when still empty."""
    fs = fs or LocalFilesystem()
    check_no_links(root, subtree)
    parent = (root / subtree).parent
    missing = [p for p in (parent, *parent.parents) if not os.path.lexists(p)]
    try:
        fs.make_dirs(parent)
    except OSError as error:
        raise OutputNotWritable(
            f"cannot write output directory {parent}: {error.strerror or error}"
        ) from error
    if not os.access(parent, os.W_OK):
        raise OutputNotWritable(f"cannot write output directory {parent}: permission denied")
    try:
        yield parent
    except BaseException:
        for created in missing:  # innermost first
            try:
                created.rmdir()
            except OSError:
                break
        raise


# Locks this process holds, by directory identity: a render holds the lock of `clusters/` from
# reading the previous tree to committing, and the writer it calls takes the same lock again.
# Only the outermost holder releases it, so presence is all that is recorded.
_held: set[tuple[int, int]] = set()


@contextmanager
def directory_lock(directory: Path, timeout: float, *, shared: bool = False) -> Iterator[None]:
    """Hold an exclusive `flock` on `directory` (shared: for a reader, e.g. `diff`), waiting up to
    `timeout` seconds for another run."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise OutputNotWritable(
            f"cannot lock output directory {directory}: {error.strerror or error}"
        ) from error
    try:
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        if key in _held:
            yield
            return
        deadline = time.monotonic() + timeout
        pause = 0.01
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OutputLocked(
                        f"another btp-gitops run is writing {directory}: gave up waiting for its lock "
                        f"after {timeout:g} s (--lock-timeout)"
                    ) from None
                time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
                pause = min(pause * 2, 0.2)
            except OSError as error:
                raise OutputNotWritable(
                    f"cannot lock output directory {directory}: {error.strerror or error}"
                ) from error
        _held.add(key)
        try:
            yield
        finally:
            _held.discard(key)
    finally:
        os.close(fd)  # releases the flock


def refuse_removing_foreign(target: Path, files: Mapping[str, bytes], removed: tuple[str, ...]) -> None:
    """In a tree with ownership manifests (a render's, core.ownership), remove only files they
    list: a render refuses foreign files when it reads the tree, and one put there while it
    rendered is refused here, before anything is written. Trees without (the CRDs, module
    resources, a cluster directory written before the manifests) are the writer's whole."""
    if MANIFEST_FILE not in files or not removed:
        return
    owned = owned_files(files, (), str(target))
    foreign = [path for path in removed if path not in owned]
    if foreign:
        raise UnsafeOutput(
            f"{target} holds {len(foreign)} file(s) btp-gitops did not write; a render never deletes "
            "what is not its own: move them out of it and render again",
            [
                Problem(str(target / path), f"not written by btp-gitops (not in {MANIFEST_FILE})")
                for path in foreign
            ],
        )


def git_scan(target: Path, earlier: ScannedTree | None = None) -> ScannedTree:
    """`scan_tree` of `target`, taking Git's word for the tracked files it vouches for when the
    tree is in a Git work tree (io.git_blobs: those are listed, not read); a plain scan otherwise."""
    if earlier is None:  # Git is asked while the tree is walked
        return scan_tree(target, vouched_later=start_work_tree_blobs(target))
    known = earlier.by_git
    vouched = work_tree_blobs(target, known if isinstance(known, VouchedBlobs) else None)
    if vouched is None:
        return scan_tree(target, earlier)
    return scan_tree(target, earlier, vouched=vouched)


def rescanned(target: Path, earlier: ScannedTree | None) -> ScannedTree:
    """The tree as it is now, for the write. A scan made with Git's word is brought up to date
    without a walk (`refreshed_scan`: Git is asked afresh, under the lock, so a file edited since
    is dirty now and read; each file read before is lstat'ed); any other is made again, reading
    only the files whose identity changed (see `scan_tree`)."""
    if earlier is not None and isinstance(earlier.by_git, VouchedBlobs):
        vouched = work_tree_blobs(target, earlier.by_git)
        if vouched is not None:
            return refreshed_scan(target, earlier, vouched)
    return scan_tree(target, earlier)


def _checked_claims(
    target: Path, written: tuple[str, ...], new: Mapping[str, bytes], claims: Mapping[str, str]
) -> None:
    """Each file about to be written whose blob id the caller claimed (a render pack's) has it:
    a claim decides which files are left as they are, so what is written must be what it named."""
    wrong = [
        path for path in written if (claim := claims.get(path)) is not None and blob_id(new[path]) != claim
    ]
    if wrong:
        raise UnsafeOutput(
            f"refusing to write {target / wrong[0]}: its bytes are not the blob the render cache named "
            "for it (the cache was not written by btp-gitops); remove the cache directory's packs/ or "
            "render with --no-cache",
            [Problem(str(target / path), "not the blob id the render cache gives") for path in wrong],
        )


class KeptFiles(Protocol):
    """Files a writer leaves as they are (`write_subtree`), and the text of each, should one have
    changed since the tree was scanned."""

    @property
    def paths(self) -> frozenset[str]: ...

    def text(self, path: str) -> str: ...


def write_subtree(
    root: Path,
    subtree: str,
    files: Mapping[str, str],
    fs: LocalFilesystem | None = None,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    scanned: ScannedTree | None = None,
    claims: Mapping[str, str] | None = None,
    kept: KeptFiles | None = None,
) -> TreeChanges:
    """Make `root/subtree` contain exactly `files` (relative path -> text), changing only the
    files whose bytes differ (see the module docstring for how a kill or an error is survived).

    `scanned`: a `scan_tree` of `root/subtree` the caller made holding the lock it still holds (a
    render reads the previous tree before rendering): the tree is then listed again, and only the
    files whose identity changed since (or that were racy) are read again (see `scan_tree`); one
    made with Git's word (`git_scan`) is made so again, and a file Git vouches for is compared
    by its blob id, not read (io.git_blobs).

    `claims`: SHA-1 blob ids of some of `files` the caller knows without hashing (the render
    pack's): a file Git vouches for with the same id is left as it is, and every claimed file that
    is written is hashed first and must be its claim (see `diff_trees`).

    `kept`: files the caller leaves out of `files` because `scanned` showed them, by Git's word,
    holding what they should (pipeline.reused_output.held_in_work_tree): they are neither compared
    nor removed. One Git no longer vouches for when the tree is scanned again here (changed since)
    is written after all, with the text `kept` gives for it."""
    fs = fs or LocalFilesystem()
    target = root / subtree
    unsafe = unplain_paths(files)
    if unsafe:
        raise UnsafeOutput(f"refusing to write {unsafe[0]!r}: not a plain relative path under {target}")
    encoded = EncodedTexts(files)  # encoded when compared or written: most files are neither
    with prepared_parent(root, subtree, fs) as parent, directory_lock(parent, lock_timeout):
        recover_leftovers(parent, target.name, fs)
        if os.path.lexists(target) and not target.is_dir():
            raise OutputNotWritable(f"cannot write {target}: it exists and is not a directory")
        scanned = rescanned(target, scanned)
        refuse_links(target, scanned.others)
        left: frozenset[str] = frozenset()
        if kept is not None and kept.paths:
            left = kept.paths.difference(files)  # a path the caller writes after all is compared
            vouched = scanned.files.vouched if isinstance(scanned.files, TreeFiles) else frozenset()
            stale = left.difference(vouched)
            if stale:
                files = {**files, **{path: kept.text(path) for path in sorted(stale)}}
                encoded, left = EncodedTexts(files), left.difference(stale)
        changes = diff_trees(scanned.files, encoded, claims, left)
        refuse_removing_foreign(target, scanned.files, changes.removed)
        if claims:
            _checked_claims(target, (*changes.added, *changes.changed), encoded, claims)
        if target.is_dir():
            if not changes.empty:
                write_in_place(
                    parent=parent,
                    name=target.name,
                    scanned=scanned,
                    changes=changes,
                    new=encoded,
                    fs=fs,
                    kept=left,
                )
            return changes
        staging = stage_directory(parent, target.name)
        try:  # a new tree: built beside, renamed into place whole
            os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp makes 0700; a directory gets the umask
            for relative, data in sorted(encoded.items()):
                path = staging / relative
                fs.make_dirs(path.parent)
                fs.write_bytes(path, data)
            fs.rename(staging, target)
        except OSError as error:
            raise OutputNotWritable(f"cannot write {target}: {error.strerror or error}") from error
        finally:
            fs.remove_tree(staging)
    return changes
