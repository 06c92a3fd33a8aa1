"""The self-signed manifest transform: caBundle injection, Secrets, and no mixing of modes.

Covered: every webhook (Mutating, Validating) and CRD conversion webhook calling a Service the
stream deploys gets `caBundle` = base64 of the CA PEM; a webhook called by URL, and one calling a
Service the stream does not deploy, keep what they had; the chart's own certificate Secrets and
cert-manager chain (found through `secretName`, `issuerRef` and `inject-ca-from`) and every CA
injection annotation on the rewritten objects are removed, an unrelated cert-manager Certificate
and a ClusterIssuer stay; objects keep their order and identity (post-render maps them back to
the stream by identity), the two Secrets come last; SANs follow the Services found; a stream
without such webhooks is returned as it was.
"""

from __future__ import annotations

import base64

import pytest

from btp_gitops.generator.transforms.self_signed_certificates import (
    NO_EXISTING_CERTIFICATES,
    KeyFactory,
    WebhookCertificates,
    ensure_webhook_certificates,
    install_webhook_certificates,
    issue_webhook_certificates_self_signed,
    served_webhook_services,
)
from tests.certificates.conftest import NOW, PLAN, SERVICE_NAMES
from tests.certificates.verify import certificate, dns_names
from tests.unit.helpers import bodies, documents, manifests, refs

SVC = "{name: sap-btp-operator-webhook-service, namespace: kyma-system"
FOREIGN = "{name: someone-elses-webhook, namespace: kyma-system"

STREAM = f"""\
apiVersion: v1
kind: Service
metadata: {{name: sap-btp-operator-webhook-service}}
spec: {{ports: [{{port: 443}}]}}
---
apiVersion: v1
kind: Secret
metadata: {{name: webhook-server-cert}}
type: kubernetes.io/tls
data: {{tls.crt: b2xk, tls.key: b2xk}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: sap-btp-operator-mutating
  annotations: {{cert-manager.io/inject-ca-from: kyma-system/sap-btp-operator-serving-cert, keep: me}}
webhooks:
- name: minstance.kb.io
  clientConfig: {{caBundle: T0xE, service: {SVC}, path: /mutate-instance}}}}
- name: mbinding.kb.io
  clientConfig: {{service: {{name: sap-btp-operator-webhook-service, path: /mutate-binding}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: sap-btp-operator-validating
  annotations: {{cert.gardener.cloud/inject-ca-from: kyma-system/x}}
webhooks:
- name: vinstance.kb.io
  clientConfig: {{service: {SVC}, path: /validate}}}}
- name: external.example.com
  clientConfig: {{url: "https://hooks.example.com/v", caBundle: RVhU}}
- name: foreign.example.com
  clientConfig: {{caBundle: Rk9S, service: {FOREIGN}}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: someone-else
  annotations: {{cert-manager.io/inject-ca-from: kyma-system/their-cert}}
webhooks:
- name: theirs.example.com
  clientConfig: {{service: {FOREIGN}}}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: serviceinstances.services.cloud.sap.com}}
spec:
  conversion:
    strategy: Webhook
    webhook: {{clientConfig: {{service: {SVC}, path: /convert}}}}, conversionReviewVersions: [v1]}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: others.example.com}}
spec:
  conversion:
    strategy: Webhook
    webhook: {{clientConfig: {{service: {FOREIGN}}}}}, conversionReviewVersions: [v1]}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {{name: sap-btp-operator-selfsigned-issuer}}
spec: {{selfSigned: {{}}}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {{name: sap-btp-operator-ca}}
spec:
  isCA: true
  secretName: sap-btp-operator-ca
  issuerRef: {{name: sap-btp-operator-selfsigned-issuer, kind: Issuer}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {{name: sap-btp-operator-ca-issuer}}
spec: {{ca: {{secretName: sap-btp-operator-ca}}}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {{name: sap-btp-operator-serving-cert}}
spec:
  secretName: webhook-server-cert
  issuerRef: {{name: sap-btp-operator-ca-issuer}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {{name: unrelated-cert}}
spec:
  secretName: unrelated-tls
  issuerRef: {{name: corp-ca, kind: ClusterIssuer}}
"""


@pytest.fixture
def certificates(new_key: KeyFactory) -> WebhookCertificates:
    return ensure_webhook_certificates(NO_EXISTING_CERTIFICATES, PLAN, SERVICE_NAMES, NOW, new_key)[0]


