"""Independent checks of issued certificates, written against `cryptography` directly.

The product's own checks are not reused here: a test must not trust the code it tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from btp_gitops.generator.transforms.self_signed_certificates import WebhookCertificates


def certificate(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def private_key(pem: bytes) -> rsa.RSAPrivateKey:
    # Skipping OpenSSL's slow consistency check is fine here: the keys come from the session pool
    # or the product, and every check below compares public numbers or verifies signatures.
    key = serialization.load_pem_private_key(pem, password=None, unsafe_skip_rsa_key_validation=True)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


def public_numbers(cert: x509.Certificate) -> rsa.RSAPublicNumbers:
    key = cert.public_key()
    assert isinstance(key, rsa.RSAPublicKey)
    return key.public_numbers()


def assert_signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> None:
    """The signature over the TBS bytes verifies with the issuer's public key (raises if not)."""
    issuer_key = issuer.public_key()
    assert isinstance(issuer_key, rsa.RSAPublicKey)
    assert cert.signature_hash_algorithm is not None
    issuer_key.verify(
        cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm
    )
    assert cert.issuer == issuer.subject


def extension(cert: x509.Certificate, kind: type[x509.ExtensionType]) -> x509.Extension[x509.ExtensionType]:
    return cert.extensions.get_extension_for_class(kind)


def dns_names(cert: x509.Certificate) -> list[str]:
    san = extension(cert, x509.SubjectAlternativeName).value
    assert isinstance(san, x509.SubjectAlternativeName)
    return san.get_values_for_type(x509.DNSName)


def assert_usable(certs: WebhookCertificates, required_names: Sequence[str], now: datetime) -> None:
    """What the API server needs: a CA, a serving certificate it signed, for the names, valid now."""
    ca, serving = certificate(certs.ca_certificate), certificate(certs.serving_certificate)
    ca_key, serving_key = private_key(certs.ca_key), private_key(certs.serving_key)
    assert ca_key.key_size == serving_key.key_size == 4096
    assert ca_key.public_key().public_numbers() == public_numbers(ca)
    assert serving_key.public_key().public_numbers() == public_numbers(serving)
    assert_signed_by(ca, ca)
    assert_signed_by(serving, ca)
    constraints = extension(ca, x509.BasicConstraints).value
    assert isinstance(constraints, x509.BasicConstraints) and constraints.ca
    usage = extension(ca, x509.KeyUsage).value
    assert isinstance(usage, x509.KeyUsage) and usage.key_cert_sign
    extended = extension(serving, x509.ExtendedKeyUsage).value
    assert isinstance(extended, x509.ExtendedKeyUsage) and ExtendedKeyUsageOID.SERVER_AUTH in extended
    assert set(required_names) <= set(dns_names(serving))
    for cert in (ca, serving):
        assert cert.not_valid_before_utc <= now
        assert cert.not_valid_after_utc - now > timedelta(hours=168)
