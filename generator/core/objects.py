"""Helpers over Kubernetes objects, which flow through the pipeline as plain dicts.

Plain dicts keep every filter cheap and every object serialisable as it is; the typed part is
`Manifest`, which pairs an object with where it came from so that errors and `# Source:`
comments can name it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

KubeObject = dict[str, Any]


@dataclass(slots=True)
class Manifest:
    """A Kubernetes object and its origin (a source file and document, or a chart template)."""

    body: KubeObject
    origin: str
    # The body's YAML as core.yamlio writes it, once known: set by the layout when it serialises
    # the object, or by the render cache for an object it holds (bytes of the same body). A filter
    # that changes the body after that must make a new Manifest (as flux_stages does).
    text: str | None = dataclasses.field(default=None, compare=False, repr=False)


class ObjectKey(NamedTuple):
    """Identity of an object in a cluster: group, kind, namespace, name."""

    group: str
    kind: str
    namespace: str
    name: str

    def describe(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def text(self) -> str:
        """The key as one string, each part but the last after its length: two keys have the same
        text only when they are the same (a render compares 80,000 of them; strings are cheap)."""
        group, kind, namespace = self.group, self.kind, self.namespace
        return f"{len(group)}:{group}{len(kind)}:{kind}{len(namespace)}:{namespace}{self.name}"


def group_of(api_version: str) -> str:
    """The API group of an apiVersion (`apps/v1` -> `apps`; the core group's `v1` -> "")."""
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def api_group(obj: KubeObject) -> str:
    return group_of(str(obj.get("apiVersion", "")))


def kind_of(obj: KubeObject) -> str:
    return str(obj.get("kind", ""))


def metadata(obj: KubeObject) -> dict[str, Any]:
    """The object's metadata mapping, created when absent so callers can set fields on it."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def name_of(obj: KubeObject) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def namespace_of(obj: KubeObject) -> str:
    meta = obj.get("metadata")
    return str(meta.get("namespace", "") or "") if isinstance(meta, dict) else ""


def object_key(obj: KubeObject) -> ObjectKey:
    return ObjectKey(api_group(obj), kind_of(obj), namespace_of(obj), name_of(obj))


def describe(obj: KubeObject) -> str:
    return object_key(obj).describe()


def _string_map(obj: KubeObject, field: str) -> dict[str, str]:
    """metadata.<field> (labels or annotations), created when absent so callers can set keys."""
    meta = metadata(obj)
    found = meta.get(field)
    if not isinstance(found, dict):
        found = {}
        meta[field] = found
    return found


def labels_of(obj: KubeObject) -> dict[str, str]:
    return _string_map(obj, "labels")


def annotations_of(obj: KubeObject) -> dict[str, str]:
    return _string_map(obj, "annotations")


def get_path(obj: Any, *path: str | int) -> Any:
    """Follow `path` through nested dicts/lists; None when any step is missing."""
    current = obj
    for step in path:
        if isinstance(step, int):
            if not isinstance(current, list) or step >= len(current):
                return None
        elif not isinstance(current, dict) or step not in current:
            return None
        current = current[step]
    return current


POD_TEMPLATE_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})


def pod_template(obj: KubeObject) -> dict[str, Any] | None:
    """The pod template of a workload object (CronJob included), or None."""
    kind = kind_of(obj)
    if kind in POD_TEMPLATE_KINDS:
        template = get_path(obj, "spec", "template")
    elif kind == "CronJob":
        template = get_path(obj, "spec", "jobTemplate", "spec", "template")
    else:
        return None
    return template if isinstance(template, dict) else None


def containers(obj: KubeObject) -> Iterator[dict[str, Any]]:
    """Every container and init container of a workload object."""
    template = pod_template(obj)
    spec = template.get("spec") if template else None
    if not isinstance(spec, dict):
        return
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if isinstance(container, dict):
                yield container


def format_field_path(path: tuple[str | int, ...] | list[str | int]) -> str:
    """`("spec", "modules", 2, "channel")` -> `spec.modules[2].channel`."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f".{step}" if text else str(step)
    return text or "(document root)"
