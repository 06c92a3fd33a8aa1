"""post-render --from-cluster against a real kube-apiserver: the credentials Secret read live."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.post_render.conftest import PostRender, ensure_namespace
from tests.post_render.test_post_render_cli import MINIMAL_STREAM, SECRET_VALUES
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kube


@pytest.fixture
def kyma_system(kube_api: KubeAPI) -> Iterator[k8s.CoreV1Api]:
    """kyma-system without a sap-btp-manager Secret; the Secret is removed again afterwards."""
    with kube_api.api_client() as api:
        core = k8s.CoreV1Api(api)
        ensure_namespace(core, "kyma-system")
        yield core
        try:
            core.delete_namespaced_secret("sap-btp-manager", "kyma-system")
        except ApiException as error:
            if error.status != 404:
                raise


def test_credentials_are_read_from_the_cluster(
    kube_api: KubeAPI, kyma_system: k8s.CoreV1Api, post_render_cli: PostRender
) -> None:
    args = ("--from-cluster", "--kubeconfig", str(kube_api.kubeconfig))
    missing = post_render_cli(MINIMAL_STREAM, *args)
    assert missing.returncode == 3
    assert missing.stderr.splitlines()[0] == (
        "error: MissingSecret: sap-btp-manager Secret in kyma-system namespace not found"
    )
    kyma_system.create_namespaced_secret(
        "kyma-system",
        k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(
                name="sap-btp-manager",
                labels={"app.kubernetes.io/managed-by": "kcp-kyma-environment-broker"},
            ),
            string_data=SECRET_VALUES,
        ),
    )
    found = post_render_cli(MINIMAL_STREAM, *args)
    assert found.returncode == 0, found.stderr
    secret = next(o for o in yaml.safe_load_all(found.stdout) if o["kind"] == "Secret")
    assert base64.b64decode(secret["data"]["clientsecret"]).decode() == SECRET_VALUES["clientsecret"]
    assert SECRET_VALUES["clientsecret"] not in found.stderr


def test_an_unreachable_cluster_is_a_clean_error(post_render_cli: PostRender, tmp_path: Path) -> None:
    result = post_render_cli(MINIMAL_STREAM, "--from-cluster", "--kubeconfig", f"{tmp_path}/missing")
    assert result.returncode == 3
    assert result.stderr.startswith("error: cannot load the kubeconfig for --from-cluster\n")
