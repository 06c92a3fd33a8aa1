"""Loading the JSON Schemas of schemas/ from disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

from generator.core.validation import SchemaRegistry


def default_schema_dir() -> Path:
    """schemas/ of this checkout, or $BTP_GITOPS_SCHEMAS when set (for installs outside a checkout)."""
    override = os.environ.get("BTP_GITOPS_SCHEMAS")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "schemas"


def load_schema_registry(directory: Path | None = None) -> SchemaRegistry:
    root = directory or default_schema_dir()
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.json"))]
    return SchemaRegistry(documents)
