"""CustomResourceDefinitions as JSON Schemas: what the API server would accept for a custom resource.

A CRD version carries an OpenAPI v3 *structural* schema with Kubernetes extensions. We convert it
to JSON Schema draft 2020-12 so that custom resources can be checked offline with the same
validator as the built-in kinds:

- `x-kubernetes-int-or-string` -> `type: [integer, string]`.
- Null: a field set to null is accepted (the API server prunes it before validating, or keeps it
  when `nullable: true`); a null list item is refused unless `nullable: true`.
- `exclusiveMinimum: true` (OpenAPI 3.0, a flag) -> `exclusiveMinimum: <minimum>` (a number).
- Objects are closed: where the schema names properties (or says `type: object` and nothing
  more), any other field is an error. The API server's structural pruning would drop such a
  field silently; in a GitOps repo that is almost always a typo the author wants to hear about.
  `x-kubernetes-preserve-unknown-fields: true` and `additionalProperties` keep a node open.
- `x-kubernetes-embedded-resource: true` -> the node is an object with `apiVersion`, `kind` and
  `metadata` (ObjectMeta) of its own.
- The root's `metadata` is validated as the Kubernetes ObjectMeta (`object_meta_ref`), as the
  API server does whatever the CRD says about it.
- `x-kubernetes-list-type: set` -> `uniqueItems`.
- Formats are kept; the validator decides which it checks. CEL rules (`x-kubernetes-validations`),
  defaults and descriptions are dropped: they cannot fail offline or do not constrain.

Everything here is pure: CRDs come in as parsed mappings, schemas go out as plain dicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# Keywords whose meaning is the same in OpenAPI 3.0 and JSON Schema 2020-12, with the shape their
# value must have. A malformed value (the API server would have refused the CRD) is left out:
# the validator would otherwise crash on it, or on every object of the kind.
_SAME_MEANING: dict[str, Callable[[object], bool]] = {
    "enum": lambda value: isinstance(value, list),
    "format": lambda value: isinstance(value, str),
    "maximum": _is_number,
    "minimum": _is_number,
    "multipleOf": lambda value: isinstance(value, int | float) and not isinstance(value, bool) and value > 0,
    "maxLength": _is_count,
    "minLength": _is_count,
    "maxItems": _is_count,
    "minItems": _is_count,
    "maxProperties": _is_count,
    "minProperties": _is_count,
    "uniqueItems": lambda value: isinstance(value, bool),
    "required": lambda value: isinstance(value, list) and all(isinstance(name, str) for name in value),
}
_JUNCTORS = ("allOf", "anyOf", "oneOf")
_ANYTHING: Mapping[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def is_crd(body: object) -> bool:
    return (
        isinstance(body, Mapping)
        and body.get("apiVersion") == CRD_API_VERSION
        and body.get("kind") == CRD_KIND
    )


def served_versions(crd: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(apiVersion, kind, openAPIV3Schema) of every served version of a CRD; malformed parts are skipped.

    A CRD that is itself invalid is reported when it is validated as a CustomResourceDefinition;
    here it just contributes what can be read from it.
    """
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return
    group, names = spec.get("group"), spec.get("names")
    kind = names.get("kind") if isinstance(names, Mapping) else None
    if not isinstance(group, str) or not isinstance(kind, str):
        return
    for version in spec.get("versions") or []:
        if not isinstance(version, Mapping) or not isinstance(version.get("name"), str):
            continue
        if version.get("served") is False:
            continue  # the API server answers "no matches for kind" for this version
        schema = version.get("schema")
        openapi = schema.get("openAPIV3Schema") if isinstance(schema, Mapping) else None
        # apiextensions.k8s.io/v1 requires a schema; without one, nothing can be said about fields.
        yield f"{group}/{version['name']}", kind, openapi if isinstance(openapi, Mapping) else _ANYTHING


