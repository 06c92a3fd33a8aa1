"""Completion callbacks with x509 bindings: the token comes from the binding's `certurl` over mutual TLS.

SAP BTP offers SaaS registry and subscription manager bindings with `credential-type: x509`: a
client `certificate` and `key` instead of a client secret, and a `certurl`, the UAA's host that
requires the client certificate. CAP Operator asks `<certurl>/oauth/token` for a client-credentials
token over mTLS (no Authorization header) and sends the callback with it. Here, for provisioning
and deprovisioning, SaaS registry and subscription manager: the controller's callback delivery
(real Git, real API server, the binding Secret in the cluster) against a local HTTPS token
endpoint that refuses any connection without a client certificate of its CA (`CERT_REQUIRED`),
and the peer receiving the callback. The certificates are made here with `cryptography`. The
private key never shows in a log record, an error or the pending callback's stored state.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.controller.cap.callbacks import DELIVERY_ANNOTATION
from btp_gitops.controller.clients.cluster_side import Operation, pending_callback_name
from btp_gitops.controller.clients.saas_client import SaasCallbackClient
from btp_gitops.controller.kube import CONFIG_MAP, SECRET, KubeClient
from btp_gitops.controller.runtime import DONE, ObjectKey
from tests.controller.subscription.peers import Issued, _Quiet, issue, name_of, serving
from tests.controller.tenant_operations.conftest import (
    CLIENT_ID,
    REGISTRY_SECRET,
    Controller,
    SaasPeer,
    SourceRemote,
    open_callback,
    ready_on,
    tenant_record,
)

pytestmark = pytest.mark.kube

GLOBEX_ID = "0f1e2d3c-4b5a-4697-8877-66554433aa11"
SMS_SECRET = "bookshop-sms-binding"


@dataclass(frozen=True)
class UaaPki:
    ca: Issued
    server: Issued  # the token endpoint's, for localhost
    client: Issued  # the binding's client certificate
    stranger: Issued  # a client certificate of another CA
    ca_file: Path


@pytest.fixture(scope="module")
def uaa_pki(tmp_path_factory: pytest.TempPathFactory) -> UaaPki:
    ca = issue(name_of(C="DE", O="Test UAA", CN="test UAA client CA"), ca=True)
    other = issue(name_of(CN="somebody else's CA"), ca=True)
    ca_file = tmp_path_factory.mktemp("uaa-pki") / "ca.pem"
    ca_file.write_text(ca.pem)
    return UaaPki(
        ca=ca,
        server=issue(name_of(CN="localhost"), ca, dns=("localhost",), ips=("127.0.0.1",)),
        client=issue(name_of(C="DE", O="Test UAA", OU="bookshop", CN=CLIENT_ID), ca, client=True),
        stranger=issue(name_of(CN=CLIENT_ID), other, client=True),
        ca_file=ca_file,
    )


@dataclass
class MtlsUaa:
    """`POST /oauth/token` over TLS that requires a client certificate of the test CA."""

    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"https://localhost:{self.port}"


@pytest.fixture
def mtls_uaa(uaa_pki: UaaPki, tmp_path: Path) -> Iterator[MtlsUaa]:
    uaa = MtlsUaa()

    class Handler(_Quiet):
        def do_POST(self) -> None:  # noqa: N802 -- http.server's name
            form = urllib.parse.parse_qs(self.body().decode())
            peer = self.connection.getpeercert()  # type: ignore[attr-defined]
            subject = dict(pair[0] for pair in peer["subject"]) if peer else {}
            with uaa.lock:
                uaa.requests.append(
                    {
                        "path": self.path,
                        "form": form,
                        "authorization": self.headers.get("Authorization"),
                        "client_cn": subject.get("commonName"),
                    }
                )
                grant = form == {"grant_type": ["client_credentials"], "client_id": [CLIENT_ID]}
                if self.path != "/oauth/token" or not grant or subject.get("commonName") != CLIENT_ID:
                    self.reply(401, {"error": "unauthorized"})
                    return
                token = f"mtls-token-{len(uaa.issued)}"
                uaa.issued.append(token)
            self.reply(200, {"access_token": token, "token_type": "bearer", "expires_in": 3600})

    (tmp_path / "uaa").mkdir()
    cert, key = tmp_path / "uaa" / "server.pem", tmp_path / "uaa" / "server-key.pem"
    cert.write_text(uaa_pki.server.pem)
    key.write_bytes(uaa_pki.server.key_pem())
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=uaa_pki.ca.pem)
    with serving(Handler, context) as port:
        uaa.port = port
        yield uaa


def x509_binding(uaa: MtlsUaa, peer: SaasPeer, client: Issued, *, sms: bool) -> dict[str, str]:
    """The credentials of an x509 binding as the SAP BTP service operator writes them."""
    base = (
        {
            "subscription_manager_url": peer.url,
            "callback_certificate_subject": json.dumps({"C": "DE", "O": "SAP SE", "CN": "sms"}),
            "callback_certificate_issuer": json.dumps({"C": "DE", "O": "SAP SE", "CN": "sms CA"}),
        }
        if sms
        else {"saas_registry_url": peer.url}
    )
    return {
        "credential-type": "x509",
        "clientid": CLIENT_ID,
        "certificate": client.pem,
        "key": client.key_pem().decode(),
        "certurl": uaa.url,
        "url": "https://uaa.invalid",  # the secret-based host: never asked with an x509 binding
        "uaadomain": "localhost",
        **base,
    }


def store_binding(kube: KubeClient, namespace: str, name: str, credentials: dict[str, str]) -> None:
    encoded = base64.b64encode(json.dumps(credentials).encode()).decode()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "data": {"credentials": encoded},
    }
    kube.create(SECRET, secret, namespace)


def bind_subscription_manager(source: SourceRemote) -> None:
    """The application lists a subscription-manager service (the example has a SaaS registry only)."""
    source._git("pull", "--quiet", "--ff-only")
    body = yaml.safe_load((source.work / "capapplication.yaml").read_text())
    body["spec"]["btp"]["services"].append(
        {"class": "subscription-manager", "name": "bookshop-sms", "secret": SMS_SECRET}
    )
    source.write(
        {"capapplication.yaml": yaml.safe_dump(body, sort_keys=False)}, "bind the subscription manager"
    )


@dataclass(frozen=True)
class Scene:
    """What a callback test of an x509 binding works with; the logs are captured at DEBUG, and the
    binding's key must not show in them either."""

    source: SourceRemote
    kube: KubeClient
    controller: Controller
    saas_peer: SaasPeer
    mtls_uaa: MtlsUaa
    uaa_pki: UaaPki
    logs: pytest.LogCaptureFixture

    @property
    def namespace(self) -> str:
        return self.source.namespace

    def restart_controller(self) -> None:
        """The controller restarted with a callback client that trusts the token endpoint's CA."""
        self.controller.callback_client = SaasCallbackClient(ca_file=str(self.uaa_pki.ca_file), timeout=10)
        self.controller.restart()


