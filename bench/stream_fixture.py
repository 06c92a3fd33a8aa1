"""A Helm 3 shaped manifest stream of N documents (~800 bytes each), for the post-render benchmark.

Objects are what charts render most: Deployments, Services, ConfigMaps, ServiceAccounts, Roles and
RoleBindings, plus one webhook configuration and its Service so the certificate step has work.
"""

from __future__ import annotations

from typing import Any

from btp_gitops.generator.core.yamlio import dump_object

CHART = "bench-chart"
LABELS = {
    "app.kubernetes.io/name": CHART,
    "app.kubernetes.io/instance": "bench",
    "helm.sh/chart": f"{CHART}-1.4.2",
    "app.kubernetes.io/managed-by": "Helm",
}


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(LABELS)}


def _deployment(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(f"worker-{i}"),
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": f"worker-{i}"}},
            "template": {
                "metadata": {"labels": {"app": f"worker-{i}"}},
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": f"registry.example.com/worker:{i % 17}.0.1",
                            "args": ["--metrics-bind-address=:8080", "--leader-elect"],
                            "env": [{"name": f"SETTING_{k}", "value": f"value-{i}-{k}"} for k in range(8)],
                            "ports": [{"containerPort": 8080, "name": "metrics"}],
                            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}},
                        }
                    ]
                },
            },
        },
    }


def _configmap(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(f"settings-{i}"),
        "data": {f"KEY_{k}": f"value-{i}-{k}" for k in range(32)}
        | {"config.yaml": "a: 1\nb:\n  - x\n  - y\n"},
    }


def _service(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(f"worker-{i}"),
        "spec": {"selector": {"app": f"worker-{i}"}, "ports": [{"port": 443, "targetPort": 9443}]},
    }


def _role(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(f"worker-{i}"),
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch", "update"]},
        ],
    }


def _webhook() -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": _meta("bench-webhook"),
        "webhooks": [
            {
                "name": "validate.bench.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"service": {"name": "worker-0", "namespace": "kyma-system", "path": "/v"}},
            }
        ],
    }


_MAKERS = (_deployment, _configmap, _service, _role)


def bench_stream(documents: int) -> str:
    """`documents` objects as Helm 3 writes them: `---`, a Source comment, the object."""
    parts = [f"---\n# Source: {CHART}/templates/webhook.yaml\n{dump_object(_webhook())}"]
    for i in range(documents - 1):
        make = _MAKERS[i % len(_MAKERS)]
        parts.append(f"---\n# Source: {CHART}/templates/{make.__name__[1:]}.yaml\n{dump_object(make(i))}")
    return "".join(parts)
