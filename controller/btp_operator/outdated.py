"""OutdatedModuleResourcesReconciler: removes module objects that an older chart version left behind.

A GitOps tool that prunes removes such objects itself; one that applies without pruning (or a
cluster that BTP Manager ran before) keeps them. Like BTP Manager, a periodic sweep deletes:

- objects labelled `app.kubernetes.io/managed-by=btp-manager` of every kind in `apply/` and
  `delete/` whose `chart-version` label is set and differs from the current version, unless
  `apply/` holds their identity (group, kind, namespace, name): those the current render updates;
- the objects `delete/to-delete.yml` lists, but only when the live object carries the module
  label and not the current `chart-version`: a user's object of the same name is never touched.

The current version is that of the controller's `module-resources/`. The sweep runs only once the
cluster runs it too (the operator Deployment carries that `chart-version` and is Available):
until the GitOps tool has applied the new render, every live object still carries the old
version and would look outdated. Objects the current render adds beside the chart's (an
ExternalSecret, Certificates) carry the current version, so they are never candidates.

The key is fixed (one sweep for the cluster); BtpOperator and operator Deployment changes queue
it, and it requeues itself every `outdated_sweep_interval` while the module is installed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from btp_gitops.controller.btp_operator.module_resources import (
    MODULE_SELECTOR,
    ModuleResources,
    is_module_object,
    load_module_resources,
)
from btp_gitops.controller.btp_operator.reconciler import deployment_available
from btp_gitops.controller.btp_operator.settings import BtpOperatorSettings
from btp_gitops.controller.errors import ControllerError, TemporaryError
from btp_gitops.controller.events import NORMAL, WARNING, record_event
from btp_gitops.controller.kube import BTP_OPERATOR, DEPLOYMENT, KubeClient, KubeObject, NotFound, Resource
from btp_gitops.controller.runtime import DONE, ObjectKey, Outcome, Watch
from btp_gitops.generator.core import name_of, namespace_of, object_key
from btp_gitops.generator.domains.btp_operator import CHART_VERSION_LABEL, labels_on

log = logging.getLogger("btp_gitops.controller.btp_operator")

SWEEP_KEY = ObjectKey("", "outdated-module-resources")
DELETED_REASON = "OutdatedResourcesDeleted"
FAILED_REASON = "DeletionOfOrphanedResourcesFailed"


@dataclass(slots=True)
class SweepResult:
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def key_of(settings: BtpOperatorSettings) -> str:
    return f"{settings.namespace}/{settings.name}"


def _sweep_key(_: KubeObject) -> tuple[ObjectKey, ...]:
    return (SWEEP_KEY,)


def _summary(items: list[str]) -> str:
    return ", ".join(items[:10]) + (f" and {len(items) - 10} more" if len(items) > 10 else "")


class OutdatedModuleResourcesReconciler:
    name = "outdated-module-resources"

    def __init__(self, kube: KubeClient, settings: BtpOperatorSettings) -> None:
        self._kube = kube
        self._settings = settings

    @property
    def watches(self) -> Sequence[Watch]:
        namespace = self._settings.namespace
        return (
            Watch(BTP_OPERATOR, namespace=namespace, to_keys=_sweep_key),
            Watch(DEPLOYMENT, namespace=namespace, to_keys=self._operator_key),
        )

    def _operator_key(self, obj: KubeObject) -> tuple[ObjectKey, ...]:
        return (SWEEP_KEY,) if name_of(obj) == self._settings.operator_deployment else ()

    def reconcile(self, key: ObjectKey) -> Outcome:
        settings = self._settings
        module_cr = self._kube.get(BTP_OPERATOR, settings.name, settings.namespace)
        if module_cr is None or module_cr["metadata"].get("deletionTimestamp"):
            log.info("outdated module resources: no BtpOperator %s in use", key_of(settings))
            return DONE
        module = load_module_resources(settings.module_resources_dir)
        waiting = self._not_yet_at(module.chart_version)
        if waiting:
            log.info("outdated module resources: sweep waits: %s", waiting)
            return Outcome(requeue_after=settings.outdated_sweep_interval)
        result = self.sweep(module)
        self._report(module_cr, module.chart_version, result)
        if result.failed:
            raise TemporaryError(f"{len(result.failed)} outdated module resource(s) not deleted", 10.0)
        return Outcome(requeue_after=settings.outdated_sweep_interval)

    def _not_yet_at(self, version: str) -> str | None:
        """Why the cluster does not run chart version `version` yet, or None when it does."""
        settings = self._settings
        deployment = self._kube.get(DEPLOYMENT, settings.operator_deployment, settings.namespace)
        where = f"Deployment {settings.namespace}/{settings.operator_deployment}"
        if deployment is None:
            return f"{where} not found"
        live = labels_on(deployment).get(CHART_VERSION_LABEL)
        if live != version:
            return f"{where} runs chart version {live or '(none)'}, the module resources are {version}"
        if not deployment_available(deployment):
            return f"{where} is not Available yet"
        return None

    def sweep(self, module: ModuleResources) -> SweepResult:
        result = SweepResult()
        for resource, obj in self._candidates(module):
            what = resource.describe(namespace_of(obj) or None, name_of(obj))
            try:
                if self._kube.delete(resource, name_of(obj), namespace_of(obj) or None):
                    version = labels_on(obj).get(CHART_VERSION_LABEL)
                    log.info("outdated module resources: deleted %s (chart-version %s)", what, version)
                    result.deleted.append(what)
            except ControllerError as error:
                log.warning("outdated module resources: cannot delete %s: %s", what, error.message)
                result.failed.append(what)
        return result

    def _candidates(self, module: ModuleResources) -> Iterator[tuple[Resource, KubeObject]]:
        seen: set[tuple[Resource, str, str]] = set()
        for resource, obj in (*self._labelled_outdated(module), *self._listed_for_deletion(module)):
            identity = (resource, namespace_of(obj), name_of(obj))
            if identity not in seen and not obj["metadata"].get("deletionTimestamp"):
                seen.add(identity)
                yield resource, obj

    def _labelled_outdated(self, module: ModuleResources) -> Iterator[tuple[Resource, KubeObject]]:
        keep = module.apply_identities
        selector = f"{MODULE_SELECTOR},{CHART_VERSION_LABEL},{CHART_VERSION_LABEL}!={module.chart_version}"
        for resource in module.kinds:
            try:
                found = self._kube.list(resource, label_selector=selector)
            except NotFound:
                continue  # the kind is not served in this cluster
            yield from ((resource, obj) for obj in found if object_key(obj) not in keep)

    def _listed_for_deletion(self, module: ModuleResources) -> Iterator[tuple[Resource, KubeObject]]:
        keep = module.apply_identities
        for listed in module.delete_objects:
            resource = module.resource_of(listed)
            what = resource.describe(namespace_of(listed) or None, name_of(listed))
            if object_key(listed) in keep:
                continue  # back in the current version: the render owns it again
            live = self._kube.get(resource, name_of(listed), namespace_of(listed) or None)
            if live is None:
                continue
            if not is_module_object(live):
                log.info("outdated module resources: kept %s of to-delete.yml: not %s", what, MODULE_SELECTOR)
                continue
            if labels_on(live).get(CHART_VERSION_LABEL) == module.chart_version:
                continue  # applied by the current render after all
            live.setdefault("apiVersion", resource.api_version)
            live.setdefault("kind", resource.kind)
            yield resource, live

    def _report(self, module_cr: KubeObject, version: str, result: SweepResult) -> None:
        if result.deleted:
            count, listed = len(result.deleted), _summary(result.deleted)
            message = f"Deleted {count} module resource(s) not of chart version {version}: {listed}"
            record_event(self._kube, module_cr, NORMAL, DELETED_REASON, message)
        if result.failed:
            count = len(result.failed)
            message = f"Could not delete {count} outdated module resource(s): {_summary(result.failed)}"
            record_event(self._kube, module_cr, WARNING, FAILED_REASON, message)
        if not result.deleted and not result.failed:
            log.info("outdated module resources: none found (chart version %s)", version)
