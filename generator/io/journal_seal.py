"""The proof that a write journal was made by btp-gitops, on this machine, for this user.

A journal left beside a cluster directory (io.journal) is replayed by the next write: its files
are moved into the tree and its remove list is carried out. A journal is only a directory of
files, and the cluster directory lives in a repository others can push to, so one found there
proves nothing by itself: a pushed `.<cluster>.journal-*` would otherwise move, overwrite and
delete whatever its plan names.

So the writer seals each journal before committing it: an HMAC-SHA256, under a secret key that
never leaves this user's state directory (`$XDG_STATE_HOME/btp-gitops/journal.key`, else
`~/.local/state/btp-gitops/journal.key`, made on first use, mode 0600 in a 0700 directory), over
the cluster directory's absolute path, the journal's name and its plan; the plan holds the SHA-256
of every staged file, which the replay checks before moving one in. Only a journal whose seal
verifies under this key is replayed; a clone, a fork's checkout or another user's machine has no
such key, so a journal found there cannot be proven and is refused with its path named. The key is
no credential for anything else: it only tells this user's journals apart from everyone else's.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

KEY_FILE = "journal.key"
_KEY_BYTES = 32
_SEAL_HEAD = "btp-gitops journal seal 1 "
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_STATE_HOME/btp-gitops`, else `~/.local/state/btp-gitops`."""
    base = environ.get("XDG_STATE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "btp-gitops"


def _private_directory(path: Path, create: bool) -> int | None:
    """A descriptor of `path` when it is a real directory of this user that no one else may write."""
    try:
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, _DIRECTORY_FLAGS)
    except OSError:
        return None
    info = os.fstat(fd)
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def _read_key(dir_fd: int) -> bytes | None:
    try:
        fd = os.open(KEY_FILE, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        key = os.read(fd, _KEY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return key if len(key) == _KEY_BYTES else None


def journal_key(*, create: bool, environ: Mapping[str, str] = os.environ) -> bytes | None:
    """This user's journal key; made when missing and `create`. None when there is none (or it is
    not private to this user): a journal can then be neither sealed nor proven."""
    directory = _private_directory(state_dir(environ), create)
    if directory is None:
        return None
    try:
        key = _read_key(directory)
        if key is not None or not create:
            return key
        # Written whole under a temporary name, then linked into place: a second process making
        # the key at the same time finds it complete or not at all, and then reads the winner's.
        temporary = f".{KEY_FILE}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            fd = os.open(
                temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=directory
            )
            try:
                os.write(fd, secrets.token_bytes(_KEY_BYTES))
            finally:
                os.close(fd)
            with contextlib.suppress(FileExistsError):
                os.link(temporary, KEY_FILE, src_dir_fd=directory, dst_dir_fd=directory)
        except OSError:
            return None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
        return _read_key(directory)
    finally:
        os.close(directory)


def _mac(key: bytes, target: Path, journal_name: str, plan: bytes) -> str:
    message = b"\0".join(
        (b"btp-gitops write journal", os.fsencode(os.path.abspath(target)), journal_name.encode(), plan)
    )
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def seal_text(key: bytes, target: Path, journal_name: str, plan: bytes) -> str:
    """The seal file's text for the journal `journal_name` of the tree `target` with `plan`."""
    return f"{_SEAL_HEAD}{_mac(key, target, journal_name, plan)}\n"


def seal_verifies(key: bytes | None, target: Path, journal_name: str, plan: bytes, seal: bytes) -> bool:
    if key is None or not seal.startswith(_SEAL_HEAD.encode()):
        return False
    expected = seal_text(key, target, journal_name, plan).encode()
    return hmac.compare_digest(expected, seal)
