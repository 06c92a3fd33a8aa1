"""NetworkPolicies, as CAP Operator renders them: two kinds per version, one per domain and namespace.

`<cav>`                      pods of the version accept traffic from pods of the same version
`<cav>-<wl>`                 a workload's ports with `networkPolicy: Cluster` accept traffic from
                             any pod
`<kind>--<domain>--ingress`  in each namespace of the applications on a Domain or ClusterDomain:
                             the exposed workloads there (`sme.sap.com/exposed-workload: "true"`,
                             category Workload: Routers and service exposure targets) accept
                             traffic from the domain's ingress gateway pods (its `ingressSelector`,
                             in any namespace), on any port. Part of the domain's app.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.domains.cap.identity import (
    CATEGORY,
    EXPOSED_WORKLOAD,
    Category,
    domain_labels,
    domain_network_policy_name,
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


def version_network_policies(app: Application, version: Version) -> list[KubeObject]:
    candidates = [
        within_version(app, version),
        *(cluster_ports(app, version, w) for w in version.deployments()),
    ]
    return [obj for obj in candidates if obj is not None]


def domain_network_policy(domain: Domain, namespace: str) -> KubeObject:
    """Lets the domain's ingress gateway reach the exposed workloads of one application namespace."""
    labels, annotations = domain_labels(domain)
    peer = {
        "namespaceSelector": {},
        "podSelector": {"matchLabels": dict(sorted(domain.ingress_selector.items()))},
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": domain_network_policy_name(domain),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "podSelector": {"matchLabels": {CATEGORY: Category.WORKLOAD, EXPOSED_WORKLOAD: "true"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [peer]}],
        },
    }


def domain_network_policies(domain: Domain, namespaces: Iterable[str]) -> list[KubeObject]:
    """One per namespace that holds an application on the domain."""
    return [domain_network_policy(domain, namespace) for namespace in sorted(set(namespaces))]
