"""The CAP models the tenants domain builds on, and the sync stages CAP objects use.

Covers: the steps of each tenant operation (listed ones in order, else the first TenantOperation
job), the Router and its Service ports, default ports per workload type, the order content jobs
run in and their names (legacy `<cav>-content` for a single one), semantic version order, and the
sync stages with ordered steps (Argo CD waves, the step bound of a stage).
Nothing is faked: YAML literals in, the real model and functions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap.exposures import current_version, semantic_version
from btp_gitops.generator.domains.cap.identity import content_job_name, service_name
from btp_gitops.generator.domains.cap.model import TenantOperation, TenantOperationStep, Version
from btp_gitops.generator.transforms.ordering import Stage, argocd_sync_wave, stage_steps
from tests.cap.conftest import CAP_APP

VERSION = """\
apiVersion: sme.sap.com/v1alpha1
kind: CAPApplicationVersion
metadata: {name: shop-2, namespace: shop}
spec:
  capApplicationInstance: shop
  version: "2"
  workloads:
    - {name: srv, deploymentDefinition: {type: CAP, image: srv}}
    - {name: router, deploymentDefinition: {type: Router, image: router, ports: [{name: web, port: 8080}, {name: admin, port: 8081}]}}
    - {name: mtx, jobDefinition: {type: TenantOperation, image: srv}}
    - {name: mtx-legacy, jobDefinition: {type: TenantOperation, image: srv}}
    - {name: notify, jobDefinition: {type: CustomTenantOperation, image: notify}}
    - {name: ui, jobDefinition: {type: Content, image: ui}}
  tenantOperations:
    upgrade:
      - {workloadName: notify, continueOnFailure: true}
      - {workloadName: mtx}
"""


def version_of(text: str) -> Version:
    return Version.from_source(SourceDocument("v.yaml", 1, yaml.safe_load(text), Path(".")))


@pytest.mark.parametrize(
    ("operation", "steps"),
    [
        (
            TenantOperation.UPGRADE,
            (TenantOperationStep("notify", True, 0), TenantOperationStep("mtx", False, 1)),
        ),
        (
            TenantOperation.PROVISIONING,
            (TenantOperationStep("mtx"),),
        ),  # not listed: the first TenantOperation
        (TenantOperation.DEPROVISIONING, (TenantOperationStep("mtx"),)),
    ],
)
def test_tenant_operation_steps(operation: TenantOperation, steps: tuple[TenantOperationStep, ...]) -> None:
    assert version_of(VERSION).tenant_operation_steps(operation) == steps


def test_the_router_and_its_service_for_tenant_routes() -> None:
    version = version_of(VERSION)
    router = version.router
    assert router is not None
    assert service_name(version, router) == "shop-2-router-svc"
    assert [p.port for p in router.ports] == [8080, 8081]  # tenants are routed to the first


def test_default_ports_of_cap_and_router() -> None:
    version = version_of(VERSION.replace(", ports: [{name: web, port: 8080}, {name: admin, port: 8081}]", ""))
    srv, router = version.workloads[0], version.workloads[1]
    assert [(p.name, p.port, p.router_destination_name) for p in srv.ports] == [
        ("server-svc-port", 4004, "srv-api")
    ]
    assert [(p.name, p.port, p.router_destination_name) for p in router.ports] == [
        ("router-svc-port", 5000, None)
    ]
    assert version.workloads[2].ports == ()  # jobs have no Service


def test_content_job_order_and_names() -> None:
    single = version_of(VERSION)
    assert [content_job_name(single, w) for w in single.content_jobs_in_order()] == ["shop-2-content"]
    several = version_of(
        VERSION.replace(
            "    - {name: ui, jobDefinition: {type: Content, image: ui}}\n",
            "    - {name: ui, jobDefinition: {type: Content, image: ui}}\n"
            "    - {name: db, jobDefinition: {type: Content, image: db}}\n",
        ).replace("  tenantOperations:", "  contentJobs: [db, ui]\n  tenantOperations:")
    )
    assert [content_job_name(several, w) for w in several.content_jobs_in_order()] == [
        "shop-2-db",
        "shop-2-ui",
    ]


@pytest.mark.parametrize(
    ("versions", "highest"),
    [(["1.0.0", "1.10.0", "1.9.9"], "1.10.0"), (["2", "1.5"], "2"), (["v1.2.0", "1.2.0-rc.1"], "v1.2.0")],
)
def test_the_current_version_is_the_highest_semantic_version(versions: list[str], highest: str) -> None:
    parsed = [version_of(VERSION.replace('version: "2"', f'version: "{v}"')) for v in versions]
    current = current_version(parsed)
    assert current is not None
    assert current.version == highest
    assert semantic_version("1") == semantic_version("1.0.0")


def test_example_versions_are_side_by_side() -> None:
    texts = [path.read_text() for path in sorted(CAP_APP.glob("version-*.yaml"))]
    assert [version_of(t).version for t in texts] == ["1.0.0", "1.1.0"]


def test_stages_with_steps_map_to_argocd_waves() -> None:
    assert argocd_sync_wave(Stage.RESOURCES) == 0
    assert [argocd_sync_wave(Stage.RELEASE_JOBS, step) for step in (0, 1, 2)] == [10, 11, 12]
    assert argocd_sync_wave(Stage.ROUTING) == 100
    assert stage_steps(Stage.RELEASE_JOBS) == 90
    assert argocd_sync_wave(Stage.RELEASE_JOBS, stage_steps(Stage.RELEASE_JOBS) - 1) < argocd_sync_wave(
        Stage.ROUTING
    )
    with pytest.raises(ValueError, match="step 90 out of range for stage RELEASE_JOBS"):
        argocd_sync_wave(Stage.RELEASE_JOBS, 90)
