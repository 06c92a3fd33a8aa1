"""Unit tests of `generator.core.keys`: a private key is found in every encoding a careless user
would commit, public material is not, and the cost stays linear.

Keys are generated at test time (tests/support/keys.py); none is committed.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable

import pytest

from btp_gitops.generator.core.keys import (
    der_private_key,
    find_private_keys,
    is_certificate_bundle,
    private_key_in,
)
from tests.support import keys


def wrapped(text: str, width: int = 76) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


ENCODINGS: list[tuple[str, Callable[[], str], str]] = [
    ("pem-rsa", keys.pem_rsa, "PEM RSA PRIVATE KEY"),
    ("pem-ec", keys.pem_ec, "PEM EC PRIVATE KEY"),
    ("pem-dsa", keys.pem_dsa, "PEM DSA PRIVATE KEY"),
    ("pem-pkcs8", keys.pem_pkcs8, "PEM PRIVATE KEY"),
    ("pem-encrypted-pkcs8", keys.pem_encrypted_pkcs8, "PEM ENCRYPTED PRIVATE KEY"),
    ("openssh", keys.openssh, "PEM OPENSSH PRIVATE KEY"),
    ("putty", keys.putty, "PuTTY private key file"),
    ("base64-pem-rsa", lambda: keys.b64(keys.pem_rsa()), "base64 of a PEM RSA PRIVATE KEY"),
    ("base64-openssh", lambda: keys.b64(keys.openssh()), "base64 of a PEM OPENSSH PRIVATE KEY"),
    ("base64-putty", lambda: keys.b64(keys.putty()), "base64 of a PuTTY private key file"),
    ("wrapped-base64-pem", lambda: wrapped(keys.b64(keys.pem_ec())), "base64 of a PEM EC PRIVATE KEY"),
    (
        "base64-of-base64-pem",
        lambda: keys.b64(keys.b64(keys.pem_pkcs8())),
        "base64 of base64 of a PEM PRIVATE KEY",
    ),
    (
        "base64-of-base64-pem-before-a-yaml-key",
        lambda: f"env:\n- value: Bearer {keys.b64(keys.b64(keys.pem_ec()))}\n  image: registry/x:1\n",
        "base64 of base64 of a PEM EC PRIVATE KEY",
    ),
    (
        "openssh-body-without-armour",
        lambda: "".join(keys.openssh().splitlines()[1:-1]),
        "base64 of an OpenSSH private key",
    ),
    ("der-pkcs8-rsa", lambda: keys.b64(keys.der_pkcs8()), "base64 of a DER PKCS#8 private key (RSA)"),
    (
        "der-pkcs8-ed25519",
        lambda: keys.b64(keys.der_pkcs8_ed25519()),
        "base64 of a DER PKCS#8 private key (Ed25519)",
    ),
    ("der-pkcs1", lambda: keys.b64(keys.der_pkcs1()), "base64 of a DER PKCS#1 RSA private key"),
    ("der-sec1", lambda: keys.b64(keys.der_sec1()), "base64 of a DER SEC1 EC private key"),
    (
        "der-encrypted-pkcs8",
        lambda: keys.b64(keys.der_encrypted_pkcs8()),
        "base64 of a DER encrypted PKCS#8 private key",
    ),
    (
        "url-safe-unpadded-der",
        lambda: base64.urlsafe_b64encode(keys.der_pkcs1()).decode().rstrip("="),
        "base64 of a DER PKCS#1 RSA private key",
    ),
    (
        "after-a-word",
        lambda: f"Bearer {keys.b64(keys.der_pkcs8())}",
        "base64 of a DER PKCS#8 private key (RSA)",
    ),
    ("hex-der", lambda: keys.der_sec1().hex(), "hex of a DER SEC1 EC private key"),
    (
        "wrapped-der-in-a-json-string",
        lambda: '{"k": "' + wrapped(keys.b64(keys.der_pkcs1()), 64).replace("\n", "\\n") + '"}',
        "base64 of a DER PKCS#1 RSA private key",
    ),
    (
        "pem-in-json-string",
        lambda: '{"key": "' + keys.pem_rsa().replace("\n", "\\n") + '"}',
        "PEM RSA PRIVATE KEY",
    ),
]


@pytest.mark.parametrize(
    ("make", "what"), [(m, w) for _, m, w in ENCODINGS], ids=[i for i, _, _ in ENCODINGS]
)
def test_every_encoding_is_found(make: Callable[[], str], what: str) -> None:
    assert private_key_in(f"prefix text: {make()} :suffix") == what


@pytest.mark.tools
def test_openssh_as_ssh_keygen_writes_it_is_found() -> None:
    text = keys.ssh_keygen_openssh()
    assert private_key_in(text) == "PEM OPENSSH PRIVATE KEY"
    assert private_key_in(keys.b64(text)) == "base64 of a PEM OPENSSH PRIVATE KEY"


PUBLIC: list[tuple[str, Callable[[], str]]] = [
    ("certificate", keys.certificate_pem),
    ("base64-certificate", lambda: keys.b64(keys.certificate_pem())),
    ("public-key-pem", keys.public_key_pem),
    ("base64-public-key-pem", lambda: keys.b64(keys.public_key_pem())),
    ("der-public-key", lambda: keys.b64(keys.public_key_der())),
    ("ssh-public-key", keys.openssh_public_key),
    ("random-base64", lambda: base64.b64encode(os.urandom(3000)).decode()),
    ("sha256-digest", lambda: "sha256:" + "ab" * 32),
    ("long-name", lambda: "sap-btp-service-operator-controller-manager-" * 4),
]


@pytest.mark.parametrize("make", [m for _, m in PUBLIC], ids=[i for i, _ in PUBLIC])
def test_public_material_is_not_a_private_key(make: Callable[[], str]) -> None:
    assert private_key_in(make()) is None


def test_spans_cover_each_key_and_leave_the_rest() -> None:
    certificate, pem, der = keys.certificate_pem(), keys.pem_ec(), keys.b64(keys.der_pkcs8())
    text = f"ca: {certificate}\nkey: {pem}\nder: {der}\n"
    found = find_private_keys(text)
    assert [text[f.start : f.end] for f in found] == [pem.strip(), der]
    assert [f.what for f in found] == ["PEM EC PRIVATE KEY", "base64 of a DER PKCS#8 private key (RSA)"]


def test_a_key_shaped_der_that_is_not_conclusive_and_does_not_load_is_not_a_key() -> None:
    # SEQUENCE { INTEGER 0, SEQUENCE { OID 1.2.3.4 }, OCTET STRING } padded: an unknown algorithm.
    body = bytes.fromhex("020100300506032a03040420") + bytes(32)
    assert der_private_key(bytes([0x30, len(body)]) + body) is None


def test_the_cost_is_linear_in_the_text() -> None:
    """4 MB of base64 (a large binaryData) and 4 MB of YAML-like text are scanned well under a
    second each on any CI machine."""
    blob = base64.b64encode(os.urandom(3 * 1024 * 1024)).decode()
    prose = "metadata:\n  name: sap-btp-service-operator\n  labels: {app.kubernetes.io/name: x}\n" * 50_000
    for text in (blob, prose):
        started = time.perf_counter()
        assert private_key_in(text) is None
        assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    ("build", "bundle"),
    [
        pytest.param(keys.certificate_pem, True, id="one certificate"),
        pytest.param(lambda: keys.certificate_pem() * 2, True, id="two certificates"),
        pytest.param(lambda: "\n  " + keys.certificate_pem() + "\n\n", True, id="whitespace around"),
        pytest.param(keys.pem_ec, False, id="a private key"),
        pytest.param(lambda: keys.certificate_pem() + keys.pem_ec(), False, id="a certificate and its key"),
        pytest.param(keys.public_key_pem, False, id="a public key: other armour"),
        pytest.param(lambda: "CA: " + keys.certificate_pem(), False, id="text before the block"),
        pytest.param(
            lambda: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            False,
            id="a block that is no certificate",
        ),
        pytest.param(lambda: "", False, id="empty"),
    ],
)
def test_certificate_bundles(build: Callable[[], str], bundle: bool) -> None:
    assert is_certificate_bundle(build()) is bundle
