"""Files of a cache directory, read and written relative to a directory descriptor.

The render cache (io.render_cache) and its pack (io.render_pack) keep untrusted files in a
directory the command owns. Each read here takes a file whole or not at all: opened under a
directory descriptor without following a link (`O_NOFOLLOW`, `O_NONBLOCK`: a FIFO planted there
does not block), a regular file no larger than the caller's limit, read with one byte more than
its size (a file that grew while it was read is not whole). Each write goes to a temporary file
beside the target, created exclusively (a name taken, or a link planted under it, is never
written through), renamed over the target: a concurrent reader sees the old file or the new one,
never a part. A file that does not exist yet may instead be created in place (`create_at`): a
reader that comes upon it half written, or after a crash, finds a MAC that does not hold, and
ignores it as any damaged file. Nothing here raises for a file that cannot be read or written:
the caller gets None or False and goes on without it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from pathlib import Path

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
TEMPORARY_PREFIX = ".tmp-"  # a write's temporary file: `.tmp-<pid>-<random>`


def open_directory(path: Path, create: bool) -> int | None:
    """A descriptor of the directory `path` (made, with its parents, when `create`); None when it
    is absent, not a directory, or its last component a link."""
    try:
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(path, _DIRECTORY_FLAGS)
    except OSError:
        return None


def open_subdirectory(dir_fd: int, name: str, create: bool) -> int | None:
    """A descriptor of the directory `name` under `dir_fd` (made when `create`); None when it is
    absent, a link or not a directory."""
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=dir_fd)
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


def read_whole_at(dir_fd: int, name: str, limit: int, *, touch_after: float | None = None) -> bytes | None:
    """The bytes of the regular file `name` under `dir_fd` when it is whole and at most `limit`
    bytes; None when it is absent, a link, not a regular file, larger, or changed size while read.
    With `touch_after` (seconds), a file last modified longer ago than that gets the current time
    (a cache entry used now is not the least recently used)."""
    opened = open_regular_at(dir_fd, name, limit)
    if opened is None:
        return None
    fd, status = opened
    try:
        data = os.read(fd, status.st_size + 1)  # one more byte: a file that grew is not whole
        if touch_after is not None and time.time() - status.st_mtime > touch_after:
            os.utime(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == status.st_size else None


def open_regular_at(dir_fd: int, name: str, limit: int) -> tuple[int, os.stat_result] | None:
    """The file `name` under `dir_fd` open for reading, with its status, for a caller that reads
    it and closes it; None when it is absent, a link, not a regular file or larger than `limit`.
    The descriptor reads this file even if another is renamed over it meanwhile."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
        os.close(fd)
        return None
    return fd, status


def read_part(fd: int, offset: int, count: int) -> bytes | None:
    """`count` bytes of the file open as `fd` from `offset`; None when fewer are there (a file cut
    short since it was opened) or it cannot be read."""
    parts = []
    done = 0
    try:
        while done < count:
            part = os.pread(fd, count - done, offset + done)
            if not part:
                return None
            parts.append(part)
            done += len(part)
    except OSError:
        return None
    return b"".join(parts)  # one part: that very object, not a copy


def _write_all(fd: int, data: bytes | list[bytes]) -> None:
    for part in [data] if isinstance(data, bytes) else data:
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


def atomic_write_at(dir_fd: int, name: str, data: bytes | list[bytes]) -> bool:
    """Put `data` (or its parts, one after the other) at `name` under `dir_fd` (mode 0600) through
    a temporary file renamed over it; False, and no temporary file left, when that cannot be done."""
    temporary = f"{TEMPORARY_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    try:
        fd = os.open(temporary, _WRITE_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        return False
    return True


def create_at(dir_fd: int, name: str, data: bytes) -> bool:
    """Create the file `name` under `dir_fd` (mode 0600) with `data`, written in place: for a
    file whose readers refuse a part of it (a cache entry: its MAC covers the whole). A name
    that is taken (an older entry, a link planted there) is replaced as `atomic_write_at` does,
    never written through; a file this call created and could not fill is removed."""
    try:
        fd = os.open(name, _WRITE_FLAGS, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        return atomic_write_at(dir_fd, name, data)
    except OSError:
        return False
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        return False
    return True
