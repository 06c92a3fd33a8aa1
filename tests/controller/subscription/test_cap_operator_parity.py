"""The subscription server answers as CAP Operator's subscription server does (its handler tests'
cases, in our own words and data): the application URL and the subscription domain, a new
subscription GUID for a known tenant, the client certificate's name and encodings, a source with
no CAPApplication. Real server on loopback, real API server, tenant records pushed to a bare Git
remote, signed tokens; the SaaS registry is a local peer.

The application URL (`https://<subdomain>.<domain>`, answered and kept for the callback):
`subscriptionParams.subscriptionDomain` when it is the host of a Domain or ClusterDomain the
application uses (else 406, nothing written), else the subscription-domain annotation, else the
first `domainRefs` entry's host, empty when there is none (CAP Operator still builds
`https://<subdomain>.` then).
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.kube import CONFIG_MAP, SECRET
from btp_gitops.controller.records import consumer_tenant_name
from tests.controller.subscription.conftest import (
    APP,
    APP_DOMAIN,
    PARTNER_DOMAIN,
    PROVIDER_SUBACCOUNT,
    SMS_SUBJECT,
    SUBSCRIPTION_DOMAIN,
    Running,
    ServerFactory,
    SmsPki,
    SourcesFactory,
    application_documents,
    bearer,
    saas_payload,
    sms_payload,
    xfcc,
)
from tests.controller.subscription.peers import TokenFactory, issue, name_of

pytestmark = pytest.mark.kube

TENANT = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"
NAME = consumer_tenant_name(APP, TENANT)
PUT_PATH = f"/provision/tenants/{TENANT}"
PENDING = "btp-gitops.io/pending-callback=true"

AppChange = Callable[[dict[str, Any]], None]


def without_annotation(app: dict[str, Any]) -> None:
    app["metadata"].pop("annotations", None)


def refs(*entries: tuple[str, str]) -> AppChange:
    def change(app: dict[str, Any]) -> None:
        without_annotation(app)
        app["spec"]["domainRefs"] = [{"kind": kind, "name": name} for kind, name in entries]

    return change


def deprecated_domains(app: dict[str, Any]) -> None:
    without_annotation(app)
    del app["spec"]["domainRefs"]
    app["spec"]["domains"] = {
        "primary": "legacy.example.com",
        "secondary": ["legacy-partners.example.org"],
        "istioIngressGatewayLabels": [{"name": "istio", "value": "ingressgateway"}],
    }


def no_domains(app: dict[str, Any]) -> None:
    without_annotation(app)
    del app["spec"]["domainRefs"]


def sources_with(namespace: str, change: AppChange | None) -> dict[str, str]:
    documents = list(yaml.safe_load_all(application_documents(namespace)))
    if change is not None:
        change(documents[0])  # the multi-tenant application
    return {f"apps/{APP}/capapplication.yaml": yaml.safe_dump_all(documents, sort_keys=False)}


def running_with(
    change: AppChange | None, sources_factory: SourcesFactory, server_factory: ServerFactory, namespace: str
) -> Running:
    return server_factory(sources_factory(sources_with(namespace, change)))


def nothing_written(running: Running, head: str) -> None:
    assert running.sources.head() == head
    assert running.secret(f"{NAME}-subscription-context") is None
    assert running.kube.list(CONFIG_MAP, running.namespace, label_selector=PENDING) == []


# --- the application URL ----------------------------------------------------------------------------

URL_CASES: dict[str, tuple[AppChange | None, Any, str]] = {
    # case: (the application's change, subscriptionParams (None: absent), the URL's domain)
    "the annotation": (None, None, SUBSCRIPTION_DOMAIN),
    "subscriptionDomain names the application's Domain": (
        None,
        {"subscriptionDomain": APP_DOMAIN},
        APP_DOMAIN,
    ),
    "subscriptionDomain names its ClusterDomain": (
        None,
        {"subscriptionDomain": PARTNER_DOMAIN},
        PARTNER_DOMAIN,
    ),
    "subscriptionParams an empty string": (None, "", SUBSCRIPTION_DOMAIN),
    "subscriptionDomain an empty string": (None, {"subscriptionDomain": ""}, SUBSCRIPTION_DOMAIN),
    "no annotation: the first domainRefs entry": (without_annotation, None, APP_DOMAIN),
    "no annotation, a ClusterDomain first": (
        refs(("ClusterDomain", "partners"), ("Domain", APP)),
        None,
        PARTNER_DOMAIN,
    ),
    "no annotation, the first entry not in the sources": (
        refs(("Domain", "gone"), ("ClusterDomain", "partners")),
        None,
        "",
    ),
    "no annotation, a subscriptionDomain of the second entry": (
        refs(("Domain", "gone"), ("ClusterDomain", "partners")),
        {"subscriptionDomain": PARTNER_DOMAIN},
        PARTNER_DOMAIN,
    ),
    "no annotation, deprecated spec.domains: its primary": (deprecated_domains, None, "legacy.example.com"),
    "deprecated spec.domains, a subscriptionDomain of a secondary": (
        deprecated_domains,
        {"subscriptionDomain": "legacy-partners.example.org"},
        "legacy-partners.example.org",
    ),
    "no annotation and no domains at all": (no_domains, None, ""),
}


@pytest.mark.parametrize("case", list(URL_CASES))
def test_the_application_url(
    case: str,
    sources_factory: SourcesFactory,
    server_factory: ServerFactory,
    kube_namespace: str,
    tokens: TokenFactory,
) -> None:
    change, params, domain = URL_CASES[case]
    running = running_with(change, sources_factory, server_factory, kube_namespace)
    extra = {} if params is None else {"subscriptionParams": params}

    answer = running.client.send("PUT", PUT_PATH, saas_payload(TENANT, "acme", **extra), bearer(tokens()))

    url = f"https://acme.{domain}"
    assert answer.status == 202, answer.body
    assert answer.json == {"message": "resource created successfully", "tenant": NAME, "subscriptionUrl": url}
    pending = running.config_map(pending_callback_name(NAME, Operation.PROVISIONING))
    assert pending is not None and pending["data"]["appUrl"] == url


@pytest.mark.parametrize(
    "domain",
    ["elsewhere.example.com", SUBSCRIPTION_DOMAIN],
    ids=["unknown host", "the annotation's host, which is no Domain"],
)
def test_a_subscription_domain_the_application_does_not_use_is_406_and_writes_nothing(
    domain: str, running: Running, tokens: TokenFactory
) -> None:
    head = running.sources.head()
    body = saas_payload(TENANT, "acme", subscriptionParams={"subscriptionDomain": domain})

    answer = running.client.send("PUT", PUT_PATH, body, bearer(tokens()))

    assert answer.status == 406
    assert answer.json == {
        "error": f"subscriptionParams.subscriptionDomain {domain!r} is none of the domains of "
        f"CAPApplication {running.namespace}/{APP}"
    }
    nothing_written(running, head)


def test_the_subscription_manager_reads_the_subscription_domain_too(
    running: Running, sms_pki: SmsPki
) -> None:
    body = {**sms_payload(TENANT, "acme"), "subscriptionParams": {"subscriptionDomain": PARTNER_DOMAIN}}
    headers = {"X-Forwarded-Client-Cert": xfcc(sms_pki.client), "STATUS_CALLBACK": "/sms/callback/1"}
    refused_body = {**body, "subscriptionParams": {"subscriptionDomain": "elsewhere.example.com"}}
    head = running.sources.head()

    refused = running.client.send("PUT", f"/sms/provision/tenants/{TENANT}", refused_body, headers)
    nothing_written(running, head)
    answer = running.client.send("PUT", f"/sms/provision/tenants/{TENANT}", body, headers)

    assert refused.status == 406
    assert (answer.status, answer.json["applicationUrl"]) == (202, f"https://acme.{PARTNER_DOMAIN}")


@pytest.mark.parametrize("domain", [PARTNER_DOMAIN, "elsewhere.example.com"], ids=["served", "unknown"])
def test_an_unsubscribe_reports_the_default_url_whatever_its_subscription_domain(
    domain: str, running: Running, tokens: TokenFactory
) -> None:
    """CAP Operator's DELETE does not read subscriptionParams: never refused for it, and its
    callback's URL is the default one."""
    subscribed = running.client.send("PUT", PUT_PATH, saas_payload(TENANT, "acme"), bearer(tokens()))
    body = saas_payload(TENANT, "acme", subscriptionParams={"subscriptionDomain": domain})

    answer = running.client.send("DELETE", PUT_PATH, body, bearer(tokens()))

    assert (subscribed.status, answer.status) == (202, 202)
    pending = running.config_map(pending_callback_name(NAME, Operation.DEPROVISIONING))
    assert pending is not None and pending["data"]["appUrl"] == f"https://acme.{SUBSCRIPTION_DOMAIN}"


