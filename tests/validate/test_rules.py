"""The rules of offline validation, one table row per rule family, called on the core directly.

Built-in kinds run against the strict Kubernetes 1.37 schemas bundled by kubernetes-validate;
custom resources against a test CRD (tests/validate/data/widgets-crd.yaml, one field per
conversion rule) and against the CRDs our chart installs. Each row states the exact
(field path, message) pairs expected; a row with none expects the document to be valid.
(tests/validate/test_api_server_agrees.py sends the same rows to a real kube-apiserver.)

The bundled built-in schemas carry no enums besides apiVersion and kind (Kubernetes does not
publish them), so the enum family is exercised on custom resources.
"""

from __future__ import annotations

from typing import Any

import pytest

from btp_gitops.generator.io.kube_schemas import BundledKubernetesSchemas
from btp_gitops.generator.manifests.validation import (
    ManifestDocument,
    ManifestSchemas,
    crds_among,
    validate_manifests,
)
from tests.support.crds import load_crds, our_crd_files
from tests.validate.conftest import WIDGET_CRD, Found, check, deployment, widget


def _deployment(edit: Any) -> dict[str, Any]:
    body = deployment()
    edit(body)
    return body


def _container(body: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = body["spec"]["template"]["spec"]["containers"][0]
    return container


BUILTIN_ROWS: list[tuple[str, dict[str, Any], Found]] = [
    ("valid-deployment", deployment(), []),
    (
        "wrong-type",
        _deployment(lambda d: d["spec"].update(replicas="two")),
        [("spec.replicas", "must be of type integer, got string")],
    ),
    (
        "unknown-field",
        _deployment(lambda d: _container(d).update(imagePullPolicyy="Always")),
        [
            (
                "spec.template.spec.containers[0].imagePullPolicyy",
                'unknown field (did you mean "imagePullPolicy"?)',
            )
        ],
    ),
    (
        "missing-required-field",
        _deployment(lambda d: d["spec"].pop("selector")),
        [("spec.selector", "required field is missing")],
    ),
    (
        "missing-required-in-list-item",
        _deployment(lambda d: _container(d).pop("name")),
        [("spec.template.spec.containers[0].name", "required field is missing")],
    ),
    (
        "int-or-string",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": True}]},
        },
        [("spec.ports[1].targetPort", "must be of type string or integer, got boolean")],
    ),
    (
        "float-is-not-an-int32",  # the API server cannot decode 2.0 into an int32
        _deployment(lambda d: d["spec"].update(replicas=2.0)),
        [("spec.replicas", "must be of type integer, got number")],
    ),
    (
        "int32-overflow",
        _deployment(lambda d: d["spec"].update(replicas=3_000_000_000)),
        [("spec.replicas", "must be a valid int32")],
    ),
    (
        "null-is-allowed",
        _deployment(lambda d: d["spec"].update(replicas=None)),
        [],
    ),
    (
        "secret-data-not-base64",  # and the value is not quoted back
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"token": "s3cr3t value!"}},
        [("data.token", "must be base64-encoded")],
    ),
    (
        "label-not-a-string",
        _deployment(lambda d: d["metadata"].update(labels={"replicas": 3})),
        [("metadata.labels.replicas", "must be of type string, got integer")],
    ),
    (
        "unknown-metadata-field",
        _deployment(lambda d: d["metadata"].update(colour="blue")),
        [("metadata.colour", "unknown field")],
    ),
    (
        "no-name",
        _deployment(lambda d: d["metadata"].pop("name")),
        [("metadata.name", "required field is missing")],
    ),
    (
        "generate-name-is-a-name",
        _deployment(lambda d: d["metadata"].update(name=None, generateName="web-")),
        [],
    ),
]

