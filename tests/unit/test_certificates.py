"""Unit tests of `generator.transforms.certificates`: webhook TLS issued in-cluster.

Covered, cert-manager mode: on a stream with a Mutating and a Validating webhook configuration
(with caBundle) and a CRD with a conversion webhook, all calling the webhook Service, every
caBundle is removed, `cert-manager.io/inject-ca-from` points at the serving Certificate, the
serving Certificate carries the SANs `<svc>.<ns>.svc` and `<svc>.<ns>`, lasts 8760h, and the
self-signed chain (selfSigned Issuer -> RSA 4096 CA Certificate of 87600h -> CA Issuer) uses BTP
Manager's Secret names; the chart's own `webhook-server-cert` / `ca-server-cert` Secrets are
dropped (in the plan's namespace only); with an issuerRef no self-signed chain is rendered; a
stream without Service-backed webhooks is returned unchanged; a cert-manager chain the chart
rendered for its webhooks (found from `inject-ca-from`, `secretName`, `issuerRef`) is replaced by
ours, except what an unrelated Certificate still needs. Gardener and self-signed modes: tests/certificates/.

Nothing is faked: YAML literals in, the real transform, YAML literals (or exact values) out.
"""

from __future__ import annotations

import pytest
import yaml

from btp_gitops.generator.transforms.certificates import (
    INJECT_CA_FROM,
    CertificatePlan,
    issue_webhook_certificates_with_cert_manager,
    service_dns_names,
    webhook_service_hosts,
)
from tests.unit.helpers import bodies, documents, manifests, refs

PLAN = CertificatePlan(prefix="sap-btp-operator", namespace="kyma-system")
ISSUER_PLAN = CertificatePlan(
    prefix="sap-btp-operator", namespace="kyma-system", issuer_name="corp-ca", issuer_kind="ClusterIssuer"
)

STREAM = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: sap-btp-operator-mutating}
webhooks:
- name: mserviceinstance.kb.io
  clientConfig:
    caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /mutate-instance}
- name: mservicebinding.kb.io
  clientConfig:
    caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /mutate-binding}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: sap-btp-operator-validating
  annotations: {keep: me}
webhooks:
- name: vserviceinstance.kb.io
  clientConfig:
    caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /validate}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: serviceinstances.services.cloud.sap.com}
spec:
  group: services.cloud.sap.com
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
        service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /convert}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicebindings.services.cloud.sap.com}
spec:
  group: services.cloud.sap.com
  conversion: {strategy: None}
---
apiVersion: v1
kind: Secret
metadata: {name: webhook-server-cert, namespace: kyma-system}
data: {tls.key: a2V5}
---
apiVersion: v1
kind: Secret
metadata: {name: ca-server-cert}
data: {ca.key: a2V5}
---
apiVersion: v1
kind: Secret
metadata: {name: webhook-server-cert, namespace: elsewhere}
data: {tls.crt: Y2VydA==}
---
apiVersion: v1
kind: Service
metadata: {name: sap-btp-operator-webhook-service, namespace: kyma-system}
spec:
  ports: [{port: 443, targetPort: 9443}]
"""

REWRITTEN_CHART_OBJECTS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: sap-btp-operator-mutating
  annotations: {cert-manager.io/inject-ca-from: kyma-system/sap-btp-operator-webhook-cert}
webhooks:
- name: mserviceinstance.kb.io
  clientConfig:
    service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /mutate-instance}
- name: mservicebinding.kb.io
  clientConfig:
    service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /mutate-binding}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: sap-btp-operator-validating
  annotations: {keep: me, cert-manager.io/inject-ca-from: kyma-system/sap-btp-operator-webhook-cert}
webhooks:
- name: vserviceinstance.kb.io
  clientConfig:
    service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /validate}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: serviceinstances.services.cloud.sap.com
  annotations: {cert-manager.io/inject-ca-from: kyma-system/sap-btp-operator-webhook-cert}
spec:
  group: services.cloud.sap.com
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /convert}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicebindings.services.cloud.sap.com}
spec:
  group: services.cloud.sap.com
  conversion: {strategy: None}
---
apiVersion: v1
kind: Secret
metadata: {name: webhook-server-cert, namespace: elsewhere}
data: {tls.crt: Y2VydA==}
---
apiVersion: v1
kind: Service
metadata: {name: sap-btp-operator-webhook-service, namespace: kyma-system}
spec:
  ports: [{port: 443, targetPort: 9443}]
"""

