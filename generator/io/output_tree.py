"""The output tree as the writer and its readers see it: filesystem operations, the scan, bounded reads.

Everything here reads a tree someone else may have written (a clone of a GitOps repository a fork
or another team can push to), so nothing follows a symbolic link: files are opened with
`O_NOFOLLOW` (and `O_NONBLOCK`, so a FIFO planted there does not block), only regular files are
read, and a file larger than `MAX_TREE_FILE_BYTES` is refused from its `fstat`, before a byte of
it is read (a rendered file is far smaller; the limit is the one sources have, 64 MiB).
io.repo writes the tree, io.journal keeps its in-place writes safe against a kill.
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from btp_gitops.generator.core.errors import OutputNotWritable, UnsafeOutput
from btp_gitops.generator.io.input_files import MAX_FILE_BYTES

MAX_TREE_FILE_BYTES = MAX_FILE_BYTES  # a file read back from an output tree, a journal or a Git blob

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put in place of a file after the scan must not block the read.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
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
        return os.open(name, DIRECTORY_FLAGS, dir_fd=parent)

    def make_directory_at(self, parent: int, name: str) -> None:
        os.mkdir(name, 0o777, dir_fd=parent)  # the umask applies, as for `mkdir`

    def remove_directory_at(self, parent: int, name: str) -> None:
        os.rmdir(name, dir_fd=parent)

    def unlink_at(self, parent: int, name: str) -> None:
        os.unlink(name, dir_fd=parent)

    def move_in_at(self, source_dir: int, source_name: str, parent: int, name: str) -> None:
        """Rename the staged file `source_name` in `source_dir` to `name` in `parent`, replacing
        what is there (both directories are descriptors: no link on either way is followed)."""
        os.rename(source_name, name, src_dir_fd=source_dir, dst_dir_fd=parent)

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


# Whether the file at a path holds exactly these bytes, on Git's word (io.git_blobs): True only
# when Git vouches for the file and its blob id is the bytes'; False means "read it to know".
Vouch = Callable[[str, bytes], bool]


def _never(path: str, data: bytes) -> bool:
    return False


class Vouched(Protocol):
    """The files Git vouches for (io.git_blobs.VouchedBlobs): path -> blob id, and the check."""

    @property
    def blobs(self) -> Mapping[str, str]: ...

    @property
    def object_format(self) -> str: ...

    def holds(self, path: str, data: bytes) -> bool: ...


class TreeFiles(Mapping[str, bytes]):
    """The regular files of a scanned tree, by relative path: the bytes of those that were read,
    and, for those Git vouched for (`vouched`), the bytes read only when someone asks for them
    (bounded, no link followed). `holds` tells whether a file holds given bytes, without reading
    it when Git vouches for it; the writer compares every new file that way."""

    __slots__ = ("_by_git", "_known_ids", "_order", "_read", "_root", "_vouch", "_vouched")

    def __init__(
        self,
        root: str,
        read: dict[str, bytes],
        vouched: frozenset[str] = frozenset(),
        by_git: Vouched | None = None,
    ) -> None:
        self._root = root
        self._read = read
        self._vouched = vouched
        self._by_git = by_git
        self._vouch: Vouch = by_git.holds if by_git is not None else _never
        self._order: tuple[str, ...] | None = None  # every path, in order, once asked for
        self._known_ids: dict[str, str] | None = None

    @property
    def vouched(self) -> frozenset[str]:
        """The files Git vouched for, not read when the tree was scanned."""
        return self._vouched

    def vouched_for(self, path: str, data: bytes) -> bool:
        """Whether `path` is a file Git vouched for, with exactly `data` as its bytes."""
        return path in self._vouched and self._vouch(path, data)

    def blob_of(self, path: str) -> str | None:
        """The SHA-1 blob id Git vouches the file at `path` holds; None when Git does not vouch
        for it (or the repository names blobs by SHA-256)."""
        return self.known_blob_ids().get(path)

    def known_blob_ids(self) -> Mapping[str, str]:
        """`blob_of` for every file it knows, by path (made once)."""
        if self._known_ids is None:
            by_git = self._by_git
            if by_git is None or by_git.object_format != "sha1":
                self._known_ids = {}
            else:
                blobs = by_git.blobs
                # Every file Git listed was found by the walk (as a rule): Git's own mapping then.
                whole = len(self._vouched) == len(blobs) and self._vouched.issubset(blobs.keys())
                self._known_ids = dict(blobs) if whole else {path: blobs[path] for path in self._vouched}
        return self._known_ids

    def holds(self, path: str, data: bytes) -> bool:
        """Whether the file at `path` holds exactly `data` (read when Git does not vouch)."""
        if path in self._vouched and self._vouch(path, data):
            return True
        return path in self and self[path] == data

    def __getitem__(self, path: str) -> bytes:
        data = self._read.get(path)
        if data is not None:
            return data
        if path not in self._vouched:
            raise KeyError(path)
        shown = os.path.join(self._root, path)
        try:
            read = _read_regular_with_identity(shown)
        except OSError as error:
            raise OutputNotWritable(f"cannot read {shown}: {error.strerror or error}") from error
        if read is None:
            raise UnsafeOutput(
                f"refusing to read {shown}: not a regular file (btp-gitops never follows a "
                "symbolic link in an output tree, nor writes one)"
            )
        self._read[path] = read[0]
        return read[0]

    def __contains__(self, path: object) -> bool:
        return path in self._read or path in self._vouched

    def path_set(self) -> set[str]:
        """Every path, unordered (iterating orders them: 80,000 paths sorted for nothing)."""
        return set(self._vouched).union(self._read)

    def __iter__(self) -> Iterator[str]:
        if self._order is None:  # the paths are fixed by the scan; reading one does not add it
            self._order = tuple(sorted({*self._read, *self._vouched}))
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._read) + len(self._vouched)


class EncodedTexts(Mapping[str, bytes]):
    """Texts by path, each encoded (UTF-8) when first asked for: a writer compares most files of
    a large tree by a blob id it already knows, and writes few."""

    __slots__ = ("_encoded", "_texts")

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = texts
        self._encoded: dict[str, bytes] = {}

    def __getitem__(self, path: str) -> bytes:
        data = self._encoded.get(path)
        if data is None:
            data = self._encoded[path] = self._texts[path].encode("utf-8")
        return data

    def __contains__(self, path: object) -> bool:
        return path in self._texts

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


@dataclass(frozen=True, slots=True)
class ScannedTree:
    files: Mapping[str, bytes]  # regular files, relative POSIX path -> bytes (TreeFiles when scanned)
    others: tuple[str, ...] = ()  # symbolic links and special files: never followed, never ours
    directories: tuple[str, ...] = ()  # the real directories below the root, relative
    # Each file's identity, taken from its open descriptor before its bytes were read, and the
    # wall clock (ns) when the scan began: what `rescan_tree` trusts to skip reading it again.
    identities: dict[str, Identity] = field(default_factory=dict)
    started_ns: int = 0
    by_git: Vouched | None = None  # what Git vouched for when scanned (io.git_blobs): ask it again

    def holds(self, path: str, data: bytes) -> bool:
        files = self.files
        if isinstance(files, TreeFiles):
            return files.holds(path, data)
        return files.get(path) == data


def _size_text(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}"
    return f"{size} bytes"


def too_large(shown: str, size: int | None, limit: int = MAX_TREE_FILE_BYTES) -> UnsafeOutput:
    """The refusal of a file read back (from a tree, a journal, a Git blob) over `limit`."""
    found = f"{_size_text(size)}" if size is not None else "it grew while it was read"
    return UnsafeOutput(
        f"refusing to read {shown}: too large ({found}; a file read back from an output tree may "
        f"have at most {_size_text(limit)}); btp-gitops never writes such a file: move it away"
    )


def read_open_file(fd: int, info: os.stat_result, shown: str, limit: int = MAX_TREE_FILE_BYTES) -> bytes:
    """The bytes of the regular file open at `fd` (`info`: its fstat), refused before reading when
    its size is over `limit`, and while reading when it grows past it (or is a file whose size
    fstat does not tell, as in /proc)."""
    if info.st_size > limit:
        raise too_large(shown, info.st_size, limit)
    chunks = []
    total = 0
    while chunk := os.read(fd, min(_READ_CHUNK, limit + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise too_large(shown, None, limit)
    return b"".join(chunks)


def _read_regular_with_identity(path: str) -> tuple[bytes, Identity] | None:
    """The bytes of the regular file at `path`, with its identity as of the open (before the
    read: a write during the read moves ctime on, so the identity never vouches for bytes newer
    than itself); None when it is something else (a link or a special file put there since the
    directory was listed). Bounded (`read_open_file`)."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:  # a symbolic link now
            return None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        return read_open_file(fd, info, path), identity_of(info)
    finally:
        os.close(fd)


