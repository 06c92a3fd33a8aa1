"""Deployment workloads of a version: Deployment, Service, Router destinations, DestinationRule,
PodDisruptionBudget, HorizontalPodAutoscaler and ServiceMonitor, as CAP Operator creates them for
a CAPApplicationVersion (https://sap.github.io/cap-operator/docs/usage/resources/capapplicationversion/).

A version whose Deployments CAP Operator created (`btp-gitops.io/cap-operator-generation`) gives
them CAP Operator's pod selector, which cannot change (`identity.adopted_workload_labels`); the
Services, PodDisruptionBudgets and ServiceMonitors keep the narrow one: their selectors can change.

A workload with an autoscaler gets no `replicas`: the HorizontalPodAutoscaler owns the count, and a
value in Git would make the GitOps tool fight it on every sync.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.domains.cap.credentials import CredentialWiring
from btp_gitops.generator.domains.cap.identity import (
    Category,
    adopted_workload_labels,
    pod_selector,
    service_host,
    service_name,
    workload_annotations,
    workload_labels,
    workload_object_name,
)
from btp_gitops.generator.domains.cap.model import Application, DeploymentType, Version, Workload
from btp_gitops.generator.domains.cap.pods import PodPlan, pod_template
from btp_gitops.generator.domains.cap.version_rules import DESTINATIONS_ENV, destinations_entries

ROUTER_STICKY_COOKIE = {"name": "CAPOP_ROUTER_STICKY", "path": "/", "ttl": "0s"}
RELOADER_ANNOTATION = "secret.reloader.stakater.com/reload"


def _meta(
    name: str, namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


# --- Router destinations --------------------------------------------------------------------------


def router_destinations(version: Version, written: object) -> str:
    """The `destinations` env of the Router: one per port with a routerDestinationName, sorted by name.

    A destination the user wrote keeps its fields, with the URL pointing at the version's Service;
    other user entries stay as written.
    """
    entries = {str(e["name"]): dict(e) for e in destinations_entries(written) or []}
    for workload in version.deployments():
        for port in workload.ports:
            if not port.router_destination_name:
                continue
            url = f"http://{service_name(version, workload)}:{port.port}"
            name = port.router_destination_name
            if name in entries:
                entries[name]["url"] = url
            else:
                entries[name] = {"name": name, "url": url, "forwardAuthToken": True}
    ordered = [entries[name] for name in sorted(entries)]
    return json.dumps(ordered, sort_keys=True, separators=(",", ":"))


def workload_env(version: Version, workload: Workload) -> list[dict[str, Any]]:
    """The workload's env; a Router's `destinations` set in place, or appended when not written."""
    env = copy.deepcopy(list(workload.definition.get("env") or []))
    if workload.type != DeploymentType.ROUTER:
        return env
    for variable in env:
        if variable.get("name") == DESTINATIONS_ENV:
            variable["value"] = router_destinations(version, variable.get("value"))
            return env
    value = router_destinations(version, None)
    return [*env, {"name": DESTINATIONS_ENV, "value": value}] if value != "[]" else env


# --- objects --------------------------------------------------------------------------------------


def deployment(
    app: Application, version: Version, workload: Workload, credentials: CredentialWiring
) -> KubeObject:
    # A Deployment CAP Operator created keeps its selector (immutable): its labels, selector and
    # pod labels are then CAP Operator's label set; otherwise the narrow selector of `pod_selector`.
    adopted = adopted_workload_labels(app, version, workload)
    labels = adopted or workload_labels(app, version, workload)
    selector = adopted or pod_selector(version, workload)
    annotations = workload_annotations(version, workload)
    if app.rollout_on_credential_update and credentials.secrets:
        annotations[RELOADER_ANNOTATION] = ",".join(credentials.secrets)
    plan = PodPlan(
        version=version,
        workload=workload,
        labels=labels,
        annotations=workload.annotations,
        credentials=credentials,
        env=workload_env(version, workload),
        spread_by_rollout=True,
    )
    spec: dict[str, Any] = {"selector": {"matchLabels": selector}}
    replicas = workload.definition.get("replicas")
    if replicas is not None and "horizontalPodAutoscaler" not in workload.definition:
        spec["replicas"] = replicas
    spec["template"] = pod_template(plan)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(workload_object_name(version, workload), version.namespace, labels, annotations),
        "spec": spec,
    }


def service(app: Application, version: Version, workload: Workload) -> KubeObject | None:
    if not workload.ports:
        return None
    ports = []
    for port in workload.ports:
        entry: dict[str, Any] = {
            "name": port.name,
            "port": port.port,
            "targetPort": port.port,
            "protocol": "TCP",
        }
        if port.app_protocol:
            entry["appProtocol"] = port.app_protocol
        ports.append(entry)
    labels = workload_labels(app, version, workload, Category.SERVICE)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(
            service_name(version, workload),
            version.namespace,
            labels,
            workload_annotations(version, workload),
        ),
        "spec": {"type": "ClusterIP", "selector": pod_selector(version, workload), "ports": ports},
    }


def destination_rule(app: Application, version: Version, workload: Workload) -> KubeObject | None:
    """Session stickiness at the Istio sidecar: the workload's hash, or the Router's default cookie."""
    stickiness = workload.definition.get("stickiness")
    if isinstance(stickiness, dict):
        consistent_hash = copy.deepcopy(stickiness["hash"])
    elif workload.type == DeploymentType.ROUTER:
        consistent_hash = {"httpCookie": dict(ROUTER_STICKY_COOKIE)}
    else:
        return None
    labels = workload_labels(app, version, workload, Category.SERVICE)
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": _meta(
            workload_object_name(version, workload),
            version.namespace,
            labels,
            workload_annotations(version, workload),
        ),
        "spec": {
            "host": service_host(version, workload),
            "trafficPolicy": {"loadBalancer": {"consistentHash": consistent_hash}},
        },
    }


def disruption_budget(app: Application, version: Version, workload: Workload) -> KubeObject | None:
    budget = workload.definition.get("podDisruptionBudget")
    if not isinstance(budget, dict):
        return None
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(
            workload_object_name(version, workload),
            version.namespace,
            workload_labels(app, version, workload),
            workload_annotations(version, workload),
        ),
        "spec": {**copy.deepcopy(budget), "selector": {"matchLabels": pod_selector(version, workload)}},
    }


def autoscaler(app: Application, version: Version, workload: Workload) -> KubeObject | None:
    scaling = workload.definition.get("horizontalPodAutoscaler")
    if not isinstance(scaling, dict):
        return None
    name = workload_object_name(version, workload)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _meta(
            name,
            version.namespace,
            workload_labels(app, version, workload),
            workload_annotations(version, workload),
        ),
        "spec": {
            **copy.deepcopy(scaling),
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        },
    }


def service_monitor(app: Application, version: Version, workload: Workload) -> KubeObject | None:
    scrape = workload.definition.get("monitoring", {}).get("scrapeConfig")
    if not isinstance(scrape, dict) or not workload.ports:
        return None
    endpoint = {"port": scrape["port"]} | {
        key: scrape[key] for key in ("interval", "scrapeTimeout", "path") if scrape.get(key)
    }
    service_labels = workload_labels(app, version, workload, Category.SERVICE)
    selector = {key: service_labels[key] for key in sorted(pod_selector(version, workload))}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": _meta(
            service_name(version, workload),
            version.namespace,
            workload_labels(app, version, workload, Category.SERVICE_MONITOR),
            workload_annotations(version, workload),
        ),
        "spec": {"selector": {"matchLabels": selector}, "endpoints": [endpoint]},
    }


def deployment_objects(
    app: Application, version: Version, workload: Workload, credentials: CredentialWiring
) -> list[KubeObject]:
    """Everything one deployment workload renders into."""
    candidates = [
        deployment(app, version, workload, credentials),
        service(app, version, workload),
        destination_rule(app, version, workload),
        disruption_budget(app, version, workload),
        autoscaler(app, version, workload),
        service_monitor(app, version, workload),
    ]
    return [obj for obj in candidates if obj is not None]