SELF_SIGNED_CHAIN = """\
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: sap-btp-operator-selfsigned-issuer, namespace: kyma-system}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: sap-btp-operator-ca-cert, namespace: kyma-system}
spec:
  isCA: true
  commonName: sap-btp-operator-ca
  secretName: ca-server-cert
  duration: 87600h
  renewBefore: 168h
  privateKey: {algorithm: RSA, size: 4096, rotationPolicy: Always}
  usages: [digital signature, cert sign]
  issuerRef: {name: sap-btp-operator-selfsigned-issuer, kind: Issuer, group: cert-manager.io}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: sap-btp-operator-ca-issuer, namespace: kyma-system}
spec: {ca: {secretName: ca-server-cert}}
"""

SERVING_CERTIFICATE = """\
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: sap-btp-operator-webhook-cert, namespace: kyma-system}
spec:
  commonName: sap-btp-operator-webhook-service.kyma-system.svc
  dnsNames:
  - sap-btp-operator-webhook-service.kyma-system.svc
  - sap-btp-operator-webhook-service.kyma-system
  secretName: webhook-server-cert
  duration: 8760h
  renewBefore: 168h
  privateKey: {algorithm: RSA, size: 4096, rotationPolicy: Always}
  usages: [digital signature, server auth, client auth]
  issuerRef: {name: ISSUER, kind: KIND, group: cert-manager.io}
"""


def serving(issuer: str, kind: str) -> str:
    return SERVING_CERTIFICATE.replace("ISSUER", issuer).replace("KIND", kind)


def test_cert_manager_mode_rewrites_webhooks_and_renders_the_self_signed_chain() -> None:
    result = issue_webhook_certificates_with_cert_manager(manifests(STREAM), PLAN)
    expected = documents(
        REWRITTEN_CHART_OBJECTS
        + "---\n"
        + SELF_SIGNED_CHAIN
        + "---\n"
        + serving("sap-btp-operator-ca-issuer", "Issuer")
    )
    assert bodies(result) == expected
    assert [m.origin for m in result[-4:]] == ["btp-gitops/certificates"] * 4


def test_cert_manager_mode_removes_every_ca_bundle_and_chart_certificate_secret() -> None:
    result = issue_webhook_certificates_with_cert_manager(manifests(STREAM), PLAN)
    text = yaml.safe_dump_all(bodies(result))
    assert "caBundle" not in text
    assert "Secret kyma-system/webhook-server-cert" not in refs(result)
    assert "Secret ca-server-cert" not in refs(result)
    assert "Secret elsewhere/webhook-server-cert" in refs(result)
    annotated = [
        m.body["metadata"]["name"]
        for m in result
        if INJECT_CA_FROM in m.body["metadata"].get("annotations", {})
    ]
    assert annotated == [
        "sap-btp-operator-mutating",
        "sap-btp-operator-validating",
        "serviceinstances.services.cloud.sap.com",
    ]


def test_cert_manager_mode_with_issuer_ref_renders_no_self_signed_chain() -> None:
    result = issue_webhook_certificates_with_cert_manager(manifests(STREAM), ISSUER_PLAN)
    assert bodies(result) == documents(
        REWRITTEN_CHART_OBJECTS + "---\n" + serving("corp-ca", "ClusterIssuer")
    )
    assert not [m for m in result if m.body["kind"] == "Issuer"]


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
            "apiVersion: v1\nkind: Secret\nmetadata: {name: webhook-server-cert, namespace: kyma-system}\n"
            "data: {tls.key: a2V5}\n",
            id="no-webhooks",
        ),
        pytest.param(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
            "metadata: {name: v}\nwebhooks:\n- name: external\n"
            "  clientConfig: {url: 'https://hooks.example.com/v', caBundle: Q0E=}\n",
            id="url-webhooks-only",
        ),
        pytest.param(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: c}\n"
            "spec: {conversion: {strategy: None}}\n",
            id="crd-without-conversion-webhook",
        ),
    ],
)
def test_stream_without_service_webhooks_is_unchanged(stream: str) -> None:
    given = manifests(stream)
    result = issue_webhook_certificates_with_cert_manager(given, PLAN)
    assert result is given
    assert bodies(result) == documents(stream)