WIDGET_ROWS: list[tuple[str, dict[str, Any], Found]] = [
    ("valid-widget", widget(mode="fast", name="abc", ratio=0.5, tags=["a", "b"]), []),
    ("wrong-type", widget(size="three"), [("spec.size", "must be of type integer, got string")]),
    ("unknown-field", widget(colour="blue"), [("spec.colour", "unknown field")]),
    ("unknown-root-field", {**widget(), "extra": 1}, [("extra", "unknown field")]),
    ("missing-required-field", {**widget(), "spec": {}}, [("spec.size", "required field is missing")]),
    ("enum", widget(mode="slow"), [("spec.mode", "must be one of 'fast', 'safe', got 'slow'")]),
    ("pattern", widget(name="ABC"), [("spec.name", "must match the pattern '^[a-z]+$'")]),
    ("exclusive-minimum", widget(ratio=0), [("spec.ratio", "must be > 0")]),
    ("int32-format", widget(size=3_000_000_000), [("spec.size", "must be a valid int32")]),
    ("byte-format", widget(blob="not base64!"), [("spec.blob", "must be base64-encoded")]),
    ("date-time-format", widget(when="yesterday"), [("spec.when", "must be a valid date-time")]),
    ("date-time", widget(when="2026-01-02T03:04:05Z"), []),
    ("float-with-integral-value", widget(size=3.0), []),  # custom resources take 3.0 as 3
    ("list-set-duplicate", widget(tags=["a", "a"]), [("spec.tags", "must not contain duplicate items")]),
    ("int-or-string-string", widget(port="http"), []),
    ("int-or-string-integer", widget(port=8080), []),
    (
        "int-or-string-other",
        widget(port=True),
        [("spec.port", "must be of type integer or string, got boolean")],
    ),
    ("preserve-unknown-fields", widget(free={"anything": {"nested": [1, "two"]}}), []),
    ("object-without-properties-prunes", widget(bag={"x": 1}), [("spec.bag.x", "unknown field")]),
    (
        "map-values",
        widget(labels={"a": "b", "c": 1}),
        [("spec.labels.c", "must be of type string, got integer")],
    ),
    ("null-field-is-pruned", widget(mode=None, bag=None), []),
    ("nullable-field", widget(note=None), []),
    ("null-list-item", widget(tags=["a", None]), [("spec.tags[1]", "must be of type string, got null")]),
    ("nullable-list-item", widget(aliases=["a", None]), []),
    (
        "embedded-resource",
        widget(
            template={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
        ),
        [],
    ),
    (
        "embedded-resource-without-kind",
        widget(template={"metadata": {"name": "c"}}),
        [
            ("spec.template.apiVersion", "required field is missing"),
            ("spec.template.kind", "required field is missing"),
        ],
    ),
    (
        "embedded-resource-metadata-is-object-meta",
        widget(
            template={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": 1}}}
        ),
        [("spec.template.metadata.labels.a", "must be of type string, got integer")],
    ),
    (
        "embedded-resource-closed",
        widget(child={"apiVersion": "v1", "kind": "ConfigMap", "data": {}}),
        [("spec.child.data", "unknown field")],
    ),
    ("one-of", widget(target={"host": "h"}), []),
    ("one-of-none", widget(target={}), [("spec.target", "matches none of the allowed schemas")]),
    (
        "one-of-several",
        widget(target={"host": "h", "ip": "1.2.3.4"}),
        [("spec.target", "matches more than one of the allowed schemas")],
    ),
    (
        "metadata-is-object-meta",
        {**widget(), "metadata": {"name": "w", "labels": {"a": 1}, "colour": "x"}},
        [("metadata.colour", "unknown field"), ("metadata.labels.a", "must be of type string, got integer")],
    ),
    (
        "no-name",
        {**widget(), "metadata": {"namespace": "default"}},
        [("metadata.name", "required field is missing")],
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), [row[1:] for row in BUILTIN_ROWS], ids=[row[0] for row in BUILTIN_ROWS]
)
def test_builtin_kinds(
    builtin_schemas: BundledKubernetesSchemas, body: dict[str, Any], expected: Found
) -> None:
    assert check(builtin_schemas, body) == (expected, [])


@pytest.mark.parametrize(
    ("body", "expected"), [row[1:] for row in WIDGET_ROWS], ids=[row[0] for row in WIDGET_ROWS]
)
def test_custom_resources(
    builtin_schemas: BundledKubernetesSchemas, body: dict[str, Any], expected: Found
) -> None:
    assert check(builtin_schemas, body) == (expected, [])


def _config(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "btp-gitops.io/v1alpha1",
        "kind": "BtpOperatorConfig",
        "metadata": {"name": "btp-operator", "namespace": "kyma-system"},
        "spec": {"chart": {"path": "chart"}, "clusterId": "c1", **spec},
    }


def test_our_crds(builtin_schemas: BundledKubernetesSchemas) -> None:
    """BtpOperatorConfig against the CRD charts/btp-gitops installs, one row per rule family."""
    crds = load_crds(our_crd_files())
    config_crd = next(crd for crd in crds if crd["spec"]["names"]["kind"] == "BtpOperatorConfig")
    spec_schema = config_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    modes = ", ".join(
        repr(mode) for mode in spec_schema["properties"]["certificates"]["properties"]["mode"]["enum"]
    )
    rows: list[tuple[dict[str, Any], Found]] = [
        (_config(certificates={"mode": "cert-manager"}), []),
        (
            _config(certificates={"mode": "vault"}),
            [("spec.certificates.mode", f"must be one of {modes}, got 'vault'")],
        ),
        (_config(clusterId=7), [("spec.clusterId", "must be of type string, got integer")]),
        (_config(colour="blue"), [("spec.colour", "unknown field")]),
        (_config(chart={}), []),  # no path: the chart shipped with btp-gitops
        (_config(chart={"path": 3}), [("spec.chart.path", "must be of type string, got integer")]),
    ]
    assert [check(builtin_schemas, body, crds)[0] for body, _ in rows] == [expected for _, expected in rows]


def test_missing_schema_is_an_error_or_a_warning(builtin_schemas: BundledKubernetesSchemas) -> None:
    certificate = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "c"},
        "spec": {},
    }
    message = (
        "no schema for cert-manager.io/v1 Certificate in Kubernetes 1.37; "
        "pass --crds with its CRD or --ignore-missing-schemas"
    )
    assert check(builtin_schemas, certificate) == ([(None, message)], [])
    schemas = ManifestSchemas(builtin_schemas)
    report = validate_manifests(
        [ManifestDocument("c.yaml", 2, certificate)], schemas, ignore_missing_schemas=True
    )
    assert (report.valid, report.objects, [w.render() for w in report.warnings]) == (
        True,
        1,
        [
            "c.yaml: document 2 (Certificate c): no schema for cert-manager.io/v1 Certificate in "
            "Kubernetes 1.37; not validated (--ignore-missing-schemas)"
        ],
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "i"}},
            "no schema for extensions/v1beta1 Ingress in Kubernetes 1.37 (known apiVersions of Ingress: "
            "networking.k8s.io/v1); pass --crds with its CRD or --ignore-missing-schemas",
        ),
        (
            # A group whose first label is that of a built-in group must not borrow its schema.
            {"apiVersion": "apps.example.com/v1", "kind": "Deployment", "metadata": {"name": "d"}},
            "no schema for apps.example.com/v1 Deployment in Kubernetes 1.37 (known apiVersions of Deployment: "
            "apps/v1); pass --crds with its CRD or --ignore-missing-schemas",
        ),
        (
            {"apiVersion": "test.btp-gitops.io/v0", "kind": "Widget", "metadata": {"name": "w"}},
            "no schema for test.btp-gitops.io/v0 Widget in Kubernetes 1.37 (known apiVersions of Widget: "
            "test.btp-gitops.io/v1); pass --crds with its CRD or --ignore-missing-schemas",
        ),
        (
            {"apiVersion": "v1", "kind": "Affinity", "metadata": {"name": "a"}},  # a type, not a kind
            "no schema for v1 Affinity in Kubernetes 1.37; pass --crds with its CRD or --ignore-missing-schemas",
        ),
    ],
    ids=["removed-api-version", "look-alike-group", "unserved-crd-version", "not-a-kind"],
)
def test_no_schema_hints(
    builtin_schemas: BundledKubernetesSchemas, body: dict[str, Any], message: str
) -> None:
    assert check(builtin_schemas, body) == ([(None, message)], [])


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (["a", "list"], [(None, "expected a Kubernetes object (a mapping), got array")]),
        ("text", [(None, "expected a Kubernetes object (a mapping), got string")]),
        ({"kind": "ConfigMap", "metadata": {"name": "c"}}, [("apiVersion", "required field is missing")]),
        ({"apiVersion": "v1", "kind": 5}, [("kind", "must be of type string, got integer")]),
    ],
    ids=["list", "scalar", "no-api-version", "kind-not-a-string"],
)
def test_documents_that_are_not_objects(
    builtin_schemas: BundledKubernetesSchemas, body: Any, expected: Found
) -> None:
    assert check(builtin_schemas, body) == (expected, [])


