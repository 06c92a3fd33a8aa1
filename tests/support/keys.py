"""Private keys in every encoding the credential guard must recognise, generated at test time.

No key is ever committed: each is made fresh by `cryptography` (PEM, DER, OpenSSH), by
`ssh-keygen` when it is installed (OpenSSH as OpenSSH writes it), and PuTTY's format is put
together here from its description (a text header, `Public-Lines:`, `Private-Lines:` with
base64 bodies, and `Private-MAC:`). Public material (certificates, public keys) is made the same
way, for the cases that must pass.
"""

from __future__ import annotations

import base64
import datetime
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from tests.support.tiers import require_marker

Encoding = serialization.Encoding
Format = serialization.PrivateFormat
NO_PASSWORD = serialization.NoEncryption()


@cache
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@cache
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@cache
def ed25519_key() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


@cache
def dsa_key() -> dsa.DSAPrivateKey:
    return dsa.generate_private_key(key_size=2048)


def pem_rsa() -> str:
    return rsa_key().private_bytes(Encoding.PEM, Format.TraditionalOpenSSL, NO_PASSWORD).decode()


def pem_ec() -> str:
    return ec_key().private_bytes(Encoding.PEM, Format.TraditionalOpenSSL, NO_PASSWORD).decode()


def pem_pkcs8() -> str:
    return rsa_key().private_bytes(Encoding.PEM, Format.PKCS8, NO_PASSWORD).decode()


def pem_encrypted_pkcs8() -> str:
    encryption = serialization.BestAvailableEncryption(b"correct horse")
    return ec_key().private_bytes(Encoding.PEM, Format.PKCS8, encryption).decode()


def pem_dsa() -> str:
    return dsa_key().private_bytes(Encoding.PEM, Format.TraditionalOpenSSL, NO_PASSWORD).decode()


def openssh() -> str:
    return ed25519_key().private_bytes(Encoding.PEM, Format.OpenSSH, NO_PASSWORD).decode()


def ssh_keygen_openssh() -> str:
    """An OpenSSH key as `ssh-keygen` writes it; the test fails, naming the package, without it."""
    require_marker("tools", "ssh-keygen (the openssh-client package)")
    binary = shutil.which("ssh-keygen")
    if binary is None:
        pytest.fail("ssh-keygen is not installed: install the openssh-client package", pytrace=False)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "id"
        subprocess.run(
            [binary, "-q", "-t", "ecdsa", "-N", "", "-C", "test", "-f", str(path)], check=True, timeout=60
        )
        return path.read_text()


def putty() -> str:
    """A PuTTY-User-Key-File-3 text for the Ed25519 key (PuTTY's layout, unencrypted)."""
    key = ed25519_key()
    public = key.public_key().public_bytes(Encoding.Raw, serialization.PublicFormat.Raw)
    private = key.private_bytes(Encoding.Raw, Format.Raw, NO_PASSWORD)

    def ssh_string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    public_blob = ssh_string(b"ssh-ed25519") + ssh_string(public)
    private_blob = ssh_string(private)

    def lines(blob: bytes) -> list[str]:
        text = base64.b64encode(blob).decode()
        return [text[i : i + 64] for i in range(0, len(text), 64)]

    public_lines, private_lines = lines(public_blob), lines(private_blob)
    return "\n".join(
        [
            "PuTTY-User-Key-File-3: ssh-ed25519",
            "Encryption: none",
            "Comment: ed25519-key-20260101",
            f"Public-Lines: {len(public_lines)}",
            *public_lines,
            f"Private-Lines: {len(private_lines)}",
            *private_lines,
            "Private-MAC: " + "ab" * 32,
            "",
        ]
    )


def der_pkcs8() -> bytes:
    return rsa_key().private_bytes(Encoding.DER, Format.PKCS8, NO_PASSWORD)


def der_pkcs8_ed25519() -> bytes:
    return ed25519_key().private_bytes(Encoding.DER, Format.PKCS8, NO_PASSWORD)


def der_pkcs1() -> bytes:
    return rsa_key().private_bytes(Encoding.DER, Format.TraditionalOpenSSL, NO_PASSWORD)


def der_sec1() -> bytes:
    return ec_key().private_bytes(Encoding.DER, Format.TraditionalOpenSSL, NO_PASSWORD)


def der_encrypted_pkcs8() -> bytes:
    encryption = serialization.BestAvailableEncryption(b"correct horse")
    return rsa_key().private_bytes(Encoding.DER, Format.PKCS8, encryption)


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


@cache
def certificate_pem() -> str:
    """A self-signed CA certificate: public, legitimately in a caBundle."""
    key = ec_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(Encoding.PEM).decode()


def public_key_pem() -> str:
    return (
        rsa_key()
        .public_key()
        .public_bytes(Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def public_key_der() -> bytes:
    return rsa_key().public_key().public_bytes(Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def openssh_public_key() -> str:
    return (
        ed25519_key().public_key().public_bytes(Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    )
