"""The files of the controller's clone, reached without ever following a symbolic link.

The clone holds whatever was pushed to the source repository, and Git checks a committed symbolic
link out as a link: `zero.yaml -> /dev/zero` or `tenants -> ../../outside` is in the working tree
as such. So every path the controller reads, writes or removes there is reached one component at
a time from the clone's root, each directory opened relative to its parent with `O_NOFOLLOW |
O_DIRECTORY`, and the last component opened, created or unlinked relative to its directory with
`O_NOFOLLOW`: a link is never followed, whether it is the file or any directory on its way, and a
link swapped in between two steps is met as a link, not followed. (Only the root itself, the
`--workdir` the operator chose, is opened as named.)

Reads take regular files only: the kind is checked with `lstat` before the open (a FIFO or device
is never opened at all), again with `fstat` after it (`O_NONBLOCK`, so a FIFO swapped in between
cannot hang the open), and the size is checked before a byte is read; a file growing while it is
read is cut at the limit and refused. Whatever is refused is `RefusedPath`, naming the path
relative to the clone (never what a link points to).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePath

_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20

LINK = "a symbolic link, which the controller never follows in its clone"
NOT_REGULAR = "not a regular file (a device, FIFO or socket), which the controller never reads"


class RefusedPath(Exception):
    """A path of the clone the controller will not read or write through; `relative` names the
    component at fault (the file, or the link or file standing where a directory should be)."""

    def __init__(self, relative: str, reason: str) -> None:
        super().__init__(f"{relative}: {reason}")
        self.relative = relative
        self.reason = reason


def _kind_of(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return LINK
    if stat.S_ISREG(mode):
        return "a file, not a directory"
    return NOT_REGULAR


def _refused_component(parent: int, name: str, shown: str, error: OSError) -> RefusedPath:
    """Why `name` in `parent` could not be opened as a directory, in words."""
    if error.errno in (errno.ENOTDIR, errno.ELOOP):
        with contextlib.suppress(OSError):
            return RefusedPath(shown, _kind_of(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode))
    return RefusedPath(shown, error.strerror or str(error))


@contextlib.contextmanager
def _directory(root: Path, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor of the directory `root/parts`, every component opened without following a
    link; with `create`, missing directories are made on the way. FileNotFoundError when one is
    missing (without `create`), RefusedPath when one is a link or not a directory."""
    fd = os.open(root, _ROOT_FLAGS)
    try:
        for depth, part in enumerate(parts):
            shown = "/".join(parts[: depth + 1])
            try:
                child = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened below, checked
                    os.mkdir(part, dir_fd=fd)
                try:
                    child = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
                except OSError as error:
                    raise _refused_component(fd, part, shown, error) from None
            except OSError as error:
                raise _refused_component(fd, part, shown, error) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _split(relative: PurePath | str) -> tuple[list[str], str]:
    parts = PurePath(relative).parts
    if not parts or PurePath(relative).is_absolute() or any(part in ("", ".", "..") for part in parts):
        raise RefusedPath(str(relative), "not a path inside the clone")
    return list(parts[:-1]), parts[-1]


def walk(root: Path, suffixes: tuple[str, ...]) -> list[tuple[str, os.stat_result]]:
    """Every entry under `root` whose name ends with one of `suffixes` and that is not a directory
    (links, FIFOs and devices included, for the caller to refuse), with its `lstat`, as
    (absolute path, stat); hidden files and directories are skipped, and a linked directory is
    never entered. Ordered by path components. RefusedPath for a directory that cannot be read
    (a part of the tree that cannot be seen is not passed over: a record might be in it)."""
    found: list[tuple[str, os.stat_result]] = []
    # Only the descriptors of the directories from the root to the current one are open.
    stack: list[tuple[int, str, Iterator[str]]] = []
    try:
        _enter(stack, os.open(root, _ROOT_FLAGS), os.fspath(root), root, suffixes, found)
        while stack:
            fd, directory, subdirectories = stack[-1]
            name = next(subdirectories, None)
            if name is None:
                stack.pop()
                os.close(fd)
                continue
            path = os.path.join(directory, name)
            try:
                child = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                continue  # gone since it was listed
            except OSError as error:
                raise _refused_component(fd, name, os.path.relpath(path, root), error) from None
            _enter(stack, child, path, root, suffixes, found)
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    found.sort(key=lambda item: item[0].replace(os.sep, "\0"))
    return found


