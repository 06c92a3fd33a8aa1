"""A tenant's callbacks of different operations, counted attempts, and the old ConfigMap format.

Covers: a subscribe whose callback is decided but not delivered (the SaaS registry refuses it),
then an unsubscribe of the same tenant: both callbacks go out, each once, the subscribe's first,
the unsubscribe's held back (its verdict stored) while the earlier one waits for its retry; a
process that dies during each attempt (before its PUT, or after the PUT left, accepted or
refused) never sends more than `max_attempts` PUTs and gives up after them; a pending callback in
the one-per-tenant format of earlier releases is delivered, before the callback the server opens
for the next operation. Real Git, real API server; the SaaS registry is a local HTTP peer.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Literal

import pytest

from btp_gitops.controller.cap.callbacks import DELIVERY_ANNOTATION
from btp_gitops.controller.clients.cluster_side import (
    Operation,
    legacy_callback_name,
    pending_callback_name,
)
from btp_gitops.controller.clients.saas_client import (
    CallbackFailed,
    CallbackStatus,
    CallbackTarget,
    SaasCallbackClient,
)
from btp_gitops.controller.kube import CONFIG_MAP, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.tenant_operations.conftest import (
    FAST_CALLBACKS,
    Controller,
    SaasPeer,
    SourceRemote,
    bind_saas_registry,
    create_jobs,
    finish_job,
    open_callback,
    ready_on,
    tenant_record,
)

# Serial: in two of three parallel runs of the suite (never in a serial one) a PUT to the local peer
# was lost (the client saw ConnectionResetError on loopback, the peer recorded nothing) while the
# other worker loaded the machine; the cause is not found yet, and these tests count every PUT.
pytestmark = [pytest.mark.kube, pytest.mark.serial]

GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
VERSION = "bookshop-1-1-0"


@pytest.fixture
def globex(source: SourceRemote, kube: KubeClient, saas_peer: SaasPeer) -> ObjectKey:
    """globex is provisioned on 1.1.0: a provisioning callback decides SUCCEEDED at once."""
    source.write_records(tenant_record(source.namespace, "globex", GLOBEX_ID, status=ready_on(VERSION)))
    bind_saas_registry(kube, source.namespace, saas_peer)
    return ObjectKey(source.namespace, "globex")


def messages(puts: list[tuple[int, dict[str, object]]]) -> list[tuple[int, object]]:
    return [(answer, body["message"]) for answer, body in puts]


def stored_state(kube: KubeClient, namespace: str, name: str) -> dict[str, object]:
    found = kube.get(CONFIG_MAP, name, namespace)
    assert found is not None, f"ConfigMap {name} is gone"
    state: dict[str, object] = json.loads(found["metadata"]["annotations"][DELIVERY_ANNOTATION])
    return state


def test_an_unsubscribe_keeps_the_undelivered_subscribe_callback(
    globex: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    namespace = globex.namespace
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    saas_peer.fail_callbacks_with = 503
    assert controller.tenant_operations.reconcile(globex).requeue_after is not None
    assert messages(saas_peer.puts) == [(503, "Provisioning successful")]

    # The unsubscribe: the server marks the record and opens the deprovisioning callback.
    source.write_records(
        tenant_record(namespace, "globex", GLOBEX_ID, status=ready_on(VERSION), deprovision=True)
    )
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.DEPROVISIONING)
    assert kube.get(CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), namespace)
    jobs = create_jobs(kube, source.rendered_jobs("globex"))
    assert [j["metadata"]["labels"]["sme.sap.com/tenant-operation-type"] for j in jobs] == ["deprovisioning"]
    for job in jobs:
        finish_job(kube, job, "Complete")

    time.sleep(0.3)  # the first retry is due; the registry still refuses
    assert controller.tenant_operations.reconcile(globex).requeue_after is not None
    assert source.record("globex") is None  # the deprovisioning is done and recorded
    # Held back behind the provisioning callback, which waits for its next attempt; its verdict
    # is stored already.
    assert messages(saas_peer.puts) == [(503, "Provisioning successful")] * 2
    held = stored_state(kube, namespace, pending_callback_name("globex", Operation.DEPROVISIONING))
    assert (held["status"], held["attempts"]) == ("SUCCEEDED", 0)

    saas_peer.fail_callbacks_with = None
    time.sleep(0.5)  # the second backoff (0.4 s)
    assert controller.tenant_operations.reconcile(globex) == DONE
    assert controller.tenant_operations.reconcile(globex) == DONE

    assert [c.body["message"] for c in saas_peer.callbacks] == [
        "Provisioning successful",
        "Deprovisioning successful",
    ]
    for operation in Operation:
        assert kube.get(CONFIG_MAP, pending_callback_name("globex", operation), namespace) is None


class Crash(BaseException):
    """The process dies: nothing after this point of the attempt runs (not an error it handles)."""


class DyingClient(SaasCallbackClient):
    """The production client in a process that dies during every attempt: before the PUT, or
    right after it left (whatever the registry answered: the process never learns it)."""

    def __init__(self, when: Literal["before", "after"]) -> None:
        super().__init__()
        self.when = when

    def send_status(self, target: CallbackTarget, callback_path: str, status: CallbackStatus) -> int:
        if self.when == "after":
            with contextlib.suppress(CallbackFailed):
                super().send_status(target, callback_path, status)
        raise Crash


@pytest.mark.parametrize(
    ("when", "answer"),
    [("before", None), ("after", None), ("after", 503)],
    ids=["before", "after", "refused"],
)
def test_a_process_dying_during_its_attempts_never_exceeds_the_limit(
    when: Literal["before", "after"],
    answer: int | None,
    globex: ObjectKey,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
) -> None:
    namespace = globex.namespace
    name = pending_callback_name("globex", Operation.PROVISIONING)
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    saas_peer.fail_callbacks_with = answer
    controller.callback_client = DyingClient(when)
    limit = FAST_CALLBACKS.max_attempts

    for _ in range(2 * limit):
        controller.restart()  # a new process each time: nothing of the last one's memory
        with contextlib.suppress(Crash):
            controller.tenant_operations.reconcile(globex)
        time.sleep(FAST_CALLBACKS.backoff_max + 0.1)

    expected = 0 if when == "before" else limit
    assert len(saas_peer.puts) == expected
    assert all(answered == (answer or 200) for answered, _ in saas_peer.puts)
    given_up = kube.get(CONFIG_MAP, name, namespace)
    assert given_up is not None
    assert given_up["metadata"]["labels"]["btp-gitops.io/pending-callback"] == "failed"
    assert stored_state(kube, namespace, name)["attempts"] == limit


def test_an_old_format_callback_is_delivered_before_the_next_operations(
    globex: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    namespace = globex.namespace
    # What an earlier release's server left: one ConfigMap per tenant, no `openedAt`.
    kube.create(
        CONFIG_MAP,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": legacy_callback_name("globex"),
                "labels": {
                    "btp-gitops.io/pending-callback": "true",
                    "sme.sap.com/btp-tenant-id": GLOBEX_ID,
                    "app.kubernetes.io/managed-by": "btp-gitops",
                },
            },
            "data": {
                "operation": "provisioning",
                "tenantName": "globex",
                "tenantId": GLOBEX_ID,
                "subDomain": "globex",
                "callbackPath": f"/saas-manager/v1/subscription-callback/{GLOBEX_ID}/result",
                "deadline": "2099-01-01T00:00:00Z",
                "appUrl": "https://globex.bookshop.apps.example.com",
                "application": "bookshop",
                "subscriptionType": "SaaS",
            },
        },
        namespace,
    )
    # The upgraded controller decides it; the registry refuses the first attempt.
    saas_peer.fail_callbacks_with = 503
    assert controller.tenant_operations.reconcile(globex).requeue_after is not None
    assert messages(saas_peer.puts) == [(503, "Provisioning successful")]
    # The upgraded server takes the unsubscribe: the deprovisioning callback in the new format.
    source.write_records(
        tenant_record(namespace, "globex", GLOBEX_ID, status=ready_on(VERSION), deprovision=True)
    )
    open_callback(kube, namespace, "globex", GLOBEX_ID, Operation.DEPROVISIONING)
    for job in create_jobs(kube, source.rendered_jobs("globex")):
        finish_job(kube, job, "Complete")
    saas_peer.fail_callbacks_with = None
    time.sleep(0.3)  # the first backoff (0.2 s)

    assert controller.tenant_operations.reconcile(globex) == DONE

    assert [c.body["message"] for c in saas_peer.callbacks] == [
        "Provisioning successful",
        "Deprovisioning successful",
    ]
    assert kube.get(CONFIG_MAP, legacy_callback_name("globex"), namespace) is None
    assert kube.get(CONFIG_MAP, pending_callback_name("globex", Operation.DEPROVISIONING), namespace) is None
