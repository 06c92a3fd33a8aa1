"""Reading existing certificates from Secret manifests (a file, or objects read from the cluster).

Covered: `data` (base64, line-wrapped too) and `stringData`, which wins as in the API server;
Secrets of other names or namespaces and other kinds are ignored, a Secret without namespace
counts as the plan's; what `certificate_secrets` writes reads back byte for byte; malformed
Secrets fail with every problem named by origin, object and field, and the message never
quotes a value (a private key is planted in the broken fields to prove it).
"""

from __future__ import annotations

import base64

import pytest
import yaml

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.transforms.self_signed_certificates import (
    NO_EXISTING_CERTIFICATES,
    ExistingCertificates,
    KeyFactory,
    certificate_secrets,
    ensure_webhook_certificates,
    existing_certificates_from_secrets,
)
from tests.certificates.builders import key_pem
from tests.certificates.conftest import NOW, PLAN, SERVICE_NAMES, KeyPool
from tests.unit.helpers import manifests


def b64(text: bytes) -> str:
    return base64.b64encode(text).decode()


def test_data_and_string_data_of_the_two_secrets_are_read() -> None:
    stream = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: ca-server-cert, namespace: kyma-system}}
data: {{ca.crt: {b64(b"CA CERT")}, ca.key: {b64(b"CA KEY")}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: webhook-server-cert}}
type: kubernetes.io/tls
data: {{tls.crt: {b64(b"OLD CERT")}}}
stringData: {{tls.crt: SERVING CERT, tls.key: SERVING KEY}}
---
apiVersion: v1
kind: Secret
metadata: {{name: ca-server-cert, namespace: elsewhere}}
data: {{ca.crt: {b64(b"NOT OURS")}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: webhook-server-cert, namespace: kyma-system}}
data: {{tls.crt: not a secret}}
"""
    assert existing_certificates_from_secrets(
        manifests(stream, "existing.yaml"), PLAN
    ) == ExistingCertificates(
        ca_certificate=b"CA CERT",
        ca_key=b"CA KEY",
        serving_certificate=b"SERVING CERT",
        serving_key=b"SERVING KEY",
    )


def test_no_secrets_means_nothing_existing() -> None:
    assert existing_certificates_from_secrets([], PLAN) == NO_EXISTING_CERTIFICATES


def test_line_wrapped_base64_is_accepted() -> None:
    wrapped = b64(b"x" * 120)
    folded = "\n".join(wrapped[i : i + 64] for i in range(0, len(wrapped), 64))
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "ca-server-cert"},
        "data": {"ca.crt": folded + "\n"},
    }
    found = existing_certificates_from_secrets(manifests(yaml.safe_dump(body)), PLAN)
    assert found.ca_certificate == b"x" * 120


def test_written_secrets_read_back_byte_for_byte(new_key: KeyFactory) -> None:
    certificates, _ = ensure_webhook_certificates(NO_EXISTING_CERTIFICATES, PLAN, SERVICE_NAMES, NOW, new_key)
    dumped = yaml.safe_dump_all([m.body for m in certificate_secrets(PLAN, certificates)])
    found = existing_certificates_from_secrets(manifests(dumped, "cluster"), PLAN)
    assert found == ExistingCertificates(
        certificates.ca_certificate,
        certificates.ca_key,
        certificates.serving_certificate,
        certificates.serving_key,
    )
    reused, notes = ensure_webhook_certificates(found, PLAN, SERVICE_NAMES, NOW, new_key)
    assert reused == certificates
    assert [n.reason for n in notes] == ["CertificateReused", "CertificateReused"]


def test_malformed_secrets_are_reported_without_their_values(key_pool: KeyPool) -> None:
    secret_key = key_pem(key_pool.role("ca")).decode()
    leaked_line = secret_key.splitlines()[1]
    stream = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: ca-server-cert, namespace: kyma-system}}
data:
  ca.crt: {b64(b"fine")}
  ca.key: "{leaked_line}!!"
---
apiVersion: v1
kind: Secret
metadata: {{name: webhook-server-cert, namespace: kyma-system}}
data: {{tls.crt: 42}}
stringData: {{tls.key: [{leaked_line}]}}
"""
    with pytest.raises(InvalidSpec) as raised:
        existing_certificates_from_secrets(manifests(stream, "existing.yaml"), PLAN)
    assert raised.value.lines() == [
        "cannot read the existing webhook certificates",
        "  existing.yaml (Secret kyma-system/ca-server-cert): data.ca.key: not valid base64",
        "  existing.yaml (Secret kyma-system/webhook-server-cert): data.tls.crt: must be a base64 string",
        "  existing.yaml (Secret kyma-system/webhook-server-cert): stringData.tls.key: must be a string",
    ]
    assert leaked_line not in str(raised.value) + "".join(raised.value.lines())
    assert raised.value.__cause__ is None and raised.value.__context__ is None


def test_a_secret_given_twice_is_an_error() -> None:
    secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: webhook-server-cert, namespace: kyma-system}\n"
    given = manifests(secret, "a.yaml") + manifests(secret.replace(", namespace: kyma-system", ""), "b.yaml")
    with pytest.raises(InvalidSpec) as raised:
        existing_certificates_from_secrets(given, PLAN)
    assert raised.value.lines() == [
        "cannot read the existing webhook certificates",
        "  b.yaml: Secret kyma-system/webhook-server-cert given more than once: a.yaml, b.yaml",
    ]
