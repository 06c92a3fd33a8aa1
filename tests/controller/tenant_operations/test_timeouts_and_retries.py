"""Callbacks that cannot wait or cannot be delivered.

Covers: a deadline in the past with the Jobs not done -> FAILED naming the deadline, nothing
recorded in Git; a clone that lags behind the remote does not turn a success recorded meanwhile
into a failure at the deadline; a callback the SaaS registry refuses is retried with backoff (its state on the
ConfigMap) and, after the last attempt, set aside (label `failed`, Warning Event) and no longer
retried; a ConfigMap without a callback path is set aside at once; a repeated subscribe that opens
a new callback under the same name does not inherit the old one's stored verdict. Real Git, real
API server; the SaaS registry is a local HTTP peer.
"""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest

from btp_gitops.controller.cap.callbacks import DELIVERY_ANNOTATION, CallbackSettings, PendingCallback
from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.kube import CONFIG_MAP, EVENT, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.tenant_operations.conftest import (
    Controller,
    SaasPeer,
    SourceRemote,
    bind_saas_registry,
    open_callback,
    ready_on,
    reconcile_until_settled,
    tenant_record,
)

pytestmark = pytest.mark.kube

GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"


@pytest.fixture
def globex(source: SourceRemote, kube: KubeClient, saas_peer: SaasPeer) -> ObjectKey:
    source.write_records(tenant_record(source.namespace, "globex", GLOBEX_ID))
    bind_saas_registry(kube, source.namespace, saas_peer)
    return ObjectKey(source.namespace, "globex")


def events_of(kube: KubeClient, namespace: str, name: str) -> list[str]:
    return sorted(e["reason"] for e in kube.list(EVENT, namespace) if e["involvedObject"].get("name") == name)


def delivery_state(kube: KubeClient, namespace: str, name: str) -> dict[str, object]:
    found = kube.get(CONFIG_MAP, name, namespace)
    assert found is not None
    state: dict[str, object] = json.loads(found["metadata"]["annotations"][DELIVERY_ANNOTATION])
    return state


def test_a_passed_deadline_reports_failed_without_recording(
    globex: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    deadline = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
    open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING, deadline=deadline)
    commits = source.commits()

    assert reconcile_until_settled(controller.tenant_operations, globex) == DONE

    [callback] = saas_peer.callbacks
    assert callback.body["status"] == "FAILED"
    assert (
        callback.body["message"] == "Provisioning failed: not completed by the deadline 2024-05-01T12:00:00Z"
    )
    assert source.commits() == commits
    record = source.record("globex")
    assert record is not None and "status" not in record
    assert (
        kube.get(CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), globex.namespace)
        is None
    )


def test_a_lagging_clone_is_brought_up_to_date_before_a_verdict(
    globex: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    controller.source_max_age = 3600.0
    controller.restart()
    controller.tenant_operations.reconcile(globex)  # the clone's last fetch: globex without status
    # Another replica recorded the provisioning meanwhile; the callback's deadline has passed.
    source.write_records(
        tenant_record(source.namespace, "globex", GLOBEX_ID, status=ready_on("bookshop-1-1-0"))
    )
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING, deadline=past)

    assert reconcile_until_settled(controller.tenant_operations, globex) == DONE

    assert [(c.body["status"], c.body["message"]) for c in saas_peer.callbacks] == [
        ("SUCCEEDED", "Provisioning successful")
    ]


