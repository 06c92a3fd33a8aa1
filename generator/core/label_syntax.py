"""What the Kubernetes API server takes as a label key and a label value, and as a key of a
ConfigMap's or Secret's data.

A label key is a qualified name: an optional prefix, a DNS-1123 subdomain of at most 253
characters, and `/`, then a name of at most 63 characters of `A-Z a-z 0-9 - _ .` that starts and
ends with a letter or digit. A label value is empty or such a name. A data key is at most 253 of
`A-Z a-z 0-9 - _ .`, and neither `.` nor `..`. The API server refuses an object that breaks any
of these; checking them when an object is read turns that late refusal into an error that names
the file, the object and the field.

The patterns match whole strings (`fullmatch`): `$` would let a trailing newline through. A
stream of 50,000 objects carries the same few label keys and many repeated values: the answers
are cached (bounded), so each distinct string is matched once.
"""

from __future__ import annotations

import re
from functools import lru_cache

from btp_gitops.generator.core.redact import shown

MAX_NAME = 63
MAX_PREFIX = 253
MAX_DATA_KEY = 253

_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
_DATA_KEY = re.compile(r"[-._A-Za-z0-9]+")

NAME_RULE = "at most 63 of A-Z, a-z, 0-9, '-', '_' and '.', starting and ending with a letter or digit"
KEY_RULE = f"a qualified name: an optional DNS-1123 subdomain and '/', then {NAME_RULE}"
VALUE_RULE = f"empty or {NAME_RULE}"
DATA_KEY_RULE = "at most 253 of A-Z, a-z, 0-9, '-', '_' and '.', and not '.' or '..'"


def _is_name(text: str) -> bool:
    return len(text) <= MAX_NAME and _NAME.fullmatch(text) is not None


@lru_cache(maxsize=4096)
def is_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > MAX_PREFIX or _SUBDOMAIN.fullmatch(prefix) is None):
        return False  # an empty prefix, or a second '/' (which the prefix cannot hold), too
    return _is_name(name)


@lru_cache(maxsize=4096)
def is_label_value(value: str) -> bool:
    return value == "" or _is_name(value)


@lru_cache(maxsize=4096)
def is_data_key(key: str) -> bool:
    return len(key) <= MAX_DATA_KEY and key not in {".", ".."} and _DATA_KEY.fullmatch(key) is not None


def label_key_message(key: str) -> str | None:
    """Why `key` cannot be a label key, or None when it can."""
    return None if is_label_key(key) else f"label key {shown(key)} is not {KEY_RULE}"


def label_value_message(value: str) -> str | None:
    """Why `value` cannot be a label value, or None when it can."""
    return None if is_label_value(value) else f"label value {shown(value)} must be {VALUE_RULE}"


def data_key_message(key: str) -> str | None:
    """Why `key` cannot be a key of a ConfigMap's or Secret's data, or None when it can."""
    return None if is_data_key(key) else f"key {shown(key)} must be {DATA_KEY_RULE}"
