"""The generated CRDs in a real kube-apiserver: accepted, and as strict as our JSON Schema validation.

Covered: every CRD generated from schemas/ is accepted and becomes Established; every bundled
example (examples/**, valid by our JSON Schema validation) is created, nothing pruned; for a table of documents (every example, each with one thing changed) the
API server and `generator.core.validation` give the same verdict: accepted by both or rejected by
both, unknown fields included (a dry-run create with strict field validation); defaults
from the schema are applied by the server; the status subresource takes status patches (checked
against the schema) and the main endpoint ignores status. A made-up kind that uses every
conversion rule (two versions) is structural, and both validators agree on it too.

Nothing is faked: the CRDs go over TLS to kube-apiserver + etcd started by tests/support/kubeapi.py,
validation is the real jsonschema validator over the checkout's schemas/.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.validation import SchemaRegistry, problems_in
from btp_gitops.generator.crds.generate import SchemaFile, build_crds
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.crds import generate_crd_files
from tests.conftest import EXAMPLES
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = pytest.mark.kube

FIELD_MANAGER = "btp-gitops-crd-tests"
Edit = Callable[[dict[str, Any]], None]


def _generated_crds() -> list[dict[str, Any]]:
    return [yaml.safe_load(text) for _, text in sorted(generate_crd_files().items())]


def _example_documents() -> list[tuple[str, dict[str, Any]]]:
    """(file name, document) of every example source of a kind we generate a CRD for."""
    kinds = {crd["spec"]["names"]["kind"] for crd in _generated_crds()}
    found = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for body in yaml.safe_load_all(path.read_text()):
            if isinstance(body, dict) and body.get("kind") in kinds:
                found.append((path.relative_to(EXAMPLES).as_posix(), body))
    return found


EXAMPLE_DOCUMENTS = _example_documents()


def _example(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(body for _, body in EXAMPLE_DOCUMENTS if body["kind"] == kind))


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        yield client


@pytest.fixture(scope="module")
def installed(api: k8s.ApiClient) -> dict[str, dict[str, Any]]:
    """The generated CRDs, installed and Established; by kind."""
    crds = _generated_crds()
    install_crds(api, crds)
    return {crd["spec"]["names"]["kind"]: crd for crd in crds}


@pytest.fixture(scope="module")
def registry() -> SchemaRegistry:
    return load_schema_registry()


def _resource(crd: dict[str, Any]) -> tuple[str, str, str]:
    """(group, storage version, plural) of a CRD."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v["storage"])
    return spec["group"], version, spec["names"]["plural"]


