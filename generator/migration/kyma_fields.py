"""The checked fields of Lifecycle Manager's objects, as the schemas in schemas/ accept them.

Each reader returns the value when the schema accepts it, nothing when the field is absent, and
refuses the object (`live_meta.Refused`, naming the field) when the value is of the wrong type or
shape: the import writes only what `btp-gitops validate` accepts. Patterns are the schemas'
(schemas/kyma.*, moduletemplate.*, modulereleasemeta.*).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from btp_gitops.generator.core.redact import shown
from btp_gitops.generator.migration.live_meta import Refused

CHANNEL = re.compile(r"[a-z]{3,32}")
TEMPLATE_CHANNEL = re.compile(r"(|[a-z]{3,32})")
VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[a-zA-Z-][0-9a-zA-Z-]*)?")
OPTIONAL_VERSION = re.compile(rf"({VERSION.pattern})?")
MANDATORY_VERSION = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9a-zA-Z.-]+)?(\+[0-9a-zA-Z.-]+)?"
)
MODULE_NAME = re.compile(r"([a-z]{3,}(-[a-z]{3,})*)?")
OCM_COMPONENT = re.compile(
    r"[a-z][-a-z0-9]*([.][a-z][-a-z0-9]*)*[.][a-z]{2,}(/[a-z][-a-z0-9_]*([.][a-z][-a-z0-9_]*)*)+"
)
VERSION_MAX = 32
MODULE_NAME_MAX = 64


def section(body: Mapping[str, Any], key: str, field_path: str, required: bool = False) -> dict[str, Any]:
    """A map-valued field (`spec`), empty when absent and not required."""
    value = body.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise Refused(field_path, "missing, or not a map" if required else f"not a map: {type_word(value)}")
    return dict(value)


def type_word(value: Any) -> str:
    return {dict: "a map", list: "a list", str: "a string", bool: "a boolean", int: "a number"}.get(
        type(value), type(value).__name__
    )


def text(
    spec: Mapping[str, Any],
    key: str,
    field_path: str,
    pattern: re.Pattern[str] | None = None,
    *,
    max_length: int | None = None,
    min_length: int = 0,
) -> str | None:
    """A string field, checked against the schema's pattern and length."""
    if key not in spec:
        return None
    value = spec[key]
    if not isinstance(value, str):
        raise Refused(field_path, f"must be a string, not {type_word(value)}")
    if len(value) < min_length or (max_length is not None and len(value) > max_length):
        raise Refused(field_path, f"{shown(value)} is not between {min_length} and {max_length} characters")
    if pattern is not None and pattern.fullmatch(value) is None:
        raise Refused(field_path, f"{shown(value)} does not match {pattern.pattern}")
    return value


def flag(spec: Mapping[str, Any], key: str, field_path: str) -> bool | None:
    if key not in spec:
        return None
    value = spec[key]
    if not isinstance(value, bool):
        raise Refused(field_path, f"must be true or false, not {type_word(value)}")
    return value


def records(
    spec: Mapping[str, Any], key: str, field_path: str, required: Sequence[str], optional: Sequence[str] = ()
) -> list[dict[str, str]] | None:
    """A list of maps of strings with the schema's required and optional keys (`spec.resources`)."""
    if key not in spec:
        return None
    items = spec[key]
    if not isinstance(items, list):
        raise Refused(field_path, f"must be a list, not {type_word(items)}")
    checked = []
    for index, item in enumerate(items):
        where = f"{field_path}[{index}]"
        if not isinstance(item, Mapping):
            raise Refused(where, f"must be a map, not {type_word(item)}")
        for name in sorted(map(str, item)):
            if name not in (*required, *optional):
                raise Refused(f"{where}.{name}", "not a field of this list's items")
        for name in required:
            if name not in item:
                raise Refused(f"{where}.{name}", "required field is missing")
        record: dict[str, str] = {}
        for name in (*required, *optional):
            value = text(item, name, f"{where}.{name}")
            if value is not None:
                record[name] = value
        checked.append(record)
    return checked


def embedded_object(spec: Mapping[str, Any], key: str, field_path: str) -> dict[str, Any] | None:
    """A whole object held in a field (a template's `spec.data`): apiVersion and kind required."""
    if key not in spec:
        return None
    value = spec[key]
    if not isinstance(value, Mapping):
        raise Refused(field_path, f"must be a map, not {type_word(value)}")
    for name in ("apiVersion", "kind"):
        text(value, name, f"{field_path}.{name}", min_length=1)
        if name not in value:
            raise Refused(f"{field_path}.{name}", "required field is missing")
    return dict(value)
