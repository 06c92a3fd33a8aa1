"""controller.btp_operator.status as pure functions: states of reasons, BTP Manager's messages (the
InvalidSecret ones produced by the generator's own check of a Secret), and the Ready condition's
transition time, which must survive everything but a change of status or reason. Nothing faked."""

from __future__ import annotations

import base64
import datetime as dt

import pytest

from btp_gitops.controller.btp_operator import status
from btp_gitops.generator.transforms.operator_secret import InvalidSecret, operator_credentials_from_secret

T0 = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(minutes=7)


def _with_status(verdict: status.Verdict, when: dt.datetime, generation: int = 1) -> dict[str, object]:
    obj: dict[str, object] = {"metadata": {"name": "btpoperator", "generation": generation}}
    obj["status"] = status.status_for(obj, verdict, when)
    return obj


def test_each_reason_has_the_state_of_btp_managers_table() -> None:
    table = {
        status.reconcile_succeeded(): ("Ready", "True", "Normal"),
        status.waiting_for_deployment("kyma-system", "op", exists=True): ("Processing", "False", "Normal"),
        status.hard_deleting(): ("Deleting", "False", "Normal"),
        status.soft_deleting("timeout"): ("Deleting", "False", "Normal"),
        status.not_cleaned(2, 1): ("Warning", "False", "Warning"),
        status.missing_secret("kyma-system", "sap-btp-manager"): ("Warning", "False", "Warning"),
        status.wrong_namespace_or_name("kyma-system", "btpoperator"): ("Warning", "False", "Warning"),
        status.invalid_secret(()): ("Error", "False", "Warning"),
        status.resource_removal_failed(["ConfigMap a/b"]): ("Error", "False", "Warning"),
    }
    for verdict, (state, condition_status, event_type) in table.items():
        written = status.status_for({}, verdict, T0)
        assert (written["state"], written["conditions"][0]["status"], verdict.event_type) == (
            state,
            condition_status,
            event_type,
        ), verdict.reason


def test_messages_keep_btp_managers_wording() -> None:
    assert status.not_cleaned(3, 2).message == (
        "All service instances and bindings must be removed: 3 instance(s) and 2 binding(s)"
    )
    assert status.missing_secret("kyma-system", "sap-btp-manager").message == (
        "sap-btp-manager Secret in kyma-system namespace not found"
    )
    assert status.resource_removal_failed([f"ConfigMap ns/c{n}" for n in range(7)]).message == (
        "Some resources can still be present due to errors while deprovisioning: "
        "ConfigMap ns/c0, ConfigMap ns/c1, ConfigMap ns/c2, ConfigMap ns/c3, ConfigMap ns/c4 and 2 more"
    )


def test_invalid_secret_message_comes_from_the_generators_check_without_values() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "sap-btp-manager", "namespace": "kyma-system"},
        "data": {
            "clientid": base64.b64encode(b"   ").decode(),
            "clientsecret": base64.b64encode(b"s3cr3t-value").decode(),
            "cluster_id": "%%%",
        },
    }
    with pytest.raises(InvalidSecret) as refused:
        operator_credentials_from_secret(secret, "Secret kyma-system/sap-btp-manager")

    message = status.invalid_secret(refused.value.problems).message

    assert message == (
        "data.cluster_id: is not valid base64; key(s) sm_url, tokenurl, cluster_id not found; "
        "missing value(s) for clientid key(s)"
    )
    assert "s3cr3t" not in message


def test_transition_time_is_kept_while_status_and_reason_stay() -> None:
    obj = _with_status(status.not_cleaned(2, 1), T0)

    again = status.status_for(obj, status.not_cleaned(1, 0), T1)

    assert again["conditions"][0]["lastTransitionTime"] == "2026-03-01T12:00:00Z"
    assert again["conditions"][0]["message"].endswith("1 instance(s) and 0 binding(s)")
    assert status.status_changes(obj, again)


def test_a_new_reason_with_the_same_status_is_a_transition() -> None:
    """HardDeleting -> SoftDeleting keeps status False; the time still moves, so the phase's
    start can be read back."""
    obj = _with_status(status.hard_deleting(), T0)
    assert status.reason_since(obj) == T0
    assert status.current_reason(obj) == "HardDeleting"

    soft = status.status_for(obj, status.soft_deleting("timeout"), T1)

    assert soft["conditions"][0]["lastTransitionTime"] == "2026-03-01T12:07:00Z"


def test_writing_the_same_verdict_again_changes_nothing() -> None:
    obj = _with_status(status.hard_deleting(), T0, generation=4)

    same = status.status_for(obj, status.hard_deleting(), T1)

    assert not status.status_changes(obj, same)
    assert same["conditions"][0]["observedGeneration"] == 4


def test_an_object_without_a_condition_has_no_reason_or_time() -> None:
    assert status.current_reason({"status": {"state": "Ready"}}) is None
    assert status.reason_since({}) is None
    broken = {
        "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "yesterday"}]}
    }
    assert status.reason_since(broken) is None
