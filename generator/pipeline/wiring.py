"""The wiring of one rendered cluster (see generator.wiring.objects), from its rendered apps."""

from __future__ import annotations

from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.transforms.ordering import flux_stages
from btp_gitops.generator.wiring.objects import FLUX, TargetOptions, wiring_files


def flux_app_stages(apps: list[AppRender]) -> dict[str, list[str]]:
    """Each app's stage directories in sync order: the order of its Kustomizations' dependsOn."""
    stages = {}
    for app in apps:
        if app.manifests:
            ordered = sorted({stage for _, stage in flux_stages(app.manifests)})
            stages[app.app] = [stage.directory for stage in ordered]
    return stages


def cluster_wiring(cluster: str, apps: list[AppRender], target: TargetOptions) -> dict[str, str]:
    """Files relative to `clusters/<cluster>/`; none for Argo CD without --emit-wiring."""
    if target.target == FLUX:
        stages = flux_app_stages(apps)
    else:  # Argo CD: the app names only (their Applications' names are checked)
        stages = {app.app: [] for app in apps if app.manifests}
    directories = {app.app: app_directory(app.app, app.group) for app in apps if app.group is not None}
    return wiring_files(cluster, stages, target, directories)
