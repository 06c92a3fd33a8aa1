"""The rule tables of test_rules.py, sent to a real kube-apiserver: both must give the same verdict.

Each row is created in dry-run mode with strict field validation (what `kubectl apply
--validate=strict` asks for) in a kube-apiserver 1.37 with the test CRD installed. A row our
validator finds valid must be accepted, and a row it refuses must be refused. This is what keeps
the offline rules honest: unknown fields, pruned nulls, int-or-string, embedded resources,
formats and ObjectMeta are all decided by the server here, not by our reading of its docs.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from tests.support.kubeapi import KubeAPI, install_crds
from tests.validate.conftest import WIDGET_CRD, Found
from tests.validate.test_rules import BUILTIN_ROWS, WIDGET_ROWS

pytestmark = pytest.mark.kube

ROWS = [(f"builtin-{name}", body, found) for name, body, found in BUILTIN_ROWS] + [
    (f"widget-{name}", body, found) for name, body, found in WIDGET_ROWS
]
STRICT_DRY_RUN = [("dryRun", "All"), ("fieldValidation", "Strict")]


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, [WIDGET_CRD])
        yield client


def _call(api: k8s.ApiClient, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    request = api.param_serialize(
        method,
        path,
        query_params=STRICT_DRY_RUN if method == "POST" else [],
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        body=body,
    )
    response = api.call_api(*request, _request_timeout=60)
    return response.status, json.loads(response.read())


def _collection_path(api: k8s.ApiClient, api_version: str, kind: str, namespace: str) -> str:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    status, discovery = _call(api, "GET", prefix)
    assert status == 200, discovery
    plural = next(r["name"] for r in discovery["resources"] if r["kind"] == kind and "/" not in r["name"])
    return f"{prefix}/namespaces/{namespace}/{plural}"


def _server_verdict(api: k8s.ApiClient, body: dict[str, Any], namespace: str) -> str | None:
    """None when the server would create `body`, else its message."""
    sent = copy.deepcopy(body)
    sent["metadata"] = {**sent.get("metadata", {}), "namespace": namespace}
    status, reply = _call(
        api, "POST", _collection_path(api, sent["apiVersion"], sent["kind"], namespace), sent
    )
    if status in (200, 201):
        return None
    assert status in (400, 422), reply
    return str(reply.get("message"))


@pytest.mark.parametrize(("body", "found"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_same_verdict_as_the_api_server(
    api: k8s.ApiClient, kube_namespace: str, body: dict[str, Any], found: Found
) -> None:
    refusal = _server_verdict(api, body, kube_namespace)
    if found:
        assert refusal is not None, f"we report {found}, the API server accepts the object"
    else:
        assert refusal is None, f"we accept the object, the API server refuses it: {refusal}"
