"""What an error message may show of the values it is about: a short prefix, never a key or token.

Messages end up in CI logs, which are public on open-source repositories. Every `Problem`, every
error and every note passes its text through `redact` when it is made (core.errors,
core.report), so no code that builds a message can bypass it; code that quotes a value on purpose
uses `shown` for a short, safe rendering of it.

`redact` replaces private keys (core.keys, any encoding), JSON Web Tokens, and long runs of
base64 or hex (tokens, passwords, digests of secrets) with a marker saying what was there and how
long it was, and shortens any quoted literal or unbroken run of characters that is longer than a
reader needs to a prefix.
"""

from __future__ import annotations

import re
from typing import Any

from btp_gitops.generator.core.keys import MIN_KEY_TEXT, find_private_keys, private_key_in

SHORT_PREFIX = 24  # characters of a long value a message keeps
MAX_QUOTED = 96  # a quoted value longer than this is shortened to SHORT_PREFIX characters
MAX_RUN = 160  # a run without whitespace longer than this is shortened too (paths stay whole)

_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
# Tokens: 32+ characters of the base64 alphabet mixing upper case, lower case and digits, or
# 40+ hex digits that are not a Git commit (exactly 40) or a sha256 digest (exactly 64).
_BASE64_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/_-])")
_HEX_TOKEN = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{41,}(?![0-9a-fA-F])")
_LONG = MAX_QUOTED + 1
_QUOTED = re.compile(
    rf"""(?<!\w)(?:'((?:[^'\\\n]|\\.){{{_LONG},}})'|"((?:[^"\\\n]|\\.){{{_LONG},}})")(?!\w)"""
)
_LONG_RUN = re.compile(rf"\S{{{MAX_RUN + 1},}}")
# C0 and C1 controls, DEL, and the Unicode line and paragraph separators and bidirectional
# overrides a terminal or a log viewer acts on; "\n" and "\t" are a message's own layout.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def redact(text: str) -> str:
    """`text` with keys and tokens replaced by markers and long values cut to a prefix."""
    if len(text) < 32:
        return text
    if len(text) >= MIN_KEY_TEXT:
        for finding in reversed(find_private_keys(text)):
            text = f"{text[: finding.start]}<redacted: {finding.what}>{text[finding.end :]}"
    text = _JWT.sub(lambda m: f"<redacted: token, {len(m.group())} characters>", text)
    text = _BASE64_TOKEN.sub(_token, text)
    text = _HEX_TOKEN.sub(lambda m: _hex(m.group()), text)
    text = _QUOTED.sub(_shorten_quoted, text)
    return _LONG_RUN.sub(lambda m: _prefix(m.group()), text)


def shown(value: Any) -> str:
    """A value as a message may quote it: its repr, cut to a short prefix; a key or a token is
    not shown at all, only what it is."""
    if isinstance(value, str):
        what = private_key_in(value)
        if what:
            return f"<redacted: {what}>"
        if _JWT.search(value) or (redact(value) != value and len(value) <= MAX_QUOTED):
            return f"<redacted: {len(value)} characters>"
    text = repr(value)
    if len(text) > MAX_QUOTED:
        text = f"{text[:SHORT_PREFIX]}... ({len(value) if isinstance(value, str) else len(text)} characters)"
    return redact(text)


def _token(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith("/") and all(len(part) <= SHORT_PREFIX for part in token.split("/")):
        return token  # an absolute path, not a token
    mixed = (
        re.search(r"[A-Z]", token) is not None
        and re.search(r"[a-z]", token) is not None
        and re.search(r"[0-9]", token) is not None
    )
    return f"<redacted: {len(token)} characters>" if mixed else token


def _hex(token: str) -> str:
    return token if len(token) == 64 else f"<redacted: {len(token)} hex digits>"


def _shorten_quoted(match: re.Match[str]) -> str:
    quote = "'" if match.group(1) is not None else '"'
    inner = match.group(1) if match.group(1) is not None else match.group(2)
    return f"{quote}{inner[:SHORT_PREFIX]}...{quote} ({len(inner)} characters)"


def _prefix(run: str) -> str:
    return f"{run[:SHORT_PREFIX]}... ({len(run)} characters)"


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character but line breaks and tabs escaped, for a terminal or a
    CI log: a file name or value someone else pushed (`\\x1b[2J`) is shown, never acted on."""
    return _CONTROL.sub(_escaped, text)