def _in_namespace(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    moved = copy.deepcopy(body)
    moved["metadata"]["namespace"] = namespace
    return moved


def _server_verdict(api: k8s.ApiClient, crd: dict[str, Any], body: dict[str, Any]) -> str | None:
    """None when the server would create `body` (dry run, unknown fields refused), else its message.

    A create rather than a server-side apply: apply answers a wrong type with a 500 ("failed to
    create typed patch object") instead of the validation error a client gets from kubectl create.
    """
    group, version = body["apiVersion"].split("/")
    try:
        k8s.CustomObjectsApi(api).create_namespaced_custom_object(
            group,
            version,
            body["metadata"]["namespace"],
            crd["spec"]["names"]["plural"],
            body=body,
            field_manager=FIELD_MANAGER,
            field_validation="Strict",
            dry_run="All",
        )
    except ApiException as error:
        assert error.status in {400, 422}, error.body
        return str(json.loads(error.body)["message"])
    return None


def _schema_problems(registry: SchemaRegistry, body: dict[str, Any]) -> list[Problem]:
    document = SourceDocument(file="case.yaml", document=1, body=body, directory=Path("."))
    return problems_in(document, registry)


def test_every_generated_crd_is_established(installed: dict[str, dict[str, Any]], api: k8s.ApiClient) -> None:
    ext = k8s.ApiextensionsV1Api(api)
    for crd in installed.values():
        stored = ext.read_custom_resource_definition(crd["metadata"]["name"])
        conditions = {c.type: c.status for c in stored.status.conditions}
        assert conditions["Established"] == "True"
        assert conditions["NamesAccepted"] == "True"
        assert conditions.get("NonStructuralSchema") is None
    assert sorted(installed) == sorted(kind.kind for kind in load_schema_registry().kinds())


@pytest.mark.parametrize(("file", "body"), EXAMPLE_DOCUMENTS, ids=[f for f, _ in EXAMPLE_DOCUMENTS])
def test_examples_are_created(
    file: str,
    body: dict[str, Any],
    installed: dict[str, dict[str, Any]],
    registry: SchemaRegistry,
    api: k8s.ApiClient,
    kube_namespace: str,
) -> None:
    assert _schema_problems(registry, body) == [], "examples must pass our own validation"
    crd = installed[body["kind"]]
    group, version, plural = _resource(crd)
    objects = k8s.CustomObjectsApi(api)
    if crd["spec"]["scope"] == "Cluster":
        # A cluster-wide name is shared by every test of the session: make it this test's own.
        unique = copy.deepcopy(body)
        unique["metadata"]["name"] = f"{body['metadata']['name']}-{kube_namespace}"[:253]
        created = objects.create_cluster_custom_object(group, version, plural, body=unique)
        objects.delete_cluster_custom_object(group, version, plural, unique["metadata"]["name"])
    else:
        created = objects.create_namespaced_custom_object(
            group, version, kube_namespace, plural, body=_in_namespace(body, kube_namespace)
        )
    assert created["metadata"]["uid"]
    assert _kept(body.get("spec"), created.get("spec")), "the server pruned fields of the example"


def _kept(sent: Any, stored: Any) -> bool:
    """Whether everything sent is stored (the server may add defaults, must not drop fields)."""
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(
            key in stored and _kept(v, stored[key]) for key, v in sent.items()
        )
    return bool(sent == stored)


def _set(path: str, value: Any) -> Edit:
    """An edit setting a dotted path (creating objects on the way)."""

    def edit(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            body = body.setdefault(key, {})
        body[last] = value

    return edit


def _drop(path: str) -> Edit:
    def edit(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            body = body[key]
        del body[last]

    return edit


# (id, kind, edit of the example, accepted): each must get the same verdict from both validators.
CASES: list[tuple[str, str, Edit, bool]] = [
    ("config-as-is", "BtpOperatorConfig", _set("metadata.labels", {"team": "a"}), True),
    (
        "config-every-field",
        "BtpOperatorConfig",
        _set(
            "spec",
            {
                "chart": {
                    "path": "c",
                    "valuesFiles": ["a.yaml"],
                    "values": {"manager": {"replicas": 2}, "x": [1]},
                },
                "clusterId": "id",
                "credentialsNamespace": "creds",
                "enableLimitedCache": False,
                "images": {"manager": "registry.example.com/m:v1"},
                "credentials": {
                    "sourceSecret": {"name": "s", "namespace": "n"},
                    "secretStoreRef": {"kind": "ClusterSecretStore", "name": "store"},
                    "refreshInterval": "1h30m",
                },
                "certificates": {
                    "mode": "cert-manager",
                    "issuerRef": {"name": "i", "kind": "Issuer", "group": "g"},
                },
            },
        ),
        True,
    ),
    ("config-wrong-mode", "BtpOperatorConfig", _set("spec.certificates.mode", "letsencrypt"), False),
    ("config-cluster-id-not-a-string", "BtpOperatorConfig", _set("spec.clusterId", 42), False),
    ("config-limited-cache-string", "BtpOperatorConfig", _set("spec.enableLimitedCache", "yes"), False),
    ("config-unknown-spec-field", "BtpOperatorConfig", _set("spec.colour", "blue"), False),
    ("config-unknown-nested-field", "BtpOperatorConfig", _set("spec.chart.version", "1.0"), False),
    ("config-missing-cluster-id", "BtpOperatorConfig", _drop("spec.clusterId"), False),
    ("config-missing-spec", "BtpOperatorConfig", _drop("spec"), False),
    ("config-empty-chart-path", "BtpOperatorConfig", _set("spec.chart.path", ""), False),
    (
        "config-bad-refresh-interval",
        "BtpOperatorConfig",
        _set("spec.credentials.refreshInterval", "1 day"),
        False,
    ),
    (
        "config-wrong-store-kind",
        "BtpOperatorConfig",
        _set("spec.credentials.secretStoreRef", {"kind": "Vault", "name": "v"}),
        False,
    ),
    ("config-values-file-not-string", "BtpOperatorConfig", _set("spec.chart.valuesFiles", [1]), False),
    (
        "config-issuer-without-name",
        "BtpOperatorConfig",
        _set("spec.certificates.issuerRef", {"kind": "Issuer"}),
        False,
    ),
    ("operator-as-is", "BtpOperator", _set("metadata.annotations", {"note": "x"}), True),
    ("operator-empty-spec", "BtpOperator", _set("spec", {}), True),
    ("operator-spec-field", "BtpOperator", _set("spec.replicas", 2), False),
    ("operator-unknown-top-level-field", "BtpOperator", _set("data", {"a": "b"}), False),
]


@pytest.mark.parametrize(("kind", "edit", "accepted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_api_server_and_schema_validation_agree(
    kind: str,
    edit: Edit,
    accepted: bool,
    installed: dict[str, dict[str, Any]],
    registry: SchemaRegistry,
    api: k8s.ApiClient,
    kube_namespace: str,
) -> None:
    body = _in_namespace(_example(kind), kube_namespace)
    edit(body)
    schema_problems = _schema_problems(registry, body)
    server_rejection = _server_verdict(api, installed[kind], body)
    assert (not schema_problems) is accepted, [p.render() for p in schema_problems]
    assert (server_rejection is None) is accepted, server_rejection
    for problem in schema_problems:  # and both blame the same field
        assert f"{problem.field_path}" in f"{server_rejection}", (problem.render(), server_rejection)


def test_server_applies_schema_defaults(
    installed: dict[str, dict[str, Any]], api: k8s.ApiClient, kube_namespace: str
) -> None:
    body = _in_namespace(_example("BtpOperatorConfig"), kube_namespace)
    body["spec"] = {"chart": {"path": "c"}, "clusterId": "id", "credentials": {}, "certificates": {}}
    group, version, plural = _resource(installed["BtpOperatorConfig"])
    created = k8s.CustomObjectsApi(api).create_namespaced_custom_object(
        group, version, kube_namespace, plural, body=body
    )
    assert created["spec"] == {
        "chart": {"path": "c"},
        "clusterId": "id",
        "credentialsNamespace": "kyma-system",
        "enableLimitedCache": True,
        "credentials": {"refreshInterval": "1h"},
        "certificates": {"mode": "cert-manager"},
    }


def test_status_subresource(
    installed: dict[str, dict[str, Any]], api: k8s.ApiClient, kube_namespace: str
) -> None:
    objects = k8s.CustomObjectsApi(api)
    group, version, plural = _resource(installed["BtpOperator"])
    body = _in_namespace(_example("BtpOperator"), kube_namespace)
    name = body["metadata"]["name"]
    objects.create_namespaced_custom_object(group, version, kube_namespace, plural, body=body)
    status = {
        "state": "Ready",
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "ReconcileSucceeded", "observedGeneration": 1}
        ],
    }

    def patch(send: Callable[..., Any], patch_body: dict[str, Any]) -> Any:
        return send(
            group,
            version,
            kube_namespace,
            plural,
            name,
            body=patch_body,
            _content_type="application/merge-patch+json",
        )

    patched = patch(objects.patch_namespaced_custom_object_status, {"status": status})
    assert patched["status"] == status
    # With the subresource, the main endpoint ignores status (the controller owns it).
    ignored = patch(objects.patch_namespaced_custom_object, {"status": {"state": "Error"}})
    assert ignored["status"]["state"] == "Ready"
    with pytest.raises(ApiException) as invalid:
        patch(objects.patch_namespaced_custom_object_status, {"status": {"state": "Sleeping"}})
    assert invalid.value.status == 422
    assert "status.state" in json.loads(invalid.value.body)["message"]


# A kind that uses every conversion rule, to prove the server takes each rule's output as structural.
RULES_GROUP = "crd-rules.btp-gitops.test"
RULES_COMMON = {
    "$id": "https://btp-gitops.test/common.json",
    "$defs": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
}
RULES_SPEC = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "labels": {"$ref": "common.json#/$defs/labels", "description": "A map."},
        "size": {"type": "integer", "exclusiveMinimum": 0},
        "ratio": {"type": "number", "maximum": 1},
        "port": {"type": ["integer", "string"]},
        "note": {"type": ["string", "null"]},
        "mode": {"const": "fast", "default": "fast"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "values": {"type": "object", "description": "Free-form."},
        "anything": {"type": "array"},
        "open": {"type": "object", "properties": {"known": {"type": "boolean"}}},
    },
    "additionalProperties": False,
}


def _rules_schema(version: str, storage: bool) -> dict[str, Any]:
    return {
        "$id": f"https://btp-gitops.test/gadget.{version}.json",
        "x-kubernetes-group-version-kind": {"group": RULES_GROUP, "version": version, "kind": "Gadget"},
        "x-kubernetes-crd": {
            "plural": "gadgets",
            "singular": "gadget",
            "scope": "Namespaced",
            "storage": storage,
        },
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": f"{RULES_GROUP}/{version}"},
            "kind": {"const": "Gadget"},
            "metadata": {"type": "object"},
            "spec": RULES_SPEC,
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string"}},
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    }


RULES_SCHEMAS = [RULES_COMMON, _rules_schema("v1", True), _rules_schema("v1beta1", False)]


@pytest.fixture(scope="module")
def gadgets(api: k8s.ApiClient) -> dict[str, Any]:
    files = [SchemaFile(f"s{index}.json", f"s{index}.json", doc) for index, doc in enumerate(RULES_SCHEMAS)]
    (crd,) = build_crds(files)
    install_crds(api, [crd.body])
    return crd.body


def test_every_rule_gives_a_structural_schema(gadgets: dict[str, Any], api: k8s.ApiClient) -> None:
    stored = k8s.ApiextensionsV1Api(api).read_custom_resource_definition(gadgets["metadata"]["name"])
    conditions = {c.type: c.status for c in stored.status.conditions}
    assert conditions["Established"] == "True"
    assert conditions.get("NonStructuralSchema") is None
    assert [(v.name, v.storage) for v in stored.spec.versions] == [("v1", True), ("v1beta1", False)]


GADGET_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("minimal", {"size": 1}, True),
    (
        "every-field",
        {
            "labels": {"a": "b"},
            "size": 3,
            "ratio": 0.5,
            "port": "http",
            "note": None,
            "mode": "fast",
            "tags": ["x", "y"],
            "values": {"deep": {"list": [1, {"a": None}]}},
            "anything": [1, "two", {"three": 3}],
            "open": {"known": True, "extra": {"kept": 1}},
        },
        True,
    ),
    ("port-number", {"size": 1, "port": 8080}, True),
    ("size-zero", {"size": 0}, False),
    ("ratio-too-big", {"size": 1, "ratio": 1.5}, False),
    ("port-float", {"size": 1, "port": 1.5}, False),
    ("mode-other", {"size": 1, "mode": "slow"}, False),
    ("tags-duplicate", {"size": 1, "tags": ["x", "x"]}, False),
    ("label-not-string", {"size": 1, "labels": {"a": 1}}, False),
    ("note-number", {"size": 1, "note": 1}, False),
    ("unknown-field", {"size": 1, "colour": "red"}, False),
    ("missing-size", {}, False),
]


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
@pytest.mark.parametrize(
    ("spec", "accepted"), [c[1:] for c in GADGET_CASES], ids=[c[0] for c in GADGET_CASES]
)
def test_rules_keep_server_and_schema_validation_in_agreement(
    version: str,
    spec: dict[str, Any],
    accepted: bool,
    gadgets: dict[str, Any],
    api: k8s.ApiClient,
    kube_namespace: str,
) -> None:
    body = {
        "apiVersion": f"{RULES_GROUP}/{version}",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": kube_namespace},
        "spec": spec,
    }
    schema_problems = _schema_problems(SchemaRegistry(RULES_SCHEMAS), body)
    server_rejection = _server_verdict(api, gadgets, body)
    assert (not schema_problems) is accepted, [p.render() for p in schema_problems]
    assert (server_rejection is None) is accepted, server_rejection
