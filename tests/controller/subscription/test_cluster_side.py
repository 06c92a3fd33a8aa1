"""What the subscription server writes into the cluster is replaced whole on a repeat.

The first write is a create (cheap for the API server), whose fields belong to an Update entry of
the controller's field manager; a server-side apply by the same manager would leave those fields
in place. A re-subscribe without a subscription GUID must therefore not keep the GUID label of the
earlier subscription, and a withdrawn replacement must put back exactly what it replaced.
Real kube-apiserver.
"""

from __future__ import annotations

import datetime as dt

import pytest

from btp_gitops.controller.clients.cluster_side import (
    SUBSCRIPTION_GUID_LABEL,
    ClusterSide,
    Operation,
    PendingCallback,
    pending_callback_name,
)
from btp_gitops.controller.clients.targets import AppTarget
from btp_gitops.controller.kube import CONFIG_MAP, NAMESPACE, SECRET, KubeClient

pytestmark = pytest.mark.kube


def _app(kube: KubeClient, namespace: str) -> AppTarget:
    kube.apply(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return AppTarget(namespace, "shop", "shop", "provider-sub", "hash")


def _callback(app: AppTarget, path: str, subscription_type: str) -> PendingCallback:
    return PendingCallback(
        app=app,
        tenant_name="acme",
        tenant_id="tenant-1",
        sub_domain="acme",
        operation=Operation.PROVISIONING,
        callback_path=path,
        deadline=dt.datetime(2030, 1, 1, tzinfo=dt.UTC),
        app_url="https://acme.shop.example.com",
        subscription_type=subscription_type,
    )


def test_a_resubscribe_without_guid_drops_the_earlier_guid_label(kube: KubeClient) -> None:
    app = _app(kube, "cluster-side-secret")
    side = ClusterSide(kube)

    side.store_subscription_context(app, "acme-context", "tenant-1", "guid-1", '{"first": true}')
    first = kube.get(SECRET, "acme-context", app.namespace)
    assert first is not None
    assert first["metadata"]["labels"][SUBSCRIPTION_GUID_LABEL] == "guid-1"

    side.store_subscription_context(app, "acme-context", "tenant-1", "", '{"second": true}')
    second = kube.get(SECRET, "acme-context", app.namespace)
    assert second is not None
    assert SUBSCRIPTION_GUID_LABEL not in second["metadata"]["labels"]
    assert second["data"] != first["data"]


def test_a_replaced_callback_is_whole_and_its_withdrawal_restores_the_previous(kube: KubeClient) -> None:
    app = _app(kube, "cluster-side-callback")
    side = ClusterSide(kube)
    name = pending_callback_name("acme", Operation.PROVISIONING)

    assert side.open_callback(_callback(app, "/callback/first", "SaaS")) is None
    first = kube.get(CONFIG_MAP, name, app.namespace)
    assert first is not None

    replacement = _callback(app, "/callback/second", "SMS")
    previous = side.open_callback(replacement)
    assert previous is not None
    assert previous["data"] == first["data"]
    replaced = kube.get(CONFIG_MAP, name, app.namespace)
    assert replaced is not None
    assert replaced["data"] != first["data"]
    assert "/callback/second" in str(replaced["data"])
    assert "/callback/first" not in str(replaced["data"])

    side.withdraw_callback(replacement, previous)
    restored = kube.get(CONFIG_MAP, name, app.namespace)
    assert restored is not None
    assert restored["data"] == first["data"]
    assert restored["metadata"]["labels"] == first["metadata"]["labels"]
