"""`helm install` with our post-renderer, Helm 3 and Helm 4, into a real kube-apiserver.

The strongest check that the post-rendered stream is what Helm expects: Helm parses it, files it
into the release and creates every object through the API server (cert-manager's CRDs, pinned,
are installed so that the Certificates and Issuers are accepted). No controller runs, so nothing
becomes ready; `helm install` does not wait and `helm uninstall --no-hooks` cleans up.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from tests.conftest import CHART, CLI
from tests.post_render.conftest import CHART_VALUES, HelmHome, run_helm
from tests.post_render.test_post_render_cli import SECRET_VALUES, secret_manifest
from tests.support.crds import load_crds, third_party_crd_files
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = [pytest.mark.kube, pytest.mark.tools, pytest.mark.crds]

RELEASE = "sap-btp-operator"


SERVICE_CRDS = ("servicebindings.services.cloud.sap.com", "serviceinstances.services.cloud.sap.com")


def remove_unowned_service_crds(api: k8s.ApiClient) -> None:
    """The controller's tests share this API server and install the chart's CRDs without Helm's
    ownership annotations; Helm refuses to adopt those, so they go first (and are waited for)."""
    extensions = k8s.ApiextensionsV1Api(api)
    for name in SERVICE_CRDS:
        try:
            extensions.delete_custom_resource_definition(name)
        except k8s.ApiException as error:
            if error.status != 404:
                raise
    deadline = time.monotonic() + 60
    while any(
        crd.metadata.name in SERVICE_CRDS for crd in extensions.list_custom_resource_definition().items
    ):
        assert time.monotonic() < deadline, "the service CRDs were not deleted within 60 s"
        time.sleep(0.2)


@pytest.fixture
def release_env(kube_api: KubeAPI, helm_home: HelmHome) -> Iterator[dict[str, str]]:
    with kube_api.api_client() as api:
        remove_unowned_service_crds(api)
        install_crds(api, load_crds(third_party_crd_files("cert-manager")))
    env = {"KUBECONFIG": str(kube_api.kubeconfig)}
    yield env
    for helm in ("helm3", "helm4"):
        run_helm(helm, helm_home, "uninstall", RELEASE, "-n", "kyma-system", "--no-hooks", **env)


def check_release_in_cluster(kube_api: KubeAPI) -> None:
    with kube_api.api_client() as api:
        core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        secret = core.read_namespaced_secret("sap-btp-service-operator", "kyma-system")
        assert base64.b64decode(secret.data["clientsecret"]).decode() == SECRET_VALUES["clientsecret"]
        config = core.read_namespaced_config_map("sap-btp-operator-config", "kyma-system")
        assert config.data["CLUSTER_ID"] == SECRET_VALUES["cluster_id"]
        deployment = apps.read_namespaced_deployment("sap-btp-operator-controller-manager", "kyma-system")
        assert deployment.metadata.labels["kyma-project.io/module"] == "btp-operator"
        assert deployment.metadata.annotations["meta.helm.sh/release-name"] == RELEASE
        webhooks = k8s.AdmissionregistrationV1Api(api).list_validating_webhook_configuration()
        ours = [w for w in webhooks.items if w.metadata.name.startswith("sap-btp-operator")]
        assert ours and all(
            w.metadata.annotations["cert-manager.io/inject-ca-from"]
            == "kyma-system/sap-btp-operator-webhook-cert"
            for w in ours
        )
        certificate = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            "cert-manager.io", "v1", "kyma-system", "certificates", "sap-btp-operator-webhook-cert"
        )
        assert certificate["spec"]["secretName"] == "webhook-server-cert"


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_helm_install_with_the_post_renderer(
    helm: str, kube_api: KubeAPI, helm_home: HelmHome, release_env: dict[str, str], tmp_path: Path
) -> None:
    credentials = tmp_path / "creds.yaml"
    credentials.write_text(secret_manifest(SECRET_VALUES))
    if helm == "helm3":
        post_renderer = ["--post-renderer", str(CLI), "--post-renderer-args", "post-render"]
    else:
        post_renderer = ["--post-renderer", "btp-gitops"]
    args = [
        "install",
        RELEASE,
        str(CHART),
        "-n",
        "kyma-system",
        "--create-namespace",
        *CHART_VALUES,
        *post_renderer,
        "--post-renderer-args",
        f"--credentials={credentials}",
    ]
    installed = run_helm(helm, helm_home, *args, **release_env)
    assert installed.returncode == 0, installed.stderr
    assert SECRET_VALUES["clientsecret"] not in installed.stdout + installed.stderr
    check_release_in_cluster(kube_api)
    manifest = run_helm(helm, helm_home, "get", "manifest", RELEASE, "-n", "kyma-system", **release_env)
    assert "kind: Certificate" in manifest.stdout
    uninstalled = run_helm(
        helm, helm_home, "uninstall", RELEASE, "-n", "kyma-system", "--no-hooks", **release_env
    )
    assert uninstalled.returncode == 0, uninstalled.stderr
