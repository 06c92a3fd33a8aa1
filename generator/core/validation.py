"""Validation of source documents against the JSON Schemas in schemas/.

Every violation of every document is collected and reported with its file, document index,
object and field path; nothing stops at the first error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from btp_gitops.generator.core.errors import Problem, SchemaViolation, raise_if_problems
from btp_gitops.generator.core.objects import format_field_path
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress, counted
from btp_gitops.generator.core.redact import shown
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.core.suggestions import nearest

if TYPE_CHECKING:
    # jsonschema and referencing (~0.1 s of imports) are loaded when a registry is built, in
    # SchemaRegistry below: commands that validate nothing (post-render of the BTP operator's
    # stream, module-resources, --version) only use this module's message helpers.
    import jsonschema
    import referencing

GroupVersionKind = tuple[str, str]  # (apiVersion, kind)


@dataclass(frozen=True, slots=True)
class KindSchema:
    api_version: str
    kind: str
    schema: Mapping[str, Any]


class SchemaRegistry:
    """The schemas of every kind btp-gitops reads, keyed by (apiVersion, kind)."""

    def __init__(self, documents: Iterable[Mapping[str, Any]]) -> None:
        import referencing  # noqa: PLC0415 - see TYPE_CHECKING above
        import referencing.jsonschema  # noqa: PLC0415

        resources = []
        self._kinds: dict[GroupVersionKind, KindSchema] = {}
        for document in documents:
            resources.append(
                (
                    document["$id"],
                    referencing.Resource.from_contents(document, referencing.jsonschema.DRAFT202012),
                )
            )
            gvk = document.get("x-kubernetes-group-version-kind")
            if gvk:
                api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
                self._kinds[(api_version, gvk["kind"])] = KindSchema(api_version, gvk["kind"], document)
        self._registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources)
        self._validators: dict[GroupVersionKind, jsonschema.protocols.Validator] = {}

    def kinds(self) -> list[KindSchema]:
        return [self._kinds[key] for key in sorted(self._kinds)]

    def knows(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) in self._kinds

    def versions_of(self, kind: str) -> list[str]:
        return sorted(api_version for api_version, known in self._kinds if known == kind)

    def validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator:
        key = (api_version, kind)
        if key not in self._validators:
            import jsonschema  # noqa: PLC0415 - see TYPE_CHECKING above

            schema = self._kinds[key].schema
            self._validators[key] = jsonschema.Draft202012Validator(schema, registry=self._registry)
        return self._validators[key]


def describe_schema_error(error: jsonschema.ValidationError) -> list[tuple[str, str]]:
    """Turn one jsonschema error into (field path, message) pairs a user can act on.

    Shared by source validation and `btp-gitops validate` (manifests.validation), so that
    both say "unknown field" and "required field is missing" the same way.
    """
    path = list(error.absolute_path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(schema.get("properties", {}))
        unknown = sorted(str(key) for key in error.instance if key not in allowed)
        return [(format_field_path([*path, key]), "unknown field") for key in unknown]
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else ""
        return [(format_field_path([*path, missing]), "required field is missing")]
    if error.validator == "type":
        return [(format_field_path(path), type_mismatch(error.validator_value, error.instance))]
    if error.validator == "enum":
        return [(format_field_path(path), enum_mismatch(schema.get("enum", []), error.instance))]
    if error.validator == "const":
        return [(format_field_path(path), f"must be {error.validator_value!r}, got {shown(error.instance)}")]
    return [(format_field_path(path), without_instance(error))]


def without_instance(error: jsonschema.ValidationError) -> str:
    """jsonschema's message with the offending value cut to a short prefix: it quotes the whole
    value, which may be a 4 KB private key (core.redact also catches what this misses)."""
    quoted = repr(error.instance)
    return error.message.replace(quoted, shown(error.instance)) if quoted in error.message else error.message


def enum_mismatch(choices: Iterable[Any], instance: Any) -> str:
    return f"must be one of {', '.join(repr(choice) for choice in choices)}, got {shown(instance)}"


def type_mismatch(expected: Any, instance: Any) -> str:
    wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
    return f"must be of type {wanted}, got {type_name(instance)}"


def type_name(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def problems_in(document: SourceDocument, registry: SchemaRegistry) -> list[Problem]:
    """Every schema violation of one document (an unknown kind is one problem)."""
    body = document.body
    if not registry.knows(document.api_version, document.kind):
        versions = registry.versions_of(document.kind)
        meant = nearest(document.kind, {known.kind for known in registry.kinds()})
        hint = (
            f"supported apiVersions of {document.kind}: {', '.join(versions)}"
            if versions
            else f'did you mean "{meant}"?'
            if meant
            else "btp-gitops does not read this kind"
        )
        return [
            Problem(
                file=document.file,
                document=document.document,
                object_ref=document.ref,
                field_path="apiVersion",
                message=f"unknown kind {document.api_version}/{document.kind} ({hint})",
            )
        ]
    validator = registry.validator(document.api_version, document.kind)
    problems = []
    for error in validator.iter_errors(body):
        for field_path, message in describe_schema_error(error):
            problems.append(
                Problem(
                    file=document.file,
                    document=document.document,
                    object_ref=document.ref,
                    field_path=field_path,
                    message=message,
                )
            )
    return problems


def validate_sources(
    documents: Sequence[SourceDocument], registry: SchemaRegistry, progress: Progress = NO_PROGRESS
) -> None:
    """Raise SchemaViolation listing every problem in every document, if there is any."""
    checked = counted(documents, progress, "validating sources", len(documents))
    problems = [problem for document in checked for problem in problems_in(document, registry)]
    raise_if_problems(SchemaViolation, "invalid source documents", problems)
