"""The one reader of live objects (io.live_objects), on a real kube-apiserver and on dumps:
paginated lists, a kind whose CRD is not installed, the bounds on objects and bytes, the one
Secret read by name and no other, an unreachable cluster named with the kind it was reading.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from btp_gitops.generator.core.errors import ClusterUnreachable, InputError
from btp_gitops.generator.io.live_objects import ClusterSource, ReadLimits, read_cluster, read_dump_directory
from btp_gitops.generator.migration import LiveObject
from btp_gitops.generator.migration.kinds import IMPORTED_KINDS, LiveKind
from btp_gitops.generator.pipeline.crds import generate_crd_files
from tests.conftest import RunCli
from tests.migration.sources import example_documents
from tests.support.kubeapi import KubeAPI, install_crds

CONTEXT = "btp-gitops-test"
CREDENTIAL = "s3cr3t-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
CAP_KINDS = tuple(kind for kind in IMPORTED_KINDS if kind.group == "sme.sap.com")


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, [yaml.safe_load(text) for _, text in sorted(generate_crd_files().items())])
        yield client


def _tenants(api: k8s.ApiClient, namespace: str, count: int) -> None:
    custom = k8s.CustomObjectsApi(api)
    application = copy.deepcopy(example_documents()["capapplication.yaml"][0])
    application["metadata"]["namespace"] = namespace
    custom.create_namespaced_custom_object(
        "sme.sap.com", "v1alpha1", namespace, "capapplications", application
    )
    for number in range(count):
        tenant = copy.deepcopy(example_documents()["tenants/globex.yaml"][0])
        tenant["metadata"] = {"name": f"tenant-{number:03d}", "namespace": namespace}
        tenant["spec"]["subDomain"] = f"tenant-{number:03d}"
        custom.create_namespaced_custom_object("sme.sap.com", "v1alpha1", namespace, "captenants", tenant)


@pytest.mark.kube
def test_lists_are_read_page_by_page_each_object_once(
    api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str
) -> None:
    _tenants(api, kube_namespace, 7)
    source = ClusterSource(str(kube_api.kubeconfig), CONTEXT, (kube_namespace,))
    read = read_cluster(source, ReadLimits(page_size=2), CAP_KINDS, named_objects=False)
    names = [live.name for live in read.objects if live.kind == "CAPTenant"]
    assert sorted(names) == [f"tenant-{n:03d}" for n in range(7)]
    assert {live.origin for live in read.objects} == {f"cluster (context {CONTEXT})"}
    assert all(live.api_version == "sme.sap.com/v1alpha1" for live in read.objects)


@pytest.mark.kube
def test_a_kind_whose_crd_is_not_installed_has_no_objects(
    api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str
) -> None:
    absent = LiveKind("import-test.example.com", "v1", "Nothing", "nothings", namespaced=True)
    source = ClusterSource(str(kube_api.kubeconfig), CONTEXT, (kube_namespace,))
    read = read_cluster(source, kinds=(absent,), named_objects=False)
    assert read.objects == []


@pytest.mark.kube
def test_the_bounds_on_objects_and_bytes_stop_the_read(
    api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str
) -> None:
    _tenants(api, kube_namespace, 4)
    source = ClusterSource(str(kube_api.kubeconfig), CONTEXT, (kube_namespace,))
    with pytest.raises(InputError, match=r"more than 3 objects to import"):
        read_cluster(source, ReadLimits(max_objects=3, page_size=2), CAP_KINDS)
    with pytest.raises(InputError, match=r"more than 2000 bytes to read"):
        read_cluster(source, ReadLimits(max_bytes=2000), CAP_KINDS)


def _secret(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"clientsecret": CREDENTIAL, "cluster_id": "c-42"},
    }


def _crd(live: LiveObject) -> bool:
    return live.kind == "CustomResourceDefinition"


@pytest.mark.kube
def test_only_btp_managers_secret_is_read_and_only_by_name(
    api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str
) -> None:
    core = k8s.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": "kyma-system"}})
    except ApiException as error:
        if error.status != 409:
            raise
    # kyma-system is shared with other tests on this API server (post-render --from-cluster expects
    # no sap-btp-manager there; a Helm install of the operator chart creates sap-btp-operator-config
    # and refuses one it did not make): what this test made there is deleted after it, what another
    # test left there is read and left alone. BTP Manager's ConfigMap is read by name too, and no
    # other ConfigMap beside it.
    made: list[tuple[str, str]] = []
    wanted = [
        ("Secret", "kyma-system", _secret("kyma-system", "sap-btp-manager")),
        ("Secret", kube_namespace, _secret(kube_namespace, "bookshop-uaa-binding")),
        *(
            ("ConfigMap", "kyma-system", {"metadata": {"name": name}, "data": {"CLUSTER_ID": "c-1"}})
            for name in ("sap-btp-operator-config", "unrelated-settings")
        ),
    ]
    try:
        for kind, namespace, body in wanted:
            create = core.create_namespaced_secret if kind == "Secret" else core.create_namespaced_config_map
            try:
                create(namespace, body)
                if namespace == "kyma-system":
                    made.append((kind, body["metadata"]["name"]))
            except ApiException as error:
                if error.status != 409:
                    raise
        # The certificate managers' CRDs, read by name too, are cluster-wide: left out here
        # (other tests install them on this server or not; test_import_certificate_manager).
        base = ClusterSource(str(kube_api.kubeconfig), CONTEXT, (kube_namespace,))
        assert [live for live in read_cluster(base, kinds=()).objects if not _crd(live)] == []
        both = ClusterSource(str(kube_api.kubeconfig), CONTEXT, (kube_namespace, "kyma-system"))
        named = [live for live in read_cluster(both, kinds=()).objects if not _crd(live)]
        assert [(live.namespace, live.name, live.kind) for live in named] == [
            ("kyma-system", "sap-btp-manager", "Secret"),
            ("kyma-system", "sap-btp-operator-config", "ConfigMap"),
        ]
        assert read_cluster(both, kinds=(), named_objects=False).objects == []
    finally:
        for kind, name in made:
            delete = core.delete_namespaced_secret if kind == "Secret" else core.delete_namespaced_config_map
            delete(name, "kyma-system")


@pytest.mark.kube
def test_an_unreachable_cluster_is_named_with_the_kind_it_was_reading(
    kube_api: KubeAPI, run_cli: RunCli, tmp_path: Path
) -> None:
    config = yaml.safe_load(kube_api.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"  # the discard port: nothing listens
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = run_cli("import", "--kubeconfig", kubeconfig, "--out", tmp_path / "out", "-o", "json")
    assert result.returncode == 3, result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ClusterUnreachable"
    assert error["message"] == "cannot read CAPApplication objects"
    assert error["problems"][0]["file"] == f"cluster (kubeconfig {kubeconfig})"
    assert not (tmp_path / "out").exists()
    with pytest.raises(ClusterUnreachable, match="cannot load the kubeconfig"):
        read_cluster(ClusterSource(str(tmp_path / "missing"), CONTEXT))


def test_a_dump_keeps_btp_managers_secret_and_passes_over_the_others(tmp_path: Path) -> None:
    secrets = [_secret("kyma-system", "sap-btp-manager"), _secret("bookshop", "bookshop-uaa-binding")]
    (tmp_path / "secrets.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "SecretList", "items": secrets})
    )
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config.yaml").write_text("not: [read")
    read = read_dump_directory(tmp_path)
    assert [(live.describe(), live.origin) for live in read.objects] == [
        ("Secret kyma-system/sap-btp-manager", f"{tmp_path}/secrets.yaml: document 1, item 1")
    ]
    assert [(skip.object, skip.origin) for skip in read.passed_over] == [
        ("Secret bookshop/bookshop-uaa-binding", f"{tmp_path}/secrets.yaml: document 1, item 2")
    ]
    assert CREDENTIAL not in repr(read.passed_over)
