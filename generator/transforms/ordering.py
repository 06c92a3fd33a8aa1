"""Sync ordering of an app's objects: semantic stages, and how a GitOps tool expresses them.

Every object of an app belongs to one stage, and a stage is applied only once the stages before
it are applied and healthy:

    Stage.CRDS              CustomResourceDefinitions and Namespaces: what any other object may need
    Stage.RESOURCES         the app's own objects: RBAC, ConfigMaps, workloads, Services, webhooks...
    Stage.CUSTOM_RESOURCES  objects of kinds that a CRD of the same app defines (a Kyma module's
                            default CR): after their CRD exists and the operator serving it is up
    Stage.RELEASE_JOBS      one-off Jobs of a release that run one after another, each a step of
                            its own (CAP content deployers, in `contentJobs` order)
    Stage.ROUTING           objects that switch traffic (VirtualServices): once the workloads and
                            jobs they lead to are healthy

Within a stage, objects may be given ordered steps (0, 1, 2, ...): step n+1 waits for step n.

Custom resources of kinds defined elsewhere (cert-manager Certificates, ExternalSecrets) stay in
RESOURCES on purpose: a workload may wait for them (a Secret an ExternalSecret writes), and
holding them back until that workload is healthy would deadlock the sync.

How each tool expresses the stages (the stages are the contract; only this mapping is per tool):

- Argo CD: the annotation `argocd.argoproj.io/sync-wave`, CRDS -1, RESOURCES 0, CUSTOM_RESOURCES 1,
  RELEASE_JOBS 10 + step, ROUTING 100 (+ step); a stage's steps must stay below the next stage's wave.
  Wave 0 is Argo CD's default, so RESOURCES objects carry no annotation. Argo CD applies a wave
  only when the previous one is healthy, and skips the dry run of objects whose CRD is in the
  same sync.
- Flux (`render --target flux`): one directory per stage inside the app, `<app>/<NN>-<slug>/`
  with `NN` the stage value times ten (`00-crds`, `10-resources`, `20-custom-resources`), each
  synced by a Flux Kustomization with `wait: true` that `dependsOn` the previous stage's; a step
  adds `-<step>` (`30-release-jobs-1`). Domains keep annotating Argo CD waves; the Flux layout
  reads the stage back from the wave and removes the annotation, so both targets write the same
  object bytes apart from it (`flux_stages`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import IntEnum
from typing import NamedTuple

from btp_gitops.generator.core.errors import InvalidSpec, Problem
from btp_gitops.generator.core.objects import (
    KubeObject,
    Manifest,
    annotations_of,
    api_group,
    describe,
    get_path,
    kind_of,
)

ARGOCD_SYNC_WAVE = "argocd.argoproj.io/sync-wave"

_FOUNDATION_KINDS = frozenset({("apiextensions.k8s.io", "CustomResourceDefinition"), ("", "Namespace")})


class Stage(IntEnum):
    """Sync stages of one app, in the order they are applied."""

    CRDS = 0
    RESOURCES = 1
    CUSTOM_RESOURCES = 2
    RELEASE_JOBS = 3
    ROUTING = 4

    @property
    def slug(self) -> str:
        return self.name.lower().replace("_", "-")


_ARGOCD_WAVES = {
    Stage.CRDS: -1,
    Stage.RESOURCES: 0,
    Stage.CUSTOM_RESOURCES: 1,
    Stage.RELEASE_JOBS: 10,
    Stage.ROUTING: 100,
}


def defined_kinds(objects: Iterable[KubeObject]) -> frozenset[tuple[str, str]]:
    """(group, kind) of every CustomResourceDefinition among `objects`."""
    found = set()
    for obj in objects:
        if (api_group(obj), kind_of(obj)) != ("apiextensions.k8s.io", "CustomResourceDefinition"):
            continue
        group = get_path(obj, "spec", "group")
        kind = get_path(obj, "spec", "names", "kind")
        if isinstance(group, str) and isinstance(kind, str):
            found.add((group, kind))
    return frozenset(found)


def stage_of(obj: KubeObject, own_kinds: frozenset[tuple[str, str]]) -> Stage:
    """The stage of one object, given the kinds the app's own CRDs define."""
    identity = (api_group(obj), kind_of(obj))
    if identity in _FOUNDATION_KINDS:
        return Stage.CRDS
    if identity in own_kinds:
        return Stage.CUSTOM_RESOURCES
    return Stage.RESOURCES


