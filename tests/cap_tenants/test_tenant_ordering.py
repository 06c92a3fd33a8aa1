"""Order inside a tenant's operation and around it, and operations that are never rendered again.

Covers: the steps of an operation are consecutive sync steps of the release-jobs stage, in the
version's order, and the VirtualService is in the routing stage after them (Argo CD waves, read
back into the stages the Flux layout uses); an operation's Jobs wait for their version's gate
(every container, init containers too), and the gates are in the routing stage of the
application's app, after its workloads and content jobs; once the status records an operation
as completed its Jobs leave the render and nothing else of the tenant changes; Job names stay
within 63 characters and differ per tenant, operation, version and step; rendering twice gives
the same bytes. Real pipeline in process; nothing is faked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.transforms.ordering import Stage, stage_of_sync_wave
from tests.cap_tenants.conftest import (
    jobs_in_step_order,
    objects_of_kind,
    recorded_status,
    render_files,
    tenant_files,
    tenant_objects,
    tenant_record,
    write_tenants,
)

WAVE = "argocd.argoproj.io/sync-wave"
APPLICATION_DIR = "cap.shop.shop"


def stage(obj: dict[str, Any]) -> tuple[Stage, int]:
    return stage_of_sync_wave(int((obj["metadata"].get("annotations") or {}).get(WAVE, "0")))


def test_steps_run_one_after_another_and_routing_switches_after_them(shop_source: Path) -> None:
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-2"))])

    objects = tenant_objects(render_files(shop_source), "acme")

    jobs = jobs_in_step_order(objects)
    assert [stage(job) for job in jobs] == [
        (Stage.RELEASE_JOBS, 0),
        (Stage.RELEASE_JOBS, 1),
        (Stage.RELEASE_JOBS, 2),
    ]
    assert [job["metadata"]["labels"]["sme.sap.com/tenant-operation-step"] for job in jobs] == ["1", "2", "3"]
    (service,) = objects_of_kind(objects, "VirtualService")
    assert stage(service) == (Stage.ROUTING, 0)
    assert stage(objects_of_kind(objects, "CAPTenant")[0]) == (Stage.RESOURCES, 0)
    assert stage(objects_of_kind(objects, "DNSEntry")[0]) == (Stage.RESOURCES, 0)


def test_jobs_wait_for_the_gate_of_their_version_which_opens_after_its_workloads(shop_source: Path) -> None:
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-2"))])

    files = render_files(shop_source)

    for job in objects_of_kind(tenant_objects(files, "acme"), "Job"):
        pod = job["spec"]["template"]["spec"]
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["envFrom"][0] == {"configMapRef": {"name": "shop-3-ready"}}
    gates = {
        path: yaml.safe_load(text)
        for path, text in files.items()
        if path.startswith(f"{APPLICATION_DIR}/configmap-") and path.endswith("-ready.yaml")
    }
    assert sorted(gate["metadata"]["name"] for gate in gates.values()) == [
        "shop-1-ready",
        "shop-2-ready",
        "shop-3-ready",
    ]
    assert all(stage(gate) == (Stage.ROUTING, 0) for gate in gates.values())
    assert all("data" not in gate for gate in gates.values())  # read by envFrom: it must add no variable
    deployment = yaml.safe_load(files[f"{APPLICATION_DIR}/deployment-shop-3-router.yaml"])
    assert stage(deployment) == (Stage.RESOURCES, 0)


def test_a_recorded_operation_is_not_rendered_again(shop_source: Path) -> None:
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-2"))])
    upgrading = tenant_files(render_files(shop_source), "acme")
    completed = {"operation": "upgrade", "capApplicationVersionInstance": "shop-3"}
    write_tenants(
        shop_source,
        [
            tenant_record(
                "acme",
                status=recorded_status(
                    "shop-3", previousCAPApplicationVersions=["shop-2"], lastCompletedOperation=completed
                ),
            )
        ],
    )

    upgraded = tenant_files(render_files(shop_source), "acme")

    jobs = {path for path in upgrading if "/job-" in path}
    assert len(jobs) == 3
    assert set(upgraded) == set(upgrading) - jobs
    kept = {path for path in upgraded if app_path(path).inside != "kustomization.yaml"}
    assert all(upgraded[path] == upgrading[path] for path in kept)  # the switch was rendered already


def test_job_names_are_short_and_unique_per_tenant_operation_version_and_step(shop_source: Path) -> None:
    long_name = "t" * 63
    records = [
        tenant_record(long_name, sub_domain="long", tenant_id="long-id", status=recorded_status("shop-1")),
        tenant_record("acme", status=recorded_status("shop-1")),
        tenant_record("beta", status=recorded_status("shop-2")),
        tenant_record(
            "gone", status=recorded_status("shop-3"), annotations={"btp-gitops.io/deprovision": "true"}
        ),
    ]
    write_tenants(shop_source, records)

    files = render_files(shop_source)

    names = [
        yaml.safe_load(text)["metadata"]["name"]
        for path, text in files.items()
        if app_path(path).app.startswith("cap-tenant.") and "/job-" in path
    ]
    assert len(names) == 3 + 3 + 3 + 1 + 2  # three upgrades, a deprovisioning, the provider's provisioning
    assert len(set(names)) == len(names)
    assert max(len(name) for name in names) <= 63
    assert any(name.startswith("t" * 40) for name in names)


def test_rendering_twice_gives_the_same_bytes(shop_source: Path) -> None:
    write_tenants(
        shop_source,
        [tenant_record("acme", status=recorded_status("shop-1")), tenant_record("fresh")],
    )
    assert render_files(shop_source) == render_files(shop_source)
