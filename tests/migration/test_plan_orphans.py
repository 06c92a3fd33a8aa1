"""The cutover plan and the garbage collector: what it would delete along with what the plan says to
delete (an owner reference it follows, to an owner that goes), and how the plan says to delete
then (orphaning what is kept)."""

from __future__ import annotations

from typing import Any

import pytest

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.migration.plan import (
    CutoverPlan,
    Outcome,
)
from tests.migration.plans import (
    obj,
    plan,
)

ISTIO = "istio-system"
OLD_CERTIFICATE_UID = "0c1e7d1a-0000-4000-8000-00000000c3a7"


def certificates(api_version: str) -> tuple[KubeObject, KubeObject]:
    """The render's Certificate and the one CAP Operator made by generateName for the same names,
    both writing the TLS Secret `shop-tls`."""
    spec = {"dnsNames": ["*.shop.example.com"], "secretName": "shop-tls"}
    rendered = obj(api_version, "Certificate", "shop--shop", namespace=ISTIO, spec=spec)
    operators = obj(
        api_version,
        "Certificate",
        "shop-9kq2c",
        namespace=ISTIO,
        metadata={
            "generateName": "shop-",
            "uid": OLD_CERTIFICATE_UID,
            "labels": {"sme.sap.com/owner-identifier-hash": "abc"},
        },
        spec=spec,
    )
    return rendered, operators


def tls_secret(*references: dict[str, Any], namespace: str = ISTIO) -> KubeObject:
    return obj(
        "v1",
        "Secret",
        "shop-tls",
        namespace=namespace,
        type="kubernetes.io/tls",
        metadata={"ownerReferences": list(references)},
        data={"tls.crt": "Y3J0", "tls.key": "a2V5"},
    )


def certificate_reference(api_version: str, uid: str = OLD_CERTIFICATE_UID, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "Certificate", "name": "shop-9kq2c", "uid": uid, **extra}


def left_action(result: CutoverPlan, subject: str) -> str:
    (entry,) = [e for e in result.entries if e.outcome is Outcome.LEFT_BEHIND and e.subject == subject]
    return entry.action


ORPHAN = "delete it with `kubectl delete --cascade=orphan`"


@pytest.mark.parametrize(
    "reference",
    [
        # cert-manager with --enable-certificate-owner-ref: a controller reference
        certificate_reference("cert-manager.io/v1", controller=True, blockOwnerDeletion=True),
        # Gardener cert-management with its cascade-delete option: a plain reference, no controller field
        certificate_reference("cert.gardener.cloud/v1alpha1"),
    ],
    ids=["cert-manager", "gardener"],
)
def test_a_certificate_whose_secret_the_render_takes_over_is_deleted_orphaning_it(
    reference: dict[str, Any],
) -> None:
    rendered, operators = certificates(reference["apiVersion"])
    if reference["apiVersion"].startswith("cert.gardener"):
        for body in (rendered, operators):
            body["spec"] = {"dnsNames": ["*.shop.example.com"], "secretRef": {"name": "shop-tls"}}
    result = plan([rendered], [], [operators, tls_secret(reference)])
    action = left_action(result, f"Certificate {ISTIO}/shop-9kq2c")
    assert action.startswith("replaced by shop--shop: delete it once shop--shop is ready")
    assert f"Secret {ISTIO}/shop-tls, which the cutover keeps, names it as owner: {ORPHAN}" in action
    assert "the garbage collector deletes it with it" in action
    # Without the reference, the advice is the plain one.
    plain = left_action(plan([rendered], [], [operators, tls_secret()]), f"Certificate {ISTIO}/shop-9kq2c")
    assert "--cascade=orphan" not in plain and plain.startswith("replaced by shop--shop")