def test_a_refused_callback_is_retried_then_set_aside(
    globex: ObjectKey, source: SourceRemote, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING, deadline=past)
    saas_peer.fail_callbacks_with = 503
    name = pending_callback_name("globex", Operation.PROVISIONING)
    # A backoff long enough that the "not due yet" look below comes before it ends, however busy
    # the machine (a reconcile can take a few tenths of a second there).
    controller.callback_settings = CallbackSettings(max_attempts=3, backoff_initial=1.5, backoff_max=1.5)
    controller.restart()

    first = controller.tenant_operations.reconcile(globex)
    assert first.requeue_after == pytest.approx(1.5, abs=0.3)
    state = delivery_state(kube, globex.namespace, name)
    assert (state["status"], state["attempts"]) == ("FAILED", 1)
    assert "answered 503" in str(state["lastError"])
    # Not due yet: no attempt before the backoff ran out.
    assert controller.tenant_operations.reconcile(globex).requeue_after is not None
    assert delivery_state(kube, globex.namespace, name)["attempts"] == 1

    for _ in range(2):
        time.sleep(1.6)
        controller.tenant_operations.reconcile(globex)
    abandoned = kube.get(CONFIG_MAP, name, globex.namespace)
    assert abandoned is not None
    assert abandoned["metadata"]["labels"]["btp-gitops.io/pending-callback"] == "failed"
    assert delivery_state(kube, globex.namespace, name)["attempts"] == 3
    assert "CallbackAbandoned" in events_of(kube, globex.namespace, name)
    assert controller.outcomes == ["error", "error", "error"]

    saas_peer.fail_callbacks_with = None
    assert controller.tenant_operations.reconcile(globex) == DONE
    assert saas_peer.callbacks == []  # set aside: no longer pending


def test_a_callback_reopened_during_its_last_attempt_is_not_given_up_with_it(
    globex: ObjectKey, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING, deadline=past)
    name = pending_callback_name("globex", Operation.PROVISIONING)
    saas_peer.fail_callbacks_with = 503
    refusals: list[int] = []

    def subscribe_again_on_the_last_attempt() -> None:
        refusals.append(1)
        if len(refusals) == 3:  # the limit: the controller gives the old callback up after this
            open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)

    saas_peer.on_refusal = subscribe_again_on_the_last_attempt
    controller.tenant_operations.reconcile(globex)
    for _ in range(2):
        time.sleep(0.6)
        controller.tenant_operations.reconcile(globex)
    assert len(refusals) == 3

    # The new callback, opened while the old one's last PUT was refused, is still owed.
    current = kube.get(CONFIG_MAP, name, globex.namespace)
    assert current is not None
    assert current["metadata"]["labels"]["btp-gitops.io/pending-callback"] == "true"
    assert PendingCallback.of(current).state is None
    assert "CallbackAbandoned" in events_of(kube, globex.namespace, name)

    saas_peer.fail_callbacks_with = None
    waiting = controller.tenant_operations.reconcile(globex)
    assert waiting.requeue_after is not None and saas_peer.callbacks == []  # it waits for its tenant
    still = kube.get(CONFIG_MAP, name, globex.namespace)
    assert still is not None and still["metadata"]["labels"]["btp-gitops.io/pending-callback"] == "true"


def test_an_unreadable_callback_is_set_aside(
    globex: ObjectKey, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    opened = open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    kube.patch(CONFIG_MAP, opened["metadata"]["name"], {"data": {"callbackPath": None}}, globex.namespace)

    assert controller.tenant_operations.reconcile(globex) == DONE

    found = kube.get(CONFIG_MAP, opened["metadata"]["name"], globex.namespace)
    assert found is not None and found["metadata"]["labels"]["btp-gitops.io/pending-callback"] == "failed"
    assert "CallbackInvalid" in events_of(kube, globex.namespace, opened["metadata"]["name"])
    assert saas_peer.callbacks == []


def test_a_new_callback_under_the_same_name_starts_afresh(
    globex: ObjectKey, kube: KubeClient, controller: Controller, saas_peer: SaasPeer
) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING, deadline=past)
    saas_peer.fail_callbacks_with = 500
    controller.tenant_operations.reconcile(globex)  # FAILED stored, delivery pending

    # The SaaS registry subscribes again: the server opens a new callback (a new deadline).
    reopened = open_callback(kube, globex.namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    # the server replaces the ConfigMap whole: the old callback's delivery record goes with it
    assert DELIVERY_ANNOTATION not in (reopened["metadata"].get("annotations") or {})
    assert PendingCallback.of(reopened).state is None

    saas_peer.fail_callbacks_with = None
    waiting = controller.tenant_operations.reconcile(globex)
    assert waiting.requeue_after is not None and saas_peer.callbacks == []  # the new one waits for its tenant
