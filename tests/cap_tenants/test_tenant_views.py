"""The typed view of a tenant record (cap.tenants.model.tenant_from_source): every field read as
the record says, whether its status is one many records share (made once, then shared) or one
of another shape (made for the record alone)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap.model import TenantOperation
from btp_gitops.generator.domains.cap.tenants import model
from btp_gitops.generator.domains.cap.tenants.model import (
    CompletedOperation,
    TenantState,
    TenantStatus,
    TenantType,
    UpgradeStrategy,
    tenant_from_source,
)


def record(status: Any = None, **metadata: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenant",
        "metadata": {"name": "acme", "namespace": "shop", **metadata},
        "spec": {"capApplicationInstance": "bookshop", "subDomain": "acme-eu", "tenantId": "t-1"},
    }
    if status is not None:
        body["status"] = status
    return body


def view(body: dict[str, Any]) -> model.Tenant:
    return tenant_from_source(SourceDocument("tenants/acme.yaml", 1, body, Path()), TenantType.CONSUMER)


READY = {
    "state": "Ready",
    "currentCAPApplicationVersionInstance": "bookshop-1-1-0",
    "lastCompletedOperation": {"operation": "upgrade", "capApplicationVersionInstance": "bookshop-1-1-0"},
}


def test_every_field_of_a_record_is_read() -> None:
    tenant = view(
        record(READY, labels={"team": "a", "tier": 2}, annotations={"btp-gitops.io/deprovision": "true"})
        | {
            "spec": {
                "capApplicationInstance": "bookshop",
                "subDomain": "acme-eu",
                "tenantId": "t-1",
                "version": "1.1.0",
                "versionUpgradeStrategy": "never",
            }
        }
    )
    assert (tenant.name, tenant.namespace, tenant.application, tenant.sub_domain, tenant.tenant_id) == (
        "acme",
        "shop",
        "bookshop",
        "acme-eu",
        "t-1",
    )
    assert (tenant.version, tenant.upgrade_strategy, tenant.tenant_type) == (
        "1.1.0",
        UpgradeStrategy.NEVER,
        TenantType.CONSUMER,
    )
    assert tenant.marked_for_deprovisioning and tenant.deleting
    assert tenant.labels == {"team": "a", "tier": "2"}
    assert tenant.annotations == {"btp-gitops.io/deprovision": "true"}
    assert tenant.subscription_context_secret == "acme-subscription-context"
    assert tenant.status == TenantStatus(
        TenantState.READY, "bookshop-1-1-0", (), CompletedOperation(TenantOperation.UPGRADE, "bookshop-1-1-0")
    )


def test_records_saying_the_same_status_share_one_and_others_get_their_own() -> None:
    first, second = view(record(copy.deepcopy(READY))), view(record(copy.deepcopy(READY)))
    assert first.status is second.status
    other = view(record(READY | {"currentCAPApplicationVersionInstance": "bookshop-1-0-0"}))
    assert other.status is not first.status
    assert other.status.current_instance == "bookshop-1-0-0"
    assert other.status.last_completed == first.status.last_completed


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({}, TenantStatus()),
        ({"state": ""}, TenantStatus()),
        ({"state": "Provisioning"}, TenantStatus(TenantState.PROVISIONING)),
        (
            READY | {"previousCAPApplicationVersions": ["bookshop-1-0-0", 7]},
            TenantStatus(
                TenantState.READY,
                "bookshop-1-1-0",
                ("bookshop-1-0-0", "7"),
                CompletedOperation(TenantOperation.UPGRADE, "bookshop-1-1-0"),
            ),
        ),
        (
            READY | {"currentCAPApplicationVersionInstance": 3},
            TenantStatus(
                TenantState.READY, "3", (), CompletedOperation(TenantOperation.UPGRADE, "bookshop-1-1-0")
            ),
        ),
        (
            {
                "state": "Ready",
                "lastCompletedOperation": {"operation": "upgrade", "capApplicationVersionInstance": 5},
            },
            TenantStatus(TenantState.READY, "", (), CompletedOperation(TenantOperation.UPGRADE, "5")),
        ),
    ],
)
def test_a_status_of_any_shape_reads_as_it_says(status: dict[str, Any], expected: TenantStatus) -> None:
    assert view(record(status)).status == expected
    assert view(record(copy.deepcopy(status))).status == expected  # the second time too (shared)


@pytest.mark.parametrize(
    "status",
    [
        READY | {"state": "Sleeping"},
        READY | {"lastCompletedOperation": {"operation": "nap", "capApplicationVersionInstance": "v"}},
    ],
)
def test_an_unknown_state_or_operation_is_refused_every_time(status: dict[str, Any]) -> None:
    for _ in range(2):  # not remembered as a status either
        with pytest.raises(ValueError):
            view(record(status))


def test_shared_statuses_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model, "_SHARED_MAX", 4)
    monkeypatch.setattr(model, "_SHARED_STATUSES", {})
    for index in range(10):
        view(record(READY | {"currentCAPApplicationVersionInstance": f"v{index}"}))
        assert len(model._SHARED_STATUSES) <= 4
