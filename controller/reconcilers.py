"""Which reconcilers a controller process runs, built from what its flags give it.

always                    btp-operator (finalizer, status, deprovisioning),
                          btp-module-resources (outdated module resources),
                          cap-tenant-finalizer / cap-version-finalizer / cap-application-finalizer
with --source-repo        cap-tenant-operations (outcomes to Git, subscription callbacks),
                          cap-tenant-status (Git status mirrored onto the cluster's CAPTenants),
                          cap-application-retirement (planned deletion of an application)
with --prometheus-url     cap-version-cleanup (also needs --source-repo: it commits removals)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from prometheus_client import CollectorRegistry

from btp_gitops.controller.btp_operator.outdated import OutdatedModuleResourcesReconciler
from btp_gitops.controller.btp_operator.reconciler import BtpOperatorReconciler
from btp_gitops.controller.btp_operator.settings import BtpOperatorSettings
from btp_gitops.controller.cap.application_retirement import ApplicationRetirementReconciler
from btp_gitops.controller.cap.callbacks import CallbackDelivery
from btp_gitops.controller.cap.deletion import CapDeletionSettings, cap_deletion_reconcilers
from btp_gitops.controller.cap.status_mirror import TenantStatusMirror, mark_deprovisioned
from btp_gitops.controller.cap.tenant_operations import SourceSnapshots, TenantOperationsReconciler
from btp_gitops.controller.cap.version_cleanup import CleanupSettings, VersionCleanupReconciler
from btp_gitops.controller.clients.prometheus import PrometheusClient
from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.controller.gitstore import SourceRepo
from btp_gitops.controller.kube import KubeClient
from btp_gitops.controller.runtime import Reconciler
from btp_gitops.controller.subscription.metrics import SubscriptionMetrics


@dataclass(frozen=True, slots=True)
class ReconcilerOptions:
    module_resources: Path
    source_repo: SourceRepo | None = None  # started by the caller before the reconcilers run
    prometheus_url: str | None = None
    cleanup_interval: float = 600.0
    hard_delete_timeout: float = 1200.0


def btp_operator_reconcilers(kube: KubeClient, options: ReconcilerOptions) -> list[Reconciler]:
    settings = BtpOperatorSettings(
        module_resources_dir=options.module_resources, hard_delete_timeout=options.hard_delete_timeout
    )
    return [BtpOperatorReconciler(kube, settings), OutdatedModuleResourcesReconciler(kube, settings)]


def cap_git_reconcilers(kube: KubeClient, repo: SourceRepo, registry: CollectorRegistry) -> list[Reconciler]:
    snapshots = SourceSnapshots(repo)
    mirror = TenantStatusMirror(kube, snapshots)
    delivery = CallbackDelivery(kube, count_callback=SubscriptionMetrics(registry).count_callback)
    operations = TenantOperationsReconciler(
        kube,
        snapshots,
        delivery,
        on_recorded=partial(mirror.mirror, fresh=True),
        on_deprovisioned=partial(mark_deprovisioned, kube),
    )
    return [operations, mirror, ApplicationRetirementReconciler(kube, snapshots)]


def build_reconcilers(
    kube: KubeClient, options: ReconcilerOptions, registry: CollectorRegistry
) -> list[Reconciler]:
    reconcilers = btp_operator_reconcilers(kube, options)
    reconcilers += cap_deletion_reconcilers(kube, CapDeletionSettings())
    if options.source_repo is not None:
        reconcilers += cap_git_reconcilers(kube, options.source_repo, registry)
    if options.prometheus_url:
        if options.source_repo is None:
            raise ConfigurationError(
                "version cleanup commits to the source repository: pass --source-repo too"
            )
        prometheus = PrometheusClient(options.prometheus_url)
        cleanup = CleanupSettings(interval=options.cleanup_interval)
        reconcilers.append(VersionCleanupReconciler(kube, options.source_repo, prometheus, cleanup))
    return reconcilers