def read_regular(path: str) -> bytes | None:
    """The bytes of the regular file at `path`; None when it is something else (a link or a
    special file put there since the directory was listed)."""
    read = _read_regular_with_identity(path)
    return None if read is None else read[0]


def scan_tree(
    root: Path,
    earlier: ScannedTree | None = None,
    *,
    vouched: Vouched | None = None,
    vouched_later: Callable[[], Vouched | None] | None = None,
) -> ScannedTree:
    """Every regular file under `root`, read without following any symbolic link.

    With `vouched` (the files Git vouches for, io.git_blobs), those files are listed, not read:
    their bytes are read when asked for (`TreeFiles`). A file Git vouches for is still seen as
    what the listing shows (a link or a special file put in its place is never taken for it).

    With `earlier` (a scan of the same tree, by this process, under the same lock), a file whose
    lstat shows the identity that scan recorded, and is not racy, is not read again: its bytes are
    taken from `earlier`. The result is what a scan reading every file would give (links, special
    files, added, removed and changed files all seen), for one `lstat` per unchanged file instead
    of an open, a read and a close.

    `vouched_later`: Git's word still being asked for (io.git_blobs.start_work_tree_blobs): the tree is
    walked meanwhile, and the files are read once it is known which of them Git vouches for.

    `os.scandir` and plain descriptors rather than `pathlib`: a cluster directory of 20,000
    tenants holds 80,000 files, and a `Path` per file costs several times the reading."""
    started = time.time_ns()
    if root.is_symlink() or not root.is_dir():
        return ScannedTree(TreeFiles(os.fspath(root), {}), started_ns=started, by_git=vouched)
    trusted = vouched.blobs if vouched is not None else {}
    listed: list[str] | None = [] if vouched_later is not None else None
    skipped: list[str] = []
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
                if listed is not None:
                    listed.append(relative)  # its path is made again only if it is read
                    continue
                if relative in trusted:
                    skipped.append(relative)
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
                        files[relative] = earlier.files[relative]  # read by it: not vouched
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
    if vouched_later is not None and listed is not None:
        vouched = vouched_later()
        skipped = _read_unvouched(
            os.fspath(root), listed, vouched, files=files, identities=identities, others=others
        )
    return ScannedTree(
        TreeFiles(os.fspath(root), files, frozenset(skipped), vouched),
        tuple(sorted(others)),
        tuple(sorted(directories)),
        identities,
        # A file kept from `earlier` was read then: it stays racy by that scan's clock.
        started if earlier is None else earlier.started_ns,
        vouched,
    )


