"""controller.kube against the real API server: CRUD, list across namespaces with selectors,
finalizers guarded by JSON-patch tests, watch, and the error mapping. Nothing is faked."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from btp_gitops.controller.errors import KubeUnavailable
from btp_gitops.controller.kube import CONFIG_MAP, Conflict, KubeClient, KubeRequestRefused, NotFound
from tests.controller.subscription.peers import make_pki
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kube


@pytest.fixture
def kube(kube_api: KubeAPI) -> Iterator[KubeClient]:
    client = KubeClient(kube_api.api_client())
    yield client
    client.close()


def _config_map(name: str, namespace: str, **labels: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }


def test_crud_and_list_with_selector(kube: KubeClient, kube_namespace: str) -> None:
    kube.create(CONFIG_MAP, _config_map("a", kube_namespace, team="x"), kube_namespace)
    kube.create(CONFIG_MAP, _config_map("b", kube_namespace, team="y"), kube_namespace)
    assert kube.get(CONFIG_MAP, "missing", kube_namespace) is None
    listed = kube.list(CONFIG_MAP, None, label_selector="team=x")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"], o["kind"]) for o in listed] == [
        (kube_namespace, "a", "ConfigMap")
    ]
    kube.patch(CONFIG_MAP, "a", {"data": {"k": "v"}}, kube_namespace)
    assert (kube.get(CONFIG_MAP, "a", kube_namespace) or {})["data"] == {"k": "v"}
    assert kube.delete(CONFIG_MAP, "a", kube_namespace) is True
    assert kube.delete(CONFIG_MAP, "a", kube_namespace) is False


def test_errors_are_mapped(kube: KubeClient, kube_namespace: str) -> None:
    kube.create(CONFIG_MAP, _config_map("dup", kube_namespace), kube_namespace)
    with pytest.raises(Conflict, match=r"create ConfigMap .*/dup: the API server answered 409"):
        kube.create(CONFIG_MAP, _config_map("dup", kube_namespace), kube_namespace)
    with pytest.raises(NotFound):
        kube.patch(CONFIG_MAP, "nope", {"data": {}}, kube_namespace)
    with pytest.raises(KubeRequestRefused) as refused:
        kube.create(CONFIG_MAP, _config_map("Not_A_Name", kube_namespace), kube_namespace)
    assert refused.value.status == 422


def test_finalizers_add_and_remove(kube: KubeClient, kube_namespace: str) -> None:
    created = kube.create(CONFIG_MAP, _config_map("f", kube_namespace), kube_namespace)
    held = kube.add_finalizer(CONFIG_MAP, created, "example.com/hold")
    assert held["metadata"]["finalizers"] == ["example.com/hold"]
    assert kube.add_finalizer(CONFIG_MAP, held, "example.com/hold") is held
    kube.delete(CONFIG_MAP, "f", kube_namespace)
    terminating = kube.get(CONFIG_MAP, "f", kube_namespace)
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
    assert kube.remove_finalizer(CONFIG_MAP, terminating, "example.com/hold") is True
    assert kube.get(CONFIG_MAP, "f", kube_namespace) is None


def test_stale_finalizer_removal_is_a_conflict(kube: KubeClient, kube_namespace: str) -> None:
    created = kube.create(CONFIG_MAP, _config_map("g", kube_namespace), kube_namespace)
    held = kube.add_finalizer(CONFIG_MAP, created, "example.com/one")
    kube.patch(
        CONFIG_MAP, "g", {"metadata": {"finalizers": ["example.com/two", "example.com/one"]}}, kube_namespace
    )
    with pytest.raises(Conflict):
        kube.remove_finalizer(CONFIG_MAP, held, "example.com/one")
    kube.patch(CONFIG_MAP, "g", {"metadata": {"finalizers": None}}, kube_namespace)


def test_watch_sees_changes_after_the_list(kube: KubeClient, kube_namespace: str) -> None:
    _, version = kube.list_with_version(CONFIG_MAP, kube_namespace)
    seen: list[tuple[str, str]] = []

    def consume() -> None:
        for kind, obj in kube.watch(CONFIG_MAP, version, kube_namespace, timeout_seconds=5):
            if kind != "BOOKMARK":
                seen.append((kind, obj["metadata"]["name"]))
            if len(seen) == 2:
                return

    thread = threading.Thread(target=consume)
    thread.start()
    kube.create(CONFIG_MAP, _config_map("w", kube_namespace), kube_namespace)
    kube.delete(CONFIG_MAP, "w", kube_namespace)
    thread.join(timeout=20)
    assert seen == [("ADDED", "w"), ("DELETED", "w")]


def test_stopping_while_a_watch_ends_by_itself_is_quiet(kube: KubeClient, kube_namespace: str) -> None:
    """A stop that meets a watch whose stream has just ended (its connection already back in the
    pool, its own cleanup not yet run) leaves it alone instead of failing the stop (CI saw
    urllib3's RuntimeError from `Manager.stop`)."""
    _, version = kube.list_with_version(CONFIG_MAP, kube_namespace)
    events = kube.watch(CONFIG_MAP, version, kube_namespace, timeout_seconds=1)
    kube.create(CONFIG_MAP, _config_map("ends", kube_namespace), kube_namespace)
    kind, _ = next(events)
    while kind == "BOOKMARK":
        kind, _ = next(events)
    # The watch is paused at its first event; its stream now runs to the server's timeout and
    # urllib3 hands the connection back, as happens when the server closes a watch on its own.
    [response] = list(kube._open_watches)
    while response.read(4096):
        pass
    kube.interrupt_watches()
    assert kind == "ADDED"
    events.close()


def test_delete_with_preconditions_spares_a_changed_or_replaced_object(
    kube: KubeClient, kube_namespace: str
) -> None:
    read = kube.create(CONFIG_MAP, _config_map("p", kube_namespace), kube_namespace)
    kube.patch(CONFIG_MAP, "p", {"data": {"changed": "yes"}}, kube_namespace)
    with pytest.raises(Conflict):
        kube.delete(CONFIG_MAP, "p", kube_namespace, preconditions=read)
    kube.delete(CONFIG_MAP, "p", kube_namespace)
    replacement = kube.create(CONFIG_MAP, _config_map("p", kube_namespace), kube_namespace)
    with pytest.raises(Conflict):  # same name, another object (uid)
        kube.delete(
            CONFIG_MAP,
            "p",
            kube_namespace,
            preconditions={
                **read,
                "metadata": {
                    **read["metadata"],
                    "resourceVersion": replacement["metadata"]["resourceVersion"],
                },
            },
        )
    assert kube.delete(CONFIG_MAP, "p", kube_namespace, preconditions=replacement) is True
    assert kube.get(CONFIG_MAP, "p", kube_namespace) is None


def test_connections_share_one_tls_context_and_still_check_the_server(
    kube_api: KubeAPI, kube_namespace: str, tmp_path: Path
) -> None:
    """After `keep_connections`, every connection to the API server uses one SSL context, loaded
    once with the kubeconfig's CA and client certificate (not per connection): requests from many
    threads at once, each on a connection of its own, authenticate with the client certificate,
    and a client whose CA is another one is refused the server's certificate as before."""
    client = KubeClient(kube_api.api_client())
    client.keep_connections(16)
    pool_manager = client._api.rest_client.pool_manager
    settings = pool_manager.connection_pool_kw
    context = settings["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert not any(settings.get(key) for key in ("ca_certs", "cert_file", "key_file", "ca_cert_data"))
    assert context.verify_mode == ssl.CERT_REQUIRED
    started = threading.Barrier(8)

    def create(number: int) -> None:
        started.wait()
        client.create(CONFIG_MAP, _config_map(f"tls-{number}", kube_namespace), kube_namespace)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(client.list(CONFIG_MAP, kube_namespace)) >= 8
    pool = pool_manager.connection_from_url(kube_api.server)  # the one the requests went through
    connections = [c for c in list(pool.pool.queue) if c is not None]
    assert len(connections) > 1 and {id(c.ssl_context) for c in connections} == {id(context)}
    client.close()

    stranger = make_pki(tmp_path).ca_file  # a CA that signed nothing the API server presents
    configuration = kube_api.configuration()
    configuration.ssl_ca_cert = str(stranger)
    other = KubeClient(ApiClient(configuration))
    other.keep_connections(4)
    with pytest.raises(KubeUnavailable):
        other.get(CONFIG_MAP, "tls-0", kube_namespace)
    other.close()