@pytest.fixture
def scene(
    source: SourceRemote,
    kube: KubeClient,
    controller: Controller,
    saas_peer: SaasPeer,
    mtls_uaa: MtlsUaa,
    uaa_pki: UaaPki,
    caplog: pytest.LogCaptureFixture,
) -> Scene:
    caplog.set_level(logging.DEBUG)
    return Scene(source, kube, controller, saas_peer, mtls_uaa, uaa_pki, caplog)


@pytest.mark.parametrize("sms", [False, True], ids=["saas-registry", "subscription-manager"])
@pytest.mark.parametrize("operation", list(Operation), ids=lambda o: str(o.value))
def test_an_x509_binding_gets_its_token_over_mtls_and_calls_back(
    sms: bool, operation: Operation, scene: Scene
) -> None:
    namespace = scene.namespace
    if sms:
        bind_subscription_manager(scene.source)
    credentials = x509_binding(scene.mtls_uaa, scene.saas_peer, scene.uaa_pki.client, sms=sms)
    store_binding(scene.kube, namespace, SMS_SECRET if sms else REGISTRY_SECRET, credentials)
    if operation is Operation.PROVISIONING:  # provisioned: SUCCEEDED at once
        scene.source.write_records(
            tenant_record(namespace, "globex", GLOBEX_ID, status=ready_on("bookshop-1-1-0"))
        )
    # (deprovisioning: no record left, the deprovisioning is complete: SUCCEEDED at once)
    subscription_type = "SMS" if sms else "SaaS"
    open_callback(scene.kube, namespace, "globex", GLOBEX_ID, operation, subscription_type=subscription_type)
    scene.restart_controller()

    assert scene.controller.tenant_operations.reconcile(ObjectKey(namespace, "globex")) == DONE

    assert scene.mtls_uaa.requests == [
        {
            "path": "/oauth/token",
            "form": {"grant_type": ["client_credentials"], "client_id": [CLIENT_ID]},
            "authorization": None,  # the certificate authenticates, no client secret is sent
            "client_cn": CLIENT_ID,
        }
    ]
    [callback] = scene.saas_peer.wait_for_callbacks(1)
    assert callback.path == f"/saas-manager/v1/subscription-callback/{GLOBEX_ID}/result"
    assert callback.authorization == f"Bearer {scene.mtls_uaa.issued[0]}"
    url_field = "applicationUrl" if sms else "subscriptionUrl"
    message = (
        "Provisioning successful" if operation is Operation.PROVISIONING else "Deprovisioning successful"
    )
    assert callback.body["status"] == "SUCCEEDED"
    assert callback.body["message"] == message
    assert callback.body[url_field] == "https://globex.bookshop.apps.example.com"
    assert scene.kube.get(CONFIG_MAP, pending_callback_name("globex", operation), namespace) is None
    key = credentials["key"]
    assert key.splitlines()[1] not in scene.logs.text


