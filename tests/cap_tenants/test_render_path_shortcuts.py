"""The shortcuts taken on the render path for thousands of tenant apps write the same bytes as the
general code they skip.

Covers: `layout.kustomization` writes its text directly for plain file names and must equal what
the YAML emitter writes (names that YAML would read as something else, or that need quoting, take
the emitter); `yamlio` sorts mappings of string keys without its key function and must keep the
documented key order (apiVersion, kind, metadata, ..., the rest sorted, status last) for every
mix of keys; `layout.file_names` returns early when names are unique and must still refuse two
objects with the same identity. Real modules, real PyYAML; nothing is faked.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.layout import file_names, kustomization
from btp_gitops.generator.core.yamlio import dump_object

FILE_NAMES = [
    ["captenant-acme.yaml", "job-acme-upgrade-1-1-0-1-e6de7029.yaml", "virtualservice-acme.yaml"],
    ["deployment-a.b.c.yaml"],
    ["y.yaml", "null.yaml", "true.yaml", "e1.yaml"],
    ["1.yaml", "0o17.yaml"],  # start with a digit: the emitter decides
    ["yes", "on", "~", "null"],  # no dot: the emitter quotes them
    ["a: b.yaml", "#x.yaml", "- y.yaml"],
    [],
]


@pytest.mark.parametrize("names", FILE_NAMES)
def test_kustomization_text_is_what_the_emitter_writes(names: list[str]) -> None:
    expected = dump_object(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": sorted(names)}
    )
    text = kustomization(names)
    assert text == expected
    assert yaml.safe_load(text)["resources"] == sorted(names)


MAPPINGS: list[dict[Any, Any]] = [
    {"zeta": 1, "alpha": 2, "Mid": 3},
    {"status": {}, "spec": {}, "metadata": {}, "kind": "K", "apiVersion": "v1", "extra": 1},
    {"data": 1, "b": 2, "a": 3},
    {10: "ten", 9: "nine", 100: "hundred"},  # integer keys sort as text, as before
    {1: "one", "a": "text", 2.5: "float"},  # mixed key types sort by type name, then text
]


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_mapping_keys_keep_the_documented_order(mapping: dict[Any, Any]) -> None:
    leading = ("apiVersion", "kind", "metadata", "name", "namespace", "spec", "data", "stringData")

    def documented(key: Any) -> tuple[int, str, str]:
        if key == "status":
            return (len(leading) + 1, "", "")
        rank = leading.index(key) if key in leading else len(leading)
        return (rank, type(key).__name__, str(key))

    written = [line.split(":")[0] for line in dump_object(mapping).splitlines() if not line.startswith(" ")]
    assert written == [
        str(key) if isinstance(key, str) else yaml.safe_dump(key).split("\n")[0]
        for key in sorted(mapping, key=documented)
    ]


def test_file_names_still_refuse_the_same_object_twice() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}}
    assert file_names([config_map, {**config_map, "metadata": {"name": "b", "namespace": "x"}}]) == [
        "configmap-a.yaml",
        "configmap-b.yaml",
    ]
    with pytest.raises(ValueError, match=r"objects with the same identity: configmap\.core-x-a"):
        file_names([config_map, dict(config_map)])
