"""The rendered module removed the way Argo CD removes an app, against the real API server with the
BtpOperatorReconciler running under a Manager: the BtpOperator's deletion (its finalizer, the hard
delete of ServiceInstances and ServiceBindings, which the operator can only complete while it
runs) is processed before Argo CD deletes the operator Deployment.

The example is rendered by the CLI (with `force-delete: "true"` on its BtpOperator, as a user
would write it before removing the module), applied wave by wave (server-side apply, as Argo CD
does), then deleted in Argo CD's order: waves in reverse, each wave's objects gone before the next
(argo-cd #3959); within a wave, Argo CD's kind order reversed, approximated by Helm's install order
(`generator.core.kinds`), which it follows closely. The contrast: with the BtpOperator in the
operator's wave (as before it got its own, and as Flux's unordered pruning of the stage
Kustomizations may delete them), the operator goes at the same time, the hard delete cannot
complete and times out, and soft delete removes what is left. And the BtpOperator pruned while no
controller runs: the finalizer the render wrote holds it until a controller started afterwards has
run the deletion.

Faked or left out, because nothing runs here to serve them: the webhooks are applied with
`failurePolicy: Ignore` (no operator answers them; with `Fail` no instance could even be created),
deletes use background propagation (no garbage collector runs to finish a foreground deletion),
and the test plays the kubelet (Deployment Available) and the service operator (clearing its
finalizer, only while its Deployment exists)."""

from __future__ import annotations

import functools
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from btp_gitops.controller.btp_operator import FINALIZER, BtpOperatorReconciler, BtpOperatorSettings
from btp_gitops.controller.kube import (
    BTP_OPERATOR,
    DEPLOYMENT,
    SERVICE_BINDING,
    SERVICE_INSTANCE,
    KubeClient,
    Resource,
)
from btp_gitops.controller.runtime import Manager, RuntimeSettings
from btp_gitops.generator.core.kinds import install_rank
from tests.conftest import CHART, EXAMPLES
from tests.controller.btp_operator.cluster import (
    MODULE_NAMESPACE,
    OPERATOR,
    ModuleCluster,
    ServiceOperand,
    finalizers_of,
    wait_for,
)
from tests.support.crds import load_crds, third_party_crd_files
from tests.support.dry_run import RenderedObject, ServedResources, render, rendered_objects, request
from tests.support.kubeapi import install_crds

pytestmark = [pytest.mark.kube, pytest.mark.crds]

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
RUNTIME = RuntimeSettings(
    resync_period=300.0, backoff_initial=0.1, backoff_max=1.0, workers=1, watch_timeout=3
)
VALID = {
    "clientid": "id",
    "clientsecret": "secret",
    "sm_url": "https://sm",
    "tokenurl": "https://t",
    "cluster_id": "c",
}


def _source(target: Path) -> Path:
    """The example, its BtpOperator labelled `force-delete: "true"`, its chart path absolute."""
    shutil.copytree(EXAMPLES / "btp-operator", target)
    config_path = target / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["spec"].setdefault("chart", {})["path"] = str(CHART)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    request_path = target / "btpoperator.yaml"
    module_request = yaml.safe_load(request_path.read_text())
    module_request["metadata"]["labels"] = {"force-delete": "true"}
    request_path.write_text(yaml.safe_dump(module_request, sort_keys=False))
    return target


def _wave(obj: RenderedObject) -> int:
    return int((obj.body["metadata"].get("annotations") or {}).get(SYNC_WAVE, "0"))


def _by_wave(objects: list[RenderedObject]) -> dict[int, list[RenderedObject]]:
    waves: dict[int, list[RenderedObject]] = defaultdict(list)
    for obj in objects:
        waves[_wave(obj)].append(obj)
    return dict(waves)


def _as_synced(obj: RenderedObject) -> str:
    if obj.kind not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        return obj.text
    body = yaml.safe_load(obj.text)
    for webhook in body["webhooks"]:
        webhook["failurePolicy"] = "Ignore"
    return yaml.safe_dump(body)


def _gone(kube: KubeClient, resource: Resource, obj: RenderedObject) -> bool:
    return kube.get(resource, obj.name, obj.namespace) is None


