"""Loading the JSON Schemas of schemas/ from disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

from btp_gitops.generator.core.validation import SchemaRegistry
from btp_gitops.generator.io import bundled


def default_schema_dir() -> Path:
    """The schemas shipped with btp-gitops, or $BTP_GITOPS_SCHEMAS when set (a schema under development)."""
    override = os.environ.get("BTP_GITOPS_SCHEMAS")
    if override:
        return Path(override)
    return bundled.schema_dir()


def load_schema_registry(directory: Path | None = None) -> SchemaRegistry:
    root = directory or default_schema_dir()
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.json"))]
    return SchemaRegistry(documents)
