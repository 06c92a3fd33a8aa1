"""Which certificate manager the imported BtpOperatorConfig names: BTP Manager issued its webhook
certificates itself, and after the move cert-manager or Gardener cert-management must. The import
reads the two Certificate CRDs by name (cert-manager's, Gardener's) and names one the cluster has.

The CRDs are the ones the projects publish (`scripts/fetch-crds.sh`, the pinned versions), dumped
as `kubectl get crd <name> -o yaml` gives them or installed on a real kube-apiserver; the choice is
then rendered, so the sources work with what the cluster runs.
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

from btp_gitops.generator.io.live_objects import ClusterSource, read_cluster
from btp_gitops.generator.migration import ImportResult, LiveObject, import_btp_operator
from btp_gitops.generator.migration.cap import import_cap
from tests.conftest import RunCli
from tests.migration.result_files import write_result
from tests.migration.test_btp_operator_import import btp_operator, manager_secret, operator_configmap
from tests.migration.test_import_from_dir import operator_dump
from tests.support.crds import load_crds, third_party_crd_files
from tests.support.kubeapi import SERVICE_ACCOUNT_ISSUER, KubeAPI, install_crds

CONTEXT = "btp-gitops-test"
CONFIG = "btp-operator/btpoperatorconfig.yaml"
CERT_MANAGER = "certificates.cert-manager.io"
GARDENER = "certificates.cert.gardener.cloud"
GARDENER_DNS = "dnsentries.dns.gardener.cloud"
FAMILIES = {CERT_MANAGER: "cert-manager", GARDENER: "gardener-cert", GARDENER_DNS: "gardener-dns"}


def published_crd(name: str) -> dict[str, Any]:
    """The CRD `name` as its project publishes it, as a cluster that installed it returns it."""
    (crd,) = [
        doc for doc in load_crds(third_party_crd_files(FAMILIES[name])) if doc["metadata"]["name"] == name
    ]
    served = copy.deepcopy(crd)
    served["metadata"].update(uid="0c9b8a7f-6e5d-4c3b-a291-8f7e6d5c4b3a", resourceVersion="731", generation=1)
    served["status"] = {"acceptedNames": crd["spec"]["names"], "storedVersions": ["v1"]}
    return served


def installed_crd(name: str) -> dict[str, Any]:
    """A CRD of that name as a cluster returns it, its schema aside (the import reads its name)."""
    group = name.split(".", 1)[1]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "uid": "4b3a2918-0f7e-4d6c-b5a4-938271605f4e", "generation": 1},
        "spec": {
            "group": group,
            "names": {"kind": "Certificate", "plural": "certificates"},
            "scope": "Namespaced",
        },
    }


def rendered_objects(run_cli: RunCli, tmp_path: Path, apps: str) -> list[dict[str, Any]]:
    """`tmp_path/sources` rendered into `tmp_path/repo`: the objects of the app directories
    matching `apps`."""
    rendered = run_cli("render", tmp_path / "sources", "--out", tmp_path / "repo", "--cluster", "c1", "-q")
    assert rendered.returncode == 0, rendered.stderr
    return [
        doc
        for path in sorted((tmp_path / "repo/clusters/c1").glob(f"{apps}/*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and path.name != "kustomization.yaml"
    ]


def _config(objects: list[LiveObject]) -> tuple[dict[str, Any], str]:
    result = import_btp_operator(objects)
    (imported,) = [f for f in result.files if f.path == CONFIG]
    return dict(imported.documents[0].body), "\n".join(imported.documents[0].comment)


def _btp_manager() -> list[LiveObject]:
    return [btp_operator(), manager_secret(), operator_configmap()]


@pytest.mark.parametrize(
    ("installed", "mode", "said"),
    [
        ((), "cert-manager", "install it before the hand-over"),
        ((CERT_MANAGER,), "cert-manager", "its Certificate CRD is installed"),
        ((GARDENER,), "gardener", "Gardener's CA injector"),
        ((GARDENER, CERT_MANAGER), "cert-manager", "its Certificate CRD is installed"),
    ],
    ids=["none-read", "cert-manager", "gardener-only", "both"],
)
def test_the_config_names_the_certificate_manager_the_cluster_has(
    installed: tuple[str, ...], mode: str, said: str
) -> None:
    crds = [LiveObject(installed_crd(name), "cluster (context prod)") for name in installed]
    body, comment = _config([*crds, *_btp_manager()])
    assert body["spec"]["certificates"] == {"mode": mode}
    assert said in comment
    # The order objects arrive in decides nothing.
    assert _config([*_btp_manager(), *reversed(crds)]) == (body, comment)


def test_only_the_certificate_crds_of_those_names_and_version_count() -> None:
    """Another CRD of cert-manager's group (its Issuers), or Gardener's Certificate CRD at a
    version the import does not read, tells nothing: the default stays, with the comment saying
    neither was read."""
    issuers = installed_crd("issuers.cert-manager.io")
    older = installed_crd(GARDENER)
    older["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    body, comment = _config([LiveObject(issuers, "dump"), LiveObject(older, "dump"), *_btp_manager()])
    assert body["spec"]["certificates"] == {"mode": "cert-manager"}
    assert "Neither its Certificate CRD nor Gardener's" in comment


@pytest.mark.crds
def test_dumps_of_a_gardener_cluster_import_and_render_with_gardener_cert_management(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """A Kyma runtime is a Gardener cluster: with Gardener's Certificate CRD in the dumps (and no
    cert-manager), the sources render the webhook certificates as Gardener objects."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "btp-manager.yaml").write_text(yaml.safe_dump_all([live.body for live in _btp_manager()]))
    (dumps / "crd.yaml").write_text(yaml.safe_dump(published_crd(GARDENER)))
    imported = run_cli("import", "--from-dir", dumps, "--out", tmp_path / "sources", "-q")
    assert imported.returncode == 0, imported.stderr
    config = yaml.safe_load((tmp_path / "sources" / CONFIG).read_text())
    assert config["spec"]["certificates"] == {"mode": "gardener"}
    objects = rendered_objects(run_cli, tmp_path, "btp-operator")
    issued = {(o["apiVersion"], o["kind"]) for o in objects if o["kind"] in ("Certificate", "Issuer")}
    assert issued == {
        ("cert.gardener.cloud/v1alpha1", "Certificate"),
        ("cert.gardener.cloud/v1alpha1", "Issuer"),
    }
    hooks = [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
    assert hooks and all("cert.gardener.cloud/inject-ca-from" in o["metadata"]["annotations"] for o in hooks)


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, load_crds(third_party_crd_files(*FAMILIES.values())))
        yield client


