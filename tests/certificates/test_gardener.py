"""Gardener mode: cert.gardener.cloud/v1alpha1 Issuers and Certificates with Gardener's CA injector.

Covered, on the transform: the chain (selfSigned Issuer -> RSA 4096 CA Certificate of 87600h with
`isCA` into `ca-server-cert` -> CA Issuer over that Secret -> serving Certificate of 8760h into
`webhook-server-cert`, SANs `<svc>.<ns>.svc`/`<svc>.<ns>`, renewed 168h early, issuers
referenced with their namespace, Secrets by `secretRef`) as a snapshot; every Service-backed
webhook and conversion webhook loses `caBundle` and gets `cert.gardener.cloud/inject-ca-from`,
cert-manager annotations and the chart's cert-manager chain and certificate Secrets go, URL
webhooks stay as they were; a given issuer replaces the chain (with or without namespace); a
Service name too long for a CN leaves `commonName` out; a stream without webhook Services is
unchanged. Through the CLI: `render` of the example with `mode: gardener` (snapshot of the
certificate objects and webhooks, no cert-manager object, no caBundle, no Secret), and issuerRef
fields of the other certificate manager refused with file, object and field.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.transforms.certificates import CertificatePlan
from btp_gitops.generator.transforms.gardener_certificates import (
    INJECT_CA_FROM,
    issue_webhook_certificates_with_gardener,
)
from tests.conftest import RunCli, read_tree, tree_as_yaml
from tests.render.conftest import MakeSource
from tests.unit.helpers import bodies, documents, manifests

PLAN = CertificatePlan(prefix="sap-btp-operator", namespace="kyma-system")

STREAM = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: sap-btp-operator-mutating
  annotations: {cert-manager.io/inject-ca-from: kyma-system/sap-btp-operator-serving-cert}
webhooks:
- name: minstance.kb.io
  clientConfig:
    caBundle: T0xE
    service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /mutate}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: sap-btp-operator-validating}
webhooks:
- name: vinstance.kb.io
  clientConfig: {service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /validate}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: external}
webhooks:
- name: external.example.com
  clientConfig: {url: "https://hooks.example.com/v", caBundle: RVhU}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: serviceinstances.services.cloud.sap.com}
spec:
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        caBundle: T0xE
        service: {name: sap-btp-operator-webhook-service, namespace: kyma-system, path: /convert}
---
apiVersion: v1
kind: Secret
metadata: {name: webhook-server-cert, namespace: kyma-system}
data: {tls.key: a2V5}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: sap-btp-operator-serving-cert, namespace: kyma-system}
spec: {secretName: webhook-server-cert, issuerRef: {name: corp-ca, kind: ClusterIssuer}}
"""


def snapshot_text(found: list[object]) -> str:
    return yaml.safe_dump_all(found, sort_keys=False, width=110)


def test_gardener_objects_and_rewritten_webhooks_match_snapshot(yaml_snapshot: object) -> None:
    result = issue_webhook_certificates_with_gardener(manifests(STREAM), PLAN)
    assert snapshot_text(bodies(result)) == yaml_snapshot


def test_service_webhooks_get_gardeners_ca_injection_and_nothing_else() -> None:
    result = bodies(issue_webhook_certificates_with_gardener(manifests(STREAM), PLAN))
    by_name = {body["metadata"]["name"]: body for body in result}
    reference = "kyma-system/sap-btp-operator-webhook-cert"
    for name in (
        "sap-btp-operator-mutating",
        "sap-btp-operator-validating",
        "serviceinstances.services.cloud.sap.com",
    ):
        assert by_name[name]["metadata"]["annotations"] == {INJECT_CA_FROM: reference}, name
    assert "caBundle" not in yaml.safe_dump(
        [by_name["sap-btp-operator-mutating"], by_name["sap-btp-operator-validating"]]
    )
    assert by_name["external"] == documents(STREAM)[2]
    assert not [b for b in result if b["apiVersion"].startswith("cert-manager.io") or b["kind"] == "Secret"]
    kinds = [
        (b["kind"], b["metadata"]["name"])
        for b in result
        if b["apiVersion"] == "cert.gardener.cloud/v1alpha1"
    ]
    assert kinds == [
        ("Issuer", "sap-btp-operator-selfsigned-issuer"),
        ("Certificate", "sap-btp-operator-ca-cert"),
        ("Issuer", "sap-btp-operator-ca-issuer"),
        ("Certificate", "sap-btp-operator-webhook-cert"),
    ]


