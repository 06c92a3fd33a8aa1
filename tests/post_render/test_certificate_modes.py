"""post-render certificate modes through the CLI: self-signed (generate, reuse from a file or the
cluster) and gardener, on the stream Helm 4 hands over."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from kubernetes import client as k8s

from tests.post_render.conftest import PostRender, ensure_namespace
from tests.post_render.test_post_render_cli import SECRET_VALUES, secret_manifest
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.tools

SERVICE_SANS = [
    "sap-btp-operator-webhook-service.kyma-system.svc",
    "sap-btp-operator-webhook-service.kyma-system",
]


def objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def secret_data(found: list[dict[str, Any]], name: str) -> dict[str, bytes]:
    secret = next(o for o in found if o["kind"] == "Secret" and o["metadata"]["name"] == name)
    assert secret["metadata"]["namespace"] == "kyma-system"
    return {key: base64.b64decode(value) for key, value in secret["data"].items()}


def verify_chain(found: list[dict[str, Any]]) -> tuple[bytes, bytes]:
    """The serving certificate is signed by the CA, covers the webhook Service, and the CA is in
    every webhook's caBundle. Returns both certificates' PEM."""
    ca_pem = secret_data(found, "ca-server-cert")["ca.crt"]
    serving_pem = secret_data(found, "webhook-server-cert")["tls.crt"]
    ca, serving = x509.load_pem_x509_certificate(ca_pem), x509.load_pem_x509_certificate(serving_pem)
    ca_key = ca.public_key()
    assert isinstance(ca_key, rsa.RSAPublicKey) and ca_key.key_size == 4096
    assert serving.signature_hash_algorithm is not None
    ca_key.verify(
        serving.signature, serving.tbs_certificate_bytes, padding.PKCS1v15(), serving.signature_hash_algorithm
    )
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == SERVICE_SANS
    webhooks = [w for o in found if o["kind"].endswith("WebhookConfiguration") for w in o["webhooks"]]
    assert webhooks and all(base64.b64decode(w["clientConfig"]["caBundle"]) == ca_pem for w in webhooks)
    assert not any(o["kind"] in {"Certificate", "Issuer"} for o in found)
    return ca_pem, serving_pem


def test_self_signed_generates_then_reuses_from_a_file(
    helm4_stream: str, post_render_cli: PostRender, tmp_path: Path
) -> None:
    first = post_render_cli(helm4_stream, "--certificates", "self-signed")
    assert first.returncode == 0, first.stderr
    generated = verify_chain(objects(first.stdout))
    assert "BEGIN" not in first.stderr  # no key material in diagnostics
    existing = tmp_path / "existing.yaml"
    existing.write_text(
        "---\n".join(
            yaml.safe_dump(o)
            for o in objects(first.stdout)
            if o["kind"] == "Secret" and "cert" in o["metadata"]["name"]
        )
    )
    again = post_render_cli(
        helm4_stream, "--certificates", "self-signed", "--existing-certificates", existing
    )
    assert again.returncode == 0, again.stderr
    assert verify_chain(objects(again.stdout)) == generated


def test_existing_certificates_only_with_self_signed(helm4_stream: str, post_render_cli: PostRender) -> None:
    result = post_render_cli(helm4_stream, "--existing-certificates", "nowhere.yaml")
    assert result.returncode == 2
    assert "only read with --certificates self-signed" in result.stderr


@pytest.mark.kube
def test_self_signed_reuses_certificates_from_the_cluster(
    helm4_stream: str, post_render_cli: PostRender, kube_api: KubeAPI, tmp_path: Path
) -> None:
    """--credentials wins over the cluster for the credentials; certificates still come from it."""
    credentials = tmp_path / "creds.yaml"
    credentials.write_text(secret_manifest(SECRET_VALUES))
    args = (
        "--certificates",
        "self-signed",
        "--from-cluster",
        "--kubeconfig",
        str(kube_api.kubeconfig),
        "--credentials",
        str(credentials),
    )
    first = post_render_cli(helm4_stream, *args)
    assert first.returncode == 0, first.stderr
    generated = verify_chain(objects(first.stdout))
    with kube_api.api_client() as api:
        core = k8s.CoreV1Api(api)
        ensure_namespace(core, "kyma-system")
        secrets = [
            o for o in objects(first.stdout) if o["kind"] == "Secret" and "cert" in o["metadata"]["name"]
        ]
        for secret in secrets:
            secret["metadata"].pop("annotations", None)
            core.create_namespaced_secret("kyma-system", secret)
        try:
            again = post_render_cli(helm4_stream, *args)
        finally:
            for secret in secrets:
                core.delete_namespaced_secret(secret["metadata"]["name"], "kyma-system")
    assert again.returncode == 0, again.stderr
    assert verify_chain(objects(again.stdout)) == generated


def test_gardener_mode_annotates_webhooks_for_gardener_ca_injection(
    helm4_stream: str, post_render_cli: PostRender
) -> None:
    result = post_render_cli(helm4_stream, "--certificates", "gardener")
    assert result.returncode == 0, result.stderr
    found = objects(result.stdout)
    webhooks = [o for o in found if o["kind"].endswith("WebhookConfiguration")]
    assert webhooks and all(
        w["metadata"]["annotations"]["cert.gardener.cloud/inject-ca-from"]
        == "kyma-system/sap-btp-operator-webhook-cert"
        for w in webhooks
    )
    assert {o["apiVersion"] for o in found if o["kind"] in {"Certificate", "Issuer"}} == {
        "cert.gardener.cloud/v1alpha1"
    }
