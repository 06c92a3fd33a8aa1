"""Rendered CAP objects that the examples do not cover are accepted by a real kube-apiserver.

The examples are dry-run by tests/kube/test_rendered_repos_dry_run.py; this adds, through the
same helpers (tests/support/dry_run.py), the domain test data (every DNS mode, Gardener and
cert-manager certificates, Mutual TLS, a second ingress namespace, the domains a deprecated
`spec.domains` stands for) and the bookshop example in service-bindings mode. The same request as there: server-side apply, dryRun=All,
fieldValidation=Strict, with our CRDs and every pinned third-party CRD installed, and no field
may be dropped. Real kube-apiserver + etcd (tests/support/kubeapi.py); nothing is faked.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from tests.cap.conftest import CAP_APP, DATA
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.dry_run import refusals, render, rendered_objects
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = [pytest.mark.kube, pytest.mark.crds]


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, load_crds([*our_crd_files(), *third_party_crd_files()]), timeout=120)
        yield client


def service_bindings_variant(target: Path) -> Path:
    shutil.copytree(CAP_APP, target)
    path = target / "capapplication.yaml"
    path.write_text(
        path.read_text().replace(
            "  namespace: bookshop\n",
            "  namespace: bookshop\n  annotations:\n    btp-gitops.io/credentials: service-bindings\n",
            1,
        )
    )
    return target


@pytest.mark.parametrize("variant", ["domains", "service-bindings"])
def test_every_rendered_object_is_accepted(api: k8s.ApiClient, tmp_path: Path, variant: str) -> None:
    source = DATA / "domains" if variant == "domains" else service_bindings_variant(tmp_path / "source")
    repo = render(source, tmp_path / "repo")
    kinds = {obj.kind for obj in rendered_objects(repo)}
    if variant == "service-bindings":  # the variant took: bindings are mounted, nothing is copied
        assert "ExternalSecret" not in kinds
        assert "Deployment" in kinds
    refused = refusals(api, repo)
    assert not refused, "refused by the API server:\n" + "\n".join(refused)
