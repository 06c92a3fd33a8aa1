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
from btp_gitops.generator.core.suggestions import did_you_mean, nearest

if TYPE_CHECKING:
    # jsonschema and referencing (~0.1 s of imports) are loaded when SchemaRegistry below builds
    # its first validator: commands that validate nothing (post-render of the BTP operator's
    # stream, module-resources, --version) only use this module's message helpers, and a render
    # asks a registry what kinds it knows before it validates a document, if it validates one.
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
        self._documents = [(document["$id"], document) for document in documents]
        self._kinds: dict[GroupVersionKind, KindSchema] = {}
        for _, document in self._documents:
            gvk = document.get("x-kubernetes-group-version-kind")
            if gvk:
                api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
                self._kinds[(api_version, gvk["kind"])] = KindSchema(api_version, gvk["kind"], document)
        self._registry: referencing.Registry[Any] | None = None  # built with the first validator
        self._validators: dict[GroupVersionKind, jsonschema.protocols.Validator] = {}

    def kinds(self) -> list[KindSchema]:
        return [self._kinds[key] for key in sorted(self._kinds)]

    def knows(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) in self._kinds

    def versions_of(self, kind: str) -> list[str]:
        return sorted(api_version for api_version, known in self._kinds if known == kind)

    def kinds_of_group(self, group: str) -> list[str]:
        """The kinds btp-gitops reads of one API group ("" for the core group), every version's."""
        return sorted({kind for api_version, kind in self._kinds if api_group(api_version) == group})

    def validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator:
        key = (api_version, kind)
        if key not in self._validators:
            import jsonschema  # noqa: PLC0415 - see TYPE_CHECKING above

            schema = self._kinds[key].schema
            self._validators[key] = jsonschema.Draft202012Validator(schema, registry=self._references())
        return self._validators[key]

    def _references(self) -> referencing.Registry[Any]:
        """Every schema by its `$id`, for the `$ref`s between them: built once, when the first
        document is validated."""
        if self._registry is None:
            import referencing  # noqa: PLC0415 - see TYPE_CHECKING above
            import referencing.jsonschema  # noqa: PLC0415

            draft = referencing.jsonschema.DRAFT202012
            resources = [
                (name, referencing.Resource.from_contents(doc, draft)) for name, doc in self._documents
            ]
            self._registry = referencing.Registry().with_resources(resources)
        return self._registry


def api_group(api_version: str) -> str:
    """ "sme.sap.com" of "sme.sap.com/v1alpha1"; "" of "v1" (the core group)."""
    return api_version.rpartition("/")[0]


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
        return [
            (format_field_path([*path, key]), f"unknown field{did_you_mean(key, allowed)}") for key in unknown
        ]
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
    choices = list(choices)
    named = [choice for choice in choices if isinstance(choice, str)]
    hint = did_you_mean(instance, named) if isinstance(instance, str) else ""
    return f"must be one of {', '.join(repr(choice) for choice in choices)}, got {shown(instance)}{hint}"


def type_mismatch(expected: Any, instance: Any) -> str:
    wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
    return f"must be of type {wanted}, got {type_name(instance)}"


def type_name(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def unknown_kind_message(api_version: str, kind: str, registry: SchemaRegistry) -> str:
    """What is wrong with a kind btp-gitops does not read at this apiVersion, and what it does
    read instead: the kind's versions, or the nearest kind of the same API group."""
    versions = registry.versions_of(kind)
    if versions:  # the list is the suggestion
        return f"unknown kind {api_version}/{kind} (supported apiVersions of {kind}: {', '.join(versions)})"
    kinds = registry.kinds_of_group(api_group(api_version))
    near = nearest(kind, kinds)
    if near is not None:
        guess = f"{near} at {', '.join(registry.versions_of(near))}"
        return f'unknown kind {api_version}/{kind} (did you mean "{near}"? btp-gitops reads {guess})'
    # One of our kinds under another group (`v1` for `sme.sap.com/v1alpha1`): the kind is the hint.
    elsewhere = nearest(kind, {known.kind for known in registry.kinds()})
    if elsewhere is not None:
        return f'unknown kind {api_version}/{kind} (did you mean "{elsewhere}"?)'
    return f"unknown kind {api_version}/{kind} (btp-gitops does not read this kind)"


def problems_in(document: SourceDocument, registry: SchemaRegistry) -> list[Problem]:
    """Every schema violation of one document (an unknown kind is one problem)."""
    body = document.body
    if not registry.knows(document.api_version, document.kind):
        return [
            Problem(
                file=document.file,
                document=document.document,
                object_ref=document.ref,
                field_path="apiVersion",
                message=unknown_kind_message(document.api_version, document.kind, registry),
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


def source_problems(
    documents: Sequence[SourceDocument], registry: SchemaRegistry, progress: Progress = NO_PROGRESS
) -> list[Problem]:
    """Every schema violation of every document."""
    checked = counted(documents, progress, "validating sources", len(documents))
    return [problem for document in checked for problem in problems_in(document, registry)]


def validate_sources(
    documents: Sequence[SourceDocument], registry: SchemaRegistry, progress: Progress = NO_PROGRESS
) -> None:
    """Raise SchemaViolation listing every problem in every document, if there is any."""
    raise_if_problems(
        SchemaViolation, "invalid source documents", source_problems(documents, registry, progress)
    )
