"""Operation selection as a table: recorded state x versions in the sources x upgrade strategy.

Each row is one tenant record against the shop application with some of its versions (1.0.0,
2.0.0, 3.0.0); the expected outcome is the operation and its version, where the VirtualService
routes, whether the tenant is gone, or the problem reported. The selection is a pure function of
the record and the versions (generator.domains.cap.tenants.selection), so the real models are
built from the real source files and nothing else is involved.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.domains.cap.catalog import build_catalog
from btp_gitops.generator.domains.cap.model import Application, Version
from btp_gitops.generator.domains.cap.tenants.model import TenantType, tenant_from_source
from btp_gitops.generator.domains.cap.tenants.selection import (
    TenantPlan,
    VersionIndex,
    application_retiring,
    desired_version,
    plan_tenant,
    previous_versions,
)
from btp_gitops.generator.io.sources import load_sources
from tests.cap_tenants.conftest import SHOP, recorded_status, tenant_record

DEPROVISION = {"btp-gitops.io/deprovision": "true"}


def shop() -> tuple[Application, list[Version]]:
    catalog = build_catalog(SourceSet.of(load_sources([SHOP])))
    app = catalog.applications[0]
    return app, catalog.versions_of(app)


def plan_for(record: dict[str, Any], versions: tuple[str, ...]) -> TenantPlan:
    app, all_versions = shop()
    index = VersionIndex.of([v for v in all_versions if v.version in versions])
    source = SourceDocument(file="tenant.yaml", document=1, body=record, directory=Path())
    return plan_tenant(tenant_from_source(source, TenantType.CONSUMER), app, index)


@dataclass(frozen=True)
class Row:
    record: dict[str, Any]
    versions: tuple[str, ...] = ("1.0.0", "2.0.0", "3.0.0")
    operation: tuple[str, str] | None = None  # (operation, CAPApplicationVersion)
    route: str | None = None  # the VirtualService's version
    retired: bool = False
    problem: tuple[str, str] | None = None  # (field path, start of the message)
    warning: str = ""  # start of the warning


def done(operation: str, version: str) -> dict[str, str]:
    return {"operation": operation, "capApplicationVersionInstance": version}


NEVER = {"versionUpgradeStrategy": "never"}

ROWS = [
    # --- no status yet: provisioning, on the desired version, whatever the strategy
    pytest.param(
        Row(tenant_record("t"), operation=("provisioning", "shop-3"), route="shop-3"), id="new-always"
    ),
    pytest.param(
        Row(tenant_record("t", spec=NEVER), operation=("provisioning", "shop-3"), route="shop-3"),
        id="new-never",
    ),
    pytest.param(
        Row(
            tenant_record("t", spec={"version": "2.0.0"}),
            operation=("provisioning", "shop-2"),
            route="shop-2",
        ),
        id="new-pinned",
    ),
    pytest.param(
        Row(tenant_record("t"), versions=("1.0.0",), operation=("provisioning", "shop-1"), route="shop-1"),
        id="new-one-version",
    ),
    pytest.param(
        Row(
            tenant_record("t", status={"state": "Provisioning"}),
            operation=("provisioning", "shop-3"),
            route="shop-3",
        ),
        id="provisioning",
    ),
    pytest.param(
        Row(
            tenant_record("t", status={"state": "ProvisioningError"}),
            operation=("provisioning", "shop-3"),
            route="shop-3",
        ),
        id="provisioning-error-same-jobs",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t",
                status={"state": "Provisioning", "lastCompletedOperation": done("provisioning", "shop-3")},
            ),
            route="shop-3",
        ),
        id="provisioning-recorded-complete",
    ),
    # --- provisioned: upgrade when the desired version differs from the current one
    pytest.param(
        Row(tenant_record("t", status=recorded_status("shop-3")), route="shop-3"), id="ready-newest"
    ),
    pytest.param(
        Row(
            tenant_record("t", status=recorded_status("shop-1")),
            operation=("upgrade", "shop-3"),
            route="shop-3",
        ),
        id="ready-old-always",
    ),
    pytest.param(
        Row(
            tenant_record("t", status=recorded_status("shop-1")),
            versions=("1.0.0", "2.0.0"),
            operation=("upgrade", "shop-2"),
            route="shop-2",
        ),
        id="ready-old-always-two-versions",
    ),
    pytest.param(
        Row(tenant_record("t", status=recorded_status("shop-1")), versions=("1.0.0",), route="shop-1"),
        id="ready-only-version",
    ),
    pytest.param(
        Row(tenant_record("t", spec=NEVER, status=recorded_status("shop-1")), route="shop-1"),
        id="ready-never",
    ),
    pytest.param(
        Row(
            tenant_record("t", spec={**NEVER, "version": "2.0.0"}, status=recorded_status("shop-1")),
            operation=("upgrade", "shop-2"),
            route="shop-2",
        ),
        id="ready-never-pinned-newer",
    ),
    pytest.param(
        Row(
            tenant_record("t", spec={"version": "2.0.0"}, status=recorded_status("shop-2")),
            route="shop-2",
        ),
        id="ready-pinned-current",
    ),
    pytest.param(
        Row(
            tenant_record("t", status=recorded_status("shop-2", state="Upgrading")),
            operation=("upgrade", "shop-3"),
            route="shop-3",
        ),
        id="upgrading",
    ),
    pytest.param(
        Row(
            tenant_record("t", status=recorded_status("shop-2", state="UpgradeError")),
            operation=("upgrade", "shop-3"),
            route="shop-3",
        ),
        id="upgrade-error-same-jobs",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t", status=recorded_status("shop-2", lastCompletedOperation=done("upgrade", "shop-3"))
            ),
            route="shop-3",
        ),
        id="upgrade-recorded-complete",
    ),
    pytest.param(
        Row(
            tenant_record("t", status=recorded_status("shop-0")),
            operation=("upgrade", "shop-3"),
            route="shop-3",
            warning="the tenant runs on shop-0, which is not in the sources",
        ),
        id="current-version-removed",
    ),
    # --- marked for deprovisioning (annotation or state Deleting)
    pytest.param(
        Row(
            tenant_record("t", annotations=DEPROVISION, status=recorded_status("shop-2")),
            operation=("deprovisioning", "shop-2"),
        ),
        id="marked-ready",
    ),
    pytest.param(
        Row(
            tenant_record("t", spec=NEVER, annotations=DEPROVISION, status=recorded_status("shop-1")),
            operation=("deprovisioning", "shop-1"),
        ),
        id="marked-never",
    ),
    pytest.param(
        Row(
            tenant_record("t", status=recorded_status("shop-1", state="Deleting")),
            operation=("deprovisioning", "shop-1"),
        ),
        id="deleting-state",
    ),
    pytest.param(
        Row(tenant_record("t", annotations=DEPROVISION), operation=("deprovisioning", "shop-3")),
        id="marked-before-any-status",
    ),
    pytest.param(
        Row(
            tenant_record("t", annotations=DEPROVISION, status={"state": "ProvisioningError"}),
            versions=("1.0.0", "2.0.0"),
            operation=("deprovisioning", "shop-2"),
        ),
        id="marked-provisioning-error",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t",
                annotations=DEPROVISION,
                status=recorded_status(
                    "shop-2", state="Deleting", lastCompletedOperation=done("deprovisioning", "shop-2")
                ),
            ),
            retired=True,
        ),
        id="deprovisioned",
    ),
    pytest.param(
        Row(
            tenant_record("t", annotations=DEPROVISION, status=recorded_status("shop-0")),
            warning="deprovisioning waits: the tenant runs on shop-0",
        ),
        id="marked-version-removed",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t", status=recorded_status("shop-2", lastCompletedOperation=done("deprovisioning", "shop-2"))
            ),
            operation=("provisioning", "shop-3"),
            route="shop-3",
        ),
        id="subscribed-again",
    ),
    # --- a completed operation is skipped only when both its operation and its version match
    pytest.param(
        Row(
            tenant_record(
                "t", status=recorded_status("shop-2", lastCompletedOperation=done("upgrade", "shop-2"))
            ),
            operation=("upgrade", "shop-3"),
            route="shop-3",
        ),
        id="second-upgrade-after-a-completed-one",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t", status=recorded_status("shop-3", lastCompletedOperation=done("deprovisioning", "shop-3"))
            ),
            operation=("provisioning", "shop-3"),
            route="shop-3",
        ),
        id="subscribed-again-on-the-same-version",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t",
                annotations=DEPROVISION,
                status=recorded_status("shop-2", lastCompletedOperation=done("upgrade", "shop-2")),
            ),
            operation=("deprovisioning", "shop-2"),
        ),
        id="marked-after-an-upgrade",
    ),
    pytest.param(
        Row(
            tenant_record("t", annotations=DEPROVISION, spec={"version": "9.9.9"}),
            problem=("spec.version", "no CAPApplicationVersion of shop has version 9.9.9"),
        ),
        id="marked-before-any-status-on-an-unknown-version",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t", status=recorded_status("shop-3", lastCompletedOperation=done("provisioning", "shop-3"))
            ),
            route="shop-3",
        ),
        id="ready-newest-after-its-provisioning",
    ),
    pytest.param(
        Row(
            tenant_record(
                "t", status=recorded_status("shop-0", lastCompletedOperation=done("deprovisioning", "shop-0"))
            ),
            operation=("provisioning", "shop-3"),
            route="shop-3",
        ),
        id="subscribed-again-after-its-version-was-removed",
    ),
    # --- no version in the sources yet: only the record
    pytest.param(Row(tenant_record("t", status=recorded_status("shop-1")), versions=()), id="no-versions"),
    # --- records that cannot be honoured
    pytest.param(
        Row(
            tenant_record("t", spec={"version": "1.0.0"}, status=recorded_status("shop-2")),
            problem=("spec.version", "the tenant runs on 2.0.0 (shop-2); CAP Operator never downgrades"),
        ),
        id="downgrade",
    ),
    pytest.param(
        Row(
            tenant_record("t", spec={"version": "9.9.9"}),
            problem=("spec.version", "no CAPApplicationVersion of shop has version 9.9.9"),
        ),
        id="unknown-version",
    ),
    pytest.param(
        Row(
            tenant_record("t", spec=NEVER, status=recorded_status("shop-0")),
            problem=("status.currentCAPApplicationVersionInstance", "shop-0 is not in the sources"),
        ),
        id="never-on-removed-version",
    ),
]


@pytest.mark.parametrize("row", ROWS)
def test_operation_selection(row: Row) -> None:
    plan = plan_for(row.record, row.versions)

    if row.problem is not None:
        assert [(p.field_path, p.message[: len(row.problem[1])]) for p in plan.problems] == [row.problem]
        assert plan.operation is None
        return
    assert plan.problems == ()
    found = (plan.operation.operation.value, plan.operation.version.name) if plan.operation else None
    assert found == row.operation
    assert (plan.route_to.name if plan.route_to else None) == row.route
    assert plan.retired == row.retired
    assert plan.warning[: len(row.warning)] == row.warning
    assert bool(plan.warning) == bool(row.warning)


def test_sessions_stay_on_every_version_the_tenant_ran_on() -> None:
    _, versions = shop()
    index = VersionIndex.of(versions)
    record = tenant_record(
        "t", status=recorded_status("shop-2", previousCAPApplicationVersions=["shop-0", "shop-1"])
    )
    tenant = tenant_from_source(SourceDocument("tenant.yaml", 1, record, Path()), TenantType.CONSUMER)

    def names(route_to: str) -> list[str]:
        return [v.name for v in previous_versions(tenant, index, index.by_name[route_to])]

    # shop-0 is not in the sources: the versions of the history that are, oldest first
    assert names("shop-3") == ["shop-1", "shop-2"]  # upgrading: the recorded current goes last
    assert names("shop-2") == ["shop-1"]  # settled: the recorded history
    gone = tenant_record(
        "t", status=recorded_status("shop-2", previousCAPApplicationVersions=["shop-1", "shop-9"])
    )
    tenant = tenant_from_source(SourceDocument("tenant.yaml", 1, gone, Path()), TenantType.CONSUMER)
    assert names("shop-2") == ["shop-1"]  # shop-9 is not in the sources


def test_a_problem_points_at_the_tenant_record_and_names_every_version() -> None:
    plan = plan_for(tenant_record("t", spec={"version": "9.9.9"}), ("1.0.0", "2.0.0"))
    assert [(p.file, p.field_path, p.message) for p in plan.problems] == [
        (
            "tenant.yaml",
            "spec.version",
            "no CAPApplicationVersion of shop has version 9.9.9 (versions in the sources: 1.0.0, 2.0.0)",
        )
    ]


def test_a_version_precedes_newer_ones_only() -> None:
    _, versions = shop()
    index = VersionIndex.of(versions)
    one, two = index.by_name["shop-1"], index.by_name["shop-2"]
    assert index.precedes(one, two)
    assert not index.precedes(two, one)
    assert not index.precedes(two, two)


def test_an_application_without_versions_has_no_desired_version() -> None:
    app, _ = shop()
    source = SourceDocument(file="tenant.yaml", document=1, body=tenant_record("t"), directory=Path())
    tenant = tenant_from_source(source, TenantType.CONSUMER)
    with pytest.raises(ValueError, match=r"^CAPApplication shop has no version$"):
        desired_version(tenant, app, VersionIndex.of([]))


def test_every_tenant_of_a_retiring_application_is_deprovisioned() -> None:
    app, versions = shop()
    body = copy.deepcopy(app.source.body)
    body["metadata"]["annotations"] = {**(body["metadata"].get("annotations") or {}), **DEPROVISION}
    retiring = dataclasses.replace(app, source=dataclasses.replace(app.source, body=body))
    record = tenant_record("t", status=recorded_status("shop-2"))
    tenant = tenant_from_source(SourceDocument("tenant.yaml", 1, record, Path()), TenantType.CONSUMER)
    index = VersionIndex.of(versions)

    assert application_retiring(retiring) is True
    assert application_retiring(app) is False
    plan = plan_tenant(tenant, retiring, index)
    assert plan.operation is not None
    assert (plan.operation.operation.value, plan.operation.version.name) == ("deprovisioning", "shop-2")
    assert plan.route_to is None


def test_a_pinned_version_of_an_application_without_versions_says_none_exist() -> None:
    app, _ = shop()
    source = SourceDocument("tenant.yaml", 1, tenant_record("t", spec={"version": "1.0.0"}), Path())
    problem = desired_version(tenant_from_source(source, TenantType.CONSUMER), app, VersionIndex.of([]))
    assert isinstance(problem, Problem)
    assert problem.message == (
        "no CAPApplicationVersion of shop has version 1.0.0 (versions in the sources: none)"
    )
