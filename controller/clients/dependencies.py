"""Which of an application's services the SaaS registry must subscribe along (`GET /dependencies`).

CAP Operator's rule for each `spec.btp.services` entry, by its `subscriptionDependency`:

- `Never`: left out;
- `Always`: listed;
- `Auto` (also when the field is absent): listed when its credentials say `saasregistryenabled:
  true`, its class is `destination` or `connectivity`, or it is an `auditlog` whose plan is
  `oauth2` (the rule of `@sap/approuter`).

A listed service needs an `xsappname` in its credentials (top level, else `uaa.xsappname`);
without one it is left out, with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


class SubscriptionDependency(StrEnum):
    ALWAYS = "Always"
    AUTO = "Auto"
    NEVER = "Never"


AUTO_CLASSES = frozenset({"destination", "connectivity"})


def dependency_mode(value: object) -> SubscriptionDependency:
    """The mode a service entry's `subscriptionDependency` names (absent: Auto; the schema admits
    only the three values, so anything else is Auto as well)."""
    try:
        return SubscriptionDependency(str(value)) if value is not None else SubscriptionDependency.AUTO
    except ValueError:
        return SubscriptionDependency.AUTO


def qualifies(
    mode: SubscriptionDependency, service_class: str, credentials: Mapping[str, Any], plan: str
) -> bool:
    """Whether the service is a dependency, before its xsappname is looked at."""
    if mode is SubscriptionDependency.NEVER:
        return False
    if mode is SubscriptionDependency.ALWAYS:
        return True
    if credentials.get("saasregistryenabled") in (True, "true"):  # JSON, or a flat key's text
        return True
    if service_class in AUTO_CLASSES:
        return True
    return service_class == "auditlog" and plan == "oauth2"


def xsappname_of(credentials: Mapping[str, Any]) -> str:
    """`xsappname`, else `uaa.xsappname` ("" when neither is a non-empty string)."""
    direct = credentials.get("xsappname")
    if isinstance(direct, str) and direct:
        return direct
    uaa = credentials.get("uaa")
    nested = uaa.get("xsappname") if isinstance(uaa, Mapping) else None
    return nested if isinstance(nested, str) and nested else ""