def test_service_namespace_defaults_to_the_plan_and_every_service_gets_its_sans() -> None:
    stream = manifests(
        """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: v}
webhooks:
- name: a
  clientConfig: {service: {name: zeta-webhook}}
- name: b
  clientConfig: {service: {name: alpha-webhook, namespace: other}}
- name: c
  clientConfig: {service: {name: zeta-webhook, namespace: kyma-system}}
"""
    )
    hosts = webhook_service_hosts(stream, "kyma-system")
    assert hosts == [("alpha-webhook", "other"), ("zeta-webhook", "kyma-system")]
    assert service_dns_names(hosts) == [
        "alpha-webhook.other.svc",
        "alpha-webhook.other",
        "zeta-webhook.kyma-system.svc",
        "zeta-webhook.kyma-system",
    ]
    certificate = issue_webhook_certificates_with_cert_manager(stream, PLAN)[-1].body
    assert certificate["spec"]["commonName"] == "alpha-webhook.other.svc"
    assert certificate["spec"]["dnsNames"] == service_dns_names(hosts)


def test_cert_manager_mode_leaves_url_webhooks_alone() -> None:
    external = (
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
        "metadata: {name: external}\nwebhooks:\n- name: external\n"
        "  clientConfig: {url: 'https://hooks.example.com/v', caBundle: Q0E=}\n"
    )
    result = issue_webhook_certificates_with_cert_manager(manifests(STREAM + "---\n" + external), PLAN)
    [kept] = [m.body for m in result if m.body["metadata"]["name"] == "external"]
    assert kept == documents(external)[0]


def test_cert_manager_mode_replaces_the_chain_the_chart_rendered() -> None:
    chart = """\
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: chart-selfsigned, namespace: kyma-system}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: chart-ca, namespace: kyma-system}
spec: {isCA: true, secretName: chart-ca, issuerRef: {name: chart-selfsigned, kind: Issuer}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: chart-ca-issuer, namespace: kyma-system}
spec: {ca: {secretName: chart-ca}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: chart-serving, namespace: kyma-system}
spec: {secretName: chart-serving-tls, issuerRef: {name: chart-ca-issuer}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: unrelated, namespace: kyma-system}
spec: {secretName: unrelated-tls, issuerRef: {name: chart-ca-issuer}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: v
  annotations: {cert-manager.io/inject-ca-from: kyma-system/chart-serving}
webhooks:
- name: a
  clientConfig: {service: {name: sap-btp-operator-webhook-service, namespace: kyma-system}}
"""
    result = issue_webhook_certificates_with_cert_manager(manifests(chart), PLAN)
    # The chart's CA chain stays: the unrelated Certificate still needs it.
    assert refs(result) == [
        "Issuer kyma-system/chart-selfsigned",
        "Certificate kyma-system/chart-ca",
        "Issuer kyma-system/chart-ca-issuer",
        "Certificate kyma-system/unrelated",
        "ValidatingWebhookConfiguration v",
        "Issuer kyma-system/sap-btp-operator-selfsigned-issuer",
        "Certificate kyma-system/sap-btp-operator-ca-cert",
        "Issuer kyma-system/sap-btp-operator-ca-issuer",
        "Certificate kyma-system/sap-btp-operator-webhook-cert",
    ]
    assert result[4].body["metadata"]["annotations"] == {
        INJECT_CA_FROM: "kyma-system/sap-btp-operator-webhook-cert"
    }
