"""The pure parts, as tables: how an operation stands from its Jobs, which verdict a callback gets
from the tenant's record, the stored delivery state, and which tenant a Job or ConfigMap queues.

No cluster, no Git: the functions take plain objects, exactly as the API server returns them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from btp_gitops.controller.cap.callbacks import (
    DELIVERY_ANNOTATION,
    DeliveryState,
    InvalidCallback,
    PendingCallback,
    TenantFacts,
    Verdict,
    decide,
)
from btp_gitops.controller.cap.tenant_operations import (
    ExpectedJob,
    Progress,
    operation_result,
    tenant_of_callback,
    tenant_of_job,
)
from btp_gitops.controller.clients.cluster_side import Operation
from btp_gitops.controller.runtime import ObjectKey
from btp_gitops.generator.domains.cap.model import TenantOperation
from btp_gitops.generator.domains.cap.tenants.model import CompletedOperation, TenantState, TenantStatus

NOW = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
STEPS = (ExpectedJob("t-upgrade-1-aaaa", 1, "notify"), ExpectedJob("t-upgrade-2-bbbb", 2, "tenant-job"))


def job(condition: str | None = None, *, optional: bool = False) -> dict[str, Any]:
    annotations = {"btp-gitops.io/continue-on-failure": "true"} if optional else {}
    status: dict[str, Any] = {}
    if condition:
        status["conditions"] = [
            {
                "type": condition,
                "status": "True",
                "reason": "BackoffLimitExceeded" if condition == "Failed" else "",
            }
        ]
    return {"metadata": {"name": "j", "annotations": annotations}, "status": status}


@pytest.mark.parametrize(
    ("first", "second", "progress", "detail"),
    [
        (None, None, Progress.RUNNING, "waiting for step 1 (Job t-upgrade-1-aaaa not created yet), step 2"),
        (job(), job(), Progress.RUNNING, "waiting for step 1 (Job t-upgrade-1-aaaa running)"),
        (job("Complete"), job(), Progress.RUNNING, "waiting for step 2 (Job t-upgrade-2-bbbb running)"),
        (job("Complete"), job("Complete"), Progress.SUCCEEDED, "every step completed"),
        (job("Failed", optional=True), job("Complete"), Progress.SUCCEEDED, "every step completed"),
        (job("Failed", optional=True), None, Progress.RUNNING, "waiting for step 2"),
        (
            job("Failed"),
            None,
            Progress.FAILED,
            "step 1 (notify, Job t-upgrade-1-aaaa) failed: BackoffLimitExceeded",
        ),
        (job("Complete"), job("Failed"), Progress.FAILED, "step 2 (tenant-job, Job t-upgrade-2-bbbb) failed"),
        # Only conditions whose status is "True" count: a Complete that is "False" is no success.
        (
            {
                "metadata": {},
                "status": {
                    "conditions": [
                        {"type": "Complete", "status": "False"},
                        {"type": "Failed", "status": "True"},
                    ]
                },
            },
            None,
            Progress.FAILED,
            "step 1",
        ),
    ],
)
def test_operation_result(
    first: dict[str, Any] | None, second: dict[str, Any] | None, progress: Progress, detail: str
) -> None:
    result = operation_result([(STEPS[0], first), (STEPS[1], second)])
    assert result.progress == progress
    assert result.detail.startswith(detail)


def callback(operation: Operation, deadline: dt.datetime = NOW + dt.timedelta(minutes=5)) -> PendingCallback:
    return PendingCallback.of(config_map(operation, deadline))


def config_map(operation: Operation, deadline: dt.datetime, annotations: dict[str, str] | None = None) -> Any:
    return {
        "metadata": {"name": "btp-gitops-callback-t", "namespace": "ns", "annotations": annotations or {}},
        "data": {
            "operation": operation.value,
            "tenantName": "t",
            "tenantId": "id-1",
            "callbackPath": "/callback/id-1",
            "deadline": deadline.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "appUrl": "https://t.example.com",
            "application": "shop",
        },
    }


def status(
    state: TenantState | None = None, current: str = "", done: tuple[TenantOperation, str] | None = None
) -> TenantStatus:
    return TenantStatus(state, current, (), CompletedOperation(*done) if done else None)


PROVISIONED = status(TenantState.READY, "shop-1", (TenantOperation.PROVISIONING, "shop-1"))
DEPROVISIONED = status(None, "shop-1", (TenantOperation.DEPROVISIONING, "shop-1"))


@pytest.mark.parametrize(
    ("operation", "facts", "deadline_passed", "expected"),
    [
        (Operation.PROVISIONING, TenantFacts(True, TenantStatus()), False, None),
        (
            Operation.PROVISIONING,
            TenantFacts(True, PROVISIONED),
            False,
            Verdict(True, "Provisioning successful"),
        ),
        (
            Operation.PROVISIONING,
            TenantFacts(True, PROVISIONED),
            True,
            Verdict(True, "Provisioning successful"),
        ),
        (
            Operation.PROVISIONING,
            TenantFacts(True, status(TenantState.UPGRADE_ERROR, "shop-1")),
            False,
            Verdict(True, "Provisioning successful"),  # provisioned; a later upgrade failed
        ),
        (
            Operation.PROVISIONING,
            TenantFacts(True, status(TenantState.PROVISIONING_ERROR), "step 1 failed"),
            False,
            Verdict(False, "Provisioning failed: step 1 failed"),
        ),
        # Deprovisioned earlier and subscribed again: not provisioned until the new provisioning.
        (Operation.PROVISIONING, TenantFacts(True, DEPROVISIONED), False, None),
        (Operation.PROVISIONING, TenantFacts(False, TenantStatus()), False, None),
        (
            Operation.PROVISIONING,
            TenantFacts(False, TenantStatus()),
            True,
            Verdict(False, "Provisioning failed: not completed by the deadline 2025-03-01T11:59:00Z"),
        ),
        (Operation.DEPROVISIONING, TenantFacts(True, PROVISIONED), False, None),
        (
            Operation.DEPROVISIONING,
            TenantFacts(False, TenantStatus()),
            False,
            Verdict(True, "Deprovisioning successful"),
        ),
        (
            Operation.DEPROVISIONING,
            TenantFacts(True, DEPROVISIONED),
            True,
            Verdict(True, "Deprovisioning successful"),
        ),
        (
            Operation.DEPROVISIONING,
            TenantFacts(True, status(TenantState.DELETING, "shop-1"), "step 1 failed"),
            False,
            Verdict(False, "Deprovisioning failed: step 1 failed"),
        ),
    ],
)
def test_decide(
    operation: Operation, facts: TenantFacts, deadline_passed: bool, expected: Verdict | None
) -> None:
    deadline = NOW - dt.timedelta(minutes=1) if deadline_passed else NOW + dt.timedelta(minutes=1)
    assert decide(callback(operation, deadline), facts, NOW) == expected


def test_the_delivery_state_belongs_to_its_callback() -> None:
    pending = callback(Operation.PROVISIONING)
    state = DeliveryState(pending.fingerprint, Verdict(False, "Provisioning failed"), 2, NOW, "answered 503")
    assert DeliveryState.decode(state.encode()) == state
    assert DeliveryState.decode("{not json") is None

    stored = PendingCallback.of(
        config_map(Operation.PROVISIONING, pending.deadline, {DELIVERY_ANNOTATION: state.encode()})
    )
    assert stored.state == state
    later = pending.deadline + dt.timedelta(minutes=15)  # a new callback opened under the same name
    assert (
        PendingCallback.of(
            config_map(Operation.PROVISIONING, later, {DELIVERY_ANNOTATION: state.encode()})
        ).state
        is None
    )


def test_a_callback_without_its_path_cannot_be_read() -> None:
    broken = config_map(Operation.PROVISIONING, NOW)
    del broken["data"]["callbackPath"]
    with pytest.raises(InvalidCallback, match="lacks callbackPath"):
        PendingCallback.of(broken)
    broken["data"].update(callbackPath="/c", operation="upgrade")
    with pytest.raises(InvalidCallback, match="not readable"):
        PendingCallback.of(broken)


def test_jobs_and_callbacks_queue_their_tenant() -> None:
    rendered = {
        "metadata": {"namespace": "shop", "annotations": {"sme.sap.com/owner-identifier": "shop.acme"}}
    }
    assert list(tenant_of_job(rendered)) == [ObjectKey("shop", "acme")]
    assert list(tenant_of_job({"metadata": {"namespace": "shop"}})) == []
    foreign = {
        "metadata": {"namespace": "shop", "annotations": {"sme.sap.com/owner-identifier": "other.acme"}}
    }
    assert list(tenant_of_job(foreign)) == []
    assert list(tenant_of_callback(config_map(Operation.PROVISIONING, NOW))) == [ObjectKey("ns", "t")]
