"""Certificates as they might exist in a cluster, built here with `cryptography` directly.

Independent of the product's generator, so the reuse table is tested against certificates the
product did not make: other key formats, odd lifetimes, missing extensions, foreign CAs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVER_AND_CLIENT = (ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH)


def key_pem(key: rsa.RSAPrivateKey) -> bytes:
    # PKCS#8, where the product writes PKCS#1: existing keys may come in either.
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def build(
    key: rsa.RSAPrivateKey,
    common_name: str,
    start: datetime,
    lifetime: timedelta,
    *,
    signer: tuple[bytes, rsa.RSAPrivateKey] | None = None,
    ca: bool = False,
    sans: Sequence[str] = (),
    extended_usages: Sequence[x509.ObjectIdentifier] = SERVER_AND_CLIENT,
) -> bytes:
    """A PEM certificate; self-signed unless `signer` (CA PEM, CA key) is given."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    issuer_name, signing_key = subject, key
    if signer is not None:
        issuer_name = x509.load_pem_x509_certificate(signer[0]).subject
        signing_key = signer[1]
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + lifetime)
    )
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        builder = builder.add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
    if sans:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in sans]), critical=False
        )
    if not ca and extended_usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(extended_usages)), critical=False)
    return builder.sign(signing_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
