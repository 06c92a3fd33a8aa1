"""Unit tests of `generator.core.validation` with the real JSON Schemas of schemas/.

Covered, for BtpOperator and BtpOperatorConfig documents: the exact `Problem.render()` line of an
unknown field (one per unknown field, at that field's path), a missing required field, a wrong
type, an enum violation, a pattern/length violation, an unknown kind or unsupported apiVersion
(listing the supported versions), valid documents giving no problem, and `validate_sources`
raising one SchemaViolation that carries every problem of every document, sorted.

Nothing is faked: the registry is `load_schema_registry()` over the checkout's schemas/ directory,
and validation runs the real jsonschema Draft 2020-12 validator.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import SchemaViolation
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.validation import SchemaRegistry, problems_in, validate_sources
from btp_gitops.generator.io.schemas import default_schema_dir, load_schema_registry

BTP_OPERATOR = """\
apiVersion: operator.kyma-project.io/v1alpha1
kind: BtpOperator
metadata:
  name: btpoperator
  namespace: kyma-system
"""

BTP_OPERATOR_CONFIG = """\
apiVersion: btp-gitops.io/v1alpha1
kind: BtpOperatorConfig
metadata:
  name: config
  namespace: kyma-system
spec:
  chart:
    path: ../charts/sap-btp-operator
  clusterId: my-cluster
"""

OP = "f.yaml: document 1 (BtpOperator kyma-system/btpoperator)"
CFG = "f.yaml: document 1 (BtpOperatorConfig kyma-system/config)"


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return load_schema_registry()


def source(body: dict[str, Any], file: str = "f.yaml", document: int = 1) -> SourceDocument:
    return SourceDocument(file=file, document=document, body=body, directory=Path("."))


def patched(base: str, patch: str) -> dict[str, Any]:
    """`base` with `patch` deep-merged in; a value of `~` in the patch deletes the key."""

    def merge(into: dict[str, Any], changes: dict[str, Any]) -> None:
        for key, value in changes.items():
            if value is None:
                into.pop(key, None)
            elif isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    body: dict[str, Any] = copy.deepcopy(yaml.safe_load(base))
    merge(body, yaml.safe_load(patch) or {})
    return body


def rendered(body: dict[str, Any], registry: SchemaRegistry) -> list[str]:
    return sorted(p.render() for p in problems_in(source(body), registry))


@pytest.mark.parametrize("base", [BTP_OPERATOR, BTP_OPERATOR_CONFIG])
def test_valid_documents_have_no_problem(base: str, registry: SchemaRegistry) -> None:
    assert rendered(yaml.safe_load(base), registry) == []


def test_full_btp_operator_config_is_valid(registry: SchemaRegistry) -> None:
    body = patched(
        BTP_OPERATOR_CONFIG,
        """
metadata:
  labels: {team: x}
  annotations: {note: y}
spec:
  chart: {valuesFiles: [values.yaml], values: {manager: {replicas: 2}}}
  credentialsNamespace: sap-btp-operator
  enableLimitedCache: false
  images: {manager: europe-docker.pkg.dev/kyma/sap-btp-service-operator:0.6.0}
  credentials:
    sourceSecret: {name: sm, namespace: kyma-system}
    secretStoreRef: {kind: ClusterSecretStore, name: vault}
    refreshInterval: 1h30m
  certificates:
    mode: cert-manager
    issuerRef: {name: corp, kind: ClusterIssuer, group: cert-manager.io}
