"""The completion-callback client against a local SaaS registry peer (real HTTP on loopback: its UAA
token endpoint and its callback endpoint), with credentials read from real binding Secrets in the
API server. Faked: the SaaS registry (the peer in `peers.py`).

Covers: the client-credentials token request (Basic authentication, form fields), the status PUT
(path, bearer token, JSON body with subscriptionUrl or applicationUrl), failures with their status
(bad client secret, callback refused, nothing listening, no answer within the timeout), callback
paths that would leave the registry's host, bindings that cannot be used, and that no secret or
token reaches an error message or the logs.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from btp_gitops.controller.clients.credentials import (
    CredentialReader,
    SaasRegistryCredentials,
    SubscriptionManagerCredentials,
)
from btp_gitops.controller.clients.saas_client import (
    CallbackFailed,
    CallbackStatus,
    CallbackTarget,
    SaasCallbackClient,
    callback_url,
)
from btp_gitops.controller.clients.targets import AppTarget, ServiceRef
from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.controller.kube import KubeClient
from tests.controller.subscription.conftest import APP, Bindings, SecretWatch
from tests.controller.subscription.peers import SaasRegistry

CALLBACK = "/saas-manager/v1/subscription-callback/0815/result"
STATUS = CallbackStatus(True, "Provisioning successful", "https://acme.shop.example.com", {"a": 1})


def registry_credentials(registry: SaasRegistry, secret: str | None = None) -> SaasRegistryCredentials:
    return SaasRegistryCredentials(
        clientid=registry.client_id,
        clientsecret=secret or registry.client_secret,
        url=registry.url,
        saas_registry_url=registry.url,
        uaadomain="localhost",
        callback_timeout_ms=None,
    )


@pytest.fixture
def client() -> SaasCallbackClient:
    return SaasCallbackClient(timeout=5)


def test_a_status_callback(saas_registry: SaasRegistry, client: SaasCallbackClient) -> None:
    target = CallbackTarget.of_saas_registry(registry_credentials(saas_registry))

    answered = client.send_status(target, CALLBACK, STATUS)

    assert answered == 200
    assert saas_registry.token_requests == [
        {
            "path": "/oauth/token",
            "form": {"grant_type": ["client_credentials"], "client_id": [saas_registry.client_id]},
            "content_type": "application/x-www-form-urlencoded",
        }
    ]
    assert saas_registry.callbacks == [
        {
            "path": CALLBACK,
            "body": {
                "status": "SUCCEEDED",
                "message": "Provisioning successful",
                "additionalOutput": {"a": 1},
                "subscriptionUrl": "https://acme.shop.example.com",
            },
            "content_type": "application/json",
            "token": saas_registry.issued[0],
        }
    ]


def test_a_failed_status_for_the_subscription_manager(
    saas_registry: SaasRegistry, client: SaasCallbackClient
) -> None:
    credentials = SubscriptionManagerCredentials(
        callback_certificate_subject={},
        callback_certificate_issuer={},
        subscription_manager_url=saas_registry.url + "/",
        url=saas_registry.url,
        clientid=saas_registry.client_id,
        clientsecret=saas_registry.client_secret,
    )

    client.send_status(
        CallbackTarget.of_subscription_manager(credentials),
        "/sms/7",
        CallbackStatus(False, "Provisioning failed", ""),
    )

    assert saas_registry.callbacks[0]["path"] == "/sms/7"
    assert saas_registry.callbacks[0]["body"] == {
        "status": "FAILED",
        "message": "Provisioning failed",
        "applicationUrl": "",
    }


def test_a_wrong_client_secret(
    saas_registry: SaasRegistry, client: SaasCallbackClient, secrets_never_logged: SecretWatch
) -> None:
    wrong = "not-the-secret-4711"
    secrets_never_logged.values.append(wrong)
    target = CallbackTarget.of_saas_registry(registry_credentials(saas_registry, wrong))

    with pytest.raises(CallbackFailed) as failed:
        client.send_status(target, CALLBACK, STATUS)

    assert failed.value.status == 401
    assert failed.value.message == f"token request to {saas_registry.url}/oauth/token answered 401"
    assert saas_registry.callbacks == []
    secrets_never_logged.assert_absent(str(failed.value) + repr(target), "the error")


def test_a_refused_callback(saas_registry: SaasRegistry, client: SaasCallbackClient) -> None:
    saas_registry.callback_status = 409
    target = CallbackTarget.of_saas_registry(registry_credentials(saas_registry))

    with pytest.raises(CallbackFailed) as failed:
        client.send_status(target, CALLBACK, STATUS)

    assert failed.value.status == 409
    assert failed.value.message == f"status callback to {saas_registry.url}{CALLBACK} answered 409"


@pytest.mark.parametrize(
    "path", ["@evil.example.com/x", "//evil.example.com/x", "https://evil.example.com/x", "/a b", ""]
)
def test_callback_paths_that_would_leave_the_host(
    path: str, saas_registry: SaasRegistry, client: SaasCallbackClient
) -> None:
    target = CallbackTarget.of_saas_registry(registry_credentials(saas_registry))

    with pytest.raises(CallbackFailed, match="the callback path must be an absolute path"):
        client.send_status(target, path, STATUS)

    assert saas_registry.token_requests == []  # no token was even asked for


def test_callback_url_keeps_the_base() -> None:
    assert (
        callback_url("https://saas.example.com/base/", "/cb/1?x=y")
        == "https://saas.example.com/base/cb/1?x=y"
    )


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel does) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def test_no_answer_within_the_timeout(silent_port: int, saas_registry: SaasRegistry) -> None:
    credentials = registry_credentials(saas_registry)
    silent = SaasRegistryCredentials(
        clientid=credentials.clientid,
        clientsecret=credentials.clientsecret,
        url=f"http://127.0.0.1:{silent_port}",
        saas_registry_url=saas_registry.url,
        uaadomain="localhost",
        callback_timeout_ms=None,
    )

    with pytest.raises(
        CallbackFailed, match=r"token request to http://127\.0\.0\.1:\d+/oauth/token failed: TimeoutError"
    ):
        SaasCallbackClient(timeout=0.5).send_status(CallbackTarget.of_saas_registry(silent), CALLBACK, STATUS)


def test_nothing_listening(saas_registry: SaasRegistry, client: SaasCallbackClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    credentials = registry_credentials(saas_registry)
    target = CallbackTarget(
        f"http://127.0.0.1:{port}/oauth/token",
        credentials.clientid,
        credentials.clientsecret,
        saas_registry.url,
        "subscriptionUrl",
    )

    with pytest.raises(
        CallbackFailed, match=r"failed: URLError: ConnectionRefusedError \[Errno \d+\]$"
    ) as failed:
        client.send_status(target, CALLBACK, STATUS)
    assert failed.value.status is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"credential_type": "x509"},  # x509: a certificate, key and certurl instead of the secret
            "the saas-registry binding lacks certurl, certificate, key for callbacks",
        ),
        (
            {"credential_type": "x509", "certurl": "ftp://c", "certificate": "c", "key": "k"},
            "the saas-registry binding's certurl is not an http(s) URL",
        ),
        ({"clientsecret": ""}, "the saas-registry binding lacks clientsecret for callbacks"),
        (
            {"saas_registry_url": "", "url": ""},
            "the saas-registry binding lacks url, saas_registry_url for callbacks",
        ),
        ({"url": "ftp://uaa.example.com"}, "the saas-registry binding's url is not an http(s) URL"),
    ],
)
def test_unusable_bindings(change: dict[str, str], message: str) -> None:
    values: dict[str, object] = {
        "clientid": "c",
        "clientsecret": "s",
        "url": "https://uaa.example.com",
        "saas_registry_url": "https://saas.example.com",
        "uaadomain": "example.com",
        "callback_timeout_ms": None,
        **change,
    }

    with pytest.raises(ConfigurationError) as refused:
        CallbackTarget.of_saas_registry(SaasRegistryCredentials(**values))  # type: ignore[arg-type]
    assert refused.value.message == message


def test_an_x509_binding_asks_its_certurl_and_keeps_certificate_and_key_out_of_reprs() -> None:
    credentials = SaasRegistryCredentials(
        clientid="c",
        clientsecret="",
        url="https://uaa.example.com",
        saas_registry_url="https://saas.example.com",
        uaadomain="example.com",
        callback_timeout_ms=None,
        credential_type="x509",
        certurl="https://uaa.cert.example.com/",
        certificate="-----BEGIN CERTIFICATE-----certificate-text",
        key="-----BEGIN PRIVATE KEY-----key-text",
    )

    target = CallbackTarget.of_saas_registry(credentials)

    assert (target.token_url, target.uses_certificate) == ("https://uaa.cert.example.com/oauth/token", True)
    for shown in (repr(credentials), repr(target)):
        assert "key-text" not in shown and "certificate-text" not in shown


@pytest.mark.kube
def test_with_credentials_read_from_the_binding_secret(
    kube: KubeClient,
    kube_namespace: str,
    bindings: Bindings,
    saas_registry: SaasRegistry,
    client: SaasCallbackClient,
) -> None:
    app = AppTarget(
        kube_namespace,
        APP,
        APP,
        "sub",
        "hash",
        (ServiceRef(f"{APP}-registry", f"{APP}-registry-binding", "saas-registry"),),
    )
    credentials = CredentialReader(kube).saas_registry(app)

    client.send_status(CallbackTarget.of_saas_registry(credentials), CALLBACK, STATUS)

    assert credentials.callback_timeout_ms == 300000
    assert saas_registry.client_secret not in repr(credentials)
    assert len(saas_registry.callbacks) == 1
