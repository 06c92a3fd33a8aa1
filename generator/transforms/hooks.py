"""Helm hooks in GitOps output.

Argo CD maps most `helm.sh/hook` annotations onto its own hooks, so hooks stay in the rendered
repo, except the ones that only make sense to `helm uninstall` (pre-delete, post-delete): a GitOps
tool would run them as ordinary resources on every sync, deleting what it just applied.
"""

from __future__ import annotations

from btp_gitops.generator.core.objects import Manifest, describe, get_path
from btp_gitops.generator.core.report import Level, Note

HOOK_ANNOTATION = "helm.sh/hook"
UNINSTALL_ONLY_HOOKS = frozenset({"pre-delete", "post-delete"})


def hook_phases(manifest: Manifest) -> set[str]:
    value = get_path(manifest.body, "metadata", "annotations", HOOK_ANNOTATION)
    if not isinstance(value, str):
        return set()
    return {phase.strip() for phase in value.split(",") if phase.strip()}


def split_hooks(manifests: list[Manifest], phases: frozenset[str]) -> tuple[list[Manifest], list[Manifest]]:
    """(manifests without hooks of `phases`, those hooks): any hook naming one of `phases` goes.

    This is BTP Manager's module-resources rule ("annotated as a hook containing pre-delete").
    """
    kept: list[Manifest] = []
    excluded: list[Manifest] = []
    for manifest in manifests:
        (excluded if hook_phases(manifest) & phases else kept).append(manifest)
    return kept, excluded


def drop_hook_phases(
    manifests: list[Manifest], phases: frozenset[str]
) -> tuple[list[Manifest], list[Manifest]]:
    """For Git output: remove `phases` from every hook; a hook left with no phase is excluded.

    A `pre-install,pre-delete` hook keeps running at install (Argo CD maps it to PreSync) but no
    longer at delete, where a GitOps sync would run it as an ordinary resource.
    """
    kept: list[Manifest] = []
    excluded: list[Manifest] = []
    for manifest in manifests:
        found = hook_phases(manifest)
        if not found & phases:
            kept.append(manifest)
        elif found - phases:
            remaining = [
                p.strip() for p in manifest.body["metadata"]["annotations"][HOOK_ANNOTATION].split(",")
            ]
            manifest.body["metadata"]["annotations"][HOOK_ANNOTATION] = ",".join(
                p for p in remaining if p and p not in phases
            )
            kept.append(manifest)
        else:
            excluded.append(manifest)
    return kept, excluded


def drop_uninstall_hooks(manifests: list[Manifest]) -> tuple[list[Manifest], list[Note]]:
    """`drop_hook_phases` with the uninstall-only phases, and a note for each hook left out.

    Every domain that renders a chart into Git reports the excluded hooks the same way, so a
    reviewer finds them under one note code whichever domain rendered the chart.
    """
    kept, excluded = drop_hook_phases(manifests, UNINSTALL_ONLY_HOOKS)
    notes = [
        Note(
            Level.INFO,
            "ExcludedHook",
            f"{manifest.origin} ({describe(manifest.body)})",
            "uninstall-only Helm hook left out of the GitOps output",
        )
        for manifest in excluded
    ]
    return kept, notes
