"""Test helpers for the BtpOperator controller: objects in the real API server, and the parts of a
cluster that do not run here, played by the test.

- `ServiceOperand` plays the SAP BTP service operator: it clears its finalizer from
  ServiceInstances and ServiceBindings being deleted, only while its Deployment exists (a deleted
  operator clears nothing), or refuses to (the hard-delete timeout path).
- `ModuleCluster.set_available` plays the kubelet and the deployment controller: it writes the
  Deployment's Available condition through the status subresource.
- `ModuleCluster.refuse` installs a ValidatingAdmissionPolicy, the API server's own way to refuse a
  request, to make a delete or a finalizer patch fail for real.
"""

from __future__ import annotations

import base64
import functools
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from btp_gitops.controller.btp_operator.module_resources import (
    MODULE_SELECTOR,
    RENDER_ADDED_KINDS,
    deletion_order,
    is_crd,
    load_module_resources,
    parse_artifact_file,
)
from btp_gitops.controller.errors import ControllerError, TemporaryError
from btp_gitops.controller.kube import (
    BTP_OPERATOR,
    CONFIG_MAP,
    CRD,
    DEPLOYMENT,
    EVENT,
    MUTATING_WEBHOOK,
    NAMESPACE,
    SECRET,
    SERVICE_BINDING,
    SERVICE_INSTANCE,
    VALIDATING_WEBHOOK,
    KubeClient,
    KubeObject,
    NotFound,
    Resource,
)
from btp_gitops.controller.runtime import ObjectKey, Outcome, Reconciler
from tests.conftest import ROOT
from tests.support.crds import load_crds, our_crd_files
from tests.support.kubeapi import install_crds
from tests.support.waiting import wait_until as wait_for

MODULE_RESOURCES = ROOT / "module-resources"
MODULE_NAMESPACE = "kyma-system"
OPERATOR = "sap-btp-operator-controller-manager"
OPERAND_FINALIZER = "services.cloud.sap.com/sap-btp-finalizer"
FIXTURE_LABEL = "btp-gitops.test/fixture"
JSON = "application/json"
JSON_PATCH = "application/json-patch+json"
CHART_VERSION = "0.1.0"

VAP = Resource(
    "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False
)
VAP_BINDING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    False,
)


def module_labels(version: str = CHART_VERSION) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "btp-manager",
        "chart-version": version,
        "kyma-project.io/module": "btp-operator",
    }


def service_crd_docs() -> list[dict[str, Any]]:
    """The services.cloud.sap.com CRDs as the module ships them, plus our BtpOperator CRD."""
    text = (MODULE_RESOURCES / "apply" / "crd.yaml").read_text(encoding="utf-8")
    services = [doc for doc in yaml.safe_load_all(text) if doc]
    ours = [doc for doc in load_crds(our_crd_files()) if doc["spec"]["names"]["kind"] == "BtpOperator"]
    return services + ours


