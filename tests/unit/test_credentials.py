"""Unit tests of `generator.transforms.credentials`: Service Manager credentials by reference.

Covered: the chart's `sap-btp-service-operator` Secret (and only that Secret) is replaced by an
external-secrets.io/v1 ExternalSecret copying every key of the source Secret except `cluster_id`
and `credentials_namespace`; without a secretStoreRef a Kubernetes-provider SecretStore with its
ServiceAccount, Role and RoleBinding (allowed to `get` exactly the source Secret) is rendered;
with a secretStoreRef none of those store objects is rendered.

Nothing is faked: YAML literals in, the real transform, YAML literals (or exact values) out.
"""

from __future__ import annotations

from typing import Any

import pytest

from btp_gitops.generator.transforms.credentials import CredentialsPlan, reference_operator_credentials
from tests.unit.helpers import bodies, documents, manifests, refs

CHART = """\
apiVersion: v1
kind: Secret
metadata: {name: sap-btp-service-operator, namespace: kyma-system}
data: {clientid: Y2xpZW50, clientsecret: c2VjcmV0}
---
apiVersion: v1
kind: Secret
metadata: {name: other-secret, namespace: kyma-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: sap-btp-service-operator, namespace: kyma-system}
data: {a: b}
"""

TEMPLATE = (
    "{{- range $key, $value := . }}\n"
    '{{- if and (ne $key "cluster_id") (ne $key "credentials_namespace") }}\n'
    "{{ $key }}: {{ $value | toJson }}\n"
    "{{- end }}\n"
    "{{- end }}\n"
)

OWN_STORE = """\
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: sap-btp-service-operator, namespace: creds}
spec:
  refreshInterval: 15m
  secretStoreRef: {kind: SecretStore, name: btp-gitops-credentials-reader}
  dataFrom:
  - extract: {key: sm-credentials}
  target:
    name: sap-btp-service-operator
    creationPolicy: Owner
    deletionPolicy: Delete
    template:
      engineVersion: v2
      mergePolicy: Replace
      type: Opaque
      metadata:
        labels: {app.kubernetes.io/managed-by: btp-manager, kyma-project.io/module: btp-operator}
      templateFrom:
      - target: Data
        literal: TEMPLATE
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: btp-gitops-credentials-reader, namespace: creds}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: btp-gitops-credentials-reader, namespace: source-ns}
rules:
- apiGroups: ['']
  resources: [secrets]
  resourceNames: [sm-credentials]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: btp-gitops-credentials-reader, namespace: source-ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: btp-gitops-credentials-reader}
subjects:
- {kind: ServiceAccount, name: btp-gitops-credentials-reader, namespace: creds}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: btp-gitops-credentials-reader, namespace: creds}
spec:
  provider:
    kubernetes:
      remoteNamespace: source-ns
      server:
        caProvider: {type: ConfigMap, name: kube-root-ca.crt, key: ca.crt}
      auth:
        serviceAccount: {name: btp-gitops-credentials-reader}
"""


def kept_chart_objects() -> list[dict[str, Any]]:
    return documents(CHART)[1:]


def test_secret_replaced_by_external_secret_and_own_store() -> None:
    plan = CredentialsPlan(
        credentials_namespace="creds",
        source_name="sm-credentials",
        source_namespace="source-ns",
        refresh_interval="15m",
        module_labels=(
            ("app.kubernetes.io/managed-by", "btp-manager"),
            ("kyma-project.io/module", "btp-operator"),
        ),
    )
    result = reference_operator_credentials(manifests(CHART), plan)
    added = documents(OWN_STORE)
    added[0]["spec"]["target"]["template"]["templateFrom"][0]["literal"] = TEMPLATE
    assert bodies(result) == kept_chart_objects() + added
    assert [m.origin for m in result[2:]] == ["btp-gitops/credentials"] * 5


@pytest.mark.parametrize("store_kind", ["SecretStore", "ClusterSecretStore"])
def test_existing_store_renders_no_store_objects(store_kind: str) -> None:
    plan = CredentialsPlan(credentials_namespace="kyma-system", store_kind=store_kind, store_name="vault")
    result = reference_operator_credentials(manifests(CHART), plan)
    assert refs(result) == [
        "Secret kyma-system/other-secret",
        "ConfigMap kyma-system/sap-btp-service-operator",
        "ExternalSecret kyma-system/sap-btp-service-operator",
    ]
    spec = result[-1].body["spec"]
    assert spec["secretStoreRef"] == {"kind": store_kind, "name": "vault"}
    assert spec["dataFrom"] == [{"extract": {"key": "sap-btp-manager"}}]
    assert spec["refreshInterval"] == "1h"
    assert spec["target"]["template"]["metadata"] == {"labels": {}}


def test_defaults_read_kyma_system_sap_btp_manager() -> None:
    result = reference_operator_credentials([], CredentialsPlan(credentials_namespace="kyma-system"))
    assert refs(result) == [
        "ExternalSecret kyma-system/sap-btp-service-operator",
        "ServiceAccount kyma-system/btp-gitops-credentials-reader",
        "Role kyma-system/btp-gitops-credentials-reader",
        "RoleBinding kyma-system/btp-gitops-credentials-reader",
        "SecretStore kyma-system/btp-gitops-credentials-reader",
    ]
    assert result[2].body["rules"][0]["resourceNames"] == ["sap-btp-manager"]
    assert result[4].body["spec"]["provider"]["kubernetes"]["remoteNamespace"] == "kyma-system"


def test_template_excludes_exactly_the_two_bookkeeping_keys() -> None:
    result = reference_operator_credentials([], CredentialsPlan(credentials_namespace="x"))
    literal = result[0].body["spec"]["target"]["template"]["templateFrom"][0]["literal"]
    assert literal == TEMPLATE
