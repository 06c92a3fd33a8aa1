"""`btp-gitops import` against a real kube-apiserver, through the CLI as users run it.

Two ways in: objects laid out as CAP Operator leaves them (created with its finalizers, labels,
annotations and owner references, statuses written through the status subresource), imported
and rendered; and the round trip: the example's sources rendered, the rendered CAP objects
server-side applied to an empty namespace with the statuses the controller records, imported,
and the same sources come back byte for byte, comments aside. The CRDs are btp-gitops's own
(`crds`), as other tests install them on the same server; fields they do not know (a status's
`observedGeneration`) the server prunes, as a cluster with CAP Operator's CRDs would keep them:
the import leaves them out either way (--from-dir tests cover that case).
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

from btp_gitops.generator.core.yamlio import dump_object
from btp_gitops.generator.migration.kinds import IMPORTED_KINDS, LiveKind
from btp_gitops.generator.pipeline.crds import generate_crd_files
from tests.conftest import RunCli
from tests.migration.cap_operator import as_left_by_operator
from tests.migration.sources import (
    OPERATOR_TENANT_STATUS,
    as_imported_from_cap_operator,
    imported_layout,
    read_tree,
    source_objects,
    without_comments,
)
from tests.support.crds import load_crds, third_party_crd_files
from tests.support.dry_run import request
from tests.support.kubeapi import KubeAPI, install_crds

# The certificate managers' and Gardener DNS's CRDs are installed, all: which of them a cluster has
# decides what the imported domains say (test_import_certificate_manager, test_import_dns_manager),
# and on this shared server other tests install some of the families or none.
pytestmark = [pytest.mark.kube, pytest.mark.crds]

CONTEXT = "btp-gitops-test"  # the context of the test server's kubeconfig
FIELD_MANAGER = "btp-gitops-import-tests"


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, [yaml.safe_load(text) for _, text in sorted(generate_crd_files().items())])
        install_crds(
            client, load_crds(third_party_crd_files("cert-manager", "gardener-cert", "gardener-dns"))
        )
        yield client


def _kind(kind: str) -> LiveKind:
    return next(entry for entry in IMPORTED_KINDS if entry.kind == kind)


def _path(body: dict[str, Any], subresource: str = "") -> str:
    kind = _kind(body["kind"])
    scope = f"/namespaces/{body['metadata']['namespace']}" if kind.namespaced else ""
    return f"/apis/{kind.api_version}{scope}/{kind.plural}/{body['metadata']['name']}{subresource}"


def _in_namespace(objects: list[dict[str, Any]], namespace: str, cluster_domain: str) -> list[dict[str, Any]]:
    """The example's objects moved to `namespace`, its ClusterDomain renamed (cluster-wide names
    are shared with the other tests of the server)."""
    moved = []
    for source in objects:
        body = copy.deepcopy(source)
        if body["kind"] == "ClusterDomain":
            body["metadata"]["name"] = cluster_domain
            body["spec"]["domain"] = f"{cluster_domain}.example.net"
        else:
            body["metadata"]["namespace"] = namespace
        for ref in body.get("spec", {}).get("domainRefs", []):
            if ref["kind"] == "ClusterDomain":
                ref["name"] = cluster_domain
        moved.append(body)
    return moved


def _apply(api: k8s.ApiClient, body: dict[str, Any]) -> None:
    """Server-side apply of the object (status aside), then its status through /status."""
    status = body.get("status")
    main = {key: value for key, value in body.items() if key != "status"}
    query = [("fieldManager", FIELD_MANAGER), ("force", "true"), ("fieldValidation", "Strict")]
    reply = request(api, "PATCH", _path(main), query, json.dumps(main), "application/apply-patch+yaml")
    assert reply.status in (200, 201), reply.message()
    if status:
        # A merge patch, as a controller writes status: a field the CRD does not declare is
        # pruned, where server-side apply would refuse it.
        serialized = api.param_serialize(
            "PATCH",
            _path(main, "/status"),
            header_params={"Accept": "application/json", "Content-Type": "application/merge-patch+json"},
            body={"status": status},
        )
        raw = api.call_api(*serialized, _request_timeout=60).response
        assert raw.status == 200, raw.data


def _import(run_cli: RunCli, kube_api: KubeAPI, namespace: str, out: Path) -> Any:
    return run_cli(
        "import",
        "--kubeconfig",
        kube_api.kubeconfig,
        "--context",
        CONTEXT,
        "--namespace",
        namespace,
        "--out",
        out,
        "-o",
        "json",
    )


def _documents(text: str) -> list[str]:
    """A file's documents as written, comments aside: the bytes between the `---` lines."""
    pieces, current = [], []
    for line in without_comments(text).splitlines(keepends=True):
        if line == "---\n":
            pieces.append("".join(current))
            current = []
        else:
            current.append(line)
    return [*pieces, "".join(current)]