class ArgoReplay:
    """Apply and delete rendered objects as Argo CD's sync and app deletion do."""

    def __init__(self, cluster: ModuleCluster, objects: list[RenderedObject]) -> None:
        self._cluster = cluster
        self._served = ServedResources(cluster.api)
        self.waves = _by_wave(objects)

    def without_later_waves(self) -> None:
        """Every object of a later wave moved into wave 0: the ordering before the BtpOperator got
        its own wave, and what Flux gives when the stage Kustomizations are pruned together."""
        for wave in [w for w in self.waves if w > 0]:
            self.waves[0] += self.waves.pop(wave)

    def resource(self, obj: RenderedObject) -> Resource:
        self._served.forget(obj.api_version)  # CRDs come and go during the test
        served = self._served.lookup(obj.api_version, obj.kind)
        assert served is not None, f"not served: {obj.describe()}"
        group, _, version = obj.api_version.rpartition("/")
        return Resource(group, version, served.plural, obj.kind, served.namespaced)

    def sync_wave(self, wave: int) -> None:
        for obj in self.waves[wave]:
            path = self.resource(obj).path(obj.namespace, obj.name)
            query = [("fieldManager", "argocd-controller"), ("force", "true")]
            reply = request(
                self._cluster.api, "PATCH", path, query, _as_synced(obj), "application/apply-patch+yaml"
            )
            assert reply.status in (200, 201), f"{obj.describe()}: {reply.message()}"

    def deletion_order(self) -> Iterator[tuple[int, list[RenderedObject]]]:
        for wave in sorted(self.waves, reverse=True):
            yield wave, sorted(self.waves[wave], key=lambda o: (-install_rank(o.kind), o.kind, o.name))

    def delete_wave(self, objects: list[RenderedObject], issued: Callable[[], None] = lambda: None) -> None:
        """Delete a wave's objects together, then wait until they are gone (`issued` runs between)."""
        kube = self._cluster.kube
        resources = [(obj, self.resource(obj)) for obj in objects]
        for obj, resource in resources:
            kube.delete(resource, obj.name, obj.namespace)
        issued()
        for obj, resource in resources:
            wait_for(functools.partial(_gone, kube, resource, obj), 60, obj.describe())


@pytest.fixture
def module_app(cluster: ModuleCluster, tmp_path: Path) -> ArgoReplay:
    install_crds(cluster.api, load_crds(third_party_crd_files("cert-manager", "external-secrets")))
    repo = render(_source(tmp_path / "source"), tmp_path / "repo")
    return ArgoReplay(cluster, rendered_objects(repo / "btp-operator"))


