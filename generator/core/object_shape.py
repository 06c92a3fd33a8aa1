"""The shape every Kubernetes object must have before anything of ours reads it.

An input object (a source document, a document of a Helm stream) is refused, with the field path,
unless its `metadata` is a mapping, its name (or generateName) a non-empty string, its namespace
a string when given, and its labels and annotations mappings of strings to strings; label keys
and values must be what Kubernetes takes (core.label_syntax: a CAPTenant record's labels are
copied onto the objects rendered for it); annotations together may not exceed the 256 KiB the
Kubernetes API server allows (`TotalAnnotationSizeLimitB`). The `data` (and `binaryData`,
`stringData`) of a ConfigMap or Secret must map keys Kubernetes takes to strings (a YAML `1: x`
has an integer key). The transforms can then rely on these fields, and the API server is never
handed an object it would refuse for its shape.
"""

from __future__ import annotations

from typing import Any

from btp_gitops.generator.core.label_syntax import (
    data_key_message,
    is_data_key,
    is_label_key,
    is_label_value,
    label_key_message,
    label_value_message,
)

MAX_ANNOTATIONS_BYTES = 256 * 1024
_DATA_FIELDS = {"ConfigMap": ("data", "binaryData"), "Secret": ("data", "stringData")}


def _string_map_problems(value: Any, path: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [(path, "must be a mapping of strings to strings")]
    problems = []
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            return [(path, f"keys must be non-empty strings, found {key!r:.40}")]
        if not isinstance(item, str):
            problems.append((f"{path}.{key}", f"must be a string, not {_type_name(item)}"))
    return problems


def _label_problems(labels: dict[str, str]) -> list[tuple[str, str]]:
    """Keys and values Kubernetes refuses; a bad key is shown at the map (a field path made of
    it would be unreadable), a bad value at its key."""
    problems = []
    for key, value in labels.items():
        if is_label_key(key) and is_label_value(value):
            continue  # the common case, answered from the caches
        if message := label_key_message(key):
            problems.append(("metadata.labels", message))
        elif message := label_value_message(value):
            problems.append((f"metadata.labels.{key}", message))
    return problems


def _data_problems(value: Any, path: str) -> list[tuple[str, str]]:
    """A ConfigMap's or Secret's data: keys Kubernetes takes, values strings (null is read as
    empty by the API server)."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [(path, f"must be a mapping of strings to strings, not {_type_name(value)}")]
    problems = []
    for key, item in value.items():
        if isinstance(key, str) and is_data_key(key) and (item is None or isinstance(item, str)):
            continue
        if isinstance(key, bool | int) and (item is None or isinstance(item, str)):
            # A plain `1:` or `on:` (YAML 1.1 reads an integer and a boolean): the API server's
            # YAML reader, as Helm's and kubectl's, turns such a key into its text ("1", "true").
            continue
        if not isinstance(key, str):
            problems.append((path, f"keys must be strings, found {_type_name(key)} {key!r:.40}"))
        elif message := data_key_message(key):
            problems.append((path, message))
        elif item is not None and not isinstance(item, str):
            problems.append((f"{path}.{key}", f"must be a string, not {_type_name(item)}"))
    return problems


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", list: "a list", dict: "a mapping"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


_WEBHOOK_CONFIGURATIONS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"})


def _list_of_mappings_problems(value: Any, path: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        return [(path, f"must be a list, not {_type_name(value)}")]
    return [
        (f"{path}[{index}]", f"must be a mapping, not {_type_name(item)}")
        for index, item in enumerate(value)
        if not isinstance(item, dict)
    ]


def shape_problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    """`metadata_problems`, and the fields of particular kinds the transforms read (webhooks)."""
    problems = metadata_problems(body)
    kind = body.get("kind")
    if isinstance(kind, str) and kind in _WEBHOOK_CONFIGURATIONS:
        problems += _list_of_mappings_problems(body.get("webhooks"), "webhooks")
    for field in _DATA_FIELDS.get(kind, ()) if isinstance(kind, str) else ():
        if (data := body.get(field)) is not None:
            problems += _data_problems(data, field)
    return problems


def metadata_problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, message) for every way the object's metadata is not what Kubernetes takes."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        return [("metadata", "must be a mapping")]
    problems: list[tuple[str, str]] = []
    name, generate_name = metadata.get("name"), metadata.get("generateName")
    if name is not None and not isinstance(name, str):
        problems.append(("metadata.name", f"must be a string, not {_type_name(name)}"))
    elif generate_name is not None and not isinstance(generate_name, str):
        problems.append(("metadata.generateName", f"must be a string, not {_type_name(generate_name)}"))
    elif not name and not generate_name:
        problems.append(("metadata.name", "required field is missing"))
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        problems.append(("metadata.namespace", f"must be a string, not {_type_name(namespace)}"))
    labels = metadata.get("labels")
    found = _string_map_problems(labels, "metadata.labels")
    problems += found or (_label_problems(labels) if isinstance(labels, dict) else [])
    annotations = metadata.get("annotations")
    found = _string_map_problems(annotations, "metadata.annotations")
    problems += found
    if not found and isinstance(annotations, dict):
        size = sum(len(k) + len(v) for k, v in annotations.items())  # characters: a lower bound
        if size * 4 > MAX_ANNOTATIONS_BYTES:  # a UTF-8 character takes at most 4 bytes
            size = sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in annotations.items())
        if size > MAX_ANNOTATIONS_BYTES:
            problems.append(
                (
                    "metadata.annotations",
                    f"{size / 1024:.0f} KiB in total: Kubernetes allows at most "
                    f"{MAX_ANNOTATIONS_BYTES // 1024} KiB of annotations per object",
                )
            )
    return problems


def object_ref_of(body: dict[str, Any]) -> str | None:
    """ "Kind namespace/name" of an object whose shape is wrong, from what of it is readable (None
    without a name): for its error message."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(name := metadata.get("name"), str) or not name:
        return None
    namespace = metadata.get("namespace")
    where = f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
    return f"{body.get('kind')} {where}"
