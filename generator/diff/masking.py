"""What a diff must not show: Secret values, caBundles, the bodies of PEM blocks, private keys.

A diff is posted where many can read it (a pull request), so these values are replaced before
any text is produced. They are masked on both sides of a comparison, with markers that still
tell a change from no change: a value equal on both sides becomes `<masked>` on both, a value
that differs becomes `<masked: old value>` and `<masked: new value>`, so the diff keeps a line
for it without showing either value or anything derived from it (a hash of a short secret could
be brute-forced). Keys stay visible: which entries a Secret has is what a reviewer checks.
A value holding a private key in any encoding (core.keys), in any object, is masked whole; a map
key holding one becomes `<masked: private key>`, and so does a private key in a text that is not
an object.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any, Final

from btp_gitops.generator.core.keys import MIN_KEY_TEXT, find_private_keys, private_key_in

MASKED = "<masked>"
MASKED_OLD = "<masked: old value>"
MASKED_NEW = "<masked: new value>"
MASKED_KEY = "<masked: private key>"

_SECRET_VALUE_KEYS = frozenset({"data", "stringData"})
_CA_BUNDLE = "caBundle"
# A PEM block: the armour lines stay (they say what the value is), the body goes.
_PEM_BLOCK = re.compile(r"(-----BEGIN [A-Z0-9 ]+-----)(.*?)(-----END [A-Z0-9 ]+-----)", re.DOTALL)


class Side(Enum):
    OLD = "old"
    NEW = "new"


class _Absent:
    """The other side has nothing at this place (an added or removed object, key or item)."""


ABSENT: Final = _Absent()


def mask_pair(old: Any, new: Any) -> tuple[Any, Any]:
    """Masked copies of two versions of one document; either may be ABSENT."""
    return _mask_document(old, new, Side.OLD), _mask_document(new, old, Side.NEW)


def mask_text_pair(old: str, new: str) -> tuple[str, str]:
    """Two versions of a text that is not an object: private keys masked whole, then PEM bodies,
    block by block."""
    old, new = _mask_keys_in_text(old), _mask_keys_in_text(new)
    return _mask_pem(old, new, Side.OLD), _mask_pem(new, old, Side.NEW)


def _mask_keys_in_text(text: str) -> str:
    for finding in reversed(find_private_keys(text)):
        text = f"{text[: finding.start]}{MASKED_KEY}{text[finding.end :]}"
    return text


def is_secret(document: Any) -> bool:
    return (
        isinstance(document, dict) and document.get("kind") == "Secret" and document.get("apiVersion") == "v1"
    )


def _marker(value: Any, counterpart: Any, side: Side) -> str:
    if isinstance(counterpart, _Absent) or value == counterpart:
        return MASKED
    return MASKED_OLD if side is Side.OLD else MASKED_NEW


def _mask_document(document: Any, counterpart: Any, side: Side) -> Any:
    if isinstance(document, _Absent):
        return document
    return _mask(document, counterpart, side, sensitive=False)


def _mask(value: Any, counterpart: Any, side: Side, *, sensitive: bool) -> Any:
    if isinstance(value, dict):
        other = counterpart if isinstance(counterpart, dict) else {}
        # A Secret at any depth (an item of a List too) has its values masked.
        secret = value.get("kind") == "Secret"
        return {
            _mask_map_key(key): _mask(
                item,
                other.get(key, ABSENT),
                side,
                sensitive=sensitive or key == _CA_BUNDLE or (secret and key in _SECRET_VALUE_KEYS),
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        others = counterpart if isinstance(counterpart, list) else []
        return [
            _mask(item, others[index] if index < len(others) else ABSENT, side, sensitive=sensitive)
            for index, item in enumerate(value)
        ]
    if sensitive or (isinstance(value, str) and len(value) >= MIN_KEY_TEXT and private_key_in(value)):
        return _marker(value, counterpart, side)
    if isinstance(value, str) and "-----BEGIN " in value:
        return _mask_pem(value, counterpart if isinstance(counterpart, str) else ABSENT, side)
    return value


def _mask_map_key(key: Any) -> Any:
    if isinstance(key, str) and len(key) >= MIN_KEY_TEXT and private_key_in(key):
        return MASKED_KEY
    return key


def _mask_pem(text: str, counterpart: str | _Absent, side: Side) -> str:
    """`text` with each PEM body replaced by a marker; the n-th block is compared with the
    counterpart's n-th block."""
    other_bodies = (
        [] if isinstance(counterpart, _Absent) else [m.group(2) for m in _PEM_BLOCK.finditer(counterpart)]
    )
    index = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal index
        other = other_bodies[index] if index < len(other_bodies) else ABSENT
        index += 1
        return f"{match.group(1)}\n{_marker(match.group(2), other, side)}\n{match.group(3)}"

    return _PEM_BLOCK.sub(replace, text)
