"""Client-certificate authentication of the subscription manager routes: the `X-Forwarded-Client-Cert`
header an ingress gateway sets, checked against the subject and issuer in the subscription-manager
binding Secret (real API server). Certificates are real (cryptography); no gateway runs, so the
tests set the header as Istio's gateway and sidecar would.

Covers: missing header, no certificate in it, an unreadable certificate, another subject, another
issuer (all 401/403 without a Bearer challenge and without writes); the bare URL-encoded PEM CAP
Operator reads; and the name comparison itself (JSON, RFC 4514 and OpenSSL notations, any order,
multi-valued attributes, the `*` wildcard).
"""

from __future__ import annotations

import urllib.parse

import pytest

from btp_gitops.controller.kube import CONFIG_MAP
from btp_gitops.controller.subscription.auth import name_matches, name_pairs, parse_distinguished_name
from tests.controller.subscription.conftest import SMS_ISSUER, SMS_SUBJECT, Running, SmsPki, sms_payload, xfcc
from tests.controller.subscription.peers import issue, name_of

pytestmark = pytest.mark.kube

TENANT = "4e5f6a7b-8c9d-4e0f-a1b2-c3d4e5f6a7b8"
PATH = f"/sms/provision/tenants/{TENANT}"


@pytest.mark.parametrize(
    ("header", "status", "message"),
    [
        (lambda pki: None, 401, "the request has no X-Forwarded-Client-Cert header"),
        (
            lambda pki: 'Hash=1f2e;Subject="CN=sms,OU=Canary";URI=',
            401,
            "X-Forwarded-Client-Cert carries no client certificate (Cert=)",
        ),
        (
            lambda pki: (
                'Hash=1f2e;Cert="'
                + urllib.parse.quote("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
                + '"'
            ),
            401,
            "the forwarded client certificate cannot be read",
        ),
        (
            lambda pki: xfcc(pki.stranger),
            403,
            "the client certificate's subject is not the subscription manager's",
        ),
        (
            lambda pki: xfcc(pki.impostor),
            403,
            "the client certificate's issuer is not the subscription manager's",
        ),
    ],
    ids=["missing", "no certificate", "unreadable", "other subject", "other issuer"],
)
def test_rejected_certificates_write_nothing(
    header: object, status: int, message: str, running: Running, sms_pki: SmsPki
) -> None:
    value = header(sms_pki)  # type: ignore[operator]
    headers = {"STATUS_CALLBACK": "/cb/1", **({"X-Forwarded-Client-Cert": value} if value else {})}
    head = running.sources.head()

    answer = running.client.send("PUT", PATH, sms_payload(TENANT, "acme"), headers)

    assert (answer.status, answer.json) == (status, {"error": message})
    assert "WWW-Authenticate" not in answer.headers
    assert running.sources.head() == head
    assert (
        running.kube.list(CONFIG_MAP, running.namespace, label_selector="btp-gitops.io/pending-callback=true")
        == []
    )


def test_a_bare_url_encoded_certificate_is_accepted(running: Running, sms_pki: SmsPki) -> None:
    headers = {"X-Forwarded-Client-Cert": xfcc(sms_pki.client, envoy=False)}

    answer = running.client.send("PUT", PATH, sms_payload(TENANT, "acme"), headers)

    assert answer.status == 202, answer.body


def test_the_first_element_is_the_client_later_ones_are_mesh_hops(running: Running, sms_pki: SmsPki) -> None:
    hop = xfcc(sms_pki.client).split(",", 1)[1]
    headers = {
        "X-Forwarded-Client-Cert": f"{xfcc(sms_pki.stranger).split(',', 1)[0]},{xfcc(sms_pki.client)},{hop}"
    }

    answer = running.client.send("PUT", PATH, sms_payload(TENANT, "acme"), headers)

    assert answer.status == 403


# --- names -----------------------------------------------------------------------------------------------

SUBJECT = name_pairs(name_of(**SMS_SUBJECT))


@pytest.mark.parametrize(
    "expected",
    [
        SMS_SUBJECT,
        {
            "CN": "sms",
            "L": "sap-eu10",
            "OU": ["Canary", "SAP Cloud Platform Clients"],
            "O": "SAP SE",
            "C": "DE",
        },
        "CN=sms,L=sap-eu10,OU=Canary,OU=SAP Cloud Platform Clients,O=SAP SE,C=DE",
        "C=DE, O=SAP SE, OU=SAP Cloud Platform Clients, OU=Canary, L=sap-eu10, CN=sms",
        "/C=DE/O=SAP SE/OU=SAP Cloud Platform Clients/OU=Canary/L=sap-eu10/CN=sms",
        {"C": "DE", "O": "SAP SE", "OU": "*", "L": "sap-eu10", "CN": "sms"},
    ],
    ids=["json", "json reordered", "rfc4514", "rfc4514 with spaces", "openssl", "wildcard"],
)
def test_a_name_matches_in_any_notation(expected: object) -> None:
    assert name_matches(SUBJECT, expected)


@pytest.mark.parametrize(
    "expected",
    [
        {**SMS_SUBJECT, "CN": "other"},
        {**SMS_SUBJECT, "OU": ["SAP Cloud Platform Clients"]},
        {key: value for key, value in SMS_SUBJECT.items() if key != "L"} | {"L": "elsewhere"},
        "CN=sms,O=SAP SE,C=DE",
        SMS_ISSUER,
    ],
    ids=["other cn", "fewer ous", "other locality", "fewer attributes", "the issuer"],
)
def test_a_name_differs(expected: object) -> None:
    assert not name_matches(SUBJECT, expected)


def test_escaped_separators_in_rfc4514() -> None:
    certificate = issue(name_of(O="Example, Inc.", CN="a+b"))
    assert parse_distinguished_name(r"CN=a\+b,O=Example\, Inc.") == name_pairs(
        certificate.certificate.subject
    )
    assert parse_distinguished_name('CN="a+b",O="Example, Inc."') == name_pairs(
        certificate.certificate.subject
    )


def test_hex_escapes_are_utf8_bytes() -> None:
    certificate = issue(name_of(CN="Café", O="a,b"))
    assert parse_distinguished_name(r"CN=Caf\C3\A9,O=a\2Cb") == name_pairs(certificate.certificate.subject)
