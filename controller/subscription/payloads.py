"""Typed parsing of the bodies the SaaS registry and the subscription manager send.

SaaS registry (`/provision/tenants/{tenantId}`, PUT and DELETE carry the same body):

    {"subscriptionGUID", "subscribedTenantId", "subscribedSubdomain", "globalAccountGUID",
     "providerSubaccountId", "subscriptionAppName", "subscriptionParams": {"subscriptionDomain"}?}

Subscription manager (`/sms/provision/tenants/{tenantId}`): PUT carries
`{"subscriber": {"subscriptionGUID", "app_tid", "subaccountSubdomain", "globalAccountId"},
"rootApplication": {"appName", "providerSubaccountId"}}`; DELETE has no body, only the
`subscriptionGUID` query parameter.

Every problem is an `InvalidPayload` whose message names the field (`subscriber.app_tid: required
field is missing`), answered with 400, before anything is written. Values are checked as far as
they flow into names, labels, annotations and host names: the tenant id and the subdomain against
the CAPTenant schema's `spec.tenantId` / `spec.subDomain` (`schemas/`, pattern and maxLength: a
label value, a DNS label), the subscription GUID as a label value, the global account id (an
annotation of the record) as a label value too (a GUID is 36 characters; an unbounded value once
made the record exceed Kubernetes' annotation limit), the provider subaccount id and app name (only
hashed) up to `MAX_NAME_LENGTH`. The raw body is kept as received: it is the subscription context
CAP's mtxs gets, stored in a Secret and nowhere else (`repr=False`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from btp_gitops.controller.errors import PermanentError
from btp_gitops.generator.domains.cap import sha1_hex
from btp_gitops.generator.io import bundled

CAP_TENANT_SCHEMA = "captenant.sme.sap.com.v1alpha1.json"
MAX_NAME_LENGTH = 255  # providerSubaccountId, subscriptionAppName: hashed, never stored

# A label value (the tenant id labels the pending-callback ConfigMap), at most 63 characters.
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE_PROBLEM = (
    "letters, digits, '-', '_' or '.' (at most 63, starting and ending alphanumeric) are expected"
)
_DNS_NAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
)


class InvalidPayload(PermanentError):
    """A request body or parameter the server cannot use; `field` names where (dotted path)."""

    reason = "InvalidPayload"

    def __init__(self, field_path: str, problem: str) -> None:
        super().__init__(f"{field_path}: {problem}" if field_path else problem)
        self.field = field_path


class SubscriptionKind(StrEnum):
    SAAS = "SaaS"  # SaaS provisioning service (saas-registry), bearer tokens
    SMS = "SMS"  # subscription manager, client certificates


@dataclass(frozen=True, slots=True)
class SubscriptionPayload:
    """A subscribe or unsubscribe of one tenant to one application, from either caller."""

    kind: SubscriptionKind
    tenant_id: str
    subscription_guid: str
    sub_domain: str
    global_account_id: str
    provider_subaccount_id: str
    app_name: str
    subscription_domain: str = ""
    raw: str = field(default="", repr=False)

    @property
    def identifier_hash(self) -> str:
        """CAP Operator's application identity: sha1(providerSubaccountId + appName)."""
        return sha1_hex(self.provider_subaccount_id, self.app_name)


@dataclass(frozen=True, slots=True)
class SmsUnsubscription:
    """A subscription manager DELETE: the tenant and subscription it ends, nothing else."""

    tenant_id: str
    subscription_guid: str


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or `InvalidPayload`."""
    if not body:
        raise InvalidPayload("", "the request has no body; a JSON object is expected")
    try:
        document = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InvalidPayload("", "the body is not UTF-8") from error
    except json.JSONDecodeError as error:
        raise InvalidPayload(
            "", f"the body is not JSON (line {error.lineno}, column {error.colno})"
        ) from error
    except RecursionError as error:
        raise InvalidPayload("", "the body nests too deeply") from error
    except ValueError as error:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise InvalidPayload("", "the body holds a number too long to read") from error
    if not isinstance(document, dict):
        raise InvalidPayload("", f"a JSON object is expected, got {_json_type(document)}")
    return document


@dataclass(frozen=True, slots=True)
class _SpecLimit:
    pattern: re.Pattern[str]
    max_length: int


@functools.cache
def tenant_spec_limit(field_name: str) -> _SpecLimit:
    """`spec.<field_name>`'s pattern and maxLength in the shipped CAPTenant schema."""
    schema = json.loads((bundled.schema_dir() / CAP_TENANT_SCHEMA).read_text(encoding="utf-8"))
    spec = schema["properties"]["spec"]["properties"][field_name]
    return _SpecLimit(re.compile(spec["pattern"]), int(spec["maxLength"]))


def _within_spec(value: str, field_name: str) -> bool:
    limit = tenant_spec_limit(field_name)
    return len(value) <= limit.max_length and limit.pattern.fullmatch(value) is not None


def check_tenant_id(value: str, where: str = "tenantId") -> str:
    if not _within_spec(value, "tenantId"):
        raise InvalidPayload(where, _LABEL_VALUE_PROBLEM)
    return value


def _label_value(value: str, where: str) -> str:
    """Tenant ids and subscription GUIDs become label values: letters, digits, '-', '_', '.', at most 63."""
    if not _LABEL_VALUE.match(value):
        raise InvalidPayload(where, _LABEL_VALUE_PROBLEM)
    return value


