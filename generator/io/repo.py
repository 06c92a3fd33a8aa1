"""Writing a rendered tree into the output repo: only what changed, and so that it can't be lost.

`write_subtree` makes `root/<subtree>` (`clusters/<cluster>/` for a render) hold exactly the files
it is given. A directory that does not exist yet is built in a staging directory beside it and
renamed into place: it appears complete or not at all. An existing directory is changed in place,
file by file, and only where the bytes differ: a file whose bytes are the same is not touched
(same inode, same mtime), so `git status` and `git add` after a render that changed one tenant
look at that tenant's files only. The other way round, 80,000 rewritten files would make Git hash
every one of them again.

The in-place write is a journal, rolled forward:

1. Every new or changed file is written in full into a staging directory beside the target
   (`.<name>.staging-*/new/<path>`), with a plan (`plan.json`): the paths to write, the paths to
   remove, the directories that end up empty. Nothing in the target has been touched yet; a run
   killed here leaves the old tree and a staging directory the next run removes.
2. The staging directory is renamed to `.<name>.journal-*`: the commit point. From here on the
   change is decided, and whoever finds the journal finishes it.
3. The plan is applied: removed files are unlinked, emptied directories removed, and every new
   file renamed from the journal over its old one (one atomic `rename` per file: a path holds its
   complete old bytes or its complete new ones, never a part). The journal is removed last.

A run killed in step 3 leaves a tree mixing old and new files, with the journal beside it; the
next write (any render, under the lock, before it reads the tree) replays the plan, which is
idempotent, and so reaches the new tree exactly; then it renders as usual. A failure the system reports in
step 3 (a read-only directory, a full disk) is rolled back at once from the previous bytes the
writer read (each restored file again written aside and renamed into place), and the error
reported. Roll forward after a kill, because the staged files are complete and the
render asked for them; roll back after an error, because the command fails and promises to leave
the previous output as it was.

Nothing here follows a symbolic link: the tree is read with `O_NOFOLLOW` and every change is made
relative to a directory descriptor opened component by component with `O_NOFOLLOW`, so a link
planted on the way to a file is refused rather than written through. Paths must be plain and
relative (no `..`, no absolute path). Files are not fsync'ed (as before): the guarantee is against
a killed process, not a power cut.

Leftovers of older versions' runs (`.<name>.staging-*`; `.<name>.old-*`, from the whole-tree swap
they did, restored when the tree is missing) are removed or restored by the next write, under
the lock. The lock is `flock` on the parent directory (`clusters/` for a render): a second writer
waits up to a timeout, then fails. New directories get the user's umask, as `mkdir` would give
them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from btp_gitops.generator.core.errors import OutputLocked, OutputNotWritable, Problem, UnsafeOutput
from btp_gitops.generator.core.ownership import MANIFEST_FILE, owned_files

DEFAULT_LOCK_TIMEOUT = 60.0
PLAN_FILE = "plan.json"  # a journal's plan: what to write, remove and prune
NEW_FILES = "new"  # a journal's directory of the complete new files, by path
RESTORED_FILES = "old"  # where a roll-back writes a previous file before renaming it back
_PLAN_FORMAT = 1
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put in place of a file after the scan must not block the read.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ_CHUNK = 1 << 16


class LocalFilesystem:
    """The filesystem operations the writer needs; tests pass a subclass that fails (or kills its
    process) on purpose. The `*_at` operations work relative to a directory descriptor of the
    target tree and never follow a symbolic link."""

    def make_dirs(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)

    def write_bytes(self, path: Path, data: bytes) -> None:
        path.write_bytes(data)

    def rename(self, source: Path, target: Path) -> None:
        os.rename(source, target)

    def remove_tree(self, path: Path) -> None:
        if path.is_symlink():  # a link named like our leftovers: remove the link, never its target
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, ignore_errors=True)

    def open_directory_at(self, parent: int, name: str) -> int:
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)

    def make_directory_at(self, parent: int, name: str) -> None:
        os.mkdir(name, 0o777, dir_fd=parent)  # the umask applies, as for `mkdir`

    def remove_directory_at(self, parent: int, name: str) -> None:
        os.rmdir(name, dir_fd=parent)

    def unlink_at(self, parent: int, name: str) -> None:
        os.unlink(name, dir_fd=parent)

    def move_in_at(self, source: Path, parent: int, name: str) -> None:
        """Rename `source` (a staged file) to `name` in `parent`, replacing what is there."""
        os.rename(source, name, dst_dir_fd=parent)

    def move_out_at(self, parent: int, name: str, target: Path) -> None:
        os.rename(name, target, src_dir_fd=parent)


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


# How a file looked when it was read: inode, size, mtime and ctime (ns). A file changed since
# has another inode (replaced by a rename) or a later ctime: the kernel sets ctime on every write,
# and no call sets it back (`touch -d` sets mtime, and moves ctime on).
Identity = tuple[int, int, int, int]
# A file whose mtime or ctime falls within this margin of the start of the scan that read it is
# "racy" (as Git calls it): a change right after the read can keep both timestamps (they advance
# by the kernel's clock tick, not per write), so its identity proves nothing and it is read again.
RACY_MARGIN_NS = 2_000_000_000


def identity_of(info: os.stat_result) -> Identity:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class ScannedTree:
    files: dict[str, bytes]  # regular files, relative POSIX path -> bytes
    others: tuple[str, ...] = ()  # symbolic links and special files: never followed, never ours
    directories: tuple[str, ...] = ()  # the real directories below the root, relative
    # Each file's identity, taken from its open descriptor before its bytes were read, and the
    # wall clock (ns) when the scan began: what `rescan_tree` trusts to skip reading it again.
    identities: dict[str, Identity] = field(default_factory=dict)
    started_ns: int = 0


def _read_regular_with_identity(path: str) -> tuple[bytes, Identity] | None:
    """The bytes of the regular file at `path`, with its identity as of the open (before the
    read: a write during the read moves ctime on, so the identity never vouches for bytes newer
    than itself); None when it is something else (a link or a special file put there since the
    directory was listed)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:  # a symbolic link now
            return None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, _READ_CHUNK):
            chunks.append(chunk)
        return b"".join(chunks), identity_of(info)
    finally:
        os.close(fd)


