"""Rendered tenants are accepted by a real kube-apiserver.

The shop application with a tenant in each situation (provisioning, upgrading with custom steps,
deprovisioning, steady), with version affinity and route headers and with route headers alone, rendered by the CLI and sent
object by object through the helpers of tests/support/dry_run.py: server-side apply with
dryRun=All and fieldValidation=Strict, our CRDs (CAPTenant included) and every pinned third-party
CRD (Istio, Gardener DNS, external-secrets, ...) installed; no object refused, no field dropped.
The bookshop example's tenants are covered by tests/kube/test_rendered_repos_dry_run.py. Real
kube-apiserver + etcd; nothing is faked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from tests.cap_tenants.conftest import recorded_status, tenant_record, write_tenants
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.dry_run import refusals, render, rendered_objects
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = [pytest.mark.kube, pytest.mark.crds]


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, load_crds([*our_crd_files(), *third_party_crd_files()]), timeout=120)
        yield client


HEADERS = {
    "sme.sap.com/vs-route-request-header-set": '{"x-tenant-router": "shop"}',
    "sme.sap.com/vs-route-response-header-set": '{"cache-control": "no-store"}',
}


@pytest.mark.parametrize(
    "annotations",
    [
        pytest.param({"sme.sap.com/enable-version-affinity": "true", **HEADERS}, id="version affinity"),
        pytest.param(HEADERS, id="headers on the route destination, no affinity"),
    ],
)
def test_every_tenant_object_is_accepted(
    api: k8s.ApiClient, shop_source: Path, tmp_path: Path, annotations: dict[str, str]
) -> None:
    application = shop_source / "capapplication.yaml"
    documents = list(yaml.safe_load_all(application.read_text()))
    documents[0]["metadata"]["annotations"] = annotations
    application.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    write_tenants(
        shop_source,
        [
            tenant_record("fresh"),
            tenant_record(
                "acme", status=recorded_status("shop-2", previousCAPApplicationVersions=["shop-1"])
            ),
            tenant_record("steady", status=recorded_status("shop-3")),
            tenant_record(
                "initech", status=recorded_status("shop-2"), annotations={"btp-gitops.io/deprovision": "true"}
            ),
        ],
    )

    repo = render(shop_source, tmp_path / "repo")

    kinds = {obj.kind for obj in rendered_objects(repo) if "/cap-tenant." in obj.path}
    assert kinds == {"CAPTenant", "DNSEntry", "Job", "VirtualService"}
    refused = refusals(api, repo)
    assert not refused, "refused by the API server:\n" + "\n".join(refused)