def test_the_token_endpoint_refuses_a_connection_without_the_client_certificate(
    mtls_uaa: MtlsUaa, uaa_pki: UaaPki
) -> None:
    """The peer really requires the certificate: what the secret-based request would do fails."""
    context = ssl.create_default_context(cafile=str(uaa_pki.ca_file))
    request = urllib.request.Request(f"{mtls_uaa.url}/oauth/token", data=b"grant_type=client_credentials")
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        urllib.request.urlopen(request, timeout=5, context=context).close()
    assert mtls_uaa.issued == []


@pytest.mark.parametrize(
    ("client", "error"),
    [
        ("stranger", "token request to https://localhost"),  # a certificate of another CA: no handshake
        ("mismatched", "certificate and key cannot be used together"),  # the key of another certificate
    ],
)
def test_an_unusable_client_certificate_fails_the_attempt_without_showing_the_key(
    client: str, error: str, scene: Scene
) -> None:
    namespace = scene.namespace
    credentials = x509_binding(scene.mtls_uaa, scene.saas_peer, scene.uaa_pki.stranger, sms=False)
    if client == "mismatched":
        credentials["certificate"] = scene.uaa_pki.client.pem  # with the stranger's key
    store_binding(scene.kube, namespace, REGISTRY_SECRET, credentials)
    scene.source.write_records(
        tenant_record(namespace, "globex", GLOBEX_ID, status=ready_on("bookshop-1-1-0"))
    )
    open_callback(scene.kube, namespace, "globex", GLOBEX_ID, Operation.PROVISIONING)
    scene.restart_controller()

    assert (
        scene.controller.tenant_operations.reconcile(ObjectKey(namespace, "globex")).requeue_after is not None
    )

    assert scene.saas_peer.callbacks == [] and scene.mtls_uaa.issued == []
    found = scene.kube.get(CONFIG_MAP, pending_callback_name("globex", Operation.PROVISIONING), namespace)
    assert found is not None
    state = json.loads(found["metadata"]["annotations"][DELIVERY_ANNOTATION])
    assert error in state["lastError"]
    key_line = credentials["key"].splitlines()[1]
    assert key_line not in scene.logs.text
    assert key_line not in json.dumps(found)
