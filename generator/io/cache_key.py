"""The key that proves a render cache entry or render pack was written by this user's btp-gitops.

A cache entry is named by a digest of public things (the code, the schemas, the target, the
record's path and bytes): anyone who can put a file in the cache directory can name it right and
fix up any checksum. So every entry and pack carries an HMAC-SHA256 of its content under a
secret key that is not in the cache directory, and one whose MAC does not hold is not used (the
record is read and rendered as without a cache). What a cache holds then comes from a render
that held the key and had passed every check; the output guard checks it again anyway.

The key is, in this order:

- `$BTP_GITOPS_CACHE_KEY` (at least 32 characters), for a cache kept between CI runs: a secret of
  the CI system, which jobs running a fork's code are not given, so a cache they save is of no
  use to the jobs that have it;
- else a random key made on first use in `$XDG_STATE_HOME/btp-gitops/cache-key` (else
  `~/.local/state/btp-gitops/cache-key`), mode 0600 in a 0700 directory: the user's own, outside
  any cache directory. A key file that is a link, not a regular file or not a key is replaced.

When no key can be had (a home that cannot be written), the render goes without a cache.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.io.cache_files import atomic_write_at, open_directory, read_whole_at

KEY_ENV = "BTP_GITOPS_CACHE_KEY"
MIN_KEY_CHARACTERS = 32
KEY_FILE = "cache-key"
_KEY_TEXT = re.compile(rb"[0-9a-f]{64}")


def key_directory(environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_STATE_HOME/btp-gitops`, else `~/.local/state/btp-gitops`."""
    base = environ.get("XDG_STATE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "btp-gitops"


def cache_secret(environ: Mapping[str, str] = os.environ) -> bytes | None:
    """The key entries and packs are signed with; None when there is none to be had."""
    given = environ.get(KEY_ENV)
    if given is not None:
        if len(given) < MIN_KEY_CHARACTERS:
            raise UsageError(
                f"{KEY_ENV} must be at least {MIN_KEY_CHARACTERS} characters (e.g. `openssl rand -hex 32`)"
            )
        return given.encode("utf-8", "surrogateescape")
    directory = open_directory(key_directory(environ), create=True)
    if directory is None:
        return None
    try:
        for _ in range(2):  # read, else make one and read it (another render may have made it)
            data = read_whole_at(directory, KEY_FILE, 64)
            if data is not None and _KEY_TEXT.fullmatch(data):
                return data
            if not atomic_write_at(directory, KEY_FILE, secrets.token_hex(32).encode()):
                return None
        return None
    finally:
        os.close(directory)


def new_mac(secret: bytes) -> hmac.HMAC:
    """An HMAC-SHA256 to feed the signed bytes into (OpenSSL's, without copying them)."""
    return hmac.new(secret, digestmod=hashlib.sha256)


def same_mac(expected: str, found: object) -> bool:
    return isinstance(found, str) and hmac.compare_digest(expected, found)
