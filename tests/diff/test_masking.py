"""Masking (generator.diff.masking): no Secret value, caBundle or PEM body reaches a diff,
and a change of one still shows as a change."""

from __future__ import annotations

from typing import Any

from btp_gitops.generator.core.yamlio import dump_object
from btp_gitops.generator.diff.compare import compare_trees
from btp_gitops.generator.diff.masking import (
    ABSENT,
    MASKED,
    MASKED_NEW,
    MASKED_OLD,
    mask_pair,
    mask_text_pair,
)

CERT_A = "-----BEGIN CERTIFICATE-----\nMIIBaaaaSECRETA\nAAAA\n-----END CERTIFICATE-----\n"
CERT_B = "-----BEGIN CERTIFICATE-----\nMIIBbbbbSECRETB\nBBBB\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretkeybody\n-----END RSA PRIVATE KEY-----"


def secret(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "ns", "labels": {"app": "a"}},
        "type": "Opaque",
        "data": dict(data),
        "stringData": {"token": data.get("token", "plain-token")},
    }


def webhook(ca_bundle: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "hooks"},
        "webhooks": [
            {"name": "a.example.com", "clientConfig": {"caBundle": ca_bundle, "service": {"name": "svc"}}},
            {"name": "b.example.com", "clientConfig": {"url": "https://b.example.com"}},
        ],
    }


def test_secret_values_are_masked_and_keys_stay() -> None:
    old, new = mask_pair(
        secret(password="c2VjcmV0", user="YWRtaW4="), secret(password="bmV3", user="YWRtaW4=")
    )

    assert old["data"] == {"password": MASKED_OLD, "user": MASKED}
    assert new["data"] == {"password": MASKED_NEW, "user": MASKED}
    assert old["stringData"] == new["stringData"] == {"token": MASKED}
    assert new["metadata"] == secret()["metadata"]  # everything else as it is
    assert new["type"] == "Opaque"


def test_a_secret_only_on_one_side_is_masked_without_old_or_new() -> None:
    old, new = mask_pair(ABSENT, secret(password="c2VjcmV0"))

    assert old is ABSENT
    assert new["data"] == {"password": MASKED}


def test_ca_bundles_are_masked_anywhere() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": "Q0FfQQ=="}}}},
    }
    old, new = mask_pair(webhook("Q0FfQQ=="), webhook("Q0FfQg=="))
    same_old, same_new = mask_pair(crd, crd)

    assert old["webhooks"][0]["clientConfig"] == {"caBundle": MASKED_OLD, "service": {"name": "svc"}}
    assert new["webhooks"][0]["clientConfig"]["caBundle"] == MASKED_NEW
    assert new["webhooks"][1] == webhook("")["webhooks"][1]
    assert (
        same_old["spec"]
        == same_new["spec"]
        == {"conversion": {"webhook": {"clientConfig": {"caBundle": MASKED}}}}
    )


def test_pem_bodies_are_masked_in_any_string_block_by_block() -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "trust", "annotations": {"note": f"key: {KEY}"}},
        "data": {"ca.crt": CERT_A + CERT_B, "plain": "not a certificate"},
    }
    rotated = {**config_map, "data": {"ca.crt": CERT_A + CERT_A, "plain": "not a certificate"}}

    old, new = mask_pair(config_map, rotated)

    assert old["data"]["ca.crt"] == (
        f"-----BEGIN CERTIFICATE-----\n{MASKED}\n-----END CERTIFICATE-----\n"
        f"-----BEGIN CERTIFICATE-----\n{MASKED_OLD}\n-----END CERTIFICATE-----\n"
    )
    assert new["data"]["ca.crt"].endswith(
        f"-----BEGIN CERTIFICATE-----\n{MASKED_NEW}\n-----END CERTIFICATE-----\n"
    )
    assert new["data"]["plain"] == "not a certificate"
    # A private key is masked whole, armour included: nothing of it reaches a report.
    assert new["metadata"]["annotations"]["note"] == MASKED


def test_text_files_get_their_pem_bodies_masked() -> None:
    old, new = mask_text_pair(f"first\n{CERT_A}", f"first\n{CERT_B}")

    assert old == f"first\n-----BEGIN CERTIFICATE-----\n{MASKED_OLD}\n-----END CERTIFICATE-----\n"
    assert new == f"first\n-----BEGIN CERTIFICATE-----\n{MASKED_NEW}\n-----END CERTIFICATE-----\n"


def test_a_masked_change_shows_as_changed_without_any_value() -> None:
    """Through compare_trees: the changed Secret is reported, its diff has a line for the changed
    key, and neither value appears anywhere."""
    before = {"app/secret-creds.yaml": dump_object(secret(password="b2xkLXZhbHVl"))}
    after = {"app/secret-creds.yaml": dump_object(secret(password="bmV3LXZhbHVl"))}

    [change] = compare_trees(before, after).changes

    assert change.subject == "Secret ns/creds"
    assert f"-  password: '{MASKED_OLD}'" in change.diff
    assert f"+  password: '{MASKED_NEW}'" in change.diff
    assert "b2xkLXZhbHVl" not in change.diff and "bmV3LXZhbHVl" not in change.diff
    assert "plain-token" not in change.diff


def test_secrets_inside_lists_are_masked_like_top_level_ones() -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [secret(password="aHVudGVyMg==")]}
    changed = {"apiVersion": "v1", "kind": "List", "items": [secret(password="c3dvcmRmaXNo")]}

    old, new = mask_pair(listed, changed)

    assert old["items"][0]["data"] == {"password": MASKED_OLD}
    assert new["items"][0]["data"] == {"password": MASKED_NEW}
    assert old["items"][0]["metadata"]["name"] == "creds"