def _read_regular(path: str) -> bytes | None:
    """The bytes of the regular file at `path`; None when it is something else (a link or a
    special file put there since the directory was listed)."""
    read = _read_regular_with_identity(path)
    return None if read is None else read[0]


def scan_tree(root: Path, earlier: ScannedTree | None = None) -> ScannedTree:
    """Every regular file under `root`, read without following any symbolic link.

    With `earlier` (a scan of the same tree, by this process, under the same lock), a file whose
    lstat shows the identity that scan recorded, and is not racy, is not read again: its bytes are
    taken from `earlier`. The result is what a scan reading every file would give (links, special
    files, added, removed and changed files all seen), for one `lstat` per unchanged file instead
    of an open, a read and a close.

    `os.scandir` and plain descriptors rather than `pathlib`: a cluster directory of 20,000
    tenants holds 80,000 files, and a `Path` per file costs several times the reading."""
    started = time.time_ns()
    if root.is_symlink() or not root.is_dir():
        return ScannedTree({}, started_ns=started)
    files: dict[str, bytes] = {}
    identities: dict[str, Identity] = {}
    others: list[str] = []
    directories: list[str] = []
    # A file `earlier` read is taken from it when an lstat now shows the identity it recorded (same
    # inode, size, mtime and ctime) and neither timestamp is racy, i.e. this late or later:
    settled = earlier.started_ns - RACY_MARGIN_NS if earlier is not None else 0
    known = earlier.identities if earlier is not None else {}
    pending = [("", os.fspath(root))]
    while pending:
        prefix, directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
            for entry in entries:
                relative = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    directories.append(relative)
                    pending.append((f"{relative}/", entry.path))
                    continue
                if not entry.is_file(follow_symlinks=False):
                    others.append(relative)
                    continue
                if earlier is not None:  # inline: this runs for each of 80,000 files
                    info = entry.stat(follow_symlinks=False)
                    identity = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
                    if (
                        known.get(relative) == identity
                        and info.st_mtime_ns < settled
                        and info.st_ctime_ns < settled
                        and stat.S_ISREG(info.st_mode)
                    ):
                        files[relative] = earlier.files[relative]
                        identities[relative] = identity
                        continue
                read = _read_regular_with_identity(entry.path)
                if read is None:
                    others.append(relative)
                else:
                    files[relative], identities[relative] = read
        except OSError as error:
            where = error.filename or directory
            raise OutputNotWritable(f"cannot read {where}: {error.strerror or error}") from error
    return ScannedTree(
        dict(sorted(files.items())),
        tuple(sorted(others)),
        tuple(sorted(directories)),
        identities,
        # A file kept from `earlier` was read then: it stays racy by that scan's clock.
        started if earlier is None else earlier.started_ns,
    )


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


