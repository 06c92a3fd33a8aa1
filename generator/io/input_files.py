"""Bounded reads of the files and streams btp-gitops takes as input.

Sources, values files, credentials, policies and manifests may come from an untrusted change, so
a read never blocks and never takes more memory than the limit: only regular files are read
(`/dev/zero`, a FIFO or a socket named as a source is refused, without blocking on it), a file
larger than `MAX_FILE_BYTES` is refused before it is read, and a stream (stdin) is read up to its
limit and refused beyond it. The text must be UTF-8.
"""

from __future__ import annotations

import codecs
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, BinaryIO

MAX_FILE_BYTES = 64 * 1024 * 1024  # a source, values, credentials or policy file
MAX_STREAM_BYTES = 256 * 1024 * 1024  # a manifest stream on stdin (Helm's post-renderer input)

_CHUNK = 1 << 20


class UnreadableInput(Exception):
    """Why an input file or stream cannot be read, in words for the user (without the path)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.0f} MiB" if size % (1 << 20) == 0 else f"{size / (1 << 20):.1f} MiB"


def _too_large(size: int | None, limit: int, what: str) -> UnreadableInput:
    found = f"{_mib(size)}, " if size is not None else ""
    return UnreadableInput(f"{what} is too large ({found}the limit is {_mib(limit)})")


def decoded_text(data: bytes) -> str:
    """Bytes read by `read_input_bytes` as UTF-8 text; raises UnreadableInput."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnreadableInput(f"not UTF-8 text (byte {error.start})") from None


def read_input_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; raises UnreadableInput."""
    try:
        # O_NONBLOCK: opening a FIFO without a writer must not hang; it is refused right after.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UnreadableInput("no such file or directory") from None
    except OSError as error:
        raise UnreadableInput(f"cannot read: {error.strerror or error}") from None
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise UnreadableInput("is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise UnreadableInput("not a regular file (a device, pipe or socket): only files are read")
        if status.st_size > limit:
            raise _too_large(status.st_size, limit, "the file")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:  # the file may grow while it is read: never past the limit
            # First the size stat gave and one byte more (a read allocates what it asks for); a
            # regular file's read returns less than asked only at its end.
            asked = min(status.st_size + 1 if not chunks else _CHUNK, limit + 1 - total)
            chunk = os.read(fd, asked)
            chunks.append(chunk)
            total += len(chunk)
            if len(chunk) < asked:
                break
        if total > limit:
            raise _too_large(None, limit, "the file")
        return b"".join(chunks)
    except OSError as error:
        raise UnreadableInput(f"cannot read: {error.strerror or error}") from None
    finally:
        os.close(fd)


def read_input_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes; raises UnreadableInput."""
    return decoded_text(read_input_bytes(path, limit))


def read_stream_text(stream: BinaryIO, limit: int = MAX_STREAM_BYTES) -> str:
    """At most `limit` bytes of a stream as UTF-8 text; raises UnreadableInput beyond it."""
    try:
        data = stream.read(limit + 1)
    except OSError as error:
        raise UnreadableInput(f"cannot read: {error.strerror or error}") from None
    if len(data) > limit:
        raise _too_large(None, limit, "the stream")
    return decoded_text(data)


# A larger stream waits on disk, so that memory does not grow with it; read in blocks of
# _SPOOL_CHUNK. Both small: the in-memory file is copied when it rolls over, and each block is held
# as bytes and decoded text at once (4 MiB and 1 MiB blocks cost post-render ~4 MiB of peak memory).
_SPOOL_IN_MEMORY = 1 << 20
_SPOOL_CHUNK = 1 << 16


def spool_stream(stream: BinaryIO, limit: int = MAX_STREAM_BYTES) -> IO[bytes]:
    """At most `limit` bytes of a stream, checked to be UTF-8, in a temporary file (in memory while
    small) positioned at its start, for a reader that goes over it more than once. Raises
    UnreadableInput as `read_stream_text` does, with the same words."""
    spooled = tempfile.SpooledTemporaryFile(_SPOOL_IN_MEMORY)  # noqa: SIM115 - returned to the caller
    decoder = codecs.getincrementaldecoder("utf-8")()
    total = 0
    try:
        while total <= limit:
            try:
                chunk = stream.read(min(_SPOOL_CHUNK, limit + 1 - total))
            except OSError as error:
                raise UnreadableInput(f"cannot read: {error.strerror or error}") from None
            if not chunk:
                break
            total += len(chunk)
            spooled.write(chunk)
            decoder.decode(chunk)
        if total > limit:
            raise _too_large(None, limit, "the stream")
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        spooled.seek(0)
        whole = spooled.read()
        spooled.close()
        decoded_text(whole)  # raises with the byte offset `read_stream_text` names
        raise  # not reached: text that fails to decode in parts fails as a whole
    except BaseException:
        spooled.close()
        raise
    spooled.seek(0)
    return spooled