""",
    )
    assert rendered(body, registry) == []


@pytest.mark.parametrize(
    ("base", "patch", "expected"),
    [
        pytest.param(
            BTP_OPERATOR,
            "spec: {foo: 1, bar: 2}\nextra: 1",
            [
                f"{OP}: extra: unknown field",
                f"{OP}: spec.bar: unknown field",
                f"{OP}: spec.foo: unknown field",
            ],
            id="btpoperator-unknown-fields-each-at-its-path",
        ),
        pytest.param(
            BTP_OPERATOR,
            "metadata: {labelz: {a: b}}",
            [f"{OP}: metadata.labelz: unknown field"],
            id="btpoperator-unknown-metadata-field",
        ),
        pytest.param(
            BTP_OPERATOR,
            "status: {conditions: [{type: Ready, status: 'True', severity: high}]}",
            [f"{OP}: status.conditions[0].severity: unknown field"],
            id="btpoperator-unknown-field-in-list-item",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {chart: {version: 1.0.0}, images: {webhook: x}, clusterID: typo}",
            [
                f"{CFG}: spec.chart.version: unknown field",
                f"{CFG}: spec.clusterID: unknown field",
                f"{CFG}: spec.images.webhook: unknown field",
            ],
            id="config-unknown-fields-at-three-levels",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {clusterId: ~}",
            [f"{CFG}: spec.clusterId: required field is missing"],
            id="config-missing-cluster-id",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: ~",
            [f"{CFG}: spec: required field is missing"],
            id="config-missing-spec",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {chart: {path: ~}, credentials: {sourceSecret: {name: sm}}}",
            # A null chart path is an absent one: the bundled chart (not an error).
            [f"{CFG}: spec.credentials.sourceSecret.namespace: required field is missing"],
            id="config-missing-nested-required",
        ),
        pytest.param(
            BTP_OPERATOR,
            "metadata: {name: ~}",
            [
                "f.yaml: document 1 (BtpOperator kyma-system/): metadata.name: required field is missing",
            ],
            id="btpoperator-missing-name",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {enableLimitedCache: 'yes'}",
            [f"{CFG}: spec.enableLimitedCache: must be of type boolean, got string"],
            id="config-bool-as-string",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {chart: ../charts/x}",
            [f"{CFG}: spec.chart: must be of type object, got string"],
            id="config-chart-as-string",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {chart: {valuesFiles: [a.yaml, 3]}}",
            [f"{CFG}: spec.chart.valuesFiles[1]: must be of type string, got integer"],
            id="config-list-item-type",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "metadata: {labels: {tier: 1}, creationTimestamp: 5}",
            [
                f"{CFG}: metadata.creationTimestamp: must be of type string or null, got integer",
                f"{CFG}: metadata.labels.tier: must be of type string, got integer",
            ],
            id="metadata-types-including-union",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {certificates: {mode: acme}}",
            [
                f"{CFG}: spec.certificates.mode: must be one of 'cert-manager', 'gardener', 'self-signed', got 'acme'"
            ],
            id="config-certificate-mode-enum",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {credentials: {secretStoreRef: {kind: Vault, name: v}}}",
            [
                f"{CFG}: spec.credentials.secretStoreRef.kind: must be one of 'SecretStore', "
                "'ClusterSecretStore', got 'Vault'"
            ],
            id="config-store-kind-enum",
        ),
        pytest.param(
            BTP_OPERATOR,
            "status: {state: Broken}",
            [
                f"{OP}: status.state: must be one of 'Ready', 'Processing', 'Warning', 'Error', "
                "'Deleting', got 'Broken'"
            ],
            id="btpoperator-status-state-enum",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {credentials: {refreshInterval: 1 hour}}",
            [
                f"{CFG}: spec.credentials.refreshInterval: '1 hour' does not match "
                "'^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$'"
            ],
            id="config-pattern",
        ),
        pytest.param(
            BTP_OPERATOR_CONFIG,
            "spec: {clusterId: ''}",
            [f"{CFG}: spec.clusterId: '' should be non-empty"],
            id="config-min-length",
        ),
    ],
)
def test_problem_lines(base: str, patch: str, expected: list[str], registry: SchemaRegistry) -> None:
    assert rendered(patched(base, patch), registry) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            patched(BTP_OPERATOR, "apiVersion: operator.kyma-project.io/v1beta1\nspec: {unknown: 1}"),
            f"{OP}: apiVersion: unknown kind operator.kyma-project.io/v1beta1/BtpOperator "
            "(supported apiVersions of BtpOperator: operator.kyma-project.io/v1alpha1)",
            id="btpoperator-unsupported-version",
        ),
        pytest.param(
            patched(BTP_OPERATOR_CONFIG, "apiVersion: btp-gitops.io/v1"),
            f"{CFG}: apiVersion: unknown kind btp-gitops.io/v1/BtpOperatorConfig "
            "(supported apiVersions of BtpOperatorConfig: btp-gitops.io/v1alpha1)",
            id="config-unsupported-version",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}},
            "f.yaml: document 1 (ConfigMap ns/x): apiVersion: unknown kind v1/ConfigMap "
            "(btp-gitops does not read this kind)",
            id="unknown-kind",
        ),
        pytest.param(
            patched(BTP_OPERATOR, "kind: BtpOperators"),
            "f.yaml: document 1 (BtpOperators kyma-system/btpoperator): apiVersion: unknown kind "
            'operator.kyma-project.io/v1alpha1/BtpOperators (did you mean "BtpOperator"?)',
            id="misspelt-kind",
        ),
    ],
)
def test_unknown_kind_is_one_problem_listing_supported_versions(
    body: dict[str, Any], expected: str, registry: SchemaRegistry
) -> None:
    assert rendered(body, registry) == [expected]


SCHEMAS_DIR = default_schema_dir()


def test_registry_knows_every_kind_schemas_declares(registry: SchemaRegistry) -> None:
    declared = []
    for path in SCHEMAS_DIR.glob("*.json"):
        gvk = json.loads(path.read_text()).get("x-kubernetes-group-version-kind")
        if gvk:
            declared.append((f"{gvk['group']}/{gvk['version']}", gvk["kind"]))
    assert [(k.api_version, k.kind) for k in registry.kinds()] == sorted(declared)
    assert ("operator.kyma-project.io/v1alpha1", "BtpOperator") in declared
    assert registry.versions_of("BtpOperator") == ["operator.kyma-project.io/v1alpha1"]
    assert registry.versions_of("Nothing") == []


def test_validate_sources_reports_every_problem_of_every_document_sorted(registry: SchemaRegistry) -> None:
    documents = [
        source(
            patched(BTP_OPERATOR_CONFIG, "spec: {clusterId: ~, enableLimitedCache: 1, zeta: 1, alpha: 2}"),
            file="b.yaml",
            document=2,
        ),
        source(yaml.safe_load(BTP_OPERATOR), file="b.yaml", document=1),
        source(patched(BTP_OPERATOR, "spec: {x: 1}\nstatus: {state: Gone}"), file="a.yaml", document=3),
        source({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, file="a.yaml", document=1),
    ]
    with pytest.raises(SchemaViolation) as caught:
        validate_sources(documents, registry)
    error = caught.value
    assert error.exit_code == ExitCode.INPUT
    assert error.message == "invalid source documents (7 problems)"
    assert [p.render() for p in error.problems] == [
        "a.yaml: document 1 (Secret s): apiVersion: unknown kind v1/Secret (btp-gitops does not read this kind)",
        "a.yaml: document 3 (BtpOperator kyma-system/btpoperator): spec.x: unknown field",
        "a.yaml: document 3 (BtpOperator kyma-system/btpoperator): status.state: must be one of 'Ready', "
        "'Processing', 'Warning', 'Error', 'Deleting', got 'Gone'",
        "b.yaml: document 2 (BtpOperatorConfig kyma-system/config): spec.alpha: unknown field",
        "b.yaml: document 2 (BtpOperatorConfig kyma-system/config): spec.clusterId: required field is missing",
        "b.yaml: document 2 (BtpOperatorConfig kyma-system/config): spec.enableLimitedCache: must be of type "
        "boolean, got integer",
        "b.yaml: document 2 (BtpOperatorConfig kyma-system/config): spec.zeta: unknown field",
    ]
    assert error.lines()[0] == "invalid source documents (7 problems)"
    assert error.lines()[1] == "  " + error.problems[0].render()


def test_validate_sources_singular_message_and_silence_when_valid(registry: SchemaRegistry) -> None:
    valid = [source(yaml.safe_load(BTP_OPERATOR)), source(yaml.safe_load(BTP_OPERATOR_CONFIG), document=2)]
    validate_sources(valid, registry)  # raises SchemaViolation on any problem
    with pytest.raises(SchemaViolation) as caught:
        validate_sources([*valid, source(patched(BTP_OPERATOR, "spec: {a: 1}"), document=3)], registry)
    assert caught.value.message == "invalid source documents (1 problem)"
    assert [p.field_path for p in caught.value.problems] == ["spec.a"]
