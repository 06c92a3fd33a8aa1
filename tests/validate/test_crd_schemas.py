"""The CRD -> JSON Schema conversion itself (generator.manifests.crd_schemas), on exact outputs."""

from __future__ import annotations

from typing import Any

from btp_gitops.generator.manifests.crd_schemas import is_crd, root_schema, served_versions
from tests.validate.conftest import WIDGET_CRD

META = "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _spec_schema(spec: dict[str, Any]) -> dict[str, Any]:
    converted: dict[str, Any] = root_schema({"type": "object", "properties": {"spec": spec}}, META)
    return converted["properties"]["spec"]  # type: ignore[no-any-return]


def test_root_gets_identity_fields_and_object_meta() -> None:
    assert root_schema({"type": "object", "properties": {"metadata": {"type": "object"}}}, META) == {
        "type": "object",
        "properties": {
            "metadata": {"$ref": META},
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
        },
        "additionalProperties": False,
    }


def test_metadata_constraints_of_the_crd_narrow_object_meta() -> None:
    openapi = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}
        },
    }
    assert root_schema(openapi, META)["properties"]["metadata"] == {
        "$ref": META,
        "allOf": [{"properties": {"name": {"type": ["string", "null"], "maxLength": 20}}}],
    }


def test_fields_accept_null_list_items_only_when_nullable() -> None:
    assert _spec_schema(
        {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["a", "b"]},
                "plain": {"type": "array", "items": {"type": "string"}},
                "nullable": {"type": "array", "items": {"type": "string", "nullable": True}},
            },
        }
    ) == {
        "type": ["object", "null"],
        "properties": {
            "mode": {"type": ["string", "null"], "enum": ["a", "b", None]},
            "plain": {"type": ["array", "null"], "items": {"type": "string"}},
            "nullable": {"type": ["array", "null"], "items": {"type": ["string", "null"]}},
        },
        "additionalProperties": False,
    }


def test_int_or_string_bounds_and_sets() -> None:
    assert _spec_schema(
        {
            "type": "object",
            "properties": {
                "port": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            },
        }
    )["properties"] == {
        "port": {"type": ["integer", "string", "null"], "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "ratio": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1},
        "tags": {"type": ["array", "null"], "items": {"type": "string"}, "uniqueItems": True},
    }


def test_branches_of_junctors_do_not_close_objects() -> None:
    converted = _spec_schema(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"properties": {"a": {"minLength": 1}}, "required": ["a"]}, {"required": ["b"]}],
            "not": {"required": ["c"]},
        }
    )
    assert converted["anyOf"] == [
        {"properties": {"a": {"minLength": 1}}, "required": ["a"]},
        {"required": ["b"]},
    ]
    assert converted["not"] == {"required": ["c"]}
    assert converted["additionalProperties"] is False


def test_preserve_unknown_fields_and_maps_stay_open() -> None:
    converted = _spec_schema(
        {
            "type": "object",
            "properties": {
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"x": {}},
                },
                "map": {"type": "object", "additionalProperties": {"type": "string"}},
                "closed": {"type": "object"},
            },
        }
    )
    assert converted["properties"] == {
        "free": {"type": ["object", "null"], "properties": {"x": {}}},
        "map": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "null"]}},
        "closed": {"type": ["object", "null"], "additionalProperties": False},
    }


def test_embedded_resource() -> None:
    assert _spec_schema({"type": "object", "x-kubernetes-embedded-resource": True}) == {
        "type": ["object", "null"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": META},
        },
        "required": ["apiVersion", "kind"],
        "additionalProperties": False,
    }


def test_malformed_keywords_and_re2_only_patterns_are_left_out() -> None:
    """What Python's jsonschema cannot evaluate is dropped instead of crashing every object of the kind."""
    assert _spec_schema(
        {
            "type": "string",
            "enum": "not-a-list",
            "minLength": -1,
            "maxLength": "5",
            "required": [1],
            "pattern": r"^\pL+$",
            "x-kubernetes-validations": [{"rule": "self.size() > 1"}],
            "description": "dropped",
            "default": "x",
        }
    ) == {"type": ["string", "null"]}


def test_served_versions_skip_unserved_and_malformed_ones() -> None:
    assert is_crd(WIDGET_CRD)
    assert [(api_version, kind) for api_version, kind, _ in served_versions(WIDGET_CRD)] == [
        ("test.btp-gitops.io/v1", "Widget")
    ]
    broken = {
        "spec": {
            "group": "g.example.com",
            "names": {"kind": "K"},
            "versions": [{"served": True}, "x", {"name": "v1"}],
        }
    }
    assert [(api_version, kind, schema) for api_version, kind, schema in served_versions(broken)] == [
        ("g.example.com/v1", "K", {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    ]
    assert list(served_versions({"spec": {"group": "g", "names": None}})) == []