@dataclass
class ModuleCluster:
    """The real API server, seen as the module's cluster."""

    kube: KubeClient
    api: k8s.ApiClient

    # -- setup and teardown

    def prepare(self) -> None:
        """The CRDs installed and Established (again: a test may have deleted them), the module
        namespace there, nothing left from another test."""
        self.clean()
        docs = service_crd_docs()
        for name in [str(doc["metadata"]["name"]) for doc in docs]:
            wait_for(
                functools.partial(self._crd_gone_or_live, name), 60, f"CRD {name} to finish its deletion"
            )
        install_crds(self.api, docs)
        if self.kube.get(NAMESPACE, MODULE_NAMESPACE) is None:
            self.kube.create(
                NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MODULE_NAMESPACE}}
            )

    def _crd_gone_or_live(self, name: str) -> bool:
        crd = self.kube.get(CRD, name)
        return crd is None or not crd["metadata"].get("deletionTimestamp")

    def clean(self) -> None:
        """Remove what a test leaves: admission policies first (they may refuse the rest), then
        every BtpOperator, ServiceInstance and ServiceBinding (finalizers cleared) and module objects."""
        for resource in (VAP_BINDING, VAP):
            for obj in self.kube.list(resource, label_selector=FIXTURE_LABEL):
                self.kube.delete(resource, obj["metadata"]["name"])
        self._retry(self._remove_leftovers)

    def _remove_leftovers(self) -> None:
        for resource in (BTP_OPERATOR, SERVICE_BINDING, SERVICE_INSTANCE):
            self._purge(resource)
        module = load_module_resources(MODULE_RESOURCES)
        for resource in deletion_order((*RENDER_ADDED_KINDS, *module.kinds)):
            if is_crd(resource):
                continue  # reinstalled by prepare(); deleting them here would only slow tests down
            try:
                for obj in self.kube.list(resource, label_selector=MODULE_SELECTOR):
                    self.kube.delete(resource, obj["metadata"]["name"], obj["metadata"].get("namespace"))
            except NotFound:
                continue
        self.kube.delete(SECRET, "sap-btp-manager", MODULE_NAMESPACE)
        for obj in self.kube.list(CONFIG_MAP, label_selector=FIXTURE_LABEL):
            self.kube.delete(CONFIG_MAP, obj["metadata"]["name"], obj["metadata"]["namespace"])

    def _purge(self, resource: Resource) -> None:
        try:
            objects = self.kube.list(resource)
        except NotFound:
            return
        for obj in objects:
            meta = obj["metadata"]
            if meta.get("finalizers"):
                self.kube.patch(
                    resource, meta["name"], {"metadata": {"finalizers": None}}, meta.get("namespace")
                )
            self.kube.delete(resource, meta["name"], meta.get("namespace"))

    @staticmethod
    def _retry(action: Callable[[], None], timeout: float = 20.0) -> None:
        """Admission policies stop refusing a moment after their deletion: try until they did."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                action()
                return
            except ControllerError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    # -- the module

    def create_module_cr(
        self, *, name: str = "btpoperator", namespace: str = MODULE_NAMESPACE, **labels: str
    ) -> KubeObject:
        body = {
            "apiVersion": BTP_OPERATOR.api_version,
            "kind": "BtpOperator",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {},
        }
        return self.kube.create(BTP_OPERATOR, body, namespace)

    def events(self, obj: KubeObject) -> list[tuple[str, str]]:
        """(type, reason) of the Events about this very object (by uid), oldest first."""
        meta = obj["metadata"]
        found = [
            e
            for e in self.kube.list(EVENT, meta["namespace"])
            if (e.get("involvedObject") or {}).get("uid") == meta["uid"]
        ]
        found.sort(key=lambda e: (e.get("firstTimestamp") or "", int(e["metadata"]["resourceVersion"])))
        return [(e["type"], e["reason"]) for e in found]

    def module_cr(self, name: str = "btpoperator", namespace: str = MODULE_NAMESPACE) -> KubeObject | None:
        return self.kube.get(BTP_OPERATOR, name, namespace)

    def create_required_secret(self, **values: str) -> None:
        data = {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sap-btp-manager", "namespace": MODULE_NAMESPACE},
            "data": data,
        }
        self.kube.create(SECRET, body, MODULE_NAMESPACE)

    def create_operator(self, *, version: str = CHART_VERSION, available: bool = False) -> KubeObject:
        selector = {"control-plane": "controller-manager"}
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": OPERATOR, "namespace": MODULE_NAMESPACE, "labels": module_labels(version)},
            "spec": {
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": selector},
                    "spec": {
                        "containers": [{"name": "manager", "image": "registry.example.com/operator:v1"}]
                    },
                },
            },
        }
        created = self.kube.create(DEPLOYMENT, body, MODULE_NAMESPACE)
        if available:
            self.set_available(OPERATOR)
        return created

    def set_available(self, name: str, namespace: str = MODULE_NAMESPACE) -> None:
        condition = {
            "type": "Available",
            "status": "True",
            "reason": "MinimumReplicasAvailable",
            "message": "set by the test",
            "lastUpdateTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        counts = {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}
        self.kube.patch_status(DEPLOYMENT, name, counts | {"conditions": [condition]}, namespace)

    def create_module_object(self, resource: Resource, body: KubeObject) -> KubeObject:
        namespace = body["metadata"].get("namespace") if resource.namespaced else None
        return self.kube.create(resource, body, namespace)

    def create_module_webhooks(self) -> list[str]:
        """The artifact's webhook configurations, labelled as the render labels them: from now on
        the API server calls the (absent) operator on every create or update of an instance or
        binding, and refuses it, as in a cluster whose operator is gone."""
        names = []
        for document in parse_artifact_file(
            (MODULE_RESOURCES / "apply" / "webhook.yaml").read_text(), "webhook.yaml"
        ):
            body = document.body
            body["metadata"]["labels"] = {**body["metadata"]["labels"], **module_labels()}
            resource = MUTATING_WEBHOOK if body["kind"] == MUTATING_WEBHOOK.kind else VALIDATING_WEBHOOK
            names.append(self.kube.create(resource, body)["metadata"]["name"])
        return names

    # -- what users create

    def create_instance(
        self, namespace: str, name: str, *, finalizers: Iterable[str] = (OPERAND_FINALIZER,)
    ) -> KubeObject:
        body = {
            "apiVersion": SERVICE_INSTANCE.api_version,
            "kind": "ServiceInstance",
            "metadata": {"name": name, "namespace": namespace, "finalizers": list(finalizers)},
            "spec": {"serviceOfferingName": "xsuaa", "servicePlanName": "application"},
        }
        return self.kube.create(SERVICE_INSTANCE, body, namespace)

    def create_binding(
        self,
        namespace: str,
        name: str,
        instance: str,
        *,
        secret_name: str | None = None,
        finalizers: Iterable[str] = (OPERAND_FINALIZER,),
    ) -> KubeObject:
        spec: dict[str, Any] = {"serviceInstanceName": instance}
        if secret_name:
            spec["secretName"] = secret_name
        body = {
            "apiVersion": SERVICE_BINDING.api_version,
            "kind": "ServiceBinding",
            "metadata": {"name": name, "namespace": namespace, "finalizers": list(finalizers)},
            "spec": spec,
        }
        created = self.kube.create(SERVICE_BINDING, body, namespace)
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret_name or name, "namespace": namespace},
            "stringData": {"clientid": "written-by-the-operand"},
        }
        self.kube.create(SECRET, secret, namespace)
        return created

    def names(self, resource: Resource, namespace: str | None = None) -> list[str]:
        try:
            return sorted(o["metadata"]["name"] for o in self.kube.list(resource, namespace))
        except NotFound:
            return []

    # -- refusals

    def refuse(
        self,
        name: str,
        rule: tuple[str, str, str],
        expression: str,
        probe: Callable[[], bool],
    ) -> None:
        """A ValidatingAdmissionPolicy (and its binding) refusing `rule` (group, resource,
        operation) where `expression` is false; returns once `probe` (say, `dry_run_refused`
        of a request it must refuse) says so: policies take effect a moment after creation."""
        group, resource, operation = rule
        labels = {FIXTURE_LABEL: "btp-operator"}
        policy = {
            "apiVersion": VAP.api_version,
            "kind": VAP.kind,
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [group],
                            "apiVersions": ["*"],
                            "operations": [operation],
                            "resources": [resource],
                        }
                    ]
                },
                "validations": [{"expression": expression, "message": f"refused by the test policy {name}"}],
            },
        }
        binding = {
            "apiVersion": VAP_BINDING.api_version,
            "kind": VAP_BINDING.kind,
            "metadata": {"name": name, "labels": labels},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        }
        self.kube.create(VAP, policy)
        self.kube.create(VAP_BINDING, binding)
        wait_for(probe, 30, f"policy {name} to be enforced")

    def dry_run_refused(self, method: str, path: str, body: object = None, content_type: str = JSON) -> bool:
        """Whether the API server refuses this request (sent as a dry run, so nothing changes)."""
        # The body goes as an object: the client sends a JSON patch only when given a list.
        serialized = self.api.param_serialize(
            method,
            path,
            query_params=[("dryRun", "All")],
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
        )
        response = self.api.call_api(*serialized, _request_timeout=30).response
        response.release_conn()
        return response.status in (403, 422)

    def allow(self, name: str) -> None:
        self.kube.delete(VAP_BINDING, name)
        self.kube.delete(VAP, name)


@dataclass
class ServiceOperand:
    """The SAP BTP service operator's part in deletion: its finalizer goes once it has deleted
    the instance or binding in SAP Service Manager, which it can only do while it runs."""

    kube: KubeClient
    refusing: bool = False
    finished: list[tuple[str, str]] = field(default_factory=list)  # (kind, namespace/name) in order
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def operator_runs(self) -> bool:
        deployment = self.kube.get(DEPLOYMENT, OPERATOR, MODULE_NAMESPACE)
        return deployment is not None and not deployment["metadata"].get("deletionTimestamp")

    def finish_deletions(self) -> int:
        """Clear our finalizer from everything being deleted (bindings first); how many."""
        if self.refusing or not self.operator_runs():
            return 0
        done = 0
        for resource in (SERVICE_BINDING, SERVICE_INSTANCE):
            try:
                objects = self.kube.list(resource)
            except NotFound:
                continue
            for obj in objects:
                if obj["metadata"].get("deletionTimestamp") and self.kube.remove_finalizer(
                    resource, obj, OPERAND_FINALIZER
                ):
                    self.finished.append(
                        (resource.kind, f"{obj['metadata']['namespace']}/{obj['metadata']['name']}")
                    )
                    done += 1
        return done

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="service-operand", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.finish_deletions()
            except ControllerError:
                continue  # a conflict with the reconciler's own patch: look again

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


def reconcile_until(
    reconciler: Reconciler, key: ObjectKey, done: Callable[[], bool], attempts: int = 60
) -> list[Outcome | TemporaryError]:
    """Reconcile as the Manager would (again after a requeue or a temporary error, waiting at most
    half a second each time) until `done`; what each reconcile returned or raised."""
    results: list[Outcome | TemporaryError] = []
    for _ in range(attempts):
        try:
            outcome = reconciler.reconcile(key)
            results.append(outcome)
            wait = outcome.requeue_after
        except TemporaryError as error:
            results.append(error)
            wait = error.delay
        if done():
            return results
        time.sleep(min(wait or 0.0, 0.5))
    raise AssertionError(f"not done after {attempts} reconciles: {results[-3:]}")


def module_resources_copy(target: Path, delete_documents: str = "") -> Path:
    """A copy of the project's module-resources/ with `delete/to-delete.yml` replaced."""
    for path in sorted(p for p in MODULE_RESOURCES.rglob("*") if p.is_file()):
        destination = target / path.relative_to(MODULE_RESOURCES)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(path.read_bytes())
    (target / "delete" / "to-delete.yml").write_text(delete_documents, encoding="utf-8")
    return target


def finalizers_of(obj: KubeObject | None) -> list[str]:
    return list(((obj or {}).get("metadata") or {}).get("finalizers") or [])