def assign_stages(manifests: list[Manifest]) -> list[tuple[Manifest, Stage]]:
    """Every manifest of one app with its stage."""
    own_kinds = defined_kinds(m.body for m in manifests)
    return [(manifest, stage_of(manifest.body, own_kinds)) for manifest in manifests]


def stage_steps(stage: Stage) -> int:
    """How many ordered steps `stage` holds before its waves would reach the next stage's."""
    later = [wave for other, wave in _ARGOCD_WAVES.items() if other > stage]
    return min(later) - _ARGOCD_WAVES[stage] if later else 1000


def argocd_sync_wave(stage: Stage, step: int = 0) -> int:
    if not 0 <= step < stage_steps(stage):
        raise ValueError(f"step {step} out of range for stage {stage.name} ({stage_steps(stage)} steps)")
    return _ARGOCD_WAVES[stage] + step


def annotate_argocd_stage(manifest: Manifest, stage: Stage, step: int = 0) -> Manifest:
    """Put one object in `stage` (at `step`), for domains that know an object's stage by its role."""
    wave = argocd_sync_wave(stage, step)
    if wave != 0:
        annotations_of(manifest.body)[ARGOCD_SYNC_WAVE] = str(wave)
    return manifest


def annotate_argocd_sync_waves(manifests: list[Manifest]) -> list[Manifest]:
    """Set the sync-wave annotation of every object outside the default wave, in place."""
    for manifest, stage in assign_stages(manifests):
        wave = argocd_sync_wave(stage)
        if wave != 0:
            annotations_of(manifest.body)[ARGOCD_SYNC_WAVE] = str(wave)
    return manifests


def stage_of_sync_wave(wave: int) -> tuple[Stage, int]:
    """The stage and step an Argo CD sync wave stands for: the inverse of `argocd_sync_wave`."""
    for stage in sorted(Stage, reverse=True):
        step = wave - _ARGOCD_WAVES[stage]
        if 0 <= step < stage_steps(stage):
            return stage, step
    raise ValueError(f"sync wave {wave} is outside the waves of every stage")


class FluxStage(NamedTuple):
    """One stage (and step) of an app in the Flux target; sorts in sync order."""

    stage: Stage
    step: int = 0

    @property
    def directory(self) -> str:
        """`<NN>-<slug>[-<step>]`, the stage's directory inside the app."""
        base = f"{self.stage.value * 10:02d}-{self.stage.slug}"
        return f"{base}-{self.step}" if self.step else base


def stage_of_directory(directory: str) -> FluxStage | None:
    """The Flux stage whose directory inside an app is `directory`, or None: how an app laid out
    for Flux before is read back into stages (the inverse of `FluxStage.directory`)."""
    match = re.fullmatch(r"(\d{2})-([a-z-]+?)(?:-(\d+))?", directory)
    if match is None:
        return None
    for stage in Stage:
        step = int(match.group(3) or 0)
        if f"{stage.value * 10:02d}" == match.group(1) and stage.slug == match.group(2):
            return FluxStage(stage, step) if step < stage_steps(stage) else None
    return None


def _without_sync_wave(manifest: Manifest) -> Manifest:
    """A copy of the manifest without the sync-wave annotation; the original is left as it is."""
    meta = dict(manifest.body["metadata"])
    meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != ARGOCD_SYNC_WAVE}
    return Manifest({**manifest.body, "metadata": meta}, manifest.origin)


