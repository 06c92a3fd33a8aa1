"""Pinning of volatile chart output (random ids, checksums over them, generated keys).

A chart may call `uuidv4`, `randAlphaNum` or `genCA`; rendering it twice then gives different
bytes, and a GitOps repo would change on every render. We render twice, compare the two results
field by field, and replace every string that differs with a value derived from where it is (the
template, the object, the field path), so it is stable across renders yet keeps its shape: a UUID
stays a UUID, a hex digest stays hex of the same length, base64 stays base64. Anything that
differs in structure (a document or key that comes and goes) cannot be pinned and is an error.
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.generator.core.errors import NondeterministicChart
from btp_gitops.generator.core.objects import Manifest, describe, format_field_path

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-f]+$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_PIN_NAMESPACE = uuid.UUID("6b1c7a2e-3f0d-5e4b-9a8c-2d1e0f3b4a59")


@dataclass(frozen=True, slots=True)
class PinnedValue:
    origin: str
    object_ref: str
    field_path: str
    # Where and what was pinned, to tell later whether a transform overwrote it.
    path: tuple[str | int, ...] = field(default=(), compare=False)
    value: str = field(default="", compare=False)


def pinned_value(seed: str, original: str) -> str:
    """A stable stand-in for `original`, derived from `seed`, of the same shape."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    if _UUID.match(original):
        return str(uuid.uuid5(_PIN_NAMESPACE, seed))
    if _HEX.match(original):
        return (digest * (len(original) // len(digest) + 1))[: len(original)]
    if len(original) % 4 == 0 and len(original) >= 8 and _BASE64.match(original):
        return base64.b64encode(f"btp-gitops-pinned-{digest[:16]}".encode()).decode()
    return f"btp-gitops-pinned-{digest[:16]}"


def _pin(
    first: Any, second: Any, path: list[str | int], seed: str, found: list[tuple[list[str | int], str]]
) -> Any:
    if isinstance(first, dict) and isinstance(second, dict):
        if first.keys() != second.keys():
            raise _StructureDiffersError(path)
        return {key: _pin(first[key], second[key], [*path, key], seed, found) for key in first}
    if isinstance(first, list) and isinstance(second, list):
        if len(first) != len(second):
            raise _StructureDiffersError(path)
        return [
            _pin(a, b, [*path, i], seed, found) for i, (a, b) in enumerate(zip(first, second, strict=True))
        ]
    if first == second:
        return first
    if isinstance(first, str) and isinstance(second, str):
        stand_in = pinned_value(f"{seed}:{format_field_path(path)}", first)
        found.append((path, stand_in))
        return stand_in
    raise _StructureDiffersError(path)


class _StructureDiffersError(Exception):
    def __init__(self, path: list[str | int]) -> None:
        super().__init__(format_field_path(path))
        self.path = path


def pin_volatile_values(
    first: list[Manifest], second: list[Manifest], chart: str
) -> tuple[list[Manifest], list[PinnedValue]]:
    """Compare two renders of the same chart; return the first with volatile strings pinned."""
    if [m.origin for m in first] != [m.origin for m in second]:
        raise NondeterministicChart(
            f"chart {chart} renders a different set of documents each time; pin its random inputs with values"
        )
    pinned: list[PinnedValue] = []
    result: list[Manifest] = []
    for a, b in zip(first, second, strict=True):
        ref = describe(a.body)
        fields: list[tuple[list[str | int], str]] = []
        try:
            body = _pin(a.body, b.body, [], f"{chart}:{a.origin}:{ref}", fields)
        except _StructureDiffersError as error:
            raise NondeterministicChart(
                f"chart {chart}: {a.origin} ({ref}) changes shape between two renders at "
                f"{error}; pin its random inputs with values"
            ) from error
        pinned.extend(
            PinnedValue(a.origin, ref, format_field_path(path), tuple(path), value) for path, value in fields
        )
        result.append(Manifest(body, a.origin))
    return result, pinned


def value_at(body: Any, path: tuple[str | int, ...]) -> Any:
    """The value at `path` in an object, or None where the path no longer leads anywhere."""
    for step in path:
        if isinstance(step, str) and isinstance(body, dict):
            body = body.get(step)
        elif isinstance(step, int) and isinstance(body, list) and 0 <= step < len(body):
            body = body[step]
        else:
            return None
    return body


def still_pinned(pinned: list[PinnedValue], final: list[Manifest]) -> list[PinnedValue]:
    """The pinned values that reach the output: a later step (the config's cluster id, say) may have
    overwritten a value the chart generated, and then it is not volatile output any more."""
    by_origin: dict[str, list[Manifest]] = {}
    for manifest in final:
        by_origin.setdefault(manifest.origin, []).append(manifest)
    return [
        p for p in pinned if any(value_at(m.body, p.path) == p.value for m in by_origin.get(p.origin, []))
    ]
