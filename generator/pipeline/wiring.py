"""The wiring of one rendered cluster (see generator.wiring.objects), from its rendered apps."""

from __future__ import annotations

from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.pipeline.cached_sources import ReusedApp
from btp_gitops.generator.transforms.ordering import flux_stages
from btp_gitops.generator.wiring.objects import FLUX, TargetOptions, wiring_files


def app_stages(app: AppRender) -> list[str]:
    """One app's stage directories in sync order: the order of its Kustomizations' dependsOn."""
    if isinstance(app, ReusedApp) and app.packed.stages is not None:
        return list(app.packed.stages)  # as the render that packed it laid it out
    ordered = sorted({stage for _, stage in flux_stages(app.manifests)})
    return [stage.directory for stage in ordered]


def flux_app_stages(apps: list[AppRender]) -> dict[str, list[str]]:
    """Each app's stage directories in sync order: the order of its Kustomizations' dependsOn."""
    return {app.app: app_stages(app) for app in apps if app.object_count}


def cluster_wiring(cluster: str, apps: list[AppRender], target: TargetOptions) -> dict[str, str]:
    """Files relative to `clusters/<cluster>/`; none for Argo CD without --emit-wiring."""
    if target.target == FLUX:
        stages = flux_app_stages(apps)
    else:  # Argo CD: the app names only (their Applications' names are checked)
        stages = {app.app: [] for app in apps if app.object_count}
    directories = {app.app: app_directory(app.app, app.group) for app in apps if app.group is not None}
    return wiring_files(cluster, stages, target, directories)