def _sync_wave(manifest: Manifest) -> int:
    text = get_path(manifest.body, "metadata", "annotations", ARGOCD_SYNC_WAVE)
    if text is None:
        return 0
    try:
        return int(text)
    except ValueError:
        raise InvalidSpec(
            "an object has a sync wave that is not a number",
            [Problem(manifest.origin, f"{ARGOCD_SYNC_WAVE}: {text!r}", object_ref=describe(manifest.body))],
        ) from None


def flux_stages(manifests: list[Manifest]) -> list[tuple[Manifest, FluxStage]]:
    """Every manifest of one app with its Flux stage, the sync-wave annotation removed.

    The stage comes from the wave the domain annotated (every object is already in its stage
    for Argo CD), so both targets share one ordering decision.
    """
    placed = []
    problems = []
    for manifest in manifests:
        wave = _sync_wave(manifest)
        try:
            stage, step = stage_of_sync_wave(wave)
        except ValueError as error:
            problems.append(Problem(manifest.origin, str(error), object_ref=describe(manifest.body)))
            continue
        has_wave = get_path(manifest.body, "metadata", "annotations", ARGOCD_SYNC_WAVE) is not None
        placed.append((_without_sync_wave(manifest) if has_wave else manifest, FluxStage(stage, step)))
    if problems:
        raise InvalidSpec("objects have sync waves without a Flux stage", problems)
    return placed


# Helm (post-render). Helm applies a release's plain objects at once, in its kind order, and then
# runs its hooks one by one in weight order, waiting for each hook Job to finish; only hooks are
# ordered. A post-rendered app therefore keeps its stages as follows (docs/gitops/post-render.md):
#
# - CRDS, RESOURCES, ROUTING: plain objects of the release (Helm's kind order puts CRDs and
#   Namespaces first; `--wait` holds the hooks until the workloads are ready).
# - CUSTOM_RESOURCES: a `post-install` hook. Helm resolves every plain object's kind before it
#   creates any, so a custom resource whose CRD is in the same release cannot be a plain object;
#   not `post-upgrade`, because Helm deletes a hook before it creates it again, and deleting a
#   module's custom resource makes its operator remove what it manages.
# - RELEASE_JOBS step n: a `post-install,post-upgrade` hook Job, weight tier * 1000 + its Argo CD
#   wave, so content Jobs run one after another after the workloads, and the apps of a later tier
#   (CAP tenants, tier 1) after every Job of the first (their application's version).
#
# The sync wave itself is removed: Helm does not read it.
HELM_HOOK = "helm.sh/hook"
HELM_HOOK_WEIGHT = "helm.sh/hook-weight"
HELM_HOOK_DELETE_POLICY = "helm.sh/hook-delete-policy"
_HELM_TIER_WEIGHTS = 1000
_HELM_HOOKS = {
    Stage.CUSTOM_RESOURCES: "post-install",
    Stage.RELEASE_JOBS: "post-install,post-upgrade",
}


def helm_hooks(manifests: list[Manifest], tier: int = 0) -> list[Manifest]:
    """An app's objects for a Helm release: the stages Helm needs ordered as hooks, the sync wave
    removed. `tier` orders apps: every hook of tier n runs before those of tier n + 1."""
    result = []
    for manifest, stage in flux_stages(manifests):
        hook = _HELM_HOOKS.get(stage.stage)
        if hook is not None:
            annotations = annotations_of(manifest.body)
            annotations[HELM_HOOK] = hook
            weight = tier * _HELM_TIER_WEIGHTS + argocd_sync_wave(stage.stage, stage.step)
            annotations[HELM_HOOK_WEIGHT] = str(weight)
            annotations[HELM_HOOK_DELETE_POLICY] = "before-hook-creation"
        result.append(manifest)
    return result