def _read_unvouched(
    root: str,
    listed: list[str],
    vouched: Vouched | None,
    *,
    files: dict[str, bytes],
    identities: dict[str, Identity],
    others: list[str],
) -> list[str]:
    """Read the walked files (paths under `root`) Git does not vouch for into `files` and
    `identities` (what is no regular file by now into `others`); the vouched ones, returned."""
    trusted = vouched.blobs if vouched is not None else {}
    unvouched = [relative for relative in listed if relative not in trusted]
    for relative in unvouched:
        _read_into(relative, f"{root}/{relative}", files, identities, others)
    return listed if not unvouched else [relative for relative in listed if relative in trusted]


def _read_into(
    relative: str,
    path: str,
    files: dict[str, bytes],
    identities: dict[str, Identity],
    others: list[str],
    *,
    missing_ok: bool = False,
) -> None:
    """The file at `path` read into `files` and `identities` under `relative`, or named in
    `others` when it is no regular file by now (with `missing_ok`, left out when it is gone)."""
    try:
        read = _read_regular_with_identity(path)
    except OSError as error:
        if missing_ok and isinstance(error, FileNotFoundError):
            return
        raise OutputNotWritable(f"cannot read {path}: {error.strerror or error}") from error
    if read is None:
        others.append(relative)
    else:
        files[relative], identities[relative] = read