# --- a new subscription GUID ------------------------------------------------------------------------


def test_a_new_subscription_guid_of_a_known_tenant_is_recorded_and_answered_as_updated(
    running: Running, tokens: TokenFactory
) -> None:
    first = saas_payload(TENANT, "acme", subscriptionGUID="4d0c2d4e-guid-first")
    second = saas_payload(TENANT, "acme", subscriptionGUID="9e8f7a6b-guid-second")

    answers = [
        running.client.send("PUT", PUT_PATH, body, bearer(tokens())).json["message"]
        for body in (first, first, second)
    ]

    assert answers == ["resource created successfully", "resource exists", "resource updated successfully"]
    record = yaml.safe_load(running.sources.show(f"apps/{APP}/tenants/{NAME}.yaml") or "")
    assert record["metadata"]["labels"]["sme.sap.com/subscription-guid"] == "9e8f7a6b-guid-second"
    assert record["metadata"]["annotations"]["sme.sap.com/subscription-guid"] == "9e8f7a6b-guid-second"


# --- the client certificate ---------------------------------------------------------------------------


def with_extra_attributes(sms_pki: SmsPki) -> str:
    """The subscription manager's certificate with a state and a serial number in its subject:
    attributes CAP Operator does not compare."""
    extra = [
        x509.NameAttribute(NameOID.STATE_OR_PROVINCE_NAME, "Baden-Wuerttemberg"),
        x509.NameAttribute(NameOID.SERIAL_NUMBER, "4711"),
    ]
    subject = x509.Name([*name_of(**SMS_SUBJECT), *extra])
    return xfcc(issue(subject, sms_pki.ca, client=True))


