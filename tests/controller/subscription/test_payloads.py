"""Parsing of SaaS registry and subscription manager bodies as values (the HTTP tests cover the 400
answers): what is read from where, the raw body kept byte for byte, the application identity, and
the subscription manager's DELETE parameters. Pure functions; nothing is faked.
"""

from __future__ import annotations

import json

import pytest

from btp_gitops.controller.subscription.payloads import (
    InvalidPayload,
    SmsUnsubscription,
    SubscriptionKind,
    SubscriptionPayload,
    parse_saas_payload,
    parse_sms_payload,
    parse_sms_unsubscription,
)
from btp_gitops.generator.domains.cap.identity import sha1_hex

TENANT = "2b7c9d1e-3f4a-4b5c-8d6e-7f8091a2b3c4"


def test_a_saas_body() -> None:
    raw = (
        f'{{"subscriptionGUID": "g-1", "subscribedTenantId": "{TENANT}", "subscribedSubdomain": "acme",'
        ' "globalAccountGUID": "ga", "providerSubaccountId": "psa", "subscriptionAppName": "shop",'
        ' "subscriptionParams": {"subscriptionDomain": "shop.example.com"}, "other": [1, 2]}'
    )

    payload = parse_saas_payload(raw.encode(), TENANT)

    assert payload == SubscriptionPayload(
        kind=SubscriptionKind.SAAS,
        tenant_id=TENANT,
        subscription_guid="g-1",
        sub_domain="acme",
        global_account_id="ga",
        provider_subaccount_id="psa",
        app_name="shop",
        subscription_domain="shop.example.com",
        raw=raw,
    )
    assert payload.identifier_hash == sha1_hex("psa", "shop")
    assert raw not in repr(payload)


def test_a_subscription_manager_body_with_the_domain_under_the_root_application() -> None:
    body = {
        "subscriber": {
            "subscriptionGUID": "g-2",
            "app_tid": TENANT,
            "subaccountSubdomain": "acme",
            "globalAccountId": "ga",
        },
        "rootApplication": {
            "appName": "shop",
            "providerSubaccountId": "psa",
            "subscriptionParams": {"subscriptionDomain": "root.example.com"},
        },
    }

    payload = parse_sms_payload(json.dumps(body).encode(), TENANT)

    assert (payload.kind, payload.tenant_id, payload.subscription_guid, payload.subscription_domain) == (
        SubscriptionKind.SMS,
        TENANT,
        "g-2",
        "root.example.com",
    )
    assert payload.identifier_hash == sha1_hex("psa", "shop")


def test_the_subscription_manager_delete_parameters() -> None:
    assert parse_sms_unsubscription(TENANT, {"subscriptionGUID": ["g-3"]}) == SmsUnsubscription(TENANT, "g-3")
    with pytest.raises(InvalidPayload) as missing:
        parse_sms_unsubscription(TENANT, {"subscriptionGUID": [""]})
    assert missing.value.field == "subscriptionGUID"


@pytest.mark.parametrize(
    ("tenant_id", "field"),
    [("", "subscribedTenantId"), ("-leading-dash", "subscribedTenantId"), ("x" * 64, "subscribedTenantId")],
)
def test_tenant_ids_must_be_label_values(tenant_id: str, field: str) -> None:
    body = {
        "subscriptionGUID": "g",
        "subscribedTenantId": tenant_id,
        "subscribedSubdomain": "acme",
        "globalAccountGUID": "ga",
        "providerSubaccountId": "psa",
        "subscriptionAppName": "shop",
    }
    with pytest.raises(InvalidPayload) as refused:
        parse_saas_payload(json.dumps(body).encode(), tenant_id)
    assert refused.value.field == field
