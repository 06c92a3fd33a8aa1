"""Exercise the ``kube_api`` / ``kube_namespace`` fixtures against a real server.

Covered: the kubeconfig and admin client certificate are accepted; a CRD is
installed with ``install_crds`` and a custom resource goes through create,
get, merge patch, list, watch (ADDED / MODIFIED / DELETED events) and delete;
a finalizer holds a deletion (deletionTimestamp set, object still readable)
until the test removes the finalizer; server-side apply of a ConfigMap in
dry-run mode is accepted and not persisted.

Nothing is faked or mocked: every request goes over TLS to a real
kube-apiserver backed by a real etcd, both built from source by
``scripts/build-tools.sh`` and started by ``tests/support/kubeapi.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException

from tests.support.kubeapi import ADMIN_GROUP, ADMIN_USER, KubeAPI, install_crds

pytestmark = pytest.mark.kube

GROUP = "fixtures.btp-gitops.example.com"
VERSION = "v1alpha1"
PLURAL = "widgets"
KIND = "Widget"
FINALIZER = f"{GROUP}/hold"
FIELD_MANAGER = "btp-gitops-tests"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "widget", "kind": KIND, "listKind": "WidgetList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "color": {"type": "string"},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        yield client


@pytest.fixture
def widgets(api: k8s.ApiClient) -> k8s.CustomObjectsApi:
    assert install_crds(api, [WIDGET_CRD]) == [f"{PLURAL}.{GROUP}"]
    return k8s.CustomObjectsApi(api)


def widget(name: str, size: int, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": name, **metadata},
        "spec": {"size": size, "color": "blue"},
    }


def test_kubeconfig_authenticates_as_admin(kube_api: KubeAPI) -> None:
    # The kubeconfig file is what helm and other tools get; load it the way a
    # client would instead of using the fixture's ready-made configuration.
    with k8s_config.new_client_from_config(config_file=str(kube_api.kubeconfig)) as client:
        version = k8s.VersionApi(client).get_code()
        assert version.git_version.startswith("v1.")
        review = k8s.AuthenticationV1Api(client).create_self_subject_review(
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
    user = review.status.user_info
    assert user.username == ADMIN_USER
    assert ADMIN_GROUP in user.groups


def test_install_crds_is_idempotent(api: k8s.ApiClient) -> None:
    # Second call goes through the replace path and must still end Established.
    install_crds(api, [WIDGET_CRD])
    assert install_crds(api, [WIDGET_CRD]) == [f"{PLURAL}.{GROUP}"]


def test_custom_resource_lifecycle(widgets: k8s.CustomObjectsApi, kube_namespace: str) -> None:
    ns = kube_namespace
    before = widgets.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    assert before["items"] == []
    start_rv = before["metadata"]["resourceVersion"]

    created = widgets.create_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, body=widget("w1", 1, labels={"app": "demo"})
    )
    assert created["metadata"]["uid"]

    got = widgets.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w1")
    assert got["spec"] == {"size": 1, "color": "blue"}
    assert got["metadata"]["labels"] == {"app": "demo"}

    # The CRD's schema is enforced by the server.
    with pytest.raises(ApiException) as invalid:
        widgets.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body=widget("bad", 0))
    assert invalid.value.status == 422

    patched = widgets.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        ns,
        PLURAL,
        "w1",
        body={"spec": {"size": 3}, "metadata": {"labels": {"tier": "gold"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched["spec"] == {"size": 3, "color": "blue"}
    assert patched["metadata"]["labels"] == {"app": "demo", "tier": "gold"}
    assert int(patched["metadata"]["generation"]) == 2

    listed = widgets.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, label_selector="tier=gold")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["w1"]
    assert listed["items"][0]["spec"]["size"] == 3

    widgets.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w1")
    with pytest.raises(ApiException) as gone:
        widgets.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w1")
    assert gone.value.status == 404

    # Watch from the resourceVersion taken before the create: the server
    # replays every change since then.
    events: list[tuple[str, int | None]] = []
    w = k8s_watch.Watch()
    for event in w.stream(
        widgets.list_namespaced_custom_object,
        GROUP,
        VERSION,
        ns,
        PLURAL,
        resource_version=start_rv,
        timeout_seconds=20,
    ):
        obj = event["object"]
        assert obj["metadata"]["name"] == "w1"
        events.append((event["type"], obj.get("spec", {}).get("size")))
        if event["type"] == "DELETED":
            w.stop()
    assert events == [("ADDED", 1), ("MODIFIED", 3), ("DELETED", 3)]


def test_finalizer_holds_deletion(widgets: k8s.CustomObjectsApi, kube_namespace: str) -> None:
    ns = kube_namespace
    widgets.create_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, body=widget("held", 2, finalizers=[FINALIZER])
    )

    widgets.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "held")

    still_there = widgets.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "held")
    assert still_there["metadata"]["deletionTimestamp"]
    assert still_there["metadata"]["finalizers"] == [FINALIZER]
    assert still_there["spec"]["size"] == 2

    # While terminating the object can still be updated, e.g. by its owner
    # removing the finalizer; a merge patch with null drops the list.
    widgets.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        ns,
        PLURAL,
        "held",
        body={"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )

    deadline = time.monotonic() + 10
    while True:
        try:
            widgets.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "held")
        except ApiException as exc:
            assert exc.status == 404
            break
        assert time.monotonic() < deadline, "object not deleted after removing its finalizer"
        time.sleep(0.1)


def test_server_side_apply_dry_run_is_not_persisted(api: k8s.ApiClient, kube_namespace: str) -> None:
    core = k8s.CoreV1Api(api)
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dry", "namespace": kube_namespace, "labels": {"app": "demo"}},
        "data": {"key": "value"},
    }
    resp = core.patch_namespaced_config_map(
        "dry",
        kube_namespace,
        body=manifest,
        field_manager=FIELD_MANAGER,
        dry_run="All",
        force=True,
        _content_type="application/apply-patch+yaml",
        _preload_content=False,
    )
    applied = json.loads(resp.data)
    assert resp.status == 201  # apply would have created it
    assert applied["data"] == {"key": "value"}
    assert applied["metadata"]["labels"] == {"app": "demo"}
    managers = {(m["manager"], m["operation"]) for m in applied["metadata"]["managedFields"]}
    assert (FIELD_MANAGER, "Apply") in managers

    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("dry", kube_namespace)
    assert missing.value.status == 404
    names = [cm.metadata.name for cm in core.list_namespaced_config_map(kube_namespace).items]
    assert "dry" not in names
