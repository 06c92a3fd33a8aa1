"""Self-signed mode, nothing existing: the CA and serving certificate as the reference's table says.

Covered: key sizes (RSA 4096), validity windows (87600h / 8760h from the given clock), BasicConstraints,
KeyUsage and ExtendedKeyUsage, SANs `<svc>.<ns>.svc` and `<svc>.<ns>`, the chain (the serving
certificate's signature verified with the CA public key), the key identifiers linking them, that
the same inputs give the same bytes, the Secrets' names, types and keys, and - with OpenSSL, as
a client would - a TLS handshake that succeeds for the Service name and fails for another name
or another CA. Real RSA-4096 keys from the session pool; nothing is faked.
"""

from __future__ import annotations

import base64
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from btp_gitops.generator.transforms.self_signed_certificates import (
    NO_EXISTING_CERTIFICATES,
    KeyFactory,
    WebhookCertificates,
    certificate_secrets,
    ensure_webhook_certificates,
    issue_ca_certificate,
)
from tests.certificates.conftest import NOW, PLAN, SERVICE_NAMES, KeyPool
from tests.certificates.verify import (
    assert_signed_by,
    assert_usable,
    certificate,
    dns_names,
    extension,
    private_key,
)

TWO_SERVICES = [*SERVICE_NAMES, "second-webhook.other.svc", "second-webhook.other"]
# OpenSSL's X509_V_ERR_* codes (include/openssl/x509_vfy.h), fixed across its releases.
X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY = 20
X509_V_ERR_HOSTNAME_MISMATCH = 62


@pytest.fixture
def fresh(new_key: KeyFactory) -> WebhookCertificates:
    certificates, _ = ensure_webhook_certificates(NO_EXISTING_CERTIFICATES, PLAN, TWO_SERVICES, NOW, new_key)
    return certificates


