"""Webhook certificates against a real kube-apiserver: what we write, the server accepts.

Self-signed mode: the `ca-server-cert` (Opaque) and `webhook-server-cert` (kubernetes.io/tls, which the
server checks for `tls.crt`/`tls.key`) Secrets are created; read back from the cluster as the
`--from-cluster` path reads them, they parse to the same bytes and are reused unchanged; the
webhook configurations and the CRD conversion webhook carrying the injected caBundle pass
server-side validation (dry run, so nothing cluster-wide is left behind) and the server keeps
the bundle as given. Gardener mode: with Gardener cert-management's own CRDs installed (pinned
and fetched by scripts/fetch-crds.sh), the Issuers and Certificates are created with strict field
validation, so a misspelt or unknown field fails. Real kube-apiserver + etcd (marker `kube`);
nothing is faked.
"""

from __future__ import annotations

import base64

import pytest
import yaml
from kubernetes import client as k8s

from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.transforms.certificates import CertificatePlan
from btp_gitops.generator.transforms.gardener_certificates import issue_webhook_certificates_with_gardener
from btp_gitops.generator.transforms.self_signed_certificates import (
    NO_EXISTING_CERTIFICATES,
    KeyFactory,
    existing_certificates_from_secrets,
    issue_webhook_certificates_self_signed,
)
from tests.certificates.conftest import NOW
from tests.support.crds import load_crds, third_party_crd_files
from tests.support.kubeapi import KubeAPI, install_crds
from tests.unit.helpers import manifests

pytestmark = pytest.mark.kube


def stream(namespace: str) -> str:
    service = f"{{name: sap-btp-operator-webhook-service, namespace: {namespace}, path: /x, port: 443}}"
    return f"""\
apiVersion: v1
kind: Service
metadata: {{name: sap-btp-operator-webhook-service, namespace: {namespace}}}
spec: {{ports: [{{port: 443, targetPort: 9443}}]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: {namespace}-validating}}
webhooks:
- name: vinstance.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {{service: {service}}}
  rules: [{{apiGroups: [services.cloud.sap.com], apiVersions: [v1], operations: [CREATE], resources: [serviceinstances]}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: {namespace}-mutating}}
webhooks:
- name: minstance.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {{service: {service}}}
  rules: [{{apiGroups: [services.cloud.sap.com], apiVersions: [v1], operations: [CREATE], resources: [serviceinstances]}}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.{namespace}.example.com}}
spec:
  group: {namespace}.example.com
  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}
  scope: Namespaced
  versions:
  - {{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object}}}}}}
  - {{name: v2, served: true, storage: false, schema: {{openAPIV3Schema: {{type: object}}}}}}
  conversion:
    strategy: Webhook
    webhook: {{conversionReviewVersions: [v1], clientConfig: {{service: {service}}}}}
"""


def test_api_server_accepts_the_secrets_and_the_injected_webhooks(
    kube_api: KubeAPI, kube_namespace: str, new_key: KeyFactory
) -> None:
    plan = CertificatePlan(prefix="sap-btp-operator", namespace=kube_namespace)
    result, _ = issue_webhook_certificates_self_signed(
        manifests(stream(kube_namespace)), plan, NO_EXISTING_CERTIFICATES, NOW, new_key
    )
    by_kind = {m.body["kind"]: m.body for m in result if m.body["kind"] != "Secret"}
    secrets = [m.body for m in result if m.body["kind"] == "Secret"]
    ca_bundle = secrets[0]["data"]["ca.crt"]
    with kube_api.api_client() as api:
        core = k8s.CoreV1Api(api)
        for secret in secrets:
            core.create_namespaced_secret(kube_namespace, secret)
        read_back = [
            Manifest(
                api.sanitize_for_serialization(core.read_namespaced_secret(name, kube_namespace)), "cluster"
            )
            for name in ("ca-server-cert", "webhook-server-cert")
        ]
        admission = k8s.AdmissionregistrationV1Api(api)
        validating = admission.create_validating_webhook_configuration(
            by_kind["ValidatingWebhookConfiguration"], dry_run="All"
        )
        mutating = admission.create_mutating_webhook_configuration(
            by_kind["MutatingWebhookConfiguration"], dry_run="All"
        )
        crd = k8s.ApiextensionsV1Api(api).create_custom_resource_definition(
            by_kind["CustomResourceDefinition"], dry_run="All"
        )

    assert [s["type"] for s in (r.body for r in read_back)] == ["Opaque", "kubernetes.io/tls"]
    existing = existing_certificates_from_secrets(read_back, plan)
    assert existing.ca_certificate == base64.b64decode(ca_bundle)
    assert existing.serving_key == base64.b64decode(secrets[1]["data"]["tls.key"])
    again, notes = issue_webhook_certificates_self_signed(
        manifests(stream(kube_namespace)), plan, existing, NOW, new_key
    )
    assert [n.reason for n in notes] == ["CertificateReused", "CertificateReused"]
    assert yaml.safe_dump([m.body for m in again]) == yaml.safe_dump([m.body for m in result])

    assert validating.webhooks[0].client_config.ca_bundle == ca_bundle
    assert mutating.webhooks[0].client_config.ca_bundle == ca_bundle
    assert crd.spec.conversion.webhook.client_config.ca_bundle == ca_bundle


@pytest.mark.crds
def test_gardener_objects_pass_gardeners_own_crd_schemas(kube_api: KubeAPI, kube_namespace: str) -> None:
    plan = CertificatePlan(prefix="sap-btp-operator", namespace=kube_namespace)
    rendered = issue_webhook_certificates_with_gardener(manifests(stream(kube_namespace)), plan)
    gardener = [m.body for m in rendered if m.body["apiVersion"] == "cert.gardener.cloud/v1alpha1"]
    assert [b["kind"] for b in gardener] == ["Issuer", "Certificate", "Issuer", "Certificate"]
    with kube_api.api_client() as api:
        install_crds(api, load_crds(third_party_crd_files("gardener-cert")))
        custom = k8s.CustomObjectsApi(api)
        for body in gardener:
            plural = {"Issuer": "issuers", "Certificate": "certificates"}[body["kind"]]
            created = custom.create_namespaced_custom_object(
                "cert.gardener.cloud", "v1alpha1", kube_namespace, plural, body, field_validation="Strict"
            )
            assert created["spec"] == body["spec"]
