"""The cutover plan of a few objects, rendered and live, as the plan tests make it: objects by kind and
name, and the plan of one app's against the cluster's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from btp_gitops.generator.core.objects import KubeObject, object_key
from btp_gitops.generator.migration import LiveObject
from btp_gitops.generator.migration.plan import (
    CutoverPlan,
    RenderedObject,
    plan_cutover,
)

APP = "cap.shop.bookshop"


def obj(api_version: str, kind: str, name: str, namespace: str = "shop", **fields: Any) -> KubeObject:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata.update(fields.pop("metadata", {}))
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def plan(rendered: list[KubeObject], live: list[KubeObject], owned: Sequence[KubeObject] = ()) -> CutoverPlan:
    rendered_objects = [
        RenderedObject(APP, f"{APP}/{o['kind'].lower()}-{o['metadata']['name']}.yaml", o) for o in rendered
    ]
    live_map = {object_key(o): LiveObject(o, "cluster (test)") for o in live}
    return plan_cutover(
        "demo", "cluster (test)", rendered_objects, live_map, [LiveObject(o, "cluster (test)") for o in owned]
    )


def only(result: CutoverPlan) -> Any:
    assert len(result.entries) == 1, result.entries
    return result.entries[0]