def _enter(  # noqa: PLR0917 - the walk's state, passed down
    stack: list[tuple[int, str, Iterator[str]]],
    fd: int,
    directory: str,
    root: Path,
    suffixes: tuple[str, ...],
    found: list[tuple[str, os.stat_result]],
) -> None:
    """List the directory open as `fd`: its files of `suffixes` go to `found`, and it goes on the
    stack with its visible subdirectories (not links to one) to enter next."""
    subdirectories: list[str] = []
    try:
        with os.scandir(fd) as listing:
            entries = list(listing)
    except OSError as error:
        os.close(fd)
        raise RefusedPath(os.path.relpath(directory, root), error.strerror or str(error)) from None
    try:
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                subdirectories.append(name)
            elif name.endswith(suffixes):
                with contextlib.suppress(FileNotFoundError):  # gone since it was listed
                    found.append((os.path.join(directory, name), entry.stat(follow_symlinks=False)))
    except BaseException:
        os.close(fd)
        raise
    stack.append((fd, directory, iter(subdirectories)))


def lstat_beneath(root: Path, relative: PurePath | str) -> os.stat_result | None:
    """The `lstat` of `root/relative`; None when it is missing or a directory on its way is a link
    or not a directory (nothing there belongs to the tree as Git sees it)."""
    try:
        directories, name = _split(relative)
        with _directory(root, directories) as parent:
            return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except (FileNotFoundError, RefusedPath):
        return None


def read_beneath(root: Path, relative: PurePath | str, limit: int) -> tuple[os.stat_result, bytes]:
    """The `fstat` and bytes of the regular file `root/relative`, at most `limit` bytes; RefusedPath
    for a link (the file or a directory on its way), anything but a regular file, a larger file,
    or a file that cannot be opened."""
    directories, name = _split(relative)
    shown = PurePath(relative).as_posix()
    try:
        with _directory(root, directories) as parent:
            kind = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
            if not stat.S_ISREG(kind):
                raise RefusedPath(shown, LINK if stat.S_ISLNK(kind) else NOT_REGULAR)
            fd = os.open(name, _READ_FLAGS, dir_fd=parent)
    except OSError as error:
        reason = LINK if error.errno == errno.ELOOP else error.strerror or str(error)
        raise RefusedPath(shown, reason) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise RefusedPath(shown, NOT_REGULAR)
        if status.st_size > limit:
            raise RefusedPath(shown, too_large(status.st_size, limit))
        return status, _read_bounded(fd, status.st_size, limit, shown)
    except OSError as error:
        raise RefusedPath(shown, error.strerror or str(error)) from None
    finally:
        os.close(fd)


def too_large(size: int | None, limit: int) -> str:
    found = f"{size} bytes, " if size is not None else ""
    return f"too large ({found}the limit is {limit} bytes)"


def _read_bounded(fd: int, size: int, limit: int, shown: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        # The size fstat gave and one byte more first (a read allocates what it asks for).
        asked = min(size + 1 if not chunks else _CHUNK, limit + 1 - total)
        chunk = os.read(fd, asked)
        chunks.append(chunk)
        total += len(chunk)
        if len(chunk) < asked:
            break
    if total > limit:
        raise RefusedPath(shown, too_large(None, limit))
    return b"".join(chunks)


def write_beneath(root: Path, relative: PurePath | str, data: bytes, *, new: bool) -> None:
    """Write `data` to the regular file `root/relative`, making missing directories on the way;
    `new`: the file must not exist yet (FileExistsError, also for a link or anything else by that
    name). RefusedPath for a link on the way or in the file's place, or a file that is not
    regular: nothing is written then."""
    directories, name = _split(relative)
    shown = PurePath(relative).as_posix()
    with _directory(root, directories, create=True) as parent:
        try:
            fd = os.open(name, _WRITE_FLAGS | (os.O_EXCL if new else 0), 0o666, dir_fd=parent)
        except FileExistsError:
            raise
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise RefusedPath(shown, LINK) from None
            if error.errno == errno.ENXIO:  # a FIFO nobody reads, opened without blocking
                raise RefusedPath(shown, NOT_REGULAR) from None
            raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RefusedPath(shown, NOT_REGULAR)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def remove_beneath(root: Path, relative: PurePath | str, *, missing_ok: bool = False) -> None:
    """Unlink `root/relative` itself (a link is removed, never what it points to). RefusedPath
    when a directory on its way is a link; FileNotFoundError unless `missing_ok`."""
    directories, name = _split(relative)
    try:
        with _directory(root, directories) as parent:
            os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        if not missing_ok:
            raise


def discard_beneath(root: Path, relative: PurePath | str) -> None:
    """`remove_beneath`, quietly doing nothing when the path is missing or lies beyond a link or
    a file on its way (nothing there belongs to the working tree as Git sees it)."""
    with contextlib.suppress(RefusedPath):
        remove_beneath(root, relative, missing_ok=True)


def remove_empty_directory_beneath(root: Path, relative: PurePath | str) -> bool:
    """Remove the directory `root/relative` if it is one (not a link to one) and empty; whether it
    was removed."""
    try:
        directories, name = _split(relative)
        with _directory(root, directories) as parent:
            if not stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                return False
            os.rmdir(name, dir_fd=parent)
            return True
    except (FileNotFoundError, RefusedPath):
        return False
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return False
        raise
