"""Small helpers for the unit tests: YAML text in, Manifests out, and back.

Inputs are parsed with PyYAML's own safe loader (not the product's), so a test's input does not
depend on the code under test.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from btp_gitops.generator.core.objects import Manifest, describe

ORIGIN = "chart/templates/all.yaml"


def manifests(text: str, origin: str = ORIGIN) -> list[Manifest]:
    """Every non-empty document of `text` as a Manifest from `origin`."""
    return [Manifest(body, origin) for body in yaml.safe_load_all(text) if body is not None]


def bodies(found: list[Manifest]) -> list[dict[str, Any]]:
    return [copy.deepcopy(m.body) for m in found]


def documents(text: str) -> list[Any]:
    return [body for body in yaml.safe_load_all(text) if body is not None]


def refs(found: list[Manifest]) -> list[str]:
    """`Kind namespace/name` of every manifest, in order."""
    return [describe(m.body) for m in found]
