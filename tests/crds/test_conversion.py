"""Unit tests of `generator.crds.generate`: JSON Schema 2020-12 in, structural CRD out, one rule each.

Covered: `$ref` inlining (other file, relative, fragment, description override), the fixed root
fields, `const` -> `enum`, type inference, nullable, int-or-string, preserve-unknown-fields and
pruning, maps, arrays, sets, exclusive bounds, dropped keywords, the status subresource, printer
columns, names, multiple versions (priority order, storage rule, agreement), and every kind of
unconvertible input reported with its file and JSON pointer, all problems at once. Deterministic
output regardless of input order.

Inputs are small schema dicts written here; nothing is faked.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from btp_gitops.generator.core.errors import UnconvertibleSchema
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.crds.generate import (
    GeneratedCrd,
    SchemaFile,
    build_crds,
    crd_files,
    version_priority,
)

COMMON_ID = "https://example.com/schemas/common/meta.json"
COMMON = SchemaFile(
    name="common/meta.json",
    location="schemas/common/meta.json",
    document={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": COMMON_ID,
        "type": "object",
        "properties": {"name": {"type": "string"}, "created": {"type": ["string", "null"]}},
        "$defs": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "a~b/c": {"type": "integer"},
        },
        "additionalProperties": False,
    },
)


def widget(
    properties: dict[str, Any],
    *,
    version: str = "v1",
    crd: dict[str, Any] | None = None,
    file: str = "widget.json",
    **root: Any,
) -> SchemaFile:
    """A kind schema of example.com/Widget with `properties` besides the usual root fields."""
    return SchemaFile(
        name=file,
        location=f"schemas/{file}",
        document={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://example.com/schemas/{file}",
            "title": "Widget",
            "x-kubernetes-group-version-kind": {"group": "example.com", "version": version, "kind": "Widget"},
            "x-kubernetes-crd": {
                "plural": "widgets",
                "singular": "widget",
                "scope": "Namespaced",
                **(crd or {}),
            },
            "type": "object",
            "required": ["apiVersion", "kind", "metadata"],
            "properties": {
                "apiVersion": {"const": f"example.com/{version}"},
                "kind": {"const": "Widget"},
                "metadata": {"$ref": COMMON_ID},
                **properties,
            },
            "additionalProperties": False,
            **root,
        },
    )


def only_crd(*files: SchemaFile) -> dict[str, Any]:
    crds = build_crds([COMMON, *files])
    assert len(crds) == 1
    return crds[0].body


def openapi(*files: SchemaFile, version: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = only_crd(*files)["spec"]["versions"][version]["schema"]["openAPIV3Schema"]
    return schema


def spec_of(spec_schema: Any) -> Any:
    """The structural form of `spec_schema`, used as the schema of `spec`."""
    return openapi(widget({"spec": spec_schema}))["properties"]["spec"]


def problems(*files: SchemaFile) -> list[str]:
    with pytest.raises(UnconvertibleSchema) as raised:
        build_crds([COMMON, *files])
    assert raised.value.exit_code == ExitCode.INPUT
    return [problem.render() for problem in raised.value.problems]


def test_root_fields_set_by_the_server_have_a_fixed_schema() -> None:
    schema = openapi(widget({"spec": {"type": "object", "properties": {}, "additionalProperties": False}}))
    assert schema == {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object"},
        },
    }


def test_required_keeps_what_the_user_must_write() -> None:
    file = widget({"spec": {"type": "object", "additionalProperties": False}})
    file.document["required"].append("spec")  # type: ignore[attr-defined]
    assert openapi(file)["required"] == ["spec"]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (
            COMMON_ID,
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "created": {"type": "string", "nullable": True}},
            },
        ),
        ("common/meta.json#/$defs/labels", {"type": "object", "additionalProperties": {"type": "string"}}),
        (f"{COMMON_ID}#/$defs/a~0b~1c", {"type": "integer"}),
        ("common/meta.json#/%24defs/labels", {"type": "object", "additionalProperties": {"type": "string"}}),
    ],
    ids=["absolute", "relative-with-fragment", "escaped-pointer", "percent-encoded"],
)
def test_ref_is_inlined(ref: str, expected: dict[str, Any]) -> None:
    assert spec_of({"$ref": ref}) == expected


def test_ref_within_the_same_file_and_description_of_the_referrer() -> None:
    file = widget(
        {"spec": {"$ref": "#/$defs/size", "description": "How big."}},
        **{"$defs": {"size": {"type": "integer", "minimum": 1, "description": "A size."}}},
    )
    assert openapi(file)["properties"]["spec"] == {"type": "integer", "minimum": 1, "description": "How big."}


def test_shared_ref_is_inlined_at_every_use() -> None:
    labels = {"$ref": "common/meta.json#/$defs/labels"}
    spec = spec_of(
        {"type": "object", "properties": {"a": labels, "b": labels}, "additionalProperties": False}
    )
    assert (
        spec["properties"]["a"]
        == spec["properties"]["b"]
        == {
            "type": "object",
            "additionalProperties": {"type": "string"},
        }
    )


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"const": "a"}, {"type": "string", "enum": ["a"]}),
        ({"const": 3}, {"type": "integer", "enum": [3]}),
        ({"const": True}, {"type": "boolean", "enum": [True]}),
        ({"type": "string", "const": "a"}, {"type": "string", "enum": ["a"]}),
        ({"enum": ["x", "y"]}, {"type": "string", "enum": ["x", "y"]}),
        ({"enum": [1, 2.5]}, {"type": "number", "enum": [1, 2.5]}),
        ({"enum": ["x", None]}, {"type": "string", "nullable": True, "enum": ["x", None]}),
    ],
    ids=[
        "const-string",
        "const-integer",
        "const-boolean",
        "const-typed",
        "enum",
        "enum-numbers",
        "enum-null",
    ],
)
def test_const_and_enum_get_a_type(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert spec_of(schema) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": ["string", "null"]}, {"type": "string", "nullable": True}),
        ({"type": ["null", "object"], "additionalProperties": False}, {"type": "object", "nullable": True}),
        ({"type": ["integer", "string"]}, {"x-kubernetes-int-or-string": True}),
        ({"x-kubernetes-int-or-string": True}, {"x-kubernetes-int-or-string": True}),
        ({"type": "string", "nullable": True}, {"type": "string", "nullable": True}),
    ],
    ids=["nullable-string", "nullable-object", "int-or-string", "int-or-string-given", "nullable-given"],
)
def test_type_unions(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert spec_of(schema) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object"}, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        (
            {"type": "object", "additionalProperties": True},
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        ),
        ({"type": "object", "additionalProperties": False}, {"type": "object"}),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "x-kubernetes-preserve-unknown-fields": True,
            },
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
            {"type": "object", "properties": {"a": {"type": "string"}}},
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
            {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        ),
        (
            {"type": "object", "properties": {"free": True}, "additionalProperties": False},
            {"type": "object", "properties": {"free": {"x-kubernetes-preserve-unknown-fields": True}}},
        ),
    ],
    ids=[
        "free-form",
        "additional-true",
        "closed-empty",
        "open-with-properties",
        "closed",
        "map",
        "true-schema",
    ],
)
def test_objects_keep_unknown_fields_exactly_when_json_schema_allows_them(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert spec_of(schema) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "array", "items": {"type": "string"}}, {"type": "array", "items": {"type": "string"}}),
        ({"type": "array"}, {"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": True}}),
        (
            {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "minItems": 1},
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "minItems": 1},
        ),
        (
            {"type": "array", "items": {"type": "string"}, "uniqueItems": False},
            {"type": "array", "items": {"type": "string"}},
        ),
    ],
    ids=["items", "no-items", "unique-scalars", "not-unique"],
)
def test_arrays(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert spec_of(schema) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 9}, {"type": "integer", "minimum": 1, "maximum": 9}),
        (
            {"type": "integer", "exclusiveMinimum": 0},
            {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
        ),
        (
            {"type": "number", "exclusiveMaximum": 1.5},
            {"type": "number", "maximum": 1.5, "exclusiveMaximum": True},
        ),
        ({"type": "number", "multipleOf": 0.5}, {"type": "number", "multipleOf": 0.5}),
    ],
    ids=["inclusive", "exclusive-minimum", "exclusive-maximum", "multiple-of"],
)
def test_numeric_bounds(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert spec_of(schema) == expected


def test_kept_and_dropped_keywords() -> None:
    schema = {
        "type": "string",
        "description": "d",
        "default": "x",
        "pattern": "^x+$",
        "minLength": 1,
        "maxLength": 9,
        "format": "hostname",
        "title": "dropped",
        "examples": ["dropped"],
        "$comment": "dropped",
        "deprecated": True,
        "x-kubernetes-validations": [{"rule": "self != 'y'"}],
    }
    assert spec_of(schema) == {
        "type": "string",
        "description": "d",
        "default": "x",
        "pattern": "^x+$",
        "minLength": 1,
        "maxLength": 9,
        "format": "hostname",
        "x-kubernetes-validations": [{"rule": "self != 'y'"}],
    }


def test_root_description_kept_and_identity_keywords_dropped() -> None:
    schema = openapi(widget({}, description="A widget."))
    assert schema["description"] == "A widget."
    assert not {"$schema", "$id", "title", "x-kubernetes-crd", "x-kubernetes-group-version-kind"} & set(
        schema
    )


def test_status_property_adds_the_status_subresource() -> None:
    status = {
        "status": {
            "type": "object",
            "properties": {"state": {"type": "string"}},
            "additionalProperties": False,
        }
    }
    with_status = only_crd(widget(status))["spec"]["versions"][0]
    without_status = only_crd(widget({}))["spec"]["versions"][0]
    assert with_status["subresources"] == {"status": {}}
    assert "subresources" not in without_status


def test_names_scope_and_printer_columns() -> None:
    columns = [
        {"name": "State", "type": "string", "jsonPath": ".status.state", "description": "Where it is."},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "priority": 1},
    ]
    crd = only_crd(
        widget(
            {},
            crd={"scope": "Cluster", "shortNames": ["wd"], "categories": ["all"], "printerColumns": columns},
        )
    )
    assert crd["metadata"] == {"name": "widgets.example.com"}
    assert crd["spec"]["group"] == "example.com"
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"] == {
        "kind": "Widget",
        "listKind": "WidgetList",
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wd"],
        "categories": ["all"],
    }
    assert crd["spec"]["versions"][0]["additionalPrinterColumns"] == columns


def test_one_version_is_served_and_stored() -> None:
    versions = only_crd(widget({}))["spec"]["versions"]
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [("v1", True, True)]


def test_versions_of_a_kind_form_one_crd_in_priority_order() -> None:
    files = [
        widget({}, version="v1alpha1", file="a.json"),
        widget({"spec": {"type": "string"}}, version="v1", file="b.json", crd={"storage": True}),
        widget({}, version="v1beta2", file="c.json"),
        widget({}, version="v2alpha1", file="d.json"),
    ]
    crds = build_crds([COMMON, *files])
    assert [crd.name for crd in crds] == ["widgets.example.com"]
    versions = crds[0].body["spec"]["versions"]
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
        ("v1", True, True),
        ("v1beta2", True, False),
        ("v2alpha1", True, False),
        ("v1alpha1", True, False),
    ]
    assert versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"] == {"type": "string"}
    assert crds[0].sources == ("b.json", "c.json", "d.json", "a.json")


def test_version_priority_follows_kubernetes() -> None:
    names = ["v1alpha1", "foo", "v2", "v1beta1", "v1", "v10", "v1beta2", "v11alpha2", "bar"]
    assert sorted(names, key=version_priority) == [
        "v10",
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v11alpha2",
        "v1alpha1",
        "bar",
        "foo",
    ]


def test_storage_version_must_be_marked_among_several() -> None:
    files = [widget({}, version="v1", file="a.json"), widget({}, version="v2", file="b.json")]
    assert problems(*files) == [
        "schemas/a.json: #/x-kubernetes-crd/storage: Widget has versions v2, v1: mark exactly one `storage: true` (0 marked)",
        "schemas/b.json: #/x-kubernetes-crd/storage: Widget has versions v2, v1: mark exactly one `storage: true` (0 marked)",
    ]


def test_only_one_storage_version() -> None:
    marked = {"storage": True}
    files = [
        widget({}, version="v1", file="a.json", crd=marked),
        widget({}, version="v2", file="b.json", crd=marked),
    ]
    assert problems(*files) == [
        "schemas/a.json: #/x-kubernetes-crd/storage: Widget has versions v2, v1: mark exactly one `storage: true` (2 marked)",
        "schemas/b.json: #/x-kubernetes-crd/storage: Widget has versions v2, v1: mark exactly one `storage: true` (2 marked)",
    ]


def test_versions_must_agree_on_names_and_scope() -> None:
    files = [
        widget({}, version="v1", file="a.json", crd={"storage": True}),
        widget({}, version="v2", file="b.json", crd={"scope": "Cluster", "shortNames": ["w"]}),
    ]
    assert problems(*files) == [
        "schemas/a.json: #/x-kubernetes-crd/scope: differs from schemas/b.json ('Cluster'); Widget versions must agree",
        "schemas/a.json: #/x-kubernetes-crd/shortNames: differs from schemas/b.json (['w']); Widget versions must agree",
    ]


def test_same_version_twice() -> None:
    files = [widget({}, file="a.json"), widget({}, file="b.json", crd={"storage": True})]
    assert problems(*files) == [
        "schemas/b.json: #/x-kubernetes-group-version-kind/version: Widget v1 is also defined in schemas/a.json",
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            [
                "#/properties/spec: no type: structural schemas need one (add `type`)",
                "#/properties/spec/oneOf: keyword 'oneOf' has no structural CRD equivalent",
            ],
        ),
        (
            {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
            [
                "#/properties/spec/patternProperties: keyword 'patternProperties' has no structural CRD equivalent"
            ],
        ),
        (
            {"type": ["string", "integer", "boolean"]},
            [
                "#/properties/spec/type: type ['string', 'integer', 'boolean'] has no structural equivalent (one type, or one + null)"
            ],
        ),
        (
            {"type": "null"},
            ["#/properties/spec/type: type 'null' has no structural equivalent (one type, or one + null)"],
        ),
        (
            {"description": "anything"},
            ["#/properties/spec: no type: structural schemas need one (add `type`)"],
        ),
        ({"enum": ["a", 1]}, ["#/properties/spec: no type: structural schemas need one (add `type`)"]),
        (False, ["#/properties/spec: a schema that accepts nothing (False) has no CRD equivalent"]),
        (
            {"type": "string", "const": "a", "enum": ["a"]},
            ["#/properties/spec/const: const next to enum: keep one of them"],
        ),
        (
            {"type": "integer", "minimum": 1, "exclusiveMinimum": 0},
            ["#/properties/spec/exclusiveMinimum: exclusiveMinimum next to minimum: keep one of them"],
        ),
        (
            {"type": "array", "items": {"type": "object"}, "uniqueItems": True},
            [
                "#/properties/spec/uniqueItems: uniqueItems is forbidden in a CRD; only lists of scalars can be sets"
            ],
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
            [
                "#/properties/spec/additionalProperties: additionalProperties as a schema next to properties is forbidden in a CRD"
            ],
        ),
        (
            {"$ref": "#/$defs/missing"},
            [
                "#/properties/spec/$ref: $ref https://example.com/schemas/widget.json#/$defs/missing: '$defs' not found in schemas/widget.json"
            ],
        ),
        (
            {"$ref": "https://elsewhere.example.com/x.json"},
            [
                "#/properties/spec/$ref: $ref https://elsewhere.example.com/x.json: no schema file has $id https://elsewhere.example.com/x.json"
            ],
        ),
        (
            {"$ref": "#anchor"},
            [
                "#/properties/spec/$ref: $ref https://example.com/schemas/widget.json#anchor: only JSON pointer fragments are supported"
            ],
        ),
        (
            {"$ref": COMMON_ID, "minLength": 1},
            ["#/properties/spec: $ref next to minLength cannot be inlined; move them into the target"],
        ),
    ],
    ids=[
        "one-of",
        "pattern-properties",
        "union",
        "null",
        "no-type",
        "mixed-enum",
        "false-schema",
        "const-and-enum",
        "both-minimums",
        "unique-objects",
        "map-and-properties",
        "missing-fragment",
        "missing-file",
        "anchor",
        "ref-siblings",
    ],
)
def test_unconvertible_schema_names_file_and_pointer(spec: Any, expected: list[str]) -> None:
    assert problems(widget({"spec": spec})) == [f"schemas/widget.json: {line}" for line in expected]


def test_recursive_ref_cannot_be_inlined() -> None:
    tree = {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
    }
    file = widget({"spec": {"$ref": "#/$defs/tree"}}, **{"$defs": {"tree": tree}})
    assert problems(file) == [
        "schemas/widget.json: #/$defs/tree/properties/children/items/$ref: recursive $ref "
        "https://example.com/schemas/widget.json#/$defs/tree cannot be inlined into a CRD",
    ]


def test_problem_in_a_referenced_file_names_that_file() -> None:
    broken = copy.deepcopy(dict(COMMON.document))
    broken["properties"]["created"] = {"type": ["string", "integer", "null"]}
    common = SchemaFile(COMMON.name, COMMON.location, broken)
    with pytest.raises(UnconvertibleSchema) as raised:
        build_crds([common, widget({"extra": {"$ref": COMMON_ID}})])
    # Reached twice (metadata and extra), reported once.
    assert [p.render() for p in raised.value.problems] == [
        "schemas/common/meta.json: #/properties/created/type: type ['string', 'integer', 'null'] has no "
        "structural equivalent (one type, or one + null)",
    ]


@pytest.mark.parametrize(
    ("crd", "expected"),
    [
        ({"plural": ""}, ["#/x-kubernetes-crd/plural: required: a lowercase resource name"]),
        ({"scope": "Global"}, ["#/x-kubernetes-crd/scope: must be one of Namespaced, Cluster"]),
        (
            {"colour": "blue"},
            [
                "#/x-kubernetes-crd/colour: unknown setting (known: categories, plural, printerColumns, renderOnly, scope, shortNames, singular, storage)"
            ],
        ),
        (
            {"printerColumns": [{"name": "State", "type": "string"}]},
            ["#/x-kubernetes-crd/printerColumns/0: a printer column needs name, type and jsonPath"],
        ),
        (
            {"printerColumns": [{"name": "State", "type": "string", "jsonPath": ".a", "width": 3}]},
            ["#/x-kubernetes-crd/printerColumns/0/width: unknown printer column field"],
        ),
    ],
    ids=["empty-plural", "bad-scope", "unknown-setting", "column-without-path", "column-unknown-field"],
)
def test_bad_crd_settings(crd: dict[str, Any], expected: list[str]) -> None:
    assert problems(widget({}, crd=crd)) == [f"schemas/widget.json: {line}" for line in expected]


def test_kind_without_group_or_settings() -> None:
    no_group = widget({}, file="a.json")
    no_group.document["x-kubernetes-group-version-kind"]["group"] = ""  # type: ignore[index]
    no_settings = widget({}, file="b.json")
    del no_settings.document["x-kubernetes-crd"]  # type: ignore[attr-defined]
    assert problems(no_group, no_settings) == [
        "schemas/a.json: #/x-kubernetes-group-version-kind/group: a custom resource needs an API group (the core group is built in)",
        "schemas/b.json: #/x-kubernetes-crd: missing: plural, singular and scope are needed",
    ]


def test_root_must_be_an_object() -> None:
    file = widget({})
    file.document["type"] = "string"  # type: ignore[index]
    assert (
        "schemas/widget.json: #/type: the root of a custom resource schema must be of type object"
        in problems(file)
    )


def test_every_problem_is_reported_at_once() -> None:
    file = widget({"a": {"oneOf": []}, "b": {"type": "string"}, "c": {"not": {}}}, crd={"scope": "Global"})
    assert len(problems(file)) == 5  # oneOf and its missing type, not and its missing type, scope


def test_output_does_not_depend_on_input_order() -> None:
    files = [
        COMMON,
        widget({}, version="v1", file="a.json", crd={"storage": True}),
        widget({}, version="v2", file="b.json"),
        SchemaFile(
            "gadget.json",
            "schemas/gadget.json",
            {
                **widget({}).document,
                "$id": "https://example.com/g.json",
                "x-kubernetes-group-version-kind": {
                    "group": "example.com",
                    "version": "v1",
                    "kind": "Gadget",
                },
                "x-kubernetes-crd": {"plural": "gadgets", "singular": "gadget", "scope": "Cluster"},
            },
        ),
    ]
    forward: list[GeneratedCrd] = build_crds(files)
    backward = build_crds(list(reversed(files)))
    assert crd_files(forward) == crd_files(backward)
    assert list(crd_files(forward)) == ["gadgets.example.com.yaml", "widgets.example.com.yaml"]
