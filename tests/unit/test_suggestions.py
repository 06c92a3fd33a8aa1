"""The nearest-name rule that every "did you mean" message uses."""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.suggestions import did_you_mean, nearest

MODULES = ["relay", "serverless", "istio", "api-gateway", "btp-operator", "telemetry"]


@pytest.mark.parametrize(
    ("typed", "known", "meant"),
    [
        ("rleay", MODULES, "relay"),  # two letters swapped
        ("serverles", MODULES, "serverless"),  # one dropped
        ("subdomain", ["subDomain", "tenantId", "globalAccountId"], "subDomain"),  # case only
        ("CapTenant", ["CAPApplication", "CAPTenant", "CAPApplicationVersion"], "CAPTenant"),
        ("CAPTennant", ["CAPApplication", "CAPTenant", "CAPApplicationVersion"], "CAPTenant"),
    ],
)
def test_a_likely_typo_names_what_was_meant(typed: str, known: list[str], meant: str) -> None:
    assert nearest(typed, known) == meant
    assert did_you_mean(typed, known) == f' (did you mean "{meant}"?)'


@pytest.mark.parametrize("typed", ["keda", "x", "cloud-foundry-runtime"])
def test_an_unrelated_name_gets_no_suggestion(typed: str) -> None:
    assert nearest(typed, MODULES) is None
    assert did_you_mean(typed, MODULES) == ""


def test_the_name_itself_is_never_suggested_and_ties_resolve_the_same_way_every_time() -> None:
    assert nearest("relay", ["relay"]) is None
    assert nearest("abcd-x", ["abcd-y", "abcd-z"]) == nearest("abcd-x", ["abcd-z", "abcd-y"])