def test_ca_is_an_rsa_4096_ca_valid_for_87600h(fresh: WebhookCertificates) -> None:
    ca = certificate(fresh.ca_certificate)
    assert private_key(fresh.ca_key).key_size == 4096
    assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "sap-btp-operator-ca"
    assert ca.subject == ca.issuer
    assert_signed_by(ca, ca)
    assert ca.not_valid_before_utc == NOW
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == timedelta(hours=87600)
    constraints = extension(ca, x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value == x509.BasicConstraints(ca=True, path_length=0)
    usage = extension(ca, x509.KeyUsage)
    assert usage.critical
    assert isinstance(usage.value, x509.KeyUsage)
    assert usage.value.digital_signature and usage.value.key_cert_sign
    assert not (usage.value.key_encipherment or usage.value.crl_sign or usage.value.content_commitment)


def test_serving_certificate_is_signed_by_the_ca_for_the_service_names(fresh: WebhookCertificates) -> None:
    ca, serving = certificate(fresh.ca_certificate), certificate(fresh.serving_certificate)
    assert private_key(fresh.serving_key).key_size == 4096
    assert_signed_by(serving, ca)
    assert dns_names(serving) == TWO_SERVICES
    assert serving.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == SERVICE_NAMES[0]
    assert serving.not_valid_before_utc == NOW
    assert serving.not_valid_after_utc - serving.not_valid_before_utc == timedelta(hours=8760)
    assert extension(serving, x509.BasicConstraints).value == x509.BasicConstraints(
        ca=False, path_length=None
    )
    usage = extension(serving, x509.KeyUsage).value
    assert isinstance(usage, x509.KeyUsage)
    assert usage.digital_signature and usage.key_encipherment and not usage.key_cert_sign
    extended = extension(serving, x509.ExtendedKeyUsage).value
    assert isinstance(extended, x509.ExtendedKeyUsage)
    assert list(extended) == [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    authority = extension(serving, x509.AuthorityKeyIdentifier).value
    subject_of_ca = extension(ca, x509.SubjectKeyIdentifier).value
    assert isinstance(authority, x509.AuthorityKeyIdentifier)
    assert isinstance(subject_of_ca, x509.SubjectKeyIdentifier)
    assert authority.key_identifier == subject_of_ca.digest
    assert ca.serial_number != serving.serial_number
    assert_usable(fresh, TWO_SERVICES, NOW)


def test_same_inputs_give_the_same_bytes(key_pool: KeyPool) -> None:
    first, _ = ensure_webhook_certificates(
        NO_EXISTING_CERTIFICATES, PLAN, SERVICE_NAMES, NOW, key_pool.factory()
    )
    again, _ = ensure_webhook_certificates(
        NO_EXISTING_CERTIFICATES, PLAN, SERVICE_NAMES, NOW, key_pool.factory()
    )
    assert first == again
    later, _ = ensure_webhook_certificates(
        NO_EXISTING_CERTIFICATES, PLAN, SERVICE_NAMES, NOW + timedelta(seconds=1), key_pool.factory()
    )
    assert later.ca_certificate != first.ca_certificate


def test_key_material_stays_out_of_repr(fresh: WebhookCertificates) -> None:
    text = repr(fresh)
    assert "PRIVATE KEY" not in text
    assert "CERTIFICATE" in text


def test_wrong_keys_and_naive_clocks_are_refused(key_pool: KeyPool) -> None:
    with pytest.raises(ValueError, match="4096-bit RSA"):
        small = rsa.generate_private_key(65537, 1024)
        ensure_webhook_certificates(NO_EXISTING_CERTIFICATES, PLAN, SERVICE_NAMES, NOW, lambda: small)
    with pytest.raises(ValueError, match="timezone-aware"):
        issue_ca_certificate(key_pool.role("ca"), "ca", NOW.replace(tzinfo=None))


def test_secrets_carry_btp_managers_names_types_and_keys(fresh: WebhookCertificates) -> None:
    ca_secret, serving_secret = (m.body for m in certificate_secrets(PLAN, fresh))
    assert ca_secret["metadata"] == {"name": "ca-server-cert", "namespace": "kyma-system"}
    assert ca_secret["type"] == "Opaque"
    assert {k: base64.b64decode(v) for k, v in ca_secret["data"].items()} == {
        "ca.crt": fresh.ca_certificate,
        "ca.key": fresh.ca_key,
    }
    assert serving_secret["metadata"] == {"name": "webhook-server-cert", "namespace": "kyma-system"}
    assert serving_secret["type"] == "kubernetes.io/tls"
    assert {k: base64.b64decode(v) for k, v in serving_secret["data"].items()} == {
        "tls.crt": fresh.serving_certificate,
        "tls.key": fresh.serving_key,
    }


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str) -> None:
    """A TLS handshake between two OpenSSL endpoints over memory buffers; raises on failure."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server_end = server.wrap_bio(to_server, to_client, server_side=True)
    client_end = client.wrap_bio(to_client, to_server, server_hostname=hostname)
    done = {"server": False, "client": False}
    for _ in range(20):
        for name, end in (("client", client_end), ("server", server_end)):
            if done[name]:
                continue
            try:
                end.do_handshake()
                done[name] = True
            except ssl.SSLWantReadError:
                pass
        if all(done.values()):
            return
    raise AssertionError("handshake did not finish")


def _server(tmp_path: Path, certs: WebhookCertificates) -> ssl.SSLContext:
    (tmp_path / "tls.crt").write_bytes(certs.serving_certificate)
    (tmp_path / "tls.key").write_bytes(certs.serving_key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    return context


def test_openssl_client_trusting_the_ca_accepts_the_service_name_only(
    tmp_path: Path, new_key: KeyFactory, key_pool: KeyPool
) -> None:
    # OpenSSL checks validity against the real clock, so these are issued now, not at NOW.
    now = datetime.now(UTC)
    fresh, _ = ensure_webhook_certificates(NO_EXISTING_CERTIFICATES, PLAN, TWO_SERVICES, now, new_key)
    server = _server(tmp_path, fresh)
    client = ssl.create_default_context(cadata=fresh.ca_certificate.decode())
    for name in TWO_SERVICES:
        _handshake(server, client, name)
    # OpenSSL's verification codes, not its wording, which changes between releases.
    with pytest.raises(ssl.SSLCertVerificationError) as mismatch:
        _handshake(server, client, "sap-btp-operator-webhook-service.default.svc")
    assert mismatch.value.verify_code == X509_V_ERR_HOSTNAME_MISMATCH
    other_ca = issue_ca_certificate(key_pool.role("foreign_ca"), "someone-else", now)
    stranger = ssl.create_default_context(cadata=other_ca.decode())
    with pytest.raises(ssl.SSLCertVerificationError) as untrusted:
        _handshake(server, stranger, SERVICE_NAMES[0])
    assert untrusted.value.verify_code == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
