"""Private keys in any encoding a careless user would commit, found in any text.

Recognised: PEM armour (`-----BEGIN ... PRIVATE KEY-----` of RSA, EC, DSA, PKCS#8, encrypted
PKCS#8, OpenSSH, PGP; the SSH2 armour of ssh.com), PuTTY key files, and, inside base64 or hex
runs (ConfigMap `binaryData`, annotations, env values, any string): those texts again, the bare
OpenSSH key blob, and DER keys (PKCS#8, encrypted PKCS#8, PKCS#1 RSA, SEC1 EC, OpenSSL DSA).

The cost stays bounded and linear in the text: one regular expression finds the armour, another
the runs of the base64 alphabet long enough to hold a key (64 characters: an Ed25519 PKCS#8 key);
only those runs are decoded (at most four alignments each), the decoded bytes searched for the
same markers (and decoded once more, for base64 of base64), and `cryptography` asked to load a
DER structure only when its first bytes have the shape of a private key. A raw 32-byte key
(an Ed25519 seed as 44 base64 characters) looks like any random token and is not recognised.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass

# `cryptography` (its Rust bindings: ~0.04 s and 10 MiB) is imported only where a text has the
# shape of a certificate bundle or a DER key, below: nearly every string is settled by the regular
# expressions alone, and every command's error messages pass through here (core.redact).

# Shorter strings cannot hold any key we recognise (the armour alone is longer).
MIN_KEY_TEXT = 22
_MIN_RUN = 64  # base64 characters of the smallest key (Ed25519 PKCS#8: 48 bytes)
_MIN_HEX = 96  # hex digits of the same
_MAX_NESTING = 2  # base64 of base64 of a PEM is still found; deeper is not searched
_MAX_ALIGNMENTS = 4

_TEXT_MARKER = re.compile(
    r"-----(?:BEGIN|END) (?P<pem>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----"
    r"|---- (?:BEGIN|END) SSH2 ENCRYPTED PRIVATE KEY ----"
    r"|PuTTY-User-Key-File-\d+:"
)
_PEM_END = re.compile(
    r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----"
)
_PUTTY_END = re.compile(r"Private-MAC:[ \t]*[0-9a-fA-F]*")
_BYTES_MARKER = re.compile(
    rb"-----(?:BEGIN|END) [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    rb"|---- (?:BEGIN|END) SSH2 ENCRYPTED PRIVATE KEY ----"
    rb"|PuTTY-User-Key-File-\d+:"
    rb"|openssh-key-v1\x00"
)
# A run of the base64 alphabet (standard or URL-safe) long enough to hold a key, continued over
# whitespace or escaped line breaks (wrapped base64 in a YAML block scalar, a JSON or a
# double-quoted string), not over a YAML key that follows (`image:`). The character classes are
# disjoint, so the match is linear; the look-behind starts a match only where a run starts.
_RUN_AT = re.compile(r"[A-Za-z0-9+/_-]{64,}={0,2}(?:(?:\s|\\[nr])+[A-Za-z0-9+/_-]{4,}+={0,2}+(?!:))*")
_SEPARATOR = re.compile(r"(?:\s|\\[nr])+")
_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])" + _RUN_AT.pattern)
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_CLASSES = bytes(ord("A") if byte in _ALPHABET else ord(" ") for byte in range(256))
_LONG_RUN = b"A" * _MIN_RUN
_HEX = re.compile(r"[0-9a-fA-F]+")
_MARKER_WORDS = re.compile(r"PRIVATE KEY|PuTTY-User-Key-File-")
_PRINTABLE = re.compile(rb"[\t\n\r\x20-\x7e]*")


# A PEM bundle of certificates and nothing else: no other armour, no text around the blocks.
_CERTIFICATE_BUNDLE = re.compile(
    r"\s*(?:-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----\s*)+"
)


def is_certificate_bundle(text: str) -> bool:
    """Whether `text` is one or more PEM X.509 certificates and nothing else (public data: a CA
    for clients, a caBundle). A private key, other PEM armour or any text besides the blocks is
    not; neither is a block that does not parse as a certificate."""
    if _CERTIFICATE_BUNDLE.fullmatch(text) is None:
        return False
    from cryptography import x509  # noqa: PLC0415 - see the imports above

    try:
        return bool(x509.load_pem_x509_certificates(text.encode("ascii")))
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class KeyFinding:
    """Where in a text a private key is, and what it is (never the key itself)."""

    start: int
    end: int
    what: str  # "PEM RSA PRIVATE KEY", "base64 of a DER PKCS#8 private key (RSA)", ...


def find_private_keys(text: str, first_only: bool = False) -> list[KeyFinding]:
    """Every private key in `text`, in order (spans do not overlap)."""
    if len(text) < MIN_KEY_TEXT:
        return []
    found = _armoured(text, first_only) if _MARKER_WORDS.search(text) else []
    if found and first_only:
        return found
    taken = [(f.start, f.end) for f in found]
    for run in _runs(text):
        if any(start < run.end() and run.start() < end for start, end in taken):
            continue
        what = _encoded_key(run.group(), 0)
        if what:
            found.append(KeyFinding(run.start(), run.end(), what))
            if first_only:
                break
    return sorted(found, key=lambda f: f.start)


def _runs(text: str) -> Iterator[re.Match[str]]:
    """The base64 runs of `text`. An ASCII text (nearly all) is mapped to one byte per class of
    character and searched with bytes.find, several times faster than the regular expression
    stepping through every position of a text of many megabytes."""
    if not text.isascii():
        yield from _RUN.finditer(text)
        return
    classes = text.encode("ascii").translate(_CLASSES)
    position = 0
    while (start := classes.find(_LONG_RUN, position)) != -1:
        run = _RUN_AT.match(text, start)
        if run is None:  # pragma: no cover - the bytes say a run starts here
            break
        yield run
        position = run.end()


def private_key_in(text: str) -> str | None:
    """What the first private key in `text` is, or None."""
    found = find_private_keys(text, first_only=True)
    return found[0].what if found else None


def _armoured(text: str, first_only: bool) -> list[KeyFinding]:
    found: list[KeyFinding] = []
    position = 0
    while (marker := _TEXT_MARKER.search(text, position)) is not None:
        token = marker.group()
        if token.startswith("PuTTY"):
            end_match = _PUTTY_END.search(text, marker.end())
            what = "PuTTY private key file"
        else:
            end_match = _PEM_END.search(text, marker.end()) if "BEGIN" in token else None
            what = f"PEM {marker.group('pem') or 'SSH2 ENCRYPTED PRIVATE KEY'}"
        end = end_match.end() if end_match else (len(text) if "END" not in token else marker.end())
        found.append(KeyFinding(marker.start(), end, what))
        if first_only:
            break
        position = end
    return found


def _encoded_key(run: str, depth: int) -> str | None:
    """What key a run of base64 (or hex) characters encodes, or None."""
    chunks = [chunk for chunk in _SEPARATOR.split(run) if chunk]
    if len(chunks) == 1 and len(run) >= _MIN_HEX and _HEX.fullmatch(run):
        what = _key_in_bytes(binascii.unhexlify(run[: len(run) // 2 * 2]), depth)
        if what:
            return f"hex of {what}"
    # Decode from the start of each of the first chunks whose alignment was not tried yet: a word
    # before the base64 ("Bearer ...") shifts it.
    joined = "".join(chunks).replace("=", "")
    tried: set[int] = set()
    offset = 0
    for chunk in chunks[:_MAX_ALIGNMENTS]:
        if offset % 4 not in tried and len(joined) - offset >= _MIN_RUN:
            tried.add(offset % 4)
            what = _key_in_bytes(_decode_base64(joined[offset:]), depth)
            if what:
                return f"base64 of {what}"
        offset += len(chunk.replace("=", ""))
    return None


def _decode_base64(text: str) -> bytes:
    data = text.translate(_URL_SAFE)
    if len(data) % 4 == 1:
        data = data[:-1]
    data += "=" * (-len(data) % 4)
    try:
        return binascii.a2b_base64(data)
    except binascii.Error:  # pragma: no cover - the alphabet and length are checked above
        return b""


_URL_SAFE = str.maketrans("-_", "+/")


def _key_in_bytes(data: bytes, depth: int) -> str | None:
    marker = _BYTES_MARKER.search(data)
    if marker:
        token = marker.group()
        if token.startswith(b"openssh-key-v1"):
            return "an OpenSSH private key"
        if token.startswith(b"PuTTY"):
            return "a PuTTY private key file"
        return f"a PEM {token.strip(b'- ').decode('ascii').removeprefix('BEGIN ').removeprefix('END ')}"
    der = der_private_key(data)
    if der:
        return f"a DER {der}"
    printable = _PRINTABLE.match(data)  # a text, maybe followed by what a word after it decoded to
    if depth + 1 < _MAX_NESTING and printable and printable.end() >= _MIN_RUN:
        text = data[: printable.end()].decode("ascii")
        for run in _runs(text):
            what = _encoded_key(run.group(), depth + 1)
            if what:
                return what
    return None


# --- DER -------------------------------------------------------------------------------------


def _oid(dotted: str) -> bytes:
    parts = [int(p) for p in dotted.split(".")]
    out = bytearray([parts[0] * 40 + parts[1]])
    for part in parts[2:]:
        encoded = [part & 0x7F]
        rest = part >> 7
        while rest:
            encoded.append(0x80 | (rest & 0x7F))
            rest >>= 7
        out += bytes(reversed(encoded))
    return bytes(out)


_KEY_ALGORITHMS = {
    _oid("1.2.840.113549.1.1.1"): "RSA",
    _oid("1.2.840.113549.1.1.10"): "RSA-PSS",
    _oid("1.2.840.10045.2.1"): "EC",
    _oid("1.2.840.10040.4.1"): "DSA",
    _oid("1.2.840.113549.1.3.1"): "DH",
    _oid("1.3.101.110"): "X25519",
    _oid("1.3.101.111"): "X448",
    _oid("1.3.101.112"): "Ed25519",
    _oid("1.3.101.113"): "Ed448",
}
_PBE_PREFIXES = (_oid("1.2.840.113549.1.5"), _oid("1.2.840.113549.1.12.1"))
_SEQUENCE, _INTEGER, _OCTET_STRING, _OID = 0x30, 0x02, 0x04, 0x06


@dataclass(frozen=True, slots=True)
class _Tlv:
    tag: int
    start: int  # first content byte
    end: int  # one past the last content byte


def _tlv(data: bytes, at: int, limit: int) -> _Tlv | None:
    """One DER tag-length-value at `at`, if it fits before `limit`."""
    if at + 2 > limit:
        return None
    tag, first = data[at], data[at + 1]
    at += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or at + count > limit:
            return None
        length = int.from_bytes(data[at : at + count], "big")
        at += count
    if at + length > limit:
        return None
    return _Tlv(tag, at, at + length)


def _children(data: bytes, parent: _Tlv, most: int) -> list[_Tlv]:
    children: list[_Tlv] = []
    at = parent.start
    while at < parent.end and len(children) < most:
        child = _tlv(data, at, parent.end)
        if child is None:
            return []
        children.append(child)
        at = child.end
    return children


def _shape(data: bytes, top: _Tlv) -> tuple[str | None, bool]:
    """(the key a DER structure's shape says it is, whether that shape alone is conclusive); `top`
    is the structure's outermost TLV."""
    if top.tag != _SEQUENCE:
        return None, False
    items = _children(data, top, 10)
    if len(items) < 2:
        return None, False
    first, second = items[0], items[1]
    if first.tag == _SEQUENCE and second.tag == _OCTET_STRING and len(items) == 2:
        algorithm = _children(data, first, 2)
        if algorithm and algorithm[0].tag == _OID:
            oid = data[algorithm[0].start : algorithm[0].end]
            if oid.startswith(_PBE_PREFIXES):
                return "encrypted PKCS#8 private key", True
        return None, False
    if first.tag != _INTEGER or data[first.start : first.end] not in (b"\x00", b"\x01"):
        return None, False
    version = data[first.start]
    if second.tag == _SEQUENCE and len(items) >= 3 and items[2].tag == _OCTET_STRING:
        algorithm = _children(data, second, 2)
        if algorithm and algorithm[0].tag == _OID:
            name = _KEY_ALGORITHMS.get(data[algorithm[0].start : algorithm[0].end])
            if name:
                return f"PKCS#8 private key ({name})", True
            return "PKCS#8 private key", False
    integers = all(item.tag == _INTEGER for item in items[1:])
    if version == 0 and len(items) == 9 and integers:
        return "PKCS#1 RSA private key", True
    if version == 0 and len(items) == 6 and integers:
        return "DSA private key", True
    if version == 1 and second.tag == _OCTET_STRING and all(i.tag in (0xA0, 0xA1) for i in items[2:]):
        return "SEC1 EC private key", len(items) > 2
    return None, False


def der_private_key(data: bytes) -> str | None:
    """What private key a DER structure at the start of `data` is, or None.

    Only a structure shaped like a key is handed to `cryptography` (one load, RSA checks skipped);
    a shape that is conclusive on its own (a known key algorithm's OID) counts even when this
    build of `cryptography` cannot load it.
    """
    if len(data) < 32 or data[0] != _SEQUENCE:
        return None
    top = _tlv(data, 0, len(data))
    if top is None:
        return None
    what, conclusive = _shape(data, top)
    if what is None:
        return None
    from cryptography.exceptions import UnsupportedAlgorithm  # noqa: PLC0415 - see the imports above
    from cryptography.hazmat.primitives.serialization import load_der_private_key  # noqa: PLC0415

    try:
        load_der_private_key(data[: top.end], password=None, unsafe_skip_rsa_key_validation=True)
    except TypeError:  # encrypted: it wants a password
        return what
    except (ValueError, UnsupportedAlgorithm):
        return what if conclusive else None
    return what