@pytest.mark.kube
@pytest.mark.crds
def test_the_certificate_crds_are_read_by_name_whatever_namespaces_are_read(
    api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str
) -> None:
    read = read_cluster(ClusterSource(str(kube_api.kubeconfig), CONTEXT, (kube_namespace,)), kinds=())
    crds = sorted(live.name for live in read.objects if live.kind == "CustomResourceDefinition")
    # not issuers.cert-manager.io nor dnsproviders.dns.gardener.cloud, installed beside them
    assert crds == [CERT_MANAGER, GARDENER, GARDENER_DNS]
    body, _ = _config([*read.objects, *_btp_manager()])
    assert body["spec"]["certificates"] == {"mode": "cert-manager"}


def _service_account_kubeconfig(kube_api: KubeAPI, namespace: str, path: Path) -> str:
    """A kubeconfig at `path` for a new ServiceAccount of `namespace` (a token the server issues,
    no role bound: it may read nothing but what every authenticated user may); its token."""
    with kube_api.api_client() as api:
        core = k8s.CoreV1Api(api)
        core.create_namespaced_service_account(namespace, {"metadata": {"name": "importer"}})
        issued = core.create_namespaced_service_account_token(
            "importer", namespace, {"spec": {"audiences": [SERVICE_ACCOUNT_ISSUER], "expirationSeconds": 600}}
        )
    token = str(issued.status.token)
    cluster = {"server": kube_api.server, "certificate-authority": str(kube_api.ca_file)}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": cluster}],
        "users": [{"name": "importer", "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": "test", "user": "importer"}}],
        "current-context": CONTEXT,
    }
    path.write_text(json.dumps(config))
    return token


@pytest.mark.kube
def test_credentials_that_may_not_read_crds_import_on_and_say_so(
    kube_api: KubeAPI, kube_namespace: str, tmp_path: Path
) -> None:
    """A ServiceAccount's token, with no right to read CustomResourceDefinitions (403): nothing
    is read of them, each is listed as passed over with the reason, and the read goes on."""
    token = _service_account_kubeconfig(kube_api, kube_namespace, tmp_path / "kubeconfig")
    read = read_cluster(ClusterSource(str(tmp_path / "kubeconfig"), CONTEXT, (kube_namespace,)), kinds=())
    assert read.objects == []
    assert sorted((skip.object, skip.reason) for skip in read.passed_over) == [
        (
            f"CustomResourceDefinition {name}",
            "not readable with these credentials (403): what it would tell is not known",
        )
        for name in (CERT_MANAGER, GARDENER, GARDENER_DNS)
    ]
    assert token not in repr(read)


