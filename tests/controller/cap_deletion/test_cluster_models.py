"""The cluster's CAP CRs as the generator's models (controller.cap.cluster_models), the version rule
for a tenant, the order of deprovisioning steps and the Jobs the controller creates.

No API server: the CRs are those the `btp-gitops` CLI renders from examples/cap-app (version
1.1.0 with a two-step deprovisioning), with the statuses the tenants' Git records have; Jobs are
the generator's own (`operation_jobs`) with the status a Job controller would write. Nothing is
faked.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from btp_gitops.controller.cap.cluster_models import (
    CapModels,
    application_models,
    deprovisioning_target,
    jobs_of_tenant,
    running_version,
    versions_in_use,
)
from btp_gitops.controller.cap.deletion import StepAction, controller_job, next_step
from btp_gitops.generator.domains.cap.model import TenantOperation
from btp_gitops.generator.domains.cap.tenants.render import operation_jobs
from tests.controller.cap_deletion.conftest import TENANTS, RenderedExample

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
TENANT_CREATED = "2024-05-01T10:00:00Z"
V100, V110 = "bookshop-1-0-0", "bookshop-1-1-0"


def models_of(
    example: RenderedExample,
    *,
    statuses: dict[str, dict[str, Any]] | None = None,
    deleting_versions: tuple[str, ...] = (),
    deleting_tenants: tuple[str, ...] = (),
) -> CapModels:
    """The models of the deployed CRs, with the given tenant statuses (the Git ones by default)."""
    tenants = []
    for name in TENANTS:
        tenant = example.tenant(name)
        tenant["metadata"]["creationTimestamp"] = TENANT_CREATED
        status = (example.git_statuses if statuses is None else statuses).get(name)
        if status:
            tenant["status"] = copy.deepcopy(status)
        if name in deleting_tenants:
            tenant["metadata"]["deletionTimestamp"] = "2024-05-02T10:00:00Z"
        tenants.append(tenant)
    versions = example.versions()
    for version in versions:
        if version["metadata"]["name"] in deleting_versions:
            version["metadata"]["deletionTimestamp"] = "2024-05-02T10:00:00Z"
    return application_models(example.application(), versions, tenants)


def job_of(
    models: CapModels,
    tenant: str,
    operation: TenantOperation,
    version: str,
    step: int,
    *,
    state: str | None,
    created: str = "2024-05-01T11:00:00Z",
) -> dict[str, Any]:
    """The generator's Job of one step, as the cluster holds it: created at `created`, finished
    (`Complete` / `Failed`) or not (None)."""
    found = models.versions.named(version)
    assert found is not None
    job = operation_jobs(models.app, models.tenants[tenant], operation, found)[step - 1]
    job["metadata"]["creationTimestamp"] = created
    if state is not None:
        job["status"] = {"conditions": [{"type": state, "status": "True"}]}
    return job


def by_name(*jobs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {j["metadata"]["name"]: j for j in jobs}


def without_sync_wave(job: dict[str, Any]) -> dict[str, Any]:
    copied = copy.deepcopy(job)
    copied["metadata"]["annotations"].pop(SYNC_WAVE, None)
    return copied


@pytest.mark.parametrize("name", TENANTS)
def test_the_controller_builds_the_rendered_deprovisioning_jobs(
    offline_example: RenderedExample, name: str
) -> None:
    models = models_of(offline_example)
    tenant = models.tenants[name]
    target = deprovisioning_target(models, tenant, {})
    expected = offline_example.expected_jobs(name)
    assert target.version is not None
    assert target.version.version == expected[0]["metadata"]["labels"]["sme.sap.com/cav-version"]
    built = operation_jobs(models.app, tenant, TenantOperation.DEPROVISIONING, target.version)
    assert built == [without_sync_wave(job) for job in expected]


def test_the_provider_record_is_typed_as_a_render_types_it(offline_example: RenderedExample) -> None:
    models = models_of(offline_example)
    assert models.tenants["bookshop-provider"].tenant_type == "provider"
    assert {models.tenants[n].tenant_type for n in ("acme", "globex", "initech")} == {"consumer"}
    assert models.app.source.file == f"cluster:CAPApplication/{offline_example.namespace}/bookshop"


def test_the_recorded_status_comes_first(offline_example: RenderedExample) -> None:
    models = models_of(offline_example)  # acme runs on 1.0.0 as its record says
    upgraded = job_of(models, "acme", TenantOperation.UPGRADE, V110, 2, state="Complete")
    resolved = running_version(models, models.tenants["acme"], by_name(upgraded), models.versions)
    assert (resolved.version and resolved.version.name, resolved.rule) == (
        V100,
        "status.currentCAPApplicationVersionInstance",
    )


@pytest.mark.parametrize(
    ("jobs", "expected", "rule"),
    [
        # the upgrade's last step passed: the tenant runs on 1.1.0
        (
            [
                ("provisioning", V100, 2, "Complete"),
                ("upgrade", V110, 1, "Failed"),
                ("upgrade", V110, 2, "Complete"),
            ],
            V110,
            "completed operation Jobs",
        ),
        # the upgrade's last step failed: still on the version its provisioning completed on
        (
            [("provisioning", V100, 2, "Complete"), ("upgrade", V110, 2, "Failed")],
            V100,
            "completed operation Jobs",
        ),
        # a provisioning's last step that failed with continueOnFailure (seed-data) still completes it
        ([("provisioning", V100, 2, "Failed")], V100, "completed operation Jobs"),
        # a provisioning that has not finished: deprovisioned on the version it targeted
        ([("provisioning", V100, 1, None)], V100, "provisioning Jobs"),
        # no evidence at all: the newest version
        ([], V110, "newest version"),
    ],
)
def test_without_status_the_jobs_tell_the_version(
    offline_example: RenderedExample,
    jobs: list[tuple[str, str, int, str | None]],
    expected: str,
    rule: str,
) -> None:
    models = models_of(offline_example, statuses={})
    live = by_name(
        *(job_of(models, "globex", TenantOperation(op), v, step, state=s) for op, v, step, s in jobs)
    )
    resolved = deprovisioning_target(models, models.tenants["globex"], live)
    assert (resolved.version and resolved.version.name, resolved.rule) == (expected, rule)


def test_jobs_of_an_earlier_tenant_of_the_same_name_do_not_count(offline_example: RenderedExample) -> None:
    models = models_of(offline_example, statuses={})
    old = job_of(
        models,
        "globex",
        TenantOperation.PROVISIONING,
        V100,
        2,
        state="Complete",
        created="2024-04-01T00:00:00Z",
    )
    same_second = job_of(
        models, "globex", TenantOperation.PROVISIONING, V100, 1, state=None, created=TENANT_CREATED
    )
    mine = jobs_of_tenant([old, same_second], models.tenants["globex"], models.tenant_objects["globex"])
    assert list(mine) == [same_second["metadata"]["name"]]
    other_tenant = job_of(models, "acme", TenantOperation.PROVISIONING, V100, 1, state=None)
    assert jobs_of_tenant([other_tenant], models.tenants["globex"], models.tenant_objects["globex"]) == {}


def test_a_started_deprovisioning_keeps_its_version(offline_example: RenderedExample) -> None:
    models = models_of(offline_example)  # initech's record says 1.1.0
    started = job_of(models, "initech", TenantOperation.DEPROVISIONING, V100, 1, state=None)
    resolved = deprovisioning_target(models, models.tenants["initech"], by_name(started))
    assert (resolved.version and resolved.version.name, resolved.rule) == (V100, "deprovisioning Jobs")


def test_a_completed_deprovisioning_retires_the_tenant(offline_example: RenderedExample) -> None:
    done = {"operation": "deprovisioning", "capApplicationVersionInstance": V110}
    models = models_of(
        offline_example, statuses={"initech": {"state": "Deleting", "lastCompletedOperation": done}}
    )
    resolved = deprovisioning_target(models, models.tenants["initech"], {})
    assert resolved.retired and resolved.version is None


def test_a_version_that_is_gone_is_a_problem(offline_example: RenderedExample) -> None:
    models = models_of(
        offline_example,
        statuses={"acme": {"state": "Ready", "currentCAPApplicationVersionInstance": "bookshop-0-9"}},
    )
    resolved = deprovisioning_target(models, models.tenants["acme"], {})
    assert resolved.version is None
    assert (
        resolved.problem
        == "status.currentCAPApplicationVersionInstance is bookshop-0-9, which is not in the cluster"
    )


def test_a_pinned_version_is_taken_without_evidence(offline_example: RenderedExample) -> None:
    models = models_of(offline_example, statuses={})
    pinned = application_models(
        models.app.source.body,
        [v.source.body for v in models.versions.ordered],
        [
            {
                **models.tenant_objects["globex"],
                "spec": {**models.tenant_objects["globex"]["spec"], "version": "1.0.0"},
            }
        ],
    )
    resolved = deprovisioning_target(pinned, pinned.tenants["globex"], {})
    assert (resolved.version and resolved.version.name, resolved.rule) == (V100, "spec.version")


def test_versions_in_use(offline_example: RenderedExample) -> None:
    # 1.1.0 is being deleted: a serving tenant on 1.0.0 is no longer headed for it, a deleted
    # tenant without evidence is deprovisioned on it, a running upgrade Job holds it
    models = models_of(offline_example, deleting_versions=(V110,), deleting_tenants=("globex",))
    acme, globex = models.tenants["acme"], models.tenants["globex"]
    assert versions_in_use(models, acme, {}) == {V100}
    assert versions_in_use(models, globex, {}) == {V110}
    upgrading = job_of(models, "acme", TenantOperation.UPGRADE, V110, 1, state=None)
    assert versions_in_use(models, acme, by_name(upgrading)) == {V100, V110}
    serving = models_of(offline_example, statuses={})
    assert versions_in_use(serving, serving.tenants["globex"], {}) == {V110}


@pytest.mark.parametrize(
    ("states", "action", "number"),
    [
        ((), StepAction.CREATE, 1),
        (("running",), StepAction.WAIT, 1),
        (("Failed",), StepAction.CREATE, 2),  # step 1 may fail (continueOnFailure)
        (("Complete",), StepAction.CREATE, 2),
        (("Complete", "running"), StepAction.WAIT, 2),
        (("Complete", "Failed"), StepAction.FAILED, 2),
        (("Failed", "Complete"), StepAction.DONE, 2),
    ],
)
def test_steps_run_strictly_in_order(
    offline_example: RenderedExample, states: tuple[str, ...], action: StepAction, number: int
) -> None:
    models = models_of(offline_example)
    planned = operation_jobs(
        models.app, models.tenants["initech"], TenantOperation.DEPROVISIONING, models.versions.ordered[-1]
    )
    live = by_name(
        *(
            job_of(
                models,
                "initech",
                TenantOperation.DEPROVISIONING,
                V110,
                step,
                state=None if s == "running" else s,
            )
            for step, s in enumerate(states, start=1)
        )
    )
    step = next_step(planned, live)
    assert (step.action, step.number) == (action, number)
    if action in (StepAction.WAIT, StepAction.FAILED):
        assert step.job is live[planned[number - 1]["metadata"]["name"]]


def test_the_controllers_jobs_have_no_gate_no_ttl_and_an_owner(offline_example: RenderedExample) -> None:
    versions = offline_example.versions()
    for written in versions:
        for workload in written["spec"]["workloads"]:
            if workload["name"] == "tenant-job":
                workload["jobDefinition"]["ttlSecondsAfterFinished"] = 60
    tenant = offline_example.tenant("acme")
    tenant["metadata"]["uid"] = "0b8a7c1e-0000-4000-8000-000000000001"
    models = application_models(offline_example.application(), versions, [tenant])
    version = models.versions.ordered[0]
    rendered = operation_jobs(models.app, models.tenants["acme"], TenantOperation.DEPROVISIONING, version)[0]
    assert rendered["spec"]["ttlSecondsAfterFinished"] == 60
    job = controller_job(rendered, version, tenant)
    assert "ttlSecondsAfterFinished" not in job["spec"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["envFrom"] == [{"secretRef": {"name": "bookshop-1-0-0-tenant-job-vcap"}}]
    assert rendered["spec"]["template"]["spec"]["containers"][0]["envFrom"][0] == {
        "configMapRef": {"name": "bookshop-1-0-0-ready"}
    }
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "CAPTenant",
            "name": "acme",
            "uid": tenant["metadata"]["uid"],
        }
    ]
    rest = copy.deepcopy(job)
    del rest["metadata"]["ownerReferences"]
    expected = copy.deepcopy(rendered)
    del expected["spec"]["ttlSecondsAfterFinished"]
    del expected["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]
    assert rest == expected