def parse_saas_payload(body: bytes, path_tenant_id: str) -> SubscriptionPayload:
    """A SaaS registry body for the tenant named in the path."""
    document = parse_json_object(body)
    payload = SubscriptionPayload(
        kind=SubscriptionKind.SAAS,
        tenant_id=check_tenant_id(_required_text(document, "subscribedTenantId"), "subscribedTenantId"),
        subscription_guid=_label_value(_required_text(document, "subscriptionGUID"), "subscriptionGUID"),
        sub_domain=_sub_domain(_required_text(document, "subscribedSubdomain"), "subscribedSubdomain"),
        global_account_id=_label_value(_required_text(document, "globalAccountGUID"), "globalAccountGUID"),
        provider_subaccount_id=_bounded(
            _required_text(document, "providerSubaccountId"), "providerSubaccountId"
        ),
        app_name=_bounded(_required_text(document, "subscriptionAppName"), "subscriptionAppName"),
        subscription_domain=_subscription_domain(document, "subscriptionParams"),
        raw=body.decode("utf-8"),
    )
    return _matching_path(payload, path_tenant_id, "subscribedTenantId")


def parse_sms_payload(body: bytes, path_tenant_id: str) -> SubscriptionPayload:
    """A subscription manager subscribe body for the tenant named in the path."""
    document = parse_json_object(body)
    subscriber = _required_object(document, "subscriber")
    root = _required_object(document, "rootApplication")
    domain = _subscription_domain(document, "subscriptionParams") or _subscription_domain(
        root, "subscriptionParams", "rootApplication."
    )
    payload = SubscriptionPayload(
        kind=SubscriptionKind.SMS,
        tenant_id=check_tenant_id(_required_text(subscriber, "app_tid", "subscriber."), "subscriber.app_tid"),
        subscription_guid=_label_value(
            _required_text(subscriber, "subscriptionGUID", "subscriber."), "subscriber.subscriptionGUID"
        ),
        sub_domain=_sub_domain(
            _required_text(subscriber, "subaccountSubdomain", "subscriber."), "subscriber.subaccountSubdomain"
        ),
        global_account_id=_label_value(
            _required_text(subscriber, "globalAccountId", "subscriber."), "subscriber.globalAccountId"
        ),
        provider_subaccount_id=_bounded(
            _required_text(root, "providerSubaccountId", "rootApplication."),
            "rootApplication.providerSubaccountId",
        ),
        app_name=_bounded(_required_text(root, "appName", "rootApplication."), "rootApplication.appName"),
        subscription_domain=domain,
        raw=body.decode("utf-8"),
    )
    return _matching_path(payload, path_tenant_id, "subscriber.app_tid")


def parse_sms_unsubscription(path_tenant_id: str, query: dict[str, list[str]]) -> SmsUnsubscription:
    guids = [g for g in query.get("subscriptionGUID", []) if g]
    if not guids:
        raise InvalidPayload("subscriptionGUID", "the query parameter is required")
    if len(set(guids)) > 1:
        raise InvalidPayload("subscriptionGUID", "the query parameter is given more than once")
    return SmsUnsubscription(check_tenant_id(path_tenant_id), _label_value(guids[0], "subscriptionGUID"))


def _matching_path(payload: SubscriptionPayload, path_tenant_id: str, where: str) -> SubscriptionPayload:
    if payload.tenant_id != path_tenant_id:
        raise InvalidPayload(where, f"{payload.tenant_id!r} differs from the tenant id in the path")
    return payload


def _required_text(document: dict[str, Any], key: str, prefix: str = "") -> str:
    if key not in document or document[key] is None:
        raise InvalidPayload(prefix + key, "required field is missing")
    value = document[key]
    if not isinstance(value, str):
        raise InvalidPayload(prefix + key, f"expected a string, got {_json_type(value)}")
    if not value.strip():
        raise InvalidPayload(prefix + key, "must not be empty")
    return value


def _required_object(document: dict[str, Any], key: str) -> dict[str, Any]:
    value = document.get(key)
    if value is None:
        raise InvalidPayload(key, "required field is missing")
    if not isinstance(value, dict):
        raise InvalidPayload(key, f"expected an object, got {_json_type(value)}")
    return value


def _bounded(value: str, where: str) -> str:
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidPayload(where, f"at most {MAX_NAME_LENGTH} characters are expected")
    return value


def _sub_domain(value: str, where: str) -> str:
    if not _within_spec(value, "subDomain"):
        raise InvalidPayload(where, "a DNS label (lowercase letters, digits and '-', at most 63) is expected")
    return value


def _subscription_domain(document: dict[str, Any], key: str, prefix: str = "") -> str:
    params = document.get(key)
    if params is None or params == "":  # an empty string stands for no parameters (CAP Operator ignores it)
        return ""
    if not isinstance(params, dict):
        raise InvalidPayload(prefix + key, f"expected an object, got {_json_type(params)}")
    domain = params.get("subscriptionDomain")
    if domain is None or domain == "":
        return ""
    where = f"{prefix}{key}.subscriptionDomain"
    if not isinstance(domain, str):
        raise InvalidPayload(where, f"expected a string, got {_json_type(domain)}")
    if not _DNS_NAME.match(domain):
        raise InvalidPayload(where, "a DNS name (lowercase) is expected")
    return domain


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