def test_crds_among_the_documents_are_used_and_come_first(builtin_schemas: BundledKubernetesSchemas) -> None:
    """A CRD in the stream defines its kind for the stream, ahead of a background CRD of the same kind."""
    open_crd = {
        **WIDGET_CRD,
        "spec": {
            **WIDGET_CRD["spec"],
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    documents = [
        ManifestDocument("s.yaml", 1, open_crd),
        ManifestDocument("s.yaml", 2, widget(colour="blue")),
    ]
    with_stream_crd = ManifestSchemas(builtin_schemas, [*crds_among(documents), WIDGET_CRD])
    assert validate_manifests(documents, with_stream_crd).problems == []
    background_only = ManifestSchemas(builtin_schemas, [WIDGET_CRD])
    assert [p.render() for p in validate_manifests(documents[1:], background_only).problems] == [
        "s.yaml: document 2 (Widget default/w): spec.colour: unknown field"
    ]


def test_every_problem_of_a_document_is_reported_in_field_order(
    builtin_schemas: BundledKubernetesSchemas,
) -> None:
    body = widget(size="three", mode="slow", colour="blue")
    assert check(builtin_schemas, body)[0] == [
        ("spec.colour", "unknown field"),
        ("spec.mode", "must be one of 'fast', 'safe', got 'slow'"),
        ("spec.size", "must be of type integer, got string"),
    ]