@pytest.mark.crds
def test_the_published_crds_are_the_ones_read() -> None:
    """The names the import asks for are the ones the pinned releases install (a rename upstream
    would make every import fall back to its default silently)."""
    names = {doc["metadata"]["name"] for doc in load_crds(third_party_crd_files(*FAMILIES.values()))}
    assert {CERT_MANAGER, GARDENER, GARDENER_DNS} <= names


# --- CAP Operator's domains -------------------------------------------------------------------


def _cap_objects(*crds: str) -> list[LiveObject]:
    """The example application as CAP Operator leaves it (dumped), and the CRDs `crds` read. CAP
    Operator knows nothing of btp-gitops' annotation naming a domain's certificate manager (the
    example's ClusterDomain has one): left out."""
    objects = operator_dump()
    for body in objects:
        annotations = body["metadata"].get("annotations", {})
        annotations.pop("btp-gitops.io/certificate-manager", None)
    return [
        *(LiveObject(body, "dumps/cap.yaml") for body in objects),
        *(LiveObject(installed_crd(name), "dumps/crds.yaml") for name in crds),
    ]


def _domains(result: ImportResult) -> list[tuple[dict[str, Any], str]]:
    return [
        (dict(document.body), "\n".join(document.comment))
        for imported in result.files
        for document in imported.documents
        if document.body["kind"] in ("Domain", "ClusterDomain")
    ]


def test_domains_of_a_cluster_with_only_cert_manager_render_with_cert_manager(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """CAP Operator's chart sets CERT_MANAGER to cert-manager where the cluster does not serve
    Gardener's cert.gardener.cloud API: the domains say so, and the render issues cert-manager
    Certificates into the TLS Secrets CAP Operator's Gateways read (`...-cert-manager`)."""
    result = import_cap(_cap_objects(CERT_MANAGER))
    domains = _domains(result)
    assert domains and all(
        body["metadata"]["annotations"]["btp-gitops.io/certificate-manager"] == "cert-manager"
        for body, _ in domains
    )
    assert all("as CAP Operator issued it" in comment for _, comment in domains)
    write_result(result, tmp_path / "sources")
    objects = rendered_objects(run_cli, tmp_path, "cap-*domain*")
    certificates = {o["apiVersion"] for o in objects if o["kind"] == "Certificate"}
    assert certificates == {"cert-manager.io/v1"}
    credentials = [
        s["tls"]["credentialName"] for o in objects if o["kind"] == "Gateway" for s in o["spec"]["servers"]
    ]
    assert credentials and all(name.endswith("-cert-manager") for name in credentials)


@pytest.mark.parametrize(
    ("installed", "remark"),
    [
        ((GARDENER,), None),
        ((GARDENER, CERT_MANAGER), None),
        ((), "neither certificate manager's Certificate CRD was among the objects read"),
    ],
    ids=["gardener-only", "both", "none-read"],
)
def test_domains_keep_the_renders_default_where_gardener_is_installed_or_nothing_is_known(
    installed: tuple[str, ...], remark: str | None
) -> None:
    """CAP Operator's chart sets CERT_MANAGER to gardener wherever the cluster serves Gardener's
    cert.gardener.cloud API, cert-manager installed beside it or not: the render's default."""
    domains = _domains(import_cap(_cap_objects(*installed)))
    assert domains
    for body, comment in domains:
        assert "btp-gitops.io/certificate-manager" not in body["metadata"].get("annotations", {})
        if remark is None:  # (a remark on the DNS manager may be there: test_import_dns_manager)
            assert "Certificate CRD" not in comment
        else:
            assert remark in comment and "btp-gitops.io/certificate-manager: cert-manager" in comment


def test_a_domain_that_names_its_certificate_manager_keeps_it() -> None:
    """A domain btp-gitops rendered carries the annotation its source had: imported back, it is
    kept as it is, whatever is installed."""
    objects = _cap_objects(CERT_MANAGER)
    for live in objects:
        if live.body["kind"] in ("Domain", "ClusterDomain"):
            live.body["metadata"].setdefault("annotations", {})["btp-gitops.io/certificate-manager"] = (
                "gardener"
            )
    domains = _domains(import_cap(objects))
    assert domains and all(
        body["metadata"]["annotations"]["btp-gitops.io/certificate-manager"] == "gardener"
        and "Certificate CRD" not in comment
        for body, comment in domains
    )
