"""Every object charts/btp-gitops renders is accepted by a real kube-apiserver.

Each value variant (tests/chart/helm.py: defaults, every feature on, Git over HTTPS with server
TLS, an existing Gateway with one replica, the controller alone) is rendered by the real helm v3
and v4 CLIs into a fresh release namespace, and every document is sent as Helm wrote it by
server-side apply with dryRun=All, fieldValidation=Strict (tests/support/dry_run.py), with our CRDs
and the prometheus-operator and Istio CRDs installed; none may be refused and no field may be
dropped. The Pods of both Deployments are dry-run created in a namespace enforcing the Pod Security
Standard `restricted`. Controls show the same requests refusing a misspelled ServiceMonitor or
VirtualService field and a Pod without the chart's container security context, so acceptance is
not vacuous.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.chart.helm import HELMS, VARIANTS, template
from tests.support.dry_run import RenderedObject, ServedResources, dry_run_apply

pytestmark = [pytest.mark.kube, pytest.mark.tools, pytest.mark.crds]

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}


def rendered(helm: str, variant: str, namespace: str) -> list[RenderedObject]:
    documents = template(helm, VARIANTS[variant], namespace=namespace).documents()
    return [
        RenderedObject(f"{helm}/{variant}/{body['kind']}/{body['metadata']['name']}", text, body)
        for text, body in documents
    ]


def from_body(path: str, body: dict[str, Any]) -> RenderedObject:
    return RenderedObject(path, yaml.safe_dump(body, sort_keys=False), body)


def pod_of(deployment: RenderedObject) -> RenderedObject:
    """A Pod as the Deployment's ReplicaSet would create it."""
    pod_template = deployment.body["spec"]["template"]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{deployment.name}-dry-run",
            "namespace": deployment.namespace,
            **copy.deepcopy(pod_template["metadata"]),
        },
        "spec": copy.deepcopy(pod_template["spec"]),
    }
    return from_body(f"{deployment.path} (its Pod)", body)


def enforce_restricted(api: k8s.ApiClient, namespace: str) -> None:
    k8s.CoreV1Api(api).patch_namespace(namespace, {"metadata": {"labels": RESTRICTED}})


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("helm", HELMS)
def test_every_rendered_object_is_accepted(
    chart_api: k8s.ApiClient, kube_namespace: str, helm: str, variant: str
) -> None:
    objects = rendered(helm, variant, kube_namespace)
    served = ServedResources(chart_api)
    refused = [
        f"{obj.describe()}: {reason}" for obj in objects if (reason := dry_run_apply(chart_api, served, obj))
    ]
    assert not refused, "refused by the API server:\n" + "\n".join(refused)
    assert {obj.kind for obj in objects} >= {"Deployment", "ClusterRole", "Role", "Service", "ServiceAccount"}


@pytest.mark.parametrize("variant", ["minimal", "all-on", "git-https-server-tls"])
def test_the_pods_meet_the_restricted_pod_security_standard(
    chart_api: k8s.ApiClient, kube_namespace: str, variant: str
) -> None:
    enforce_restricted(chart_api, kube_namespace)
    served = ServedResources(chart_api)
    deployments = [obj for obj in rendered("helm4", variant, kube_namespace) if obj.kind == "Deployment"]
    assert len(deployments) == 2
    refused = [
        f"{pod.describe()}: {reason}"
        for pod in map(pod_of, deployments)
        if (reason := dry_run_apply(chart_api, served, pod))
    ]
    assert not refused, "\n".join(refused)


# --------------------------------------------------------------------------
# controls: the same requests refuse what is wrong


def test_a_pod_without_the_container_security_context_is_refused(
    chart_api: k8s.ApiClient, kube_namespace: str
) -> None:
    enforce_restricted(chart_api, kube_namespace)
    deployment = next(obj for obj in rendered("helm3", "minimal", kube_namespace) if obj.kind == "Deployment")
    pod = pod_of(deployment)
    body = copy.deepcopy(pod.body)
    del body["spec"]["containers"][0]["securityContext"]

    reason = dry_run_apply(chart_api, ServedResources(chart_api), from_body(pod.path, body))

    assert reason is not None
    assert 'violates PodSecurity "restricted:latest"' in reason


@pytest.mark.parametrize(
    ("kind", "edit", "expected"),
    [
        pytest.param(
            "ServiceMonitor",
            lambda body: body["spec"]["endpoints"][0].update(intervall="1m"),
            ".spec.endpoints[0].intervall: field not declared in schema",
            id="service-monitor",
        ),
        pytest.param(
            "VirtualService",
            lambda body: body["spec"]["http"][0].update(matches=[]),
            ".spec.http[0].matches: field not declared in schema",
            id="virtual-service",
        ),
        pytest.param(
            "Gateway",
            lambda body: body["spec"]["servers"][0]["port"].update(number="443"),
            "spec.servers[0].port.number",
            id="gateway-wrong-type",
        ),
    ],
)
def test_a_broken_optional_object_is_refused(
    chart_api: k8s.ApiClient, kube_namespace: str, kind: str, edit: Any, expected: str
) -> None:
    original = next(obj for obj in rendered("helm3", "all-on", kube_namespace) if obj.kind == kind)
    served = ServedResources(chart_api)
    assert dry_run_apply(chart_api, served, original) is None
    body = copy.deepcopy(original.body)
    edit(body)

    reason = dry_run_apply(chart_api, served, from_body(original.path, body))

    assert reason is not None
    assert expected in reason
