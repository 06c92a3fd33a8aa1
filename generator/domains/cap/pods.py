"""The pod template of a workload, Deployment or Job: CAP Operator's container and pod fields.

The container is named after the workload; image, pull policy, command, args, volume mounts,
probes, resources, security context and lifecycle pass through, and so do the pod's volumes,
security context, scheduling fields, init containers and grace period. Env is `CAPOP_APP_VERSION`
first, then the credentials' variables, then the workload's own; init containers get the same
version and credentials. Registry secrets become imagePullSecrets. A topology spread constraint
without a labelSelector selects the workload's own pods (and, for Deployments, only those of the
same rollout through `matchLabelKeys: [pod-template-hash]`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.generator.domains.cap.credentials import CredentialWiring
from btp_gitops.generator.domains.cap.model import Version, Workload

APP_VERSION_ENV = "CAPOP_APP_VERSION"

_CONTAINER_FIELDS = (
    "imagePullPolicy",
    "command",
    "args",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "resources",
    "securityContext",
    "lifecycle",
)
_POD_FIELDS = (
    "serviceAccountName",
    "nodeSelector",
    "nodeName",
    "priorityClassName",
    "affinity",
    "tolerations",
    "terminationGracePeriodSeconds",
)


@dataclass(frozen=True, slots=True)
class PodPlan:
    """What a pod template is made of besides the workload's own definition."""

    version: Version
    workload: Workload
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    credentials: CredentialWiring
    env: Sequence[dict[str, Any]] = field(default=())  # the workload's env, as adjusted (Router destinations)
    default_restart_policy: str | None = None
    spread_by_rollout: bool = False  # Deployments: `matchLabelKeys: [pod-template-hash]`


def _copied(definition: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    return {name: copy.deepcopy(definition[name]) for name in names if definition.get(name) not in (None, "")}


def _version_env(plan: PodPlan) -> list[dict[str, Any]]:
    return [
        {"name": APP_VERSION_ENV, "value": plan.version.version},
        *copy.deepcopy(list(plan.credentials.env)),
    ]


def _with_credentials(
    container: dict[str, Any], plan: PodPlan, own_env: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    container["env"] = _version_env(plan) + copy.deepcopy(list(own_env))
    env_from = copy.deepcopy(list(plan.credentials.env_from)) + list(container.get("envFrom") or [])
    if env_from:
        container["envFrom"] = env_from
    mounts = list(container.get("volumeMounts") or []) + copy.deepcopy(list(plan.credentials.volume_mounts))
    if mounts:
        container["volumeMounts"] = mounts
    return container


def main_container(plan: PodPlan) -> dict[str, Any]:
    definition = plan.workload.definition
    container: dict[str, Any] = {"name": plan.workload.name, "image": definition["image"]}
    container |= _copied(definition, _CONTAINER_FIELDS)
    if definition.get("volumeMounts"):
        container["volumeMounts"] = copy.deepcopy(definition["volumeMounts"])
    ports = [{"name": p.name, "containerPort": p.port, "protocol": "TCP"} for p in plan.workload.ports]
    if ports:
        container["ports"] = ports
    return _with_credentials(container, plan, plan.env)


def init_containers(plan: PodPlan) -> list[dict[str, Any]]:
    """The workload's init containers, given the version and credentials the main container gets."""
    found = []
    for written in plan.workload.definition.get("initContainers") or []:
        container = copy.deepcopy(written)
        found.append(_with_credentials(container, plan, container.pop("env", None) or []))
    return found


def _spread_constraints(plan: PodPlan) -> list[dict[str, Any]]:
    constraints = []
    for written in plan.workload.definition.get("topologySpreadConstraints") or []:
        constraint = copy.deepcopy(written)
        if "labelSelector" not in constraint:
            constraint["labelSelector"] = {"matchLabels": dict(plan.labels)}
            if plan.spread_by_rollout:
                constraint.setdefault("matchLabelKeys", ["pod-template-hash"])
        constraints.append(constraint)
    return constraints


def pod_template(plan: PodPlan) -> dict[str, Any]:
    definition = plan.workload.definition
    spec: dict[str, Any] = {"containers": [main_container(plan)]}
    initial = init_containers(plan)
    if initial:
        spec["initContainers"] = initial
    if plan.version.registry_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in plan.version.registry_secrets]
    spec |= _copied(definition, _POD_FIELDS)
    if definition.get("podSecurityContext"):
        spec["securityContext"] = copy.deepcopy(definition["podSecurityContext"])
    volumes = copy.deepcopy(list(definition.get("volumes") or [])) + copy.deepcopy(
        list(plan.credentials.volumes)
    )
    if volumes:
        spec["volumes"] = volumes
    constraints = _spread_constraints(plan)
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    restart_policy = definition.get("restartPolicy") or plan.default_restart_policy
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    metadata: dict[str, Any] = {"labels": dict(plan.labels)}
    if plan.annotations:
        metadata["annotations"] = dict(plan.annotations)
    return {"metadata": metadata, "spec": spec}