def binding_subject(running: Running, subject: dict[str, Any]) -> None:
    """Replace the subscription-manager binding's `callback_certificate_subject`."""
    secret = running.kube.get(SECRET, f"{APP}-sms-binding", running.namespace)
    assert secret is not None
    secret["data"]["callback_certificate_subject"] = base64.b64encode(json.dumps(subject).encode()).decode()
    running.kube.replace(SECRET, secret)


CERTIFICATE_CASES: dict[str, tuple[Callable[[SmsPki], str], dict[str, Any] | None, int]] = {
    # case: (the forwarded header, the binding's subject (None: unchanged), the answer)
    "more attributes in the certificate": (with_extra_attributes, None, 202),
    "more attributes in the binding": (lambda pki: xfcc(pki.client), {**SMS_SUBJECT, "ST": "Hessen"}, 202),
    "another OU": (lambda pki: xfcc(pki.client), {**SMS_SUBJECT, "OU": "Other"}, 403),
    "query-encoded, + for spaces (Go's url.QueryEscape)": (
        lambda pki: urllib.parse.quote_plus(pki.client.pem, safe=""),
        None,
        202,
    ),
    "percent-encoded": (lambda pki: urllib.parse.quote(pki.client.pem, safe=""), None, 202),
}


@pytest.mark.parametrize("case", list(CERTIFICATE_CASES))
def test_the_client_certificate(case: str, running: Running, sms_pki: SmsPki) -> None:
    header, subject, status = CERTIFICATE_CASES[case]
    if subject is not None:
        binding_subject(running, subject)
    headers = {"X-Forwarded-Client-Cert": header(sms_pki)}

    answer = running.client.send(
        "PUT", f"/sms/provision/tenants/{TENANT}", sms_payload(TENANT, "acme"), headers
    )

    assert answer.status == status, answer.body


# --- no CAPApplication at all -------------------------------------------------------------------------


def test_without_any_capapplication_every_caller_is_401(
    sources_factory: SourcesFactory, server_factory: ServerFactory, tokens: TokenFactory, sms_pki: SmsPki
) -> None:
    """CAP Operator answers 406 ("resource not found") before it looks at the caller; this server
    cannot authenticate anyone without an application, and says 401 (docs: the deviations table)."""
    running = server_factory(sources_factory({"README.md": "no applications yet\n"}))
    head = running.sources.head()
    sms = {"X-Forwarded-Client-Cert": xfcc(sms_pki.client)}

    answers = [
        running.client.send("PUT", PUT_PATH, saas_payload(TENANT, "acme"), bearer(tokens())),
        running.client.send("DELETE", PUT_PATH, saas_payload(TENANT, "acme"), bearer(tokens())),
        running.client.send("PUT", f"/sms/provision/tenants/{TENANT}", sms_payload(TENANT, "acme"), sms),
        running.client.send(
            "GET", f"/dependencies/{PROVIDER_SUBACCOUNT}/{APP}/", None, bearer(tokens(), None)
        ),
    ]

    assert [(a.status, a.json) for a in answers] == [
        (401, {"error": "the caller could not be authenticated"})
    ] * 4
    nothing_written(running, head)
