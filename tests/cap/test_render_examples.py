"""Rendering the bundled CAP examples: snapshots, determinism, versions and sync stages.

Covers: the rendered trees of examples/cap-app (multi-tenant, two versions, CAP + Router +
Additional workloads, ordered content jobs, custom tenant operations) and
examples/cap-services-only (two exposures); rendering twice gives the same bytes and a re-render
changes nothing; a removed version disappears from the repo while the others stay byte-identical;
adding a version leaves the Jobs of existing versions untouched and gives the new one new Job
names; sync waves put content jobs in `contentJobs` order after the workloads and VirtualServices
last. Real components: the installed CLI and the in-process pipeline; nothing is faked.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from btp_gitops.generator.core.layout import shard_of
from btp_gitops.generator.core.ownership import is_manifest
from tests.cap.conftest import (
    CAP_APP,
    CLUSTER,
    SERVICES_ONLY,
    RenderRepo,
    objects_of,
    render_files,
    render_result,
)
from tests.conftest import tree_as_yaml

APP_DIR = f"clusters/{CLUSTER}/cap.bookshop.bookshop"
WAVE = "argocd.argoproj.io/sync-wave"


def test_multi_tenant_application_matches_snapshot(
    tmp_path: Path, render_repo: RenderRepo, yaml_snapshot: object
) -> None:
    tree = render_repo(CAP_APP, tmp_path / "repo")
    assert sorted({path.split("/")[2] for path in tree}) == [
        ".btp-gitops-files",
        "cap-clusterdomain.shops-external",
        "cap-domain.bookshop.bookshop",
        "cap-domain.bookshop.bookshop-partners",
        "cap.bookshop.bookshop",
        "tenants",
    ]
    # Each tenant in a shard directory of its application's group (core.layout).
    tenants = [f"cap-tenant.bookshop.{name}" for name in ("acme", "bookshop-provider", "globex", "initech")]
    in_tenants = [path for path in tree if path.split("/")[2] == "tenants"]
    assert {"/".join(path.split("/")[3:6]) for path in in_tenants if not is_manifest(path)} == {
        f"bookshop.bookshop/{shard_of(app)}/{app}" for app in tenants
    }
    # Beside them, the ownership manifests of the group and of each shard directory (core.ownership).
    assert {"/".join(path.split("/")[3:-1]) for path in in_tenants if is_manifest(path)} == {
        "bookshop.bookshop",
        *(f"bookshop.bookshop/{shard_of(app)}" for app in tenants),
    }
    assert tree_as_yaml(tree) == yaml_snapshot


def test_services_only_application_matches_snapshot(
    tmp_path: Path, render_repo: RenderRepo, yaml_snapshot: object
) -> None:
    tree = render_repo(SERVICES_ONLY, tmp_path / "repo")
    assert tree_as_yaml(tree) == yaml_snapshot


def test_rendering_twice_gives_the_same_bytes(tmp_path: Path, render_repo: RenderRepo) -> None:
    assert render_files(CAP_APP, SERVICES_ONLY) == render_files(CAP_APP, SERVICES_ONLY)
    first = render_repo(CAP_APP, tmp_path / "repo")
    second = render_repo(CAP_APP, tmp_path / "repo")
    assert second == first


def test_a_removed_version_disappears_and_the_others_stay(
    cap_source: Path, tmp_path: Path, render_repo: RenderRepo
) -> None:
    before = render_repo(cap_source, tmp_path / "repo")
    (cap_source / "version-1.0.0.yaml").unlink()

    after = render_repo(cap_source, tmp_path / "repo")

    removed = sorted(set(before) - set(after))
    assert removed, "nothing was removed"
    assert all("bookshop-1-0-0" in path for path in removed), removed
    assert not [path for path in after if "bookshop-1-0-0" in path]
    kept = [path for path in after if "bookshop-1-1-0" in path]
    assert kept
    assert all(after[path] == before[path] for path in kept)
    assert b"bookshop-1-0-0" not in after[f"{APP_DIR}/kustomization.yaml"]


def test_a_new_version_gets_new_jobs_and_leaves_the_old_ones_byte_for_byte(
    cap_source: Path, tmp_path: Path, render_repo: RenderRepo
) -> None:
    newer = cap_source / "version-1.1.0.yaml"
    held_back = newer.read_text()
    newer.unlink()
    before = render_repo(cap_source, tmp_path / "repo")
    newer.write_text(held_back)

    after = render_repo(cap_source, tmp_path / "repo")

    jobs_before = {path for path in before if path.startswith(f"{APP_DIR}/job-")}  # tenant Jobs are elsewhere
    assert jobs_before == {
        f"{APP_DIR}/job-bookshop-1-0-0-html5-content.yaml",
        f"{APP_DIR}/job-bookshop-1-0-0-portal-content.yaml",
    }
    assert all(after[path] == before[path] for path in jobs_before)
    assert {path for path in after if path.startswith(f"{APP_DIR}/job-")} - jobs_before == {
        f"{APP_DIR}/job-bookshop-1-1-0-content.yaml"
    }


def _waves(files: dict[str, str]) -> dict[str, str | None]:
    return {
        path: (obj["metadata"].get("annotations") or {}).get(WAVE) for path, obj in objects_of(files).items()
    }


def test_content_jobs_run_in_order_after_the_workloads_and_routing_comes_last() -> None:
    waves = _waves(render_files(CAP_APP, SERVICES_ONLY))
    app = "cap.bookshop.bookshop"
    assert waves[f"{app}/job-bookshop-1-0-0-html5-content.yaml"] == "10"
    assert waves[f"{app}/job-bookshop-1-0-0-portal-content.yaml"] == "11"  # contentJobs order
    assert waves[f"{app}/job-bookshop-1-1-0-content.yaml"] == "10"
    assert waves["cap.catalog.catalog-api/virtualservice-catalog-api-catalog.yaml"] == "100"
    assert waves["cap.catalog.catalog-api/virtualservice-catalog-api-catalog-admin.yaml"] == "100"
    staged = {path for path, wave in waves.items() if wave is not None}
    routing_or_jobs = ("/job-", "/virtualservice-", "-ready.yaml")  # -ready: the versions' tenant gates
    assert all(any(part in path for part in routing_or_jobs) for path in staged), staged
    # Gateways, Certificates and DNS entries are in the default wave 0, before any VirtualService.
    assert waves["cap-domain.catalog.catalog-api/gateway-catalog-api.yaml"] is None
    assert waves["cap-domain.catalog.catalog-api/certificate-catalog--catalog-api.yaml"] is None


def test_exposures_route_to_the_highest_version() -> None:
    objects = objects_of(render_files(SERVICES_ONLY))
    service = objects["cap.catalog.catalog-api/virtualservice-catalog-api-catalog.yaml"]
    hosts = [route["route"][0]["destination"]["host"] for route in service["spec"]["http"]]
    assert hosts == ["catalog-api-2-3-0-api-svc.catalog.svc.cluster.local"] * 2
    assert [route["match"][0]["uri"]["prefix"] for route in service["spec"]["http"]] == ["/odata", "/"]
    assert service["spec"]["gateways"] == ["catalog/catalog-api"]
    assert service["spec"]["hosts"] == ["catalog.catalog.apps.example.com"]


def test_router_destinations_merge_the_users_and_default_to_srv_api() -> None:
    objects = objects_of(render_files(CAP_APP))

    def destinations(version: str) -> list[dict[str, object]]:
        deployment = objects[f"cap.bookshop.bookshop/deployment-bookshop-{version}-approuter.yaml"]
        env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        assert env[0] == {"name": "CAPOP_APP_VERSION", "value": version.replace("-", ".")}
        value = next(item["value"] for item in env if item["name"] == "destinations")
        return list(yaml.safe_load(value))

    assert destinations("1-0-0") == [
        {"name": "help-portal", "url": "https://help.example.com"},
        {"name": "srv-api", "timeout": 600000, "url": "http://bookshop-1-0-0-srv-svc:4004"},
    ]
    assert destinations("1-1-0") == [
        {"forwardAuthToken": True, "name": "srv-api", "url": "http://bookshop-1-1-0-srv-svc:4004"}
    ]


def test_an_autoscaled_workload_leaves_replicas_to_the_autoscaler() -> None:
    objects = objects_of(render_files(CAP_APP))
    deployment = objects["cap.bookshop.bookshop/deployment-bookshop-1-0-0-srv.yaml"]
    autoscaler = objects["cap.bookshop.bookshop/horizontalpodautoscaler-bookshop-1-0-0-srv.yaml"]
    assert "replicas" not in deployment["spec"]
    assert autoscaler["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "bookshop-1-0-0-srv",
    }
    assert (autoscaler["spec"]["minReplicas"], autoscaler["spec"]["maxReplicas"]) == (2, 6)


def test_a_content_job_with_a_ttl_is_reported(cap_source: Path) -> None:
    path = cap_source / "version-1.0.0.yaml"
    path.write_text(
        path.read_text().replace(
            "        backoffLimit: 2\n", "        backoffLimit: 2\n        ttlSecondsAfterFinished: 600\n", 1
        )
    )

    notes = [note for app in render_result(cap_source).apps for note in app.notes]

    assert [(n.level, n.reason, n.subject.rsplit(": ", 1)[1]) for n in notes] == [
        ("warning", "JobRecreatedAfterTtl", "spec.workloads[3].jobDefinition.ttlSecondsAfterFinished")
    ]
    assert notes[0].message.startswith("Job bookshop-1-0-0-html5-content is deleted 600s after it finishes;")


def test_rollout_on_credential_update_names_the_secrets_to_watch(cap_source: Path) -> None:
    path = cap_source / "capapplication.yaml"
    path.write_text(
        path.read_text().replace(
            "  btpAppName: bookshop\n", "  btpAppName: bookshop\n  rolloutOnCredentialUpdate: true\n"
        )
    )

    objects = objects_of(render_result(cap_source).files)

    annotations = objects["cap.bookshop.bookshop/deployment-bookshop-1-0-0-srv.yaml"]["metadata"][
        "annotations"
    ]
    assert annotations["secret.reloader.stakater.com/reload"] == "bookshop-1-0-0-srv-vcap"
    audit = objects["cap.bookshop.bookshop/deployment-bookshop-1-0-0-audit-forwarder.yaml"]["metadata"]
    assert "secret.reloader.stakater.com/reload" not in audit.get("annotations", {})  # consumes no service
