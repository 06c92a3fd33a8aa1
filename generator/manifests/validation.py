"""Offline validation of Kubernetes manifests: what `kubectl apply --validate=strict` would refuse.

Built-in kinds are checked against the Kubernetes OpenAPI schemas of one Kubernetes version
(read by generator.io.kube_schemas), custom resources against their CRD's schema converted by
generator.manifests.crd_schemas. Validators are built once per (apiVersion, kind) and reused: a
rendered repo holds thousands of objects of a few dozen kinds.

Every problem names the file, the document, the object and the field path, in the words of
source validation ("unknown field", "required field is missing", ...). Values are not quoted back,
except by an enum mismatch, so a Secret's data cannot leak into a report.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import jsonschema
import jsonschema.protocols
import referencing
import referencing.jsonschema
import yaml

from btp_gitops.generator.core.errors import ManifestInvalid, Problem
from btp_gitops.generator.core.objects import describe, format_field_path
from btp_gitops.generator.core.validation import (
    describe_schema_error,
    enum_mismatch,
    type_mismatch,
    type_name,
)
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import load_stream_document, split_documents, yaml_problem_location
from btp_gitops.generator.manifests.crd_schemas import is_crd, root_schema, served_versions

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
STDIN = "<stdin>"

GroupVersionKind = tuple[str, str]  # (apiVersion, kind)


class BuiltinSchemas(Protocol):
    """The Kubernetes OpenAPI schemas of one Kubernetes version, in JSON Schema 2020-12."""

    @property
    def kubernetes_version(self) -> str:
        """Major and minor version, as in "1.37"."""
        ...

    def definitions(self) -> Mapping[str, Any]:
        """The shared definitions document (with `$id` and `$defs`) every kind schema refers to."""
        ...

    def kind_schema(self, api_version: str, kind: str) -> Mapping[str, Any] | None:
        """The schema of one built-in kind, or None when this version does not serve it."""
        ...

    def api_versions_of(self, kind: str) -> list[str]:
        """Every apiVersion this version serves `kind` under, for hints."""
        ...


@dataclass(frozen=True, slots=True)
class ManifestDocument:
    """One YAML document to validate, with where it came from."""

    file: str  # as shown to the user
    document: int  # 1-based index among the file's non-blank documents
    body: Any  # whatever the YAML held: validation says so when it is not an object

    @property
    def ref(self) -> str | None:
        return describe(self.body) if isinstance(self.body, dict) else None

    def problem(self, message: str, field_path: str | None = None) -> Problem:
        return Problem(
            file=self.file,
            document=self.document,
            object_ref=self.ref,
            field_path=field_path,
            message=message,
        )


@dataclass(slots=True)
class ValidationReport:
    kubernetes_version: str
    objects: int = 0
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "objects": self.objects,
            "problems": [p.as_dict() for p in self.problems],
            "warnings": [p.as_dict() for p in self.warnings],
            "kubernetesVersion": self.kubernetes_version,
        }

    def raise_if_invalid(self) -> None:
        if self.problems:
            count = len(self.problems)
            raise ManifestInvalid(
                f"invalid manifests ({count} problem{'s' if count != 1 else ''})", self.problems
            )


# --- reading ----------------------------------------------------------------------------------


def parse_manifests(text: str, file: str) -> tuple[list[ManifestDocument], list[Problem]]:
    """The documents of a YAML stream, split as Helm splits it, each parsed strictly on its own.

    A syntax error spoils only its own document. Blank documents are not counted; documents that
    hold only comments are counted and skipped, so `document N` is what a reader counts.
    """
    documents: list[ManifestDocument] = []
    problems: list[Problem] = []
    budget = AliasBudget()  # the alias limit holds for the whole file
    for index, (line, piece) in enumerate(documents_with_lines(text), start=1):
        try:
            body = load_stream_document(piece, budget)
        except yaml.YAMLError as error:
            location = yaml_problem_location(error, line_offset=line)
            problems.append(Problem(file=file, document=index, message=f"invalid YAML: {location}"))
            continue
        except RecursionError:
            problems.append(Problem(file=file, document=index, message="invalid YAML: nested too deeply"))
            continue
        if body is not None:
            documents.append(ManifestDocument(file, index, body))
    return documents, problems


def documents_with_lines(text: str) -> Iterator[tuple[int, str]]:
    """(0-based line where it starts, text) of each document of a stream, split as Helm splits it."""
    cursor = line = 0
    for piece in split_documents(text):
        start = text.index(piece, cursor)
        line += text.count("\n", cursor, start)  # counted piecewise: once over the text in all
        yield line, piece
        line += piece.count("\n")
        cursor = start + len(piece)


def crds_among(documents: Iterable[ManifestDocument]) -> list[Mapping[str, Any]]:
    return [document.body for document in documents if is_crd(document.body)]


# --- schemas ----------------------------------------------------------------------------------

KUBERNETES_FORMATS = jsonschema.FormatChecker(formats=())
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


# Only the formats the API server enforces for every object are checked; any other format (and
# there are many: "quantity", "cidr", vendor ones) is accepted rather than failing the object.
@KUBERNETES_FORMATS.checks("int32")
def _is_int32(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or -(2**31) <= value < 2**31


@KUBERNETES_FORMATS.checks("int64")
def _is_int64(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or -(2**63) <= value < 2**63


@KUBERNETES_FORMATS.checks("byte")
def _is_base64(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


@KUBERNETES_FORMATS.checks("date-time")
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return bool(_RFC3339.match(value)) and _parses(datetime.datetime.fromisoformat, value.upper())


@KUBERNETES_FORMATS.checks("date")
def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return bool(_DATE.match(value)) and _parses(datetime.date.fromisoformat, value)


def _parses(parse: Any, value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _is_integer_literal(_: Any, instance: object) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


# Built-in kinds are decoded into Go structs: `replicas: 1.0` does not fit an int32 there, while
# a custom resource's 1.0 is taken as 1. JSON Schema counts 1.0 as an integer, so built-in
# kinds get a validator whose integers are integer literals only. (`extend` has no type hints.)
_BuiltinKindValidator: type[jsonschema.protocols.Validator] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer_literal),
)


class ManifestSchemas:
    """The schema of every kind one validation knows: built-in kinds, then the given CRDs.

    When several CRDs define the same apiVersion and kind, the first one given wins: callers pass
    the CRDs that will reach the cluster with the objects before the ones given as background.
    """

    def __init__(self, builtin: BuiltinSchemas, crds: Iterable[Mapping[str, Any]] = ()) -> None:
        self._builtin = builtin
        definitions = builtin.definitions()
        self._object_meta_ref = f"{definitions['$id']}#/$defs/{OBJECT_META}"
        self._registry: referencing.Registry[Any] = referencing.Registry().with_resource(
            definitions["$id"],
            referencing.Resource.from_contents(definitions, referencing.jsonschema.DRAFT202012),
        )
        self._custom: dict[GroupVersionKind, Mapping[str, Any]] = {}
        for crd in crds:
            for api_version, kind, openapi in served_versions(crd):
                self._custom.setdefault((api_version, kind), openapi)
        self._validators: dict[GroupVersionKind, jsonschema.protocols.Validator | None] = {}

    @property
    def kubernetes_version(self) -> str:
        return self._builtin.kubernetes_version

    def validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
        """The validator of a kind, built on first use; None when no schema is known."""
        key = (api_version, kind)
        if key not in self._validators:
            self._validators[key] = self._build(api_version, kind)
        return self._validators[key]

    def _build(self, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
        builtin = self._builtin.kind_schema(api_version, kind)
        if builtin is not None:
            return _BuiltinKindValidator(builtin, registry=self._registry, format_checker=KUBERNETES_FORMATS)
        if (api_version, kind) in self._custom:
            schema = root_schema(self._custom[(api_version, kind)], self._object_meta_ref)
            return jsonschema.Draft202012Validator(
                schema, registry=self._registry, format_checker=KUBERNETES_FORMATS
            )
        return None

    def known_api_versions(self, kind: str) -> list[str]:
        custom = {api_version for api_version, known in self._custom if known == kind}
        return sorted(custom | set(self._builtin.api_versions_of(kind)))


# --- validation -------------------------------------------------------------------------------


def validate_manifests(
    documents: Iterable[ManifestDocument], schemas: ManifestSchemas, *, ignore_missing_schemas: bool = False
) -> ValidationReport:
    """Every problem of every document; a kind without a schema is a problem, or a warning if ignored."""
    report = ValidationReport(kubernetes_version=schemas.kubernetes_version)
    for document in documents:
        report.objects += 1
        problems, missing_schema = _problems_of(document, schemas, ignore_missing_schemas)
        if missing_schema and ignore_missing_schemas:
            report.warnings.extend(problems)
        else:
            report.problems.extend(problems)
    return report


def _problems_of(
    document: ManifestDocument, schemas: ManifestSchemas, ignore_missing_schemas: bool = False
) -> tuple[list[Problem], bool]:
    """(problems, whether they are only that no schema is known)."""
    body = document.body
    if not isinstance(body, dict):
        return [document.problem(f"expected a Kubernetes object (a mapping), got {type_name(body)}")], False
    identity = _identity_problems(document)
    if identity:
        return identity, False
    api_version, kind = body["apiVersion"], body["kind"]
    validator = schemas.validator(api_version, kind)
    if validator is None:
        message = _no_schema_message(api_version, kind, schemas, ignore_missing_schemas)
        return [document.problem(message)], True
    found = {(path, message) for error in validator.iter_errors(body) for path, message in _describe(error)}
    found |= _name_problems(body)
    return [document.problem(message, path) for path, message in sorted(found)], False


def _identity_problems(document: ManifestDocument) -> list[Problem]:
    problems = []
    for name in ("apiVersion", "kind"):
        value = document.body.get(name)
        if value is None or value == "":
            problems.append(document.problem("required field is missing", name))
        elif not isinstance(value, str):
            problems.append(document.problem(type_mismatch("string", value), name))
    return problems


def _name_problems(body: dict[str, Any]) -> set[tuple[str, str]]:
    # No schema requires a name (the API server accepts generateName instead), but an object
    # without either cannot be created at all.
    meta = body.get("metadata")
    if isinstance(meta, dict) and (meta.get("name") or meta.get("generateName")):
        return set()
    if meta is not None and not isinstance(meta, dict):
        return set()  # the schema already says metadata has the wrong type
    return {("metadata.name", "required field is missing")}


def _no_schema_message(api_version: str, kind: str, schemas: ManifestSchemas, ignored: bool = False) -> str:
    others = [known for known in schemas.known_api_versions(kind) if known != api_version]
    hint = f" (known apiVersions of {kind}: {', '.join(others)})" if others else ""
    advice = (
        "not validated (--ignore-missing-schemas)"
        if ignored
        else ("pass --crds with its CRD or --ignore-missing-schemas")
    )
    return f"no schema for {api_version} {kind} in Kubernetes {schemas.kubernetes_version}{hint}; {advice}"


_BOUNDS = {
    "minimum": "must be >= {}",
    "maximum": "must be <= {}",
    "exclusiveMinimum": "must be > {}",
    "exclusiveMaximum": "must be < {}",
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} fields",
    "maxProperties": "must have at most {} fields",
    "multipleOf": "must be a multiple of {}",
    "pattern": "must match the pattern {!r}",
}


def _describe(error: jsonschema.ValidationError) -> list[tuple[str, str]]:
    """(field path, message) pairs; the shared wording, plus what Kubernetes schemas need more.

    Messages do not include the offending value (it may be a credential), except enum mismatches.
    """
    path = format_field_path(list(error.absolute_path))
    keyword = str(error.validator)
    if keyword == "type":
        return [(path, type_mismatch(_without_null(error.validator_value, error.instance), error.instance))]
    if keyword in ("oneOf", "anyOf"):
        return [(path, _alternatives_message(error))]
    if keyword == "enum" and isinstance(error.validator_value, list):
        # A null a field may hold is not one of the choices a user picks from.
        choices = [choice for choice in error.validator_value if choice is not None]
        return [(path, enum_mismatch(choices, error.instance))]
    if keyword == "format":
        wanted = "base64-encoded" if error.validator_value == "byte" else f"a valid {error.validator_value}"
        return [(path, f"must be {wanted}")]
    if keyword in _BOUNDS:
        return [(path, _BOUNDS[keyword].format(error.validator_value))]
    if keyword == "uniqueItems":
        return [(path, "must not contain duplicate items")]
    if keyword == "not":
        return [(path, "must not match the excluded schema")]
    return describe_schema_error(error)


def _without_null(expected: Any, instance: Any) -> Any:
    """Built-in schemas allow null everywhere; naming it in every message would only be noise."""
    if isinstance(expected, list) and instance is not None:
        shown = [name for name in expected if name != "null"]
        return shown[0] if len(shown) == 1 else shown
    return expected


def _alternatives_message(error: jsonschema.ValidationError) -> str:
    branches = list(error.context or ())
    if not branches:
        return "matches more than one of the allowed schemas"  # oneOf, with several matching
    if all(branch.validator == "type" for branch in branches):
        # int-or-string and Quantity are oneOf over types: say which types are allowed.
        types: list[str] = []
        for branch in branches:
            expected = branch.validator_value
            for name in expected if isinstance(expected, list) else [expected]:
                if str(name) not in types and (name != "null" or error.instance is None):
                    types.append(str(name))
        return type_mismatch(types, error.instance)
    return "matches none of the allowed schemas"