def test_a_reference_the_garbage_collector_would_not_follow_or_another_owner_that_stays_needs_no_orphaning() -> (
    None
):
    api_version = "cert-manager.io/v1"
    rendered, operators = certificates(api_version)
    ours = certificate_reference(api_version, controller=True)
    application = obj("sme.sap.com/v1alpha1", "CAPApplication", "shop", namespace=ISTIO, spec={})
    application_reference = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPApplication",
        "name": "shop",
        "uid": "a",
    }
    cases = {
        "another uid: another object of that name": [
            tls_secret(certificate_reference(api_version, uid="other"))
        ],
        "another owner the render keeps": [tls_secret(ours, application_reference)],
        "another kind": [tls_secret({**ours, "kind": "Issuer"})],
        "a reference without a name": [tls_secret({k: v for k, v in ours.items() if k != "name"})],
    }
    for why, owned in cases.items():
        result = plan([rendered, application], [application], [operators, *owned])
        assert "--cascade=orphan" not in left_action(result, f"Certificate {ISTIO}/shop-9kq2c"), why
    # An adopted object of another namespace: a namespaced owner is never resolved there.
    elsewhere = obj("v1", "ConfigMap", "shop-settings", data={"a": "1"})
    owned_elsewhere = {**elsewhere, "metadata": {**elsewhere["metadata"], "ownerReferences": [ours]}}
    result = plan([rendered, elsewhere], [owned_elsewhere], [operators, owned_elsewhere])
    assert "--cascade=orphan" not in left_action(result, f"Certificate {ISTIO}/shop-9kq2c")
    moved = {**owned_elsewhere, "metadata": {**owned_elsewhere["metadata"], "namespace": ISTIO}}
    result = plan([rendered, {**elsewhere, "metadata": moved["metadata"]}], [moved], [operators, moved])
    assert "ConfigMap istio-system/shop-settings" in left_action(result, f"Certificate {ISTIO}/shop-9kq2c")
    # A dependent the cutover does not keep (nothing renders or writes it) goes with its owner.
    other_secret = {
        **tls_secret(ours),
        "metadata": {"name": "shop-old", "namespace": ISTIO, "ownerReferences": [ours]},
    }
    result = plan([rendered], [], [operators, other_secret])
    assert "--cascade=orphan" not in left_action(result, f"Certificate {ISTIO}/shop-9kq2c")


def test_an_adopted_object_an_operator_object_owns_is_named_and_long_lists_are_counted() -> None:
    job_uid = "9b2f0c55-0000-4000-8000-0000000000aa"
    old_job = obj(
        "batch/v1",
        "Job",
        "old",
        metadata={"uid": job_uid, "labels": {"sme.sap.com/category": "Workload"}},
    )
    reference = {"apiVersion": "batch/v1", "kind": "Job", "name": "old", "uid": job_uid}
    maps = [obj("v1", "ConfigMap", f"settings-{i}", data={"a": str(i)}) for i in range(5)]
    live = [{**m, "metadata": {**m["metadata"], "ownerReferences": [reference]}} for m in maps]
    result = plan(maps, live, [old_job, *live])
    action = left_action(result, "Job shop/old")
    assert (
        "ConfigMap shop/settings-0, ConfigMap shop/settings-1, ConfigMap shop/settings-2 and 2 more, which "
        f"the cutover keeps, name it as owner: {ORPHAN}, or the garbage collector deletes them with it"
    ) in action
    assert [e.outcome for e in result.entries].count(Outcome.ADOPTED) == 5


def test_owner_references_of_any_shape_are_read_without_failing_and_only_whole_ones_count() -> None:
    """A dump may hold anything under ownerReferences: what is not a reference the API server
    would store names no owner, and a whole one beside it still counts."""
    api_version = "cert-manager.io/v1"
    rendered, operators = certificates(api_version)
    ours = certificate_reference(api_version, controller=True)
    broken: list[Any] = [
        "Certificate/shop-9kq2c",
        {**ours, "name": 7},
        {k: v for k, v in ours.items() if k != "apiVersion"},
        {**ours, "kind": ["Certificate"]},
        None,
    ]
    for found in [*broken, broken]:
        secret = tls_secret()
        secret["metadata"]["ownerReferences"] = found
        action = left_action(plan([rendered], [], [operators, secret]), f"Certificate {ISTIO}/shop-9kq2c")
        assert "--cascade=orphan" not in action, found
    # A uid that is no string is no uid: the reference still names the Certificate by name.
    secret = tls_secret({**ours, "uid": 12}, *broken)
    action = left_action(plan([rendered], [], [operators, secret]), f"Certificate {ISTIO}/shop-9kq2c")
    assert f"Secret {ISTIO}/shop-tls, which the cutover keeps, names it as owner" in action
