"""Locate the Kubernetes tooling built by ``scripts/build-tools.sh``.

The script builds versioned binaries, in the per-user cache ``$CACHE``
(``tests.support.cache``), under ``$CACHE/tools/<tool>-<version>/``
and points ``$CACHE/tools/bin/<tool>`` at the current version.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.cache import cache_dir
from tests.support.tiers import require_marker

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = cache_dir() / "tools"
TOOLS_BIN = TOOLS_DIR / "bin"
BUILD_SCRIPT = REPO_ROOT / "scripts" / "build-tools.sh"

TOOL_NAMES = frozenset(
    {
        "kube-apiserver",
        "etcd",
        "helm3",
        "helm4",
        "kustomize",
        "actionlint",
        "source-controller",
        "kustomize-controller",
    }
)
# The API server's own binaries belong to the `kube` tier; every other tool to `tools`.
KUBE_TOOLS = frozenset({"kube-apiserver", "etcd"})


class ToolNotBuiltError(FileNotFoundError):
    """A tool has not been built into ``$CACHE/tools`` yet."""


def tool_path(name: str) -> Path:
    """Return the path of the cached binary for ``name``.

    The symlink under ``$CACHE/tools/bin`` is resolved, so the returned path
    names the version-keyed binary and stays valid if the symlink is repointed
    while a test session runs.

    Raises ``ValueError`` for an unknown tool and ``ToolNotBuiltError`` when the
    binary has not been built.
    """
    if name not in TOOL_NAMES:
        known = ", ".join(sorted(TOOL_NAMES))
        raise ValueError(f"unknown tool {name!r}; known tools: {known}")
    require_marker("kube" if name in KUBE_TOOLS else "tools", f"{name} (scripts/build-tools.sh)")
    link = TOOLS_BIN / name
    try:
        binary = link.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):
        binary = None
    if binary is None or not binary.is_file() or not os.access(binary, os.X_OK):
        rel_script = BUILD_SCRIPT.relative_to(REPO_ROOT)
        raise ToolNotBuiltError(
            f"{name} is not built (expected an executable at {link}). "
            f"Run `{rel_script} {name}` from {REPO_ROOT} "
            f"(or `{rel_script}` to build every tool)."
        )
    return binary
