"""NetworkPolicies of a version: CAP Operator's two, and an ingress policy of ours (the third below).

`<cav>`            pods of the version accept traffic from pods of the same version
`<cav>-<wl>`       a workload's ports with `networkPolicy: Cluster` accept traffic from any pod
`<cav>--ingress`   exposed workloads (the Router, service exposure targets) accept traffic from
                   the ingress gateway pods of the application's domains, on their Service ports
"""

from __future__ import annotations

from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.domains.cap.identity import (
    EXPOSED_WORKLOAD,
    Category,
    ingress_network_policy_name,
    owner_labels,
    pod_selector,
    version_annotations,
    version_labels,
    workload_object_name,
)
from btp_gitops.generator.domains.cap.model import Application, Domain, Version, Workload


def _policy(
    app: Application, version: Version, name: str, selector: dict[str, str], rule: dict[str, Any]
) -> KubeObject:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "namespace": version.namespace,
            "labels": version_labels(app, version, Category.WORKLOAD),
            "annotations": version_annotations(version),
        },
        "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress"], "ingress": [rule]},
    }


def _tcp(ports: list[int]) -> list[dict[str, Any]]:
    return [{"port": port, "protocol": "TCP"} for port in sorted(set(ports))]


def within_version(app: Application, version: Version) -> KubeObject:
    owner, _ = owner_labels(version.namespace, version.name)
    return _policy(
        app, version, version.name, owner, {"from": [{"podSelector": {"matchLabels": dict(owner)}}]}
    )


def cluster_ports(app: Application, version: Version, workload: Workload) -> KubeObject | None:
    ports = [p.port for p in workload.ports if p.network_policy == "Cluster"]
    if not ports:
        return None
    rule = {"from": [{"namespaceSelector": {}}], "ports": _tcp(ports)}
    return _policy(
        app, version, workload_object_name(version, workload), pod_selector(version, workload), rule
    )


def from_ingress(app: Application, version: Version, domains: list[Domain]) -> KubeObject | None:
    exposed = [w for w in version.deployments() if w.name in version.exposed_workloads()]
    ports = [p.port for w in exposed for p in w.ports]
    if not ports or not domains:
        return None
    selectors = sorted({tuple(sorted(d.ingress_selector.items())) for d in domains})
    peers = [{"namespaceSelector": {}, "podSelector": {"matchLabels": dict(s)}} for s in selectors]
    owner, _ = owner_labels(version.namespace, version.name)
    selector = {**owner, EXPOSED_WORKLOAD: "true"}
    return _policy(
        app, version, ingress_network_policy_name(version), selector, {"from": peers, "ports": _tcp(ports)}
    )


def version_network_policies(app: Application, version: Version, domains: list[Domain]) -> list[KubeObject]:
    candidates = [
        within_version(app, version),
        *(cluster_ports(app, version, w) for w in version.deployments()),
        from_ingress(app, version, domains),
    ]
    return [obj for obj in candidates if obj is not None]