def expected(ca_bundle: str, certs: WebhookCertificates) -> list[object]:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return documents(
        f"""\
apiVersion: v1
kind: Service
metadata: {{name: sap-btp-operator-webhook-service}}
spec: {{ports: [{{port: 443}}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: sap-btp-operator-mutating
  annotations: {{keep: me}}
webhooks:
- name: minstance.kb.io
  clientConfig: {{caBundle: {ca_bundle}, service: {SVC}, path: /mutate-instance}}}}
- name: mbinding.kb.io
  clientConfig: {{caBundle: {ca_bundle}, service: {{name: sap-btp-operator-webhook-service, path: /mutate-binding}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: sap-btp-operator-validating}}
webhooks:
- name: vinstance.kb.io
  clientConfig: {{caBundle: {ca_bundle}, service: {SVC}, path: /validate}}}}
- name: external.example.com
  clientConfig: {{url: "https://hooks.example.com/v", caBundle: RVhU}}
- name: foreign.example.com
  clientConfig: {{caBundle: Rk9S, service: {FOREIGN}}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: someone-else
  annotations: {{cert-manager.io/inject-ca-from: kyma-system/their-cert}}
webhooks:
- name: theirs.example.com
  clientConfig: {{service: {FOREIGN}}}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: serviceinstances.services.cloud.sap.com}}
spec:
  conversion:
    strategy: Webhook
    webhook: {{clientConfig: {{caBundle: {ca_bundle}, service: {SVC}, path: /convert}}}}, conversionReviewVersions: [v1]}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: others.example.com}}
spec:
  conversion:
    strategy: Webhook
    webhook: {{clientConfig: {{service: {FOREIGN}}}}}, conversionReviewVersions: [v1]}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {{name: unrelated-cert}}
spec:
  secretName: unrelated-tls
  issuerRef: {{name: corp-ca, kind: ClusterIssuer}}
---
apiVersion: v1
kind: Secret
metadata: {{name: ca-server-cert, namespace: kyma-system}}
type: Opaque
data: {{ca.crt: {b64(certs.ca_certificate)}, ca.key: {b64(certs.ca_key)}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: webhook-server-cert, namespace: kyma-system}}
type: kubernetes.io/tls
data: {{tls.crt: {b64(certs.serving_certificate)}, tls.key: {b64(certs.serving_key)}}}
"""
    )


def test_ca_bundle_goes_to_every_webhook_calling_the_streams_services(
    certificates: WebhookCertificates,
) -> None:
    given = manifests(STREAM)
    services = served_webhook_services(given, PLAN)
    assert services == [("sap-btp-operator-webhook-service", "kyma-system")]
    result = install_webhook_certificates(given, PLAN, certificates, services)
    ca_bundle = base64.b64encode(certificates.ca_certificate).decode()
    assert base64.b64decode(ca_bundle).startswith(b"-----BEGIN CERTIFICATE-----")
    assert bodies(result) == expected(ca_bundle, certificates)
    assert [m.origin for m in result[-2:]] == ["btp-gitops/certificates"] * 2


def test_rewritten_objects_keep_their_identity_and_order(certificates: WebhookCertificates) -> None:
    given = manifests(STREAM)
    services = served_webhook_services(given, PLAN)
    result = install_webhook_certificates(given, PLAN, certificates, services)
    positions = [next(i for i, g in enumerate(given) if g.body is m.body) for m in result[:-2]]
    assert positions == sorted(positions)
    assert refs(result)[-2:] == [
        "Secret kyma-system/ca-server-cert",
        "Secret kyma-system/webhook-server-cert",
    ]


def test_whole_mode_generates_for_the_services_found(new_key: KeyFactory) -> None:
    second = (
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: second-webhook, namespace: other}\n"
        "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
        "metadata: {name: second}\nwebhooks:\n- name: second.kb.io\n"
        "  clientConfig: {service: {name: second-webhook, namespace: other}}\n"
    )
    result, notes = issue_webhook_certificates_self_signed(
        manifests(STREAM + second), PLAN, NO_EXISTING_CERTIFICATES, NOW, new_key
    )
    serving_secret = result[-1].body
    assert dns_names(certificate(base64.b64decode(serving_secret["data"]["tls.crt"]))) == [
        *SERVICE_NAMES,
        "second-webhook.other.svc",
        "second-webhook.other",
    ]
    [second_config] = [m.body for m in result if m.body["metadata"]["name"] == "second"]
    assert second_config["webhooks"][0]["clientConfig"]["caBundle"] == result[-2].body["data"]["ca.crt"]
    assert [(n.reason, n.subject) for n in notes] == [
        ("CertificateGenerated", "Secret kyma-system/ca-server-cert"),
        ("CertificateGenerated", "Secret kyma-system/webhook-server-cert"),
    ]


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", id="no-webhooks"),
        pytest.param(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
            "metadata: {name: v}\nwebhooks:\n- name: x\n  clientConfig: {service: {name: not-deployed-here}}\n",
            id="service-not-in-the-stream",
        ),
    ],
)
def test_stream_without_served_webhooks_is_unchanged(stream: str, new_key: KeyFactory) -> None:
    given = manifests(stream)
    result, notes = issue_webhook_certificates_self_signed(
        given, PLAN, NO_EXISTING_CERTIFICATES, NOW, new_key
    )
    assert result is given
    assert bodies(result) == documents(stream)
    assert [n.reason for n in notes] == ["NoWebhookServices"]