def root_schema(openapi: Mapping[str, Any], object_meta_ref: str) -> dict[str, Any]:
    """The schema of a whole custom resource: the CRD's root plus what every object has."""
    converter = _Converter(object_meta_ref)
    schema = converter.convert(openapi)
    properties = schema.setdefault("properties", {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    declared = openapi.get("properties")
    declared_meta = declared.get("metadata") if isinstance(declared, Mapping) else None
    properties["metadata"] = converter.object_meta(declared_meta)
    if schema.get("type") is None:
        schema["type"] = "object"
    return schema


class _Converter:
    """OpenAPI v3 structural schema nodes -> JSON Schema 2020-12 nodes."""

    def __init__(self, object_meta_ref: str) -> None:
        self.object_meta_ref = object_meta_ref

    def convert(self, node: Mapping[str, Any], *, closed: bool = True, field: bool = False) -> dict[str, Any]:
        """One node.

        `closed` is False inside allOf/anyOf/oneOf/not: in a structural schema those branches only
        add value checks to fields the node itself declares, so they must not reject other fields.
        `field` is True for the value of an object's field: the API server prunes a null there
        before validating (unless `nullable` keeps it), so null is accepted; a null list item is
        refused unless `nullable`.
        """
        out: dict[str, Any] = {}
        accepts_null = field or node.get("nullable") is True
        _copy_value_checks(node, out, accepts_null)
        _convert_type(node, out, accepts_null)
        _convert_bounds(node, out)
        self._convert_children(node, out, closed)
        if node.get("x-kubernetes-embedded-resource") is True:
            self._embed_resource(out)
        if closed and _prunes_unknown_fields(node, out):
            out["additionalProperties"] = False
        if node.get("x-kubernetes-list-type") == "set":
            out["uniqueItems"] = True
        return out

    def object_meta(self, declared: object) -> dict[str, Any]:
        """ObjectMeta, narrowed by what a CRD declares (it may only constrain name and generateName)."""
        meta: dict[str, Any] = {"$ref": self.object_meta_ref}
        if isinstance(declared, Mapping):
            narrowed = self.convert(declared, closed=False)
            narrowed.pop("type", None)  # ObjectMeta says what type metadata is
            if narrowed:
                meta["allOf"] = [narrowed]
        return meta

    def _convert_children(self, node: Mapping[str, Any], out: dict[str, Any], closed: bool) -> None:
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            out["properties"] = {
                str(name): self.convert(child, closed=closed, field=True)
                for name, child in properties.items()
                if isinstance(child, Mapping)
            }
        additional = node.get("additionalProperties")
        if isinstance(additional, bool):
            out["additionalProperties"] = additional
        elif isinstance(additional, Mapping):
            out["additionalProperties"] = self.convert(additional, closed=closed, field=True)
        items = node.get("items")
        if isinstance(items, Mapping):
            out["items"] = self.convert(items, closed=closed)
        for junctor in _JUNCTORS:
            branches = node.get(junctor)
            if isinstance(branches, list):
                out[junctor] = [
                    self.convert(branch, closed=False) for branch in branches if isinstance(branch, Mapping)
                ]
        negated = node.get("not")
        if isinstance(negated, Mapping):
            out["not"] = self.convert(negated, closed=False)

    def _embed_resource(self, out: dict[str, Any]) -> None:
        properties = out.setdefault("properties", {})
        properties.setdefault("apiVersion", {"type": "string"})
        properties.setdefault("kind", {"type": "string"})
        properties["metadata"] = {"$ref": self.object_meta_ref}
        out["required"] = sorted({*out.get("required", []), "apiVersion", "kind"})
        if "type" not in out:
            out["type"] = "object"


def _copy_value_checks(node: Mapping[str, Any], out: dict[str, Any], accepts_null: bool) -> None:
    for keyword, well_formed in _SAME_MEANING.items():
        if keyword in node and well_formed(node[keyword]):
            out[keyword] = node[keyword]
    pattern = node.get("pattern")
    if isinstance(pattern, str) and _is_python_regex(pattern):
        # The API server uses Go's RE2. The few RE2 patterns Python cannot compile (\pL classes)
        # are left unchecked rather than failing every object of the kind.
        out["pattern"] = pattern
    if accepts_null and isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]


def _is_python_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _convert_type(node: Mapping[str, Any], out: dict[str, Any], accepts_null: bool) -> None:
    types: list[str] = []
    if node.get("x-kubernetes-int-or-string") is True:
        types = ["integer", "string"]
    elif isinstance(node.get("type"), str):
        types = [node["type"]]
    if not types:
        return
    if accepts_null:
        types.append("null")
    out["type"] = types[0] if len(types) == 1 else types


def _convert_bounds(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    # OpenAPI 3.0 makes a bound exclusive with a boolean beside it; JSON Schema 2020-12 wants the
    # exclusive bound as the keyword's value instead.
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if node.get(flag) is True and bound in out:
            out[flag] = out.pop(bound)


def _prunes_unknown_fields(node: Mapping[str, Any], out: Mapping[str, Any]) -> bool:
    """Whether the API server would drop (and strict field validation refuse) undeclared fields."""
    if node.get("x-kubernetes-preserve-unknown-fields") is True or "additionalProperties" in out:
        return False
    return "properties" in out or node.get("type") == "object"


# --- the third-party schemas shipped with btp-gitops ---------------------------------------------
#
# `scripts/generate-crd-schemas.py` writes one JSON document per custom resource kind that
# btp-gitops emits (cert-manager Certificates, Istio VirtualServices, ...), taken from the pinned
# CRDs, so that `btp-gitops validate` knows those kinds offline without `--crds`:
#
#     {"group": "networking.istio.io", "kind": "VirtualService", "plural": "virtualservices",
#      "scope": "Namespaced", "source": "<module>@<version>/<file>",
#      "versions": [{"name": "v1", "schema": 0, "storage": true}, {"name": "v1beta1", "schema": 0}],
#      "schemas": [<openAPIV3Schema>, ...]}
#
# Every served version is listed; versions whose schemas are identical share one entry of
# `schemas`. Schema nodes lose what offline validation never reads (DOCUMENTATION_KEYWORDS):
# descriptions are most of a CRD's bytes. Everything else, values included, is kept as it is.

SHIPPED_FORMAT = 1
# Keywords of a schema node that only document it, or that `root_schema` does not evaluate
# (CEL rules): left out of the shipped schemas.
DOCUMENTATION_KEYWORDS = frozenset(
    {"description", "title", "example", "externalDocs", "x-kubernetes-validations"}
)
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")
_SCHEMA_VALUES = ("items", "additionalProperties", "additionalItems", "not")


class ShippedSchemaError(ValueError):
    """A shipped schema document does not have the shape `crd_from_shipped` reads."""


def compact_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """`node` without DOCUMENTATION_KEYWORDS, in it and in every schema below it.

    Only schema positions are walked (`properties` values, `items`, `allOf` branches, ...): a
    field that happens to be called `description` stays, and so do `enum` and `default` values.
    """
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DOCUMENTATION_KEYWORDS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {
                name: compact_schema(child) if isinstance(child, Mapping) else child
                for name, child in value.items()
            }
        elif key in _SCHEMA_VALUES and isinstance(value, Mapping):
            out[key] = compact_schema(value)
        elif key in (*_JUNCTORS, "items") and isinstance(value, list):
            out[key] = [compact_schema(branch) if isinstance(branch, Mapping) else branch for branch in value]
        else:
            out[key] = value
    return out


def shipped_schema_document(crd: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The shipped document of one CRD: its served versions and their compacted schemas."""
    spec = crd["spec"]
    schemas: list[dict[str, Any]] = []
    versions: list[dict[str, Any]] = []
    for version in spec["versions"]:
        if version.get("served") is False:
            continue
        openapi = (version.get("schema") or {}).get("openAPIV3Schema") or _ANYTHING
        compacted = compact_schema(openapi)
        if compacted not in schemas:
            schemas.append(compacted)
        entry: dict[str, Any] = {"name": version["name"], "schema": schemas.index(compacted)}
        if version.get("storage") is True:
            entry["storage"] = True
        versions.append(entry)
    return {
        "format": SHIPPED_FORMAT,
        "group": spec["group"],
        "kind": spec["names"]["kind"],
        "plural": spec["names"]["plural"],
        "scope": spec.get("scope", "Namespaced"),
        "source": source,
        "versions": versions,
        "schemas": schemas,
    }


def crd_from_shipped(document: object) -> dict[str, Any]:
    """The CustomResourceDefinition a shipped document stands for, as `served_versions` reads it.

    Raises ShippedSchemaError, naming what is wrong, for a document of another shape.
    """
    if not isinstance(document, Mapping) or document.get("format") != SHIPPED_FORMAT:
        raise ShippedSchemaError(f"not a shipped schema document of format {SHIPPED_FORMAT}")
    names = {key: document.get(key) for key in ("group", "kind", "plural", "scope")}
    wrong = sorted(key for key, value in names.items() if not isinstance(value, str) or not value)
    schemas, versions = document.get("schemas"), document.get("versions")
    if not isinstance(schemas, list) or not all(isinstance(schema, Mapping) for schema in schemas):
        wrong.append("schemas")
    elif not isinstance(versions, list) or not all(_is_shipped_version(v, len(schemas)) for v in versions):
        wrong.append("versions")
    # Both are lists whenever nothing is wrong; the isinstance checks narrow the types for mypy.
    if wrong or not isinstance(schemas, list) or not isinstance(versions, list):
        raise ShippedSchemaError(f"missing or malformed: {', '.join(wrong)}")
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {"name": f"{names['plural']}.{names['group']}"},
        "spec": {
            "group": names["group"],
            "names": {"kind": names["kind"], "plural": names["plural"]},
            "scope": names["scope"],
            "versions": [
                {
                    "name": version["name"],
                    "served": True,
                    "storage": version.get("storage") is True,
                    "schema": {"openAPIV3Schema": schemas[version["schema"]]},
                }
                for version in versions
            ],
        },
    }


def _is_shipped_version(version: object, schema_count: int) -> bool:
    if not isinstance(version, Mapping) or not isinstance(version.get("name"), str):
        return False
    index = version.get("schema")
    return isinstance(index, int) and not isinstance(index, bool) and 0 <= index < schema_count