def test_argocd_deletes_the_btpoperator_first_and_its_finalizer_hard_deletes_while_the_operator_runs(
    cluster: ModuleCluster,
    module_app: ArgoReplay,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    assert sorted(module_app.waves) == [-1, 0, 1]
    assert [o.kind for o in module_app.waves[1]] == ["BtpOperator"]
    assert "Deployment" in [o.kind for o in module_app.waves[0]]
    cluster.create_required_secret(**VALID)
    never_times_out = BtpOperatorSettings(
        module_resources_dir=settings.module_resources_dir,
        hard_delete_check_interval=0.2,
        hard_delete_timeout=600.0,
    )
    manager = Manager(kube, [BtpOperatorReconciler(kube, never_times_out)], RUNTIME, CollectorRegistry())
    manager.start()
    operand.start()
    try:
        wait_for(manager.ready, what="the manager's watches to list")
        module_app.sync_wave(-1)
        module_app.sync_wave(0)
        cluster.set_available(OPERATOR)  # Argo CD waits for wave 0 to be healthy
        module_app.sync_wave(1)
        wait_for(lambda: (cluster.module_cr() or {}).get("status", {}).get("state") == "Ready", what="Ready")
        module_cr = cluster.module_cr() or {}

        cluster.create_instance(kube_namespace, "db")
        cluster.create_instance(MODULE_NAMESPACE, "audit")
        cluster.create_binding(kube_namespace, "db-binding", "db")

        order = list(module_app.deletion_order())
        assert (order[0][0], [o.kind for o in order[0][1]]) == (1, ["BtpOperator"])
        for _, objects in order:
            module_app.delete_wave(objects)
    finally:
        manager.stop()

    assert sorted(operand.finished) == [
        ("ServiceBinding", f"{kube_namespace}/db-binding"),
        ("ServiceInstance", f"{MODULE_NAMESPACE}/audit"),
        ("ServiceInstance", f"{kube_namespace}/db"),
    ], "the operator completed every deletion, so it still ran"
    assert cluster.events(module_cr) == [("Normal", "ReconcileSucceeded"), ("Normal", "HardDeleting")]
    assert cluster.names(SERVICE_INSTANCE) == [] and cluster.names(SERVICE_BINDING) == []
    assert kube.get(BTP_OPERATOR, "btpoperator", MODULE_NAMESPACE) is None
    left = [
        o.describe()
        for _, objects in order
        for o in objects
        if kube.get(module_app.resource(o), o.name, o.namespace)
    ]
    assert left == []


def test_a_btpoperator_pruned_while_no_controller_runs_waits_for_the_controller(
    cluster: ModuleCluster,
    module_app: ArgoReplay,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    """The module synced and its BtpOperator pruned while no controller runs (a rollout, a crash
    loop): the finalizer the render wrote holds it, nothing is deprovisioned, and the controller
    started afterwards runs the deletion (the hard delete, the module resources) and releases it."""
    module_app.sync_wave(-1)
    module_app.sync_wave(0)
    cluster.set_available(OPERATOR)
    module_app.sync_wave(1)
    cluster.create_required_secret(**VALID)
    assert finalizers_of(cluster.module_cr()) == [FINALIZER], "held from its creation, by the render"
    cluster.create_instance(kube_namespace, "db")
    cluster.create_binding(kube_namespace, "db-binding", "db")
    operand.start()

    (pruned,) = module_app.waves[1]
    kube.delete(module_app.resource(pruned), pruned.name, pruned.namespace)
    time.sleep(1.0)  # time enough for an object without a finalizer to be gone
    held = cluster.module_cr()
    assert held is not None and held["metadata"].get("deletionTimestamp")
    assert finalizers_of(held) == [FINALIZER]
    assert cluster.names(SERVICE_INSTANCE, kube_namespace) == ["db"] and operand.finished == []

    manager = Manager(kube, [BtpOperatorReconciler(kube, settings)], RUNTIME, CollectorRegistry())
    manager.start()
    try:
        wait_for(lambda: cluster.module_cr() is None, 60, "the controller to release the BtpOperator")
    finally:
        manager.stop()

    assert sorted(operand.finished) == [
        ("ServiceBinding", f"{kube_namespace}/db-binding"),
        ("ServiceInstance", f"{kube_namespace}/db"),
    ], "the hard delete ran"
    assert ("Normal", "HardDeleting") in cluster.events(held)
    assert kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE) is None, "the module resources went with it"


def test_without_its_own_wave_the_operator_goes_with_the_btpoperator_and_soft_delete_cleans_up(
    cluster: ModuleCluster,
    module_app: ArgoReplay,
    settings: BtpOperatorSettings,
    kube: KubeClient,
    operand: ServiceOperand,
    kube_namespace: str,
) -> None:
    """The contrast: deleted in one go, the operator is gone before it could finish anything, so
    the hard delete times out (3 s here) and soft delete removes what is left. The service
    operand starts once the wave's deletes are issued, as an operator already being deleted."""
    module_app.without_later_waves()
    cluster.create_required_secret(**VALID)
    short = BtpOperatorSettings(
        module_resources_dir=settings.module_resources_dir,
        hard_delete_check_interval=0.2,
        hard_delete_timeout=3.0,
    )
    manager = Manager(kube, [BtpOperatorReconciler(kube, short)], RUNTIME, CollectorRegistry())
    manager.start()
    try:
        wait_for(manager.ready, what="the manager's watches to list")
        module_app.sync_wave(-1)
        module_app.sync_wave(0)
        cluster.set_available(OPERATOR)
        wait_for(lambda: (cluster.module_cr() or {}).get("status", {}).get("state") == "Ready", what="Ready")
        module_cr = cluster.module_cr() or {}
        cluster.create_instance(kube_namespace, "db")
        cluster.create_binding(kube_namespace, "db-binding", "db")

        for wave, objects in module_app.deletion_order():
            module_app.delete_wave(objects, issued=operand.start if wave == 0 else lambda: None)
    finally:
        manager.stop()

    assert operand.finished == []
    assert [reason for _, reason in cluster.events(module_cr)][-3:] == [
        "ReconcileSucceeded",
        "HardDeleting",
        "SoftDeleting",
    ]
    assert cluster.names(SERVICE_INSTANCE) == [] and cluster.names(SERVICE_BINDING) == []
