"""Every field of every object, replaced by a value of another type: import_kyma and
import_btp_operator never raise, account for every object, and never write a credential."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from btp_gitops.generator.migration import ImportResult, LiveObject, import_btp_operator, import_kyma
from tests.migration.lifecycle_manager_objects import changed, runtime_objects
from tests.migration.result_files import accounted_for, serialized
from tests.migration.test_btp_operator_import import (
    CREDENTIALS,
    btp_operator,
    manager_secret,
    operator_configmap,
)

ODD_VALUES: tuple[Any, ...] = (None, 7, "../..", [], {}, True, "a\nb: c")


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield (*prefix, index)
            yield from _paths(item, (*prefix, index))


# Picked by kind whatever their name; the Secret and the ConfigMap are picked by their name.
_PICKED_BY_KIND = ("Kyma", "ModuleTemplate", "ModuleReleaseMeta", "BtpOperator")


def _picked(variant: list[LiveObject], originals: list[LiveObject]) -> list[LiveObject]:
    """The objects of a variant the translator must account for: those still of their kind (a
    changed apiVersion or kind makes another operator's object), and by name where it picks so."""
    picked = []
    for live, original in zip(variant, originals, strict=True):
        same_kind = (live.api_version, live.kind) == (original.api_version, original.kind)
        same_name = (live.namespace, live.name) == (original.namespace, original.name)
        if same_kind and (same_name or live.kind in _PICKED_BY_KIND):
            picked.append(live)
    return picked


def _variants(objects: list[LiveObject]) -> Iterator[list[LiveObject]]:
    for index, live in enumerate(objects):
        for path in _paths(live.body):
            if (
                path[0] == "descriptor"
                or path[:2] == ("spec", "descriptor")
                or path[:2] == ("metadata", "managedFields")
            ):
                continue  # carried whole, never read field by field
            for value in ODD_VALUES:
                variant = list(objects)
                variant[index] = changed(live, path, value)
                yield variant


TRANSLATORS: list[
    tuple[str, Callable[[Sequence[LiveObject]], ImportResult], Callable[[], list[LiveObject]]]
] = [
    ("kyma", import_kyma, lambda: runtime_objects()[:4]),
    ("btp-operator", import_btp_operator, lambda: [btp_operator(), manager_secret(), operator_configmap()]),
]


@pytest.mark.parametrize(("name", "translate", "objects"), TRANSLATORS, ids=[t[0] for t in TRANSLATORS])
def test_any_value_anywhere_is_imported_or_listed_never_raised(
    name: str,
    translate: Callable[[Sequence[LiveObject]], ImportResult],
    objects: Callable[[], list[LiveObject]],
) -> None:
    tried = 0
    originals = objects()
    for variant in _variants(originals):
        result = translate(variant)
        tried += 1
        assert not accounted_for(_picked(variant, originals), result), (name, variant)
        text = serialized(result)
        for value in CREDENTIALS.values():
            assert value not in text
        for imported in result.files:
            assert imported.path.startswith(f"{name}/")
            for document in imported.documents:
                assert all("\n" not in line for line in document.comment)
    assert tried > 100
