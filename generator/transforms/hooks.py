"""Helm hooks in GitOps output.

Argo CD maps most `helm.sh/hook` annotations onto its own hooks, so hooks stay in the rendered
repo, except the ones that only make sense to `helm uninstall` (pre-delete, post-delete): a GitOps
tool would run them as ordinary resources on every sync, deleting what it just applied.
"""

from __future__ import annotations

from generator.core.objects import Manifest, get_path

HOOK_ANNOTATION = "helm.sh/hook"
UNINSTALL_ONLY_HOOKS = frozenset({"pre-delete", "post-delete"})


def hook_phases(manifest: Manifest) -> set[str]:
    value = get_path(manifest.body, "metadata", "annotations", HOOK_ANNOTATION)
    if not isinstance(value, str):
        return set()
    return {phase.strip() for phase in value.split(",") if phase.strip()}


def split_hooks(manifests: list[Manifest], phases: frozenset[str]) -> tuple[list[Manifest], list[Manifest]]:
    """(manifests without hooks of `phases`, those hooks)."""
    kept: list[Manifest] = []
    excluded: list[Manifest] = []
    for manifest in manifests:
        (excluded if hook_phases(manifest) & phases else kept).append(manifest)
    return kept, excluded
