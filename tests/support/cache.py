"""The per-user cache of the Go-built test tools and the fetched CRDs, shared by every clone."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where scripts/build-tools.sh and scripts/fetch-crds.sh keep their output (per user)."""
    explicit = os.environ.get("BTP_GITOPS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "btp-gitops"