def refreshed_scan(root: Path, earlier: ScannedTree, vouched: Vouched) -> ScannedTree:
    """`earlier` (a scan of `root` made with Git's word, by this process, under the lock it still
    holds) brought up to date without walking the tree again: `vouched` is what Git vouches for
    now (asked again: a tracked file edited since is dirty now, and read), and each file
    `earlier` read is lstat'ed, and read again when its identity changed or is racy. A file that
    turned into a link or a special file is seen as one (`others`). What was put into the tree
    beside its files since `earlier` is not seen: the writer never reads, removes or writes
    through it (every directory it changes is opened without following a link, and it removes
    only files `earlier` found), and the next render's scan refuses it."""
    started = time.time_ns()
    old = earlier.files
    if not isinstance(old, TreeFiles):
        return scan_tree(root, earlier, vouched=vouched)
    base = os.fspath(root)
    settled = earlier.started_ns - RACY_MARGIN_NS
    # Git vouches for a path still only with the blob id it gave before (io.git_blobs).
    still = vouched.blobs
    now_vouched = old.vouched.intersection(still.keys())
    to_read = sorted(old.vouched.difference(now_vouched))
    files: dict[str, bytes] = {}
    identities: dict[str, Identity] = {}
    others = list(earlier.others)
    for path, identity in earlier.identities.items():
        try:
            info = os.lstat(os.path.join(base, path))
        except FileNotFoundError:
            continue
        except OSError as error:
            raise OutputNotWritable(
                f"cannot read {os.path.join(base, path)}: {error.strerror or error}"
            ) from error
        if (
            (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns) == identity
            and info.st_mtime_ns < settled
            and info.st_ctime_ns < settled
            and stat.S_ISREG(info.st_mode)
        ):
            files[path], identities[path] = old[path], identity
        else:
            to_read.append(path)
    for path in to_read:
        _read_into(path, os.path.join(base, path), files, identities, others, missing_ok=True)
    return ScannedTree(
        TreeFiles(base, files, now_vouched, vouched),
        tuple(sorted(set(others))),
        earlier.directories,
        identities,
        started if to_read else earlier.started_ns,
        vouched,
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
    return dict(tree.files.items())


def diff_trees(
    old: Mapping[str, bytes],
    new: Mapping[str, bytes],
    claims: Mapping[str, str] | None = None,
    kept: AbstractSet[str] = frozenset(),
) -> TreeChanges:
    """What makes `old` into `new`. A file of `old` Git vouches for (`TreeFiles`) is not read when
    its blob id is the new bytes'; any other is compared byte for byte, and the previous bytes of
    every changed and removed file are read (a roll-back writes them back).

    `claims`: the SHA-1 blob ids of some of the new files, as the caller knows them without
    hashing (the render pack's): such a file is the same as one Git vouches for when the ids are
    equal. A claim is checked where it matters, on the bytes about to be written (`write_subtree`).

    `kept`: files of `old` that stay as they are, though not in `new` (neither compared nor removed)."""
    new_paths = set(new)
    old_paths = old.path_set() if isinstance(old, TreeFiles) else set(old)
    old_paths.difference_update(kept)
    added = tuple(sorted(new_paths - old_paths))
    removed = tuple(sorted(old_paths - new_paths))
    common = new_paths & old_paths
    if isinstance(old, TreeFiles):
        holds, known = old.holds, old.known_blob_ids()
        claimed = claims or {}
        # The claimed files Git holds with the claimed id first, in one comprehension (80,000 in
        # a warm render); each other file on its own.
        held = known.get
        same = {path for path, claim in claimed.items() if held(path) == claim}
        changed = tuple(
            sorted(
                path
                for path in common.difference(same)
                if not (
                    found == claim
                    if (claim := claimed.get(path)) is not None and (found := held(path)) is not None
                    else holds(path, new[path])
                )
            )
        )
    else:
        changed = tuple(sorted(p for p in common if new[p] != old[p]))
    return TreeChanges(added, changed, removed, {p: old[p] for p in (*changed, *removed)})


# What a path that is not plain (see `plain_path`) puts into the paths joined by NULs, with a NUL
# before the first: an empty path, a leading or trailing slash, an empty, `.` or `..` component.
_UNPLAIN_MARKS = (
    "\0\0",
    "\0/",
    "/\0",
    "//",
    "/./",
    "/.\0",
    "\0./",
    "\0.\0",
    "/../",
    "/..\0",
    "\0../",
    "\0..\0",
)


def unplain_paths(paths: Iterable[str]) -> list[str]:
    """The paths that are not plain relative ones (`plain_path`), in order: when all are plain (a
    tree of 80,000 files), a few substring searches over all of them at once tell, else path by
    path. A path holding a NUL itself is checked by itself (the count of NULs tells)."""
    listed = list(paths)
    joined = "\0" + "\0".join(listed) + "\0"
    if joined.count("\0") == len(listed) + 1 and not any(mark in joined for mark in _UNPLAIN_MARKS):
        return []
    return sorted(path for path in listed if not plain_path(path))


def plain_path(relative: str) -> bool:
    parts = relative.split("/")
    return bool(relative) and not relative.startswith("/") and all(p not in ("", ".", "..") for p in parts)


def leftovers(parent: Path, name: str, kind: str) -> list[Path]:
    return sorted(parent.glob(f".{glob.escape(name)}.{kind}-*"))


def current_umask() -> int:
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


def stage_directory(parent: Path, name: str) -> Path:
    try:
        return Path(tempfile.mkdtemp(prefix=f".{name}.staging-", dir=parent))
    except OSError as error:
        raise OutputNotWritable(
            f"cannot write output directory {parent}: {error.strerror or error}"
        ) from error