def _expected_files(objects: list[dict[str, Any]], namespace: str) -> dict[str, list[str]]:
    return {
        path: [dump_object(d) for d in docs] for path, docs in imported_layout(objects, namespace).items()
    }


def _only_my_cluster_domain(out: Path, cluster_domain: str) -> None:
    """Leave out of the imported sources the ClusterDomains other tests left on the server."""
    path = out / "cap/cluster-domains.yaml"
    documents = [
        d for d in yaml.safe_load_all(path.read_text()) if d and d["metadata"]["name"] == cluster_domain
    ]
    path.write_text(yaml.safe_dump_all(documents))


def _mine(files: dict[str, str], namespace: str, cluster_domain: str) -> dict[str, list[str]]:
    """The imported files of this test: its namespace's, and its ClusterDomain's document."""
    mine = {path: _documents(text) for path, text in files.items() if path.startswith(f"cap/{namespace}/")}
    cluster = _documents(files.get("cap/cluster-domains.yaml", ""))
    mine["cap/cluster-domains.yaml"] = [d for d in cluster if f"name: {cluster_domain}\n" in d]
    return mine


def test_objects_as_cap_operator_leaves_them_import_and_render(
    api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str, run_cli: RunCli, tmp_path: Path
) -> None:
    cluster_domain = f"shops-{kube_namespace[-6:]}"  # the namespace ends in 6 random hex digits
    sources = _in_namespace(source_objects(), kube_namespace, cluster_domain)
    for body in as_left_by_operator(sources, OPERATOR_TENANT_STATUS):
        _apply(api, body)
    result = _import(run_cli, kube_api, kube_namespace, tmp_path / "sources")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["skipped"] == []
    assert report["source"] == f"cluster (kubeconfig {kube_api.kubeconfig}, context {CONTEXT})"
    files = read_tree(tmp_path / "sources")
    # Each version with the generation the API server gave it, which CAP Operator's Deployments hold.
    expected = _expected_files(as_imported_from_cap_operator(sources), kube_namespace)
    assert _mine(files, kube_namespace, cluster_domain) == expected
    acme = files[f"cap/{kube_namespace}/bookshop/tenants/acme.yaml"]
    assert acme.startswith(f"# imported from cluster (context {CONTEXT})\n")
    assert "metadata.ownerReferences" in acme and "status.lastCompletedOperation derived" in acme
    _only_my_cluster_domain(tmp_path / "sources", cluster_domain)
    rendered = run_cli("render", tmp_path / "sources", "--out", tmp_path / "repo", "-q")
    assert rendered.returncode == 0, rendered.stderr


def test_sources_rendered_applied_and_imported_come_back_byte_for_byte(
    api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str, run_cli: RunCli, tmp_path: Path
) -> None:
    cluster_domain = f"rt-{kube_namespace[-6:]}"
    sources = _in_namespace(source_objects(), kube_namespace, cluster_domain)
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "all.yaml").write_text(yaml.safe_dump_all(sources))
    rendered = run_cli("render", tmp_path / "before", "--stdout")
    assert rendered.returncode == 0, rendered.stderr
    cap_objects = [
        d for d in yaml.safe_load_all(rendered.stdout) if d and d["apiVersion"] == "sme.sap.com/v1alpha1"
    ]
    assert len(cap_objects) == len(sources)
    statuses = {(s["kind"], s["metadata"]["name"]): s.get("status") for s in sources}
    for body in cap_objects:
        # What the controller records in the cluster: the record's status (a render writes none).
        status = statuses[(body["kind"], body["metadata"]["name"])]
        _apply(api, {**body, "status": status} if status else body)
    result = _import(run_cli, kube_api, kube_namespace, tmp_path / "after")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["skipped"] == []
    after = _mine(read_tree(tmp_path / "after"), kube_namespace, cluster_domain)
    assert after == _expected_files(sources, kube_namespace)
    # And the imported sources render to what the sources rendered to.
    _only_my_cluster_domain(tmp_path / "after", cluster_domain)
    again = run_cli("render", tmp_path / "after", "--stdout")
    assert again.returncode == 0, again.stderr
    mine = [
        d
        for d in yaml.safe_load_all(again.stdout)
        if d
        and (
            d["metadata"].get("namespace") == kube_namespace
            or d["metadata"]["name"].startswith(cluster_domain)
        )
    ]
    first = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    assert sorted(json.dumps(d, sort_keys=True) for d in mine) == sorted(
        json.dumps(d, sort_keys=True)
        for d in first
        if d["metadata"].get("namespace") == kube_namespace
        or d["metadata"]["name"].startswith(cluster_domain)
    )
