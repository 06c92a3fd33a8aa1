"""Writing a rendered tree into the output repo, so that it can't be lost.

The whole subtree (`clusters/<cluster>/`) is built in a staging directory beside it, then swapped
in. On Linux the swap is one `renameat2(RENAME_EXCHANGE)`: at every instant, a `kill -9`
included, the directory is the complete old tree or the complete new one. The old tree then sits
under the staging name and is removed. Where the kernel or filesystem cannot exchange (EINVAL,
ENOSYS, EOPNOTSUPP; no renameat2 outside Linux) the writer falls back to two renames, old aside
to `.<name>.old-*`, new into place; a process killed between them leaves no directory for an
instant, and the next run puts the old tree back before doing anything else.

Leftovers of a killed run (`.<name>.staging-*`, `.<name>.old-*`) are removed by the next write,
under the lock. The lock is `flock` on the parent directory (`clusters/` for a render): a second
writer waits up to a timeout, then fails. Nothing is followed through a symbolic link: a link on
the way to the subtree is refused, and a link inside it is never read. New directories get the
user's umask, as `mkdir` would give them.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import glob
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from btp_gitops.generator.core.errors import OutputLocked, OutputNotWritable, UnsafeOutput

DEFAULT_LOCK_TIMEOUT = 60.0
_AT_FDCWD = -100
_RENAME_EXCHANGE = 1 << 1
_NO_EXCHANGE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})

_Renameat2 = Callable[[int, bytes, int, bytes, int], int]


@functools.cache
def _renameat2() -> _Renameat2 | None:
    """glibc's renameat2 (2.28+), or None where the C library has none (not Linux, old libc)."""
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    call: _Renameat2 = function
    return call


def exchange_paths(first: Path, second: Path) -> bool:
    """Swap two existing paths atomically; False where this system cannot (nothing was changed)."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _NO_EXCHANGE:
        return False
    raise OSError(code, os.strerror(code), str(second))


class LocalFilesystem:
    """The filesystem operations the writer needs; tests pass a subclass that fails on purpose."""

    def make_dirs(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)

    def write_bytes(self, path: Path, data: bytes) -> None:
        path.write_bytes(data)

    def rename(self, source: Path, target: Path) -> None:
        os.rename(source, target)

    def exchange(self, source: Path, target: Path) -> bool:
        return exchange_paths(source, target)

    def remove_tree(self, path: Path) -> None:
        if path.is_symlink():  # a link named like our leftovers: remove the link, never its target
            path.unlink(missing_ok=True)
        else:
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


@dataclass(frozen=True, slots=True)
class ScannedTree:
    files: dict[str, bytes]  # regular files, relative POSIX path -> bytes
    others: tuple[str, ...] = ()  # symbolic links and special files: never followed, never ours


def scan_tree(root: Path) -> ScannedTree:
    """Every regular file under `root`, read without following any symbolic link."""
    if root.is_symlink() or not root.is_dir():
        return ScannedTree({})
    files: dict[str, bytes] = {}
    others: list[str] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(directory)
        for name in [*dirnames, *filenames]:
            path = base / name
            relative = PurePosixPath(path.relative_to(root)).as_posix()
            try:
                mode = path.lstat().st_mode
                if stat.S_ISREG(mode):
                    files[relative] = path.read_bytes()
                elif not stat.S_ISDIR(mode):
                    others.append(relative)
            except OSError as error:
                raise OutputNotWritable(f"cannot read {path}: {error.strerror or error}") from error
    return ScannedTree(dict(sorted(files.items())), tuple(sorted(others)))


def refuse_links(root: Path, entries: tuple[str, ...]) -> None:
    if entries:
        shown = ", ".join(str(root / entry) for entry in entries[:5])
        raise UnsafeOutput(
            f"refusing to read {shown}: not a regular file (btp-gitops never follows a symbolic "
            "link in an output tree, nor writes one)"
        )


def read_tree(root: Path) -> dict[str, bytes]:
    tree = scan_tree(root)
    refuse_links(root, tree.others)
    return tree.files


def diff_trees(old: dict[str, bytes], new: dict[str, bytes]) -> TreeChanges:
    added = tuple(sorted(set(new) - set(old)))
    removed = tuple(sorted(set(old) - set(new)))
    changed = tuple(sorted(p for p in set(new) & set(old) if new[p] != old[p]))
    return TreeChanges(added, changed, removed, {p: old[p] for p in (*changed, *removed)})


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


def _leftovers(parent: Path, name: str, kind: str) -> list[Path]:
    return sorted(parent.glob(f".{glob.escape(name)}.{kind}-*"))


def recover_leftovers(parent: Path, name: str, fs: LocalFilesystem | None = None) -> None:
    """Undo what a killed write left: put the old tree back if the fallback swap was cut between its
    two renames, then remove staging and old directories. Call it holding the lock."""
    fs = fs or LocalFilesystem()
    target = parent / name
    old = [p for p in _leftovers(parent, name, "old") if p.is_dir() and not p.is_symlink()]
    if old and not os.path.lexists(target):
        newest = max(old, key=lambda p: p.lstat().st_mtime_ns)
        try:
            fs.rename(newest, target)
        except OSError as error:
            raise OutputNotWritable(
                f"cannot restore {target} from {newest}: {error.strerror or error}"
            ) from error
    for path in [*_leftovers(parent, name, "staging"), *_leftovers(parent, name, "old")]:
        fs.remove_tree(path)


def _umask() -> int:
    """The process's umask: read from /proc where it is shown (no window with another mask)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _swap_in(staging: Path, target: Path, fs: LocalFilesystem) -> None:
    """Put `staging` at `target`; afterwards `staging` holds the old tree (or nothing)."""
    if not os.path.lexists(target):
        fs.rename(staging, target)
        return
    if fs.exchange(staging, target):
        return
    # No atomic exchange here: two renames, and the next run restores the old tree if cut between.
    trash = target.parent / f".{target.name}.old-{staging.name.rsplit('-', 1)[-1]}"
    fs.rename(target, trash)
    try:
        fs.rename(staging, target)
    except OSError:
        fs.rename(trash, target)
        raise
    fs.rename(trash, staging)


def write_subtree(
    root: Path,
    subtree: str,
    files: dict[str, str],
    fs: LocalFilesystem | None = None,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> TreeChanges:
    """Make `root/subtree` contain exactly `files` (relative path -> text), atomically."""
    fs = fs or LocalFilesystem()
    target = root / subtree
    encoded = {path: text.encode("utf-8") for path, text in files.items()}
    with prepared_parent(root, subtree, fs) as parent, directory_lock(parent, lock_timeout):
        recover_leftovers(parent, target.name, fs)
        if os.path.lexists(target) and not target.is_dir():
            raise OutputNotWritable(f"cannot write {target}: it exists and is not a directory")
        changes = diff_trees(read_tree(target), encoded)
        if changes.empty and target.is_dir():
            return changes
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=parent))
        except OSError as error:
            raise OutputNotWritable(
                f"cannot write output directory {parent}: {error.strerror or error}"
            ) from error
        try:  # from here on the staging directory exists: every way out removes it
            os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes 0700; a directory gets the umask
            for relative, data in sorted(encoded.items()):
                path = staging / relative
                fs.make_dirs(path.parent)
                fs.write_bytes(path, data)
            _swap_in(staging, target, fs)
        except OSError as error:
            raise OutputNotWritable(f"cannot write {target}: {error.strerror or error}") from error
        finally:
            fs.remove_tree(staging)
    return changes