def diff_trees(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> TreeChanges:
    added = tuple(sorted(set(new) - set(old)))
    removed = tuple(sorted(set(old) - set(new)))
    changed = tuple(sorted(p for p in set(new) & set(old) if new[p] != old[p]))
    return TreeChanges(added, changed, removed, {p: old[p] for p in (*changed, *removed)})


def _plain(relative: str) -> bool:
    parts = relative.split("/")
    return bool(relative) and not relative.startswith("/") and all(p not in ("", ".", "..") for p in parts)


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


# --- the in-place write: plan, journal, apply, roll back ---------------------------------------


@dataclass(frozen=True, slots=True)
class WritePlan:
    """What an in-place write changes, as a journal records it (paths relative to the target)."""

    write: tuple[str, ...] = ()  # added and changed files, staged in the journal
    remove: tuple[str, ...] = ()  # files no longer written
    prune: tuple[str, ...] = ()  # directories no file is left in, deepest first

    def to_json(self) -> str:
        body = {"format": _PLAN_FORMAT, "write": self.write, "remove": self.remove, "prune": self.prune}
        return json.dumps(body, indent=0, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> WritePlan:
        """The plan of a journal; ValueError when it is no plan this writer wrote."""
        body = json.loads(text)
        if not isinstance(body, dict) or body.get("format") != _PLAN_FORMAT:
            raise ValueError("not a plan of this format")
        lists = []
        for key in ("write", "remove", "prune"):
            entries = body.get(key)
            if not isinstance(entries, list) or not all(isinstance(e, str) and _plain(e) for e in entries):
                raise ValueError(f"{key}: not a list of plain relative paths")
            lists.append(tuple(entries))
        return cls(*lists)


def plan_changes(changes: TreeChanges, directories: tuple[str, ...], new: Mapping[str, bytes]) -> WritePlan:
    """The plan making a tree of `directories` and `changes.previous`'s files hold `new`."""
    needed = {parent for path in new for parent in _parents(path)}
    prune = sorted((d for d in directories if d not in needed), key=lambda d: (-d.count("/"), d))
    return WritePlan((*changes.added, *changes.changed), changes.removed, tuple(prune))


def _parents(path: str) -> Iterator[str]:
    directory = path.rpartition("/")[0]
    while directory:
        yield directory
        directory = directory.rpartition("/")[0]


class _Tree:
    """Directory descriptors of one target tree, each opened from its parent's with O_NOFOLLOW:
    a symbolic link (or a file) where a directory should be fails the open, nothing is followed."""

    def __init__(self, parent: Path, name: str, fs: LocalFilesystem) -> None:
        self.fs = fs
        self.root = parent / name
        self.created: list[str] = []  # directories this write made, in order
        try:
            parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self._fds = {"": self._open(parent_fd, name, self.root)}
            finally:
                os.close(parent_fd)
        except OSError as error:
            raise OutputNotWritable(f"cannot write {self.root}: {error.strerror or error}") from error

    def _open(self, parent: int, name: str, path: Path) -> int:
        try:
            return self.fs.open_directory_at(parent, name)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafeOutput(
                    f"refusing to write into {path}: not a real directory (btp-gitops never writes "
                    "through a symbolic link)"
                ) from error
            raise

    def directory(self, relative: str, *, create: bool) -> int | None:
        """The descriptor of `relative` ("" for the root); None when it is missing, or no real
        directory, and not to be created."""
        if relative in self._fds:
            return self._fds[relative]
        above, _, name = relative.rpartition("/")
        parent = self.directory(above, create=create)
        if parent is None:
            return None
        try:
            fd = self._open(parent, name, self.root / relative)
        except UnsafeOutput:
            if create:
                raise
            return None  # a file (or a link) there: nothing below it to remove, nothing followed
        except FileNotFoundError:
            if not create:
                return None
            self.fs.make_directory_at(parent, name)
            self.created.append(relative)
            fd = self._open(parent, name, self.root / relative)
        self._fds[relative] = fd
        return fd

    def forget(self, relative: str) -> None:
        for known in [k for k in self._fds if k == relative or k.startswith(f"{relative}/")]:
            os.close(self._fds.pop(known))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


Step = tuple[str, str]  # ("written" | "removed" | "pruned", path): what `_apply` did, for a roll-back


def _apply(tree: _Tree, journal: Path, plan: WritePlan, done: list[Step]) -> None:
    """Carry out `plan` on `tree`. Idempotent: a step already done (a file moved in, a file or
    directory gone) is passed over, so a journal cut anywhere can be applied again."""
    fs = tree.fs
    for path in plan.remove:
        directory, _, name = path.rpartition("/")
        parent = tree.directory(directory, create=False)
        if parent is None:
            continue
        try:
            fs.unlink_at(parent, name)  # a link is removed itself, never its target
        except FileNotFoundError:
            continue
        except IsADirectoryError:  # a directory put there since: not ours, left
            continue
        done.append(("removed", path))
    for directory in plan.prune:
        above, _, name = directory.rpartition("/")
        parent = tree.directory(above, create=False)
        if parent is None:
            continue
        tree.forget(directory)
        try:
            fs.remove_directory_at(parent, name)
        except FileNotFoundError:
            continue
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                continue  # holds a file someone put there since (or is no directory): left
            raise
        done.append(("pruned", directory))
    staged = journal / NEW_FILES
    for path in plan.write:
        source = staged / path
        if not os.path.lexists(source):
            continue  # moved in before the run was cut
        directory, _, name = path.rpartition("/")
        parent = tree.directory(directory, create=True)
        assert parent is not None  # created when missing
        fs.move_in_at(source, parent, name)
        done.append(("written", path))


def _roll_back(tree: _Tree, journal: Path, done: list[Step], previous: Mapping[str, bytes]) -> None:
    """Undo `done` in reverse order: each new file goes back into the journal (so a roll-back cut
    half-way still rolls forward to the new tree), each previous file is written aside in the
    journal and renamed into place, pruned directories are made again, created ones removed."""
    fs = tree.fs
    created = list(tree.created)  # by the write; directories made again below stay
    for kind, path in reversed(done):
        directory, _, name = path.rpartition("/")
        if kind == "pruned":
            tree.directory(path, create=True)
            continue
        parent = tree.directory(directory, create=True)
        assert parent is not None
        if kind == "written":
            fs.move_out_at(parent, name, journal / NEW_FILES / path)
        if path in previous:
            aside = journal / RESTORED_FILES / path
            fs.make_dirs(aside.parent)
            fs.write_bytes(aside, previous[path])
            fs.move_in_at(aside, parent, name)
    for directory in reversed(created):
        above, _, name = directory.rpartition("/")
        parent = tree.directory(above, create=False)
        tree.forget(directory)
        if parent is not None:
            with contextlib.suppress(OSError):  # not empty (a file someone put there): left
                fs.remove_directory_at(parent, name)


def _stage(parent: Path, name: str, fs: LocalFilesystem) -> Path:
    try:
        return Path(tempfile.mkdtemp(prefix=f".{name}.staging-", dir=parent))
    except OSError as error:
        raise OutputNotWritable(
            f"cannot write output directory {parent}: {error.strerror or error}"
        ) from error


def _journal_of(staging: Path, name: str) -> Path:
    return staging.with_name(f".{name}.journal-{staging.name.rsplit('-', 1)[-1]}")


def _discard(journal: Path, name: str, fs: LocalFilesystem) -> None:
    """Remove a finished journal: renamed back to a staging name first, so that a run killed
    while removing it leaves a staging directory (removed), never a journal without its plan."""
    finished = journal.with_name(f".{name}.staging-{journal.name.rsplit('-', 1)[-1]}")
    try:
        fs.rename(journal, finished)
    except OSError as error:
        raise OutputNotWritable(f"cannot remove {journal}: {error.strerror or error}") from error
    fs.remove_tree(finished)


def _write_journal(
    parent: Path, name: str, plan: WritePlan, new: Mapping[str, bytes], fs: LocalFilesystem
) -> Path:
    """Stage the new files and the plan, then commit: the journal's rename is the decision."""
    staging = _stage(parent, name, fs)
    try:
        for path in plan.write:
            staged = staging / NEW_FILES / path
            fs.make_dirs(staged.parent)
            fs.write_bytes(staged, new[path])
        fs.write_bytes(staging / PLAN_FILE, plan.to_json().encode())
        journal = _journal_of(staging, name)
        fs.rename(staging, journal)
    except OSError as error:
        fs.remove_tree(staging)
        raise OutputNotWritable(f"cannot write {parent / name}: {error.strerror or error}") from error
    except BaseException:
        fs.remove_tree(staging)
        raise
    return journal


def _write_in_place(
    *,
    parent: Path,
    name: str,
    scanned: ScannedTree,
    changes: TreeChanges,
    new: Mapping[str, bytes],
    fs: LocalFilesystem,
) -> None:
    plan = plan_changes(changes, scanned.directories, new)
    tree = _Tree(parent, name, fs)  # refuses a link before anything is staged
    try:
        journal = _write_journal(parent, name, plan, new, fs)
    except BaseException:
        tree.close()
        raise
    done: list[Step] = []
    try:
        _apply(tree, journal, plan, done)
    except (OSError, UnsafeOutput) as error:
        try:
            _roll_back(tree, journal, done, scanned.files)
        except OSError as undo:
            raise OutputNotWritable(
                f"cannot write {parent / name}: {getattr(error, 'strerror', None) or error}; putting "
                f"the previous files back failed too ({undo.strerror or undo}): the next render "
                f"finishes the write recorded in {journal}"
            ) from error
        _discard(journal, name, fs)
        if isinstance(error, UnsafeOutput):
            raise
        raise OutputNotWritable(f"cannot write {parent / name}: {error.strerror or error}") from error
    finally:
        tree.close()
    _discard(journal, name, fs)


def _replay(parent: Path, name: str, journal: Path, fs: LocalFilesystem) -> None:
    """Finish the write a killed run committed to `journal` (roll forward)."""
    try:
        fd = os.open(journal / PLAN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            plan = WritePlan.from_json(handle.read().decode("utf-8"))
    except (OSError, ValueError) as error:
        raise OutputNotWritable(
            f"cannot finish the write an interrupted run recorded in {journal}: its {PLAN_FILE} is "
            "missing or not one btp-gitops wrote; check the cluster directory and remove the journal"
        ) from error
    tree = _Tree(parent, name, fs)
    try:
        _apply(tree, journal, plan, [])
    except OSError as error:
        raise OutputNotWritable(
            f"cannot finish the write an interrupted run recorded in {journal}: {error.strerror or error}"
        ) from error
    finally:
        tree.close()


def recover_leftovers(parent: Path, name: str, fs: LocalFilesystem | None = None) -> None:
    """Finish or undo what a killed write left, then remove its leftovers; call it holding the lock.

    A journal (`.<name>.journal-*`) is a committed in-place write: it is applied again, which
    completes it. A staging directory is a write cut before its commit: removed, the tree was not
    touched. `.<name>.old-*` is what an older version's whole-tree swap left when cut between its
    two renames: put back when the tree is missing, else removed."""
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
    journals = [p for p in _leftovers(parent, name, "journal") if p.is_dir() and not p.is_symlink()]
    if target.is_dir() and not target.is_symlink():  # without the tree, a journal has nothing to finish
        for journal in sorted(journals, key=lambda p: p.lstat().st_mtime_ns):
            _replay(parent, name, journal, fs)
            _discard(journal, name, fs)
    for kind in ("staging", "old", "journal"):
        for path in _leftovers(parent, name, kind):
            fs.remove_tree(path)


def read_finished_tree(parent: Path, name: str) -> dict[str, bytes]:
    """The files of `parent/name` as the write in progress or cut will leave them: a reader that
    takes the lock shared (`diff --against DIR`) may find a journal a killed run left, with a tree
    mixing old and new files; it reads the journal's plan and staged files on top, and changes
    nothing (the next write replays the journal for real)."""
    target = parent / name
    files = read_tree(target)
    journals = [p for p in _leftovers(parent, name, "journal") if p.is_dir() and not p.is_symlink()]
    for journal in sorted(journals, key=lambda p: p.lstat().st_mtime_ns):
        try:
            with os.fdopen(
                os.open(journal / PLAN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb"
            ) as plan_file:
                plan = WritePlan.from_json(plan_file.read().decode("utf-8"))
            for path in plan.remove:
                files.pop(path, None)
            for path in plan.write:
                staged = os.fspath(journal / NEW_FILES / path)
                data = _read_regular(staged) if os.path.lexists(staged) else files.get(path)
                if data is None:
                    raise ValueError(f"{path}: neither staged nor in the tree")
                files[path] = data
        except (OSError, ValueError) as error:
            raise OutputNotWritable(
                f"cannot read {target}: an interrupted render left {journal}, and it cannot be read "
                f"({error}); render again to finish that write"
            ) from error
    return dict(sorted(files.items()))


def refuse_removing_foreign(target: Path, files: Mapping[str, bytes], removed: tuple[str, ...]) -> None:
    """In a tree with ownership manifests (a render's, core.ownership), remove only files they
    list: a render refuses foreign files when it reads the tree, and one put there while it
    rendered is refused here, before anything is written. Trees without (the CRDs, module
    resources, a cluster directory written before the manifests) are the writer's whole."""
    if MANIFEST_FILE not in files or not removed:
        return
    owned = owned_files(files, ())
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


def write_subtree(
    root: Path,
    subtree: str,
    files: Mapping[str, str],
    fs: LocalFilesystem | None = None,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    scanned: ScannedTree | None = None,
) -> TreeChanges:
    """Make `root/subtree` contain exactly `files` (relative path -> text), changing only the
    files whose bytes differ (see the module docstring for how a kill or an error is survived).

    `scanned`: a `scan_tree` of `root/subtree` the caller made holding the lock it still holds (a
    render reads the previous tree before rendering): the tree is then listed again, and only the
    files whose identity changed since (or that were racy) are read again (see `scan_tree`)."""
    fs = fs or LocalFilesystem()
    target = root / subtree
    unsafe = sorted(path for path in files if not _plain(path))
    if unsafe:
        raise UnsafeOutput(f"refusing to write {unsafe[0]!r}: not a plain relative path under {target}")
    encoded = {path: text.encode("utf-8") for path, text in files.items()}
    with prepared_parent(root, subtree, fs) as parent, directory_lock(parent, lock_timeout):
        recover_leftovers(parent, target.name, fs)
        if os.path.lexists(target) and not target.is_dir():
            raise OutputNotWritable(f"cannot write {target}: it exists and is not a directory")
        scanned = scan_tree(target, scanned)
        refuse_links(target, scanned.others)
        changes = diff_trees(scanned.files, encoded)
        refuse_removing_foreign(target, scanned.files, changes.removed)
        if target.is_dir():
            if not changes.empty:
                _write_in_place(
                    parent=parent, name=target.name, scanned=scanned, changes=changes, new=encoded, fs=fs
                )
            return changes
        staging = _stage(parent, target.name, fs)
        try:  # a new tree: built beside, renamed into place whole
            os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes 0700; a directory gets the umask
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