def test_a_given_issuer_replaces_the_chain() -> None:
    plan = CertificatePlan(prefix="sap-btp-operator", namespace="kyma-system", issuer_name="corp-ca")
    in_shoot = issue_webhook_certificates_with_gardener(manifests(STREAM), plan, issuer_namespace="certs")
    [certificate] = [m.body for m in in_shoot if m.body["apiVersion"] == "cert.gardener.cloud/v1alpha1"]
    assert certificate["metadata"] == {"name": "sap-btp-operator-webhook-cert", "namespace": "kyma-system"}
    assert certificate["spec"]["issuerRef"] == {"name": "corp-ca", "namespace": "certs"}
    default_cluster = issue_webhook_certificates_with_gardener(manifests(STREAM), plan)
    assert default_cluster[-1].body["spec"]["issuerRef"] == {"name": "corp-ca"}


def test_a_service_name_too_long_for_a_common_name_is_named_by_sans_only() -> None:
    service = "a-very-long-webhook-service-name-that-goes-on"
    stream = (
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
        f"metadata: {{name: v}}\nwebhooks:\n- name: x\n  clientConfig: {{service: {{name: {service}, namespace: kyma-system-extended}}}}\n"
    )
    spec = issue_webhook_certificates_with_gardener(manifests(stream), PLAN)[-1].body["spec"]
    assert "commonName" not in spec
    assert spec["dnsNames"] == [f"{service}.kyma-system-extended.svc", f"{service}.kyma-system-extended"]
    assert len(spec["dnsNames"][0]) > 64


def test_stream_without_webhook_services_is_unchanged() -> None:
    given = manifests(STREAM.split("---\n")[2])
    assert issue_webhook_certificates_with_gardener(given, PLAN) is given


def test_render_with_gardener_matches_snapshot(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource, yaml_snapshot: object
) -> None:
    source = make_source(certificates={"mode": "gardener"})
    result = run_cli("render", source, "--out", tmp_path / "repo", "--cluster", "demo")
    assert result.returncode == 0, result.stderr
    tree = read_tree(tmp_path / "repo")
    objects = {
        path: yaml.safe_load(data)
        for path, data in tree.items()
        if path.endswith(".yaml") and not path.endswith("kustomization.yaml")
    }
    assert not [p for p, o in objects.items() if o["apiVersion"].startswith("cert-manager.io")]
    assert not [p for p, o in objects.items() if o["kind"] == "Secret"]
    assert not [p for p, data in tree.items() if b"caBundle" in data]
    wanted = {"Issuer", "Certificate", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    shown = {path: tree[path] for path, obj in objects.items() if obj["kind"] in wanted}
    assert len(shown) == 6
    assert tree_as_yaml(shown) == yaml_snapshot


def test_issuer_ref_fields_of_the_other_manager_are_refused(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    where = "source/btpoperatorconfig.yaml: document 1 (BtpOperatorConfig kyma-system/btp-operator)"
    make_source(certificates={"mode": "gardener", "issuerRef": {"name": "corp", "kind": "ClusterIssuer"}})
    result = run_cli("render", "source", "--out", "repo", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT
    assert result.stderr == (
        "error: the webhook certificate issuer cannot be rendered\n"
        f"  {where}: spec.certificates.issuerRef.kind: Gardener issuers are referenced by name and namespace; "
        "kind and group are for 'cert-manager'\n"
    )
    make_source(
        name="cm", certificates={"mode": "cert-manager", "issuerRef": {"name": "corp", "namespace": "x"}}
    )
    result = run_cli("render", "cm", "--out", "repo", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT
    assert result.stderr == (
        "error: the webhook certificate issuer cannot be rendered\n"
        f"  {where.replace('source/', 'cm/')}: spec.certificates.issuerRef.namespace: cert-manager issuers are "
        "referenced by name, kind and group; namespace is for 'gardener'\n"
    )
    assert not (tmp_path / "repo").exists()
