"""Tenant operation Jobs: one per step of the operation, on the operation's version.

Steps come from the version's `tenantOperations` for the phase, else its first TenantOperation
workload (`Version.tenant_operation_steps`). Each Job runs the step's workload as a content Job
would (pod fields, credentials, restartPolicy Never, backoffLimit, ttlSecondsAfterFinished and
activeDeadlineSeconds passed through, `x4.sap.com/disable-karydia` on the pods; labelled
`sme.sap.com/workload-name: <workload>`, the workload's own name, as CAP Operator labels them),
with CAP Operator's environment first, in its order, in every container and init container:

    CAPOP_APP_VERSION, CAPOP_TENANT_ID, CAPOP_TENANT_OPERATION, CAPOP_TENANT_SUBDOMAIN,
    CAPOP_TENANT_TYPE, CAPOP_APP_NAME, then when the application sets them
    CAPOP_GLOBAL_ACCOUNT_ID, CAPOP_PROVIDER_SUBACCOUNT_ID, CAPOP_PROVIDER_TENANT_ID,
    CAPOP_PROVIDER_SUBDOMAIN; for a TenantOperation step, on provisioning
    CAPOP_SUBSCRIPTION_PAYLOAD (from the tenant's subscription-context Secret, key
    `subscriptionContext`: referenced, never copied), then CAPOP_TENANT_MTXS_OPERATION
    (subscribe | upgrade | unsubscribe); then the credentials' variables and the workload's own.

A TenantOperation without `command` runs cds-mtxs:
`node ./node_modules/@sap/cds-mtxs/bin/cds-mtx $(CAPOP_TENANT_MTXS_OPERATION) <tenantId>`, with
`--body $(CAPOP_SUBSCRIPTION_PAYLOAD)` on provisioning (Kubernetes expands `$(VAR)`).

Every container also takes the version gate (`<cav>-ready`, a ConfigMap without data) by
`envFrom`: the kubelet starts no container of the Job before that ConfigMap exists, and the
application's app creates it only once the version's workloads and content jobs are healthy
(`version_gate`). That is how an upgrade waits for its target version, across apps.

A `continueOnFailure` step carries `btp-gitops.io/continue-on-failure: "true"`: a GitOps tool
that is told to treat such a failed Job as healthy goes on with the next step (README, "CAP
tenants").

The parts that are the same for every tenant (`StepTemplate`) are built once per version and
step; each tenant's Job shares them and gets new dictionaries only where it differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.domains.cap.credentials import workload_credentials
from btp_gitops.generator.domains.cap.identity import (
    DISABLE_KARYDIA,
    WORKLOAD_NAME,
    Category,
    version_annotations,
    version_labels,
    workload_labels,
)
from btp_gitops.generator.domains.cap.model import (
    Application,
    JobType,
    TenantOperation,
    TenantOperationStep,
    Version,
    Workload,
)
from btp_gitops.generator.domains.cap.pods import APP_VERSION_ENV, PodPlan, pod_template
from btp_gitops.generator.domains.cap.tenants.model import SUBSCRIPTION_CONTEXT_KEY, Tenant
from btp_gitops.generator.domains.cap.tenants.names import (
    CONTINUE_ON_FAILURE_ANNOTATION,
    TENANT_OPERATION_STEP,
    TENANT_OPERATION_TYPE,
    operation_job_name,
    version_gate_name,
)

JOB_FIELDS = ("backoffLimit", "ttlSecondsAfterFinished", "activeDeadlineSeconds")
MTXS_OPERATIONS = {
    TenantOperation.PROVISIONING: "subscribe",
    TenantOperation.UPGRADE: "upgrade",
    TenantOperation.DEPROVISIONING: "unsubscribe",
}
CDS_MTX = "./node_modules/@sap/cds-mtxs/bin/cds-mtx"


@dataclass(frozen=True, slots=True)
class StepTemplate:
    """One step of one operation on one version, as far as it is the same for every tenant."""

    operation: TenantOperation
    version: Version
    number: int  # 1-based, as `sme.sap.com/tenant-operation-step` counts
    workload: Workload
    continue_on_failure: bool
    labels: dict[str, str]  # the workload's, under CAP Operator's keys
    job_fields: dict[str, Any]
    pod: dict[str, Any]  # the pod template without CAPOP_* variables (bar CAPOP_APP_VERSION)

    @property
    def runs_mtxs(self) -> bool:
        return self.workload.type == JobType.TENANT_OPERATION

    @property
    def default_command(self) -> bool:
        return self.runs_mtxs and not self.workload.definition.get("command")


def _with_gate(pod: dict[str, Any], gate: str) -> dict[str, Any]:
    """Every container of the pod reads the version gate (a fresh reference each: no YAML alias)."""
    spec = dict(pod["spec"])
    for field in ("initContainers", "containers"):
        if field in spec:
            spec[field] = [
                {**c, "envFrom": [{"configMapRef": {"name": gate}}, *c.get("envFrom", [])]}
                for c in spec[field]
            ]
    return {**pod, "spec": spec}


def step_templates(
    app: Application, version: Version, operation: TenantOperation
) -> tuple[StepTemplate, ...]:
    templates = []
    for number, step in enumerate(version.tenant_operation_steps(operation), start=1):
        workload = version.workload(step.workload)
        if workload is None:  # refused by the version rules; kept total for the type checker
            continue
        templates.append(_step_template(app, version, operation, number=number, step=step, workload=workload))
    return tuple(templates)


def _step_template(
    app: Application,
    version: Version,
    operation: TenantOperation,
    *,
    number: int,
    step: TenantOperationStep,
    workload: Workload,
) -> StepTemplate:
    plan = PodPlan(
        version=version,
        workload=workload,
        labels={},
        annotations={},
        credentials=workload_credentials(app, version, workload),
        env=list(workload.definition.get("env") or []),
        default_restart_policy="Never",
    )
    return StepTemplate(
        operation=operation,
        version=version,
        number=number,
        workload=workload,
        continue_on_failure=step.continue_on_failure and workload.type == JobType.CUSTOM_TENANT_OPERATION,
        # CAP Operator labels a tenant operation Job with the workload's own name (`mtx`), where
        # the version's Deployments and content Jobs carry `<cav>-<workload>`.
        labels={**workload_labels(app, version, workload), WORKLOAD_NAME: workload.name},
        job_fields={key: workload.definition[key] for key in JOB_FIELDS if key in workload.definition},
        pod=_with_gate(pod_template(plan), version_gate_name(version)),
    )


def capop_environment(app: Application, tenant: Tenant, template: StepTemplate) -> list[dict[str, Any]]:
    """CAP Operator's variables for one step of one tenant, in CAP Operator's order."""
    values = [
        (APP_VERSION_ENV, template.version.version),
        ("CAPOP_TENANT_ID", tenant.tenant_id),
        ("CAPOP_TENANT_OPERATION", template.operation.value),
        ("CAPOP_TENANT_SUBDOMAIN", tenant.sub_domain),
        ("CAPOP_TENANT_TYPE", tenant.tenant_type.value),
        ("CAPOP_APP_NAME", app.btp_app_name),
        ("CAPOP_GLOBAL_ACCOUNT_ID", app.global_account_id),
        ("CAPOP_PROVIDER_SUBACCOUNT_ID", app.provider_subaccount_id),
        ("CAPOP_PROVIDER_TENANT_ID", app.provider.tenant_id if app.provider else ""),
        ("CAPOP_PROVIDER_SUBDOMAIN", app.provider.sub_domain if app.provider else ""),
    ]
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in values if value]
    if template.runs_mtxs:
        if template.operation == TenantOperation.PROVISIONING:
            reference = {"name": tenant.subscription_context_secret, "key": SUBSCRIPTION_CONTEXT_KEY}
            env.append({"name": "CAPOP_SUBSCRIPTION_PAYLOAD", "valueFrom": {"secretKeyRef": reference}})
        env.append({"name": "CAPOP_TENANT_MTXS_OPERATION", "value": MTXS_OPERATIONS[template.operation]})
    return env


def mtxs_command(tenant: Tenant, operation: TenantOperation) -> list[str]:
    command = ["node", CDS_MTX, "$(CAPOP_TENANT_MTXS_OPERATION)", tenant.tenant_id]
    if operation == TenantOperation.PROVISIONING:
        command += ["--body", "$(CAPOP_SUBSCRIPTION_PAYLOAD)"]
    return command


def _containers(
    containers: Sequence[dict[str, Any]], app: Application, tenant: Tenant, template: StepTemplate
) -> list[dict[str, Any]]:
    # The template's env starts with CAPOP_APP_VERSION; the tenant's variables replace it.
    return [{**c, "env": capop_environment(app, tenant, template) + c["env"][1:]} for c in containers]


def _pod(app: Application, tenant: Tenant, template: StepTemplate, labels: dict[str, str]) -> dict[str, Any]:
    spec = dict(template.pod["spec"])
    spec["containers"] = _containers(spec["containers"], app, tenant, template)
    if "initContainers" in spec:
        spec["initContainers"] = _containers(spec["initContainers"], app, tenant, template)
    if template.default_command:
        spec["containers"][0]["command"] = mtxs_command(tenant, template.operation)
    metadata: dict[str, Any] = {"labels": {**labels, DISABLE_KARYDIA: "true"}}
    if template.workload.annotations:
        metadata["annotations"] = dict(template.workload.annotations)
    return {"metadata": metadata, "spec": spec}


def operation_job(
    app: Application, tenant: Tenant, identity: tuple[dict[str, str], dict[str, str]], template: StepTemplate
) -> KubeObject:
    """One step's Job for one tenant; `identity` is the tenant's (labels, annotations)."""
    owner_labels, owner_annotations = identity
    labels = {
        **template.labels,
        **owner_labels,
        TENANT_OPERATION_TYPE: template.operation.value,
        TENANT_OPERATION_STEP: str(template.number),
    }
    annotations = {**template.workload.annotations, **owner_annotations}
    if template.continue_on_failure:
        annotations[CONTINUE_ON_FAILURE_ANNOTATION] = "true"
    name = operation_job_name(
        tenant, template.operation, template.version, template.number, template.workload
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": tenant.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {**template.job_fields, "template": _pod(app, tenant, template, labels)},
    }


def version_gate(app: Application, version: Version) -> KubeObject:
    """The ConfigMap whose existence lets tenant operations of `version` start (no data: it only
    has to exist). In the application's app, in the routing stage: after the version's workloads
    are healthy and its content jobs succeeded."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": version_gate_name(version),
            "namespace": version.namespace,
            "labels": version_labels(app, version, Category.WORKLOAD),
            "annotations": version_annotations(version),
        },
    }
