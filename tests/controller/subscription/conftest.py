"""Fixtures of the subscription server tests: the real server on loopback, wired to the real API server
(binding Secrets of a CAP application in a fresh namespace) and to a real source repository (a bare
remote on disk with the application's CAPApplication, the controller's clone, the Git ledger).

Faked, because it cannot exist here: XSUAA (a local issuer publishing its token keys over HTTPS
with a test CA, host `localhost`) and the SaaS registry (a local HTTP peer issuing client-credentials
tokens and recording status callbacks), both in `peers.py`. Every test also checks that no token
or client secret it used shows up in any log record or HTTP answer (`secrets_never_logged`).
"""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import json
import logging
import random
import secrets
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from btp_gitops.controller.gitstore import RepoSettings, SourceRepo
from btp_gitops.controller.kube import CONFIG_MAP, SECRET, KubeClient
from btp_gitops.controller.subscription.git_ledger import GitTenantLedger
from btp_gitops.controller.subscription.metrics import SubscriptionMetrics
from btp_gitops.controller.subscription.server import (
    SubscriptionServer,
    SubscriptionServerSettings,
    build_subscription_server,
)
from btp_gitops.generator.domains.cap.identity import sha1_hex
from tests.controller.subscription.peers import (
    Issued,
    Issuer,
    Pki,
    SaasRegistry,
    TokenFactory,
    issue,
    make_pki,
    name_of,
    rsa_key,
    running_issuer,
    running_saas_registry,
)
from tests.support.kubeapi import KubeAPI

APP = "bookshop"
SERVICES_ONLY_APP = "catalog"
PROVIDER_SUBACCOUNT = "0d3e5f6a-1b2c-4d5e-8f90-a1b2c3d4e5f6"
PROVIDER_TENANT = "6f5e4d3c-2b1a-4098-b7c6-d5e4f3a2b1c0"
GLOBAL_ACCOUNT = "2dddd48d-b45f-45a5-b861-a80872a0c8a8"
XSAPPNAME = "bookshop!t42"
SAAS_CLIENT_ID = "sb-bookshop!b7"
DEPENDENCY_XSAPPNAME = "destination-xsappname!b404"
SUBSCRIPTION_DOMAIN = "shop.example.com"  # the application's subscription-domain annotation
APP_DOMAIN = "bookshop.apps.example.com"  # its first domainRefs entry, a Domain
PARTNER_DOMAIN = "partners.example.net"  # its second, a ClusterDomain
SMS_SUBJECT: dict[str, str | list[str]] = {
    "C": "DE",
    "O": "SAP SE",
    "OU": ["SAP Cloud Platform Clients", "Canary"],
    "L": "sap-eu10",
    "CN": "sms",
}
SMS_ISSUER: dict[str, str | list[str]] = {
    "C": "DE",
    "O": "SAP SE",
    "OU": "SAP Cloud Platform Clients",
    "L": "Walldorf",
    "CN": "SMS test CA",
}


# --- secrets that must never be logged ---------------------------------------------------------------


@dataclass
class SecretWatch:
    """Values no log record and no HTTP answer may contain."""

    values: list[str] = field(default_factory=list)
    sources: list[list[str]] = field(default_factory=list)

    def all(self) -> list[str]:
        return [v for v in [*self.values, *(v for source in self.sources for v in source)] if v]

    def assert_absent(self, text: str, where: str) -> None:
        for value in self.all():
            assert value not in text, f"a secret value appears in {where}"


@pytest.fixture(autouse=True)
def secrets_never_logged(caplog: pytest.LogCaptureFixture) -> Iterator[SecretWatch]:
    caplog.set_level(logging.DEBUG)
    watch = SecretWatch()
    yield watch
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    records = caplog.get_records("setup") + caplog.get_records("call")
    text = "\n".join(formatter.format(record) for record in records)
    watch.assert_absent(text, "the captured logs")


# --- PKI, issuer, tokens, SaaS registry ----------------------------------------------------------------


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def signing_key() -> rsa.RSAPrivateKey:
    return rsa_key()


@pytest.fixture(scope="session")
def foreign_key() -> rsa.RSAPrivateKey:
    """A key the issuer does not publish (tokens signed with it must fail)."""
    return rsa_key()


@pytest.fixture
def issuer(pki: Pki, signing_key: rsa.RSAPrivateKey, tmp_path: Path) -> Iterator[Issuer]:
    with running_issuer(Issuer({"key-1": signing_key}), pki.server_context(tmp_path)) as running:
        yield running


@pytest.fixture
def tokens(issuer: Issuer, secrets_never_logged: SecretWatch) -> TokenFactory:
    factory = TokenFactory(issuer, XSAPPNAME)
    secrets_never_logged.sources.append(factory.made)
    return factory


@pytest.fixture
def saas_registry(secrets_never_logged: SecretWatch) -> Iterator[SaasRegistry]:
    registry = SaasRegistry(SAAS_CLIENT_ID, f"saas-secret-{secrets.token_hex(8)}")
    secrets_never_logged.values.append(registry.client_secret)
    secrets_never_logged.sources.append(registry.issued)
    with running_saas_registry(registry) as running:
        yield running


@dataclass(frozen=True)
class SmsPki:
    ca: Issued
    client: Issued  # the subscription manager's certificate
    stranger: Issued  # right CA, other subject
    impostor: Issued  # right subject, other CA


@pytest.fixture(scope="session")
def sms_pki() -> SmsPki:
    ca = issue(name_of(**SMS_ISSUER), ca=True)
    other_ca = issue(name_of(C="DE", O="Elsewhere", CN="Other CA"), ca=True)
    return SmsPki(
        ca=ca,
        client=issue(name_of(**SMS_SUBJECT), ca, client=True),
        stranger=issue(name_of(C="DE", O="SAP SE", CN="someone-else"), ca, client=True),
        impostor=issue(name_of(**SMS_SUBJECT), other_ca, client=True),
    )


def xfcc(certificate: Issued, *, envoy: bool = True) -> str:
    """X-Forwarded-Client-Cert as Istio's gateway sets it (plus a sidecar hop), or a bare PEM."""
    encoded = urllib.parse.quote(certificate.pem, safe="")
    if not envoy:
        return encoded
    subject = certificate.certificate.subject.rfc4514_string()
    gateway = f'Hash=1f2e3d;Cert="{encoded}";Subject="{subject}";URI=;DNS=sms.example.com'
    sidecar = 'By=spiffe://cluster.local/ns/subscription/sa/server;Hash=9a8b;Subject="";URI=spiffe://cluster.local/ns/istio-system/sa/gateway'
    return f"{gateway},{sidecar}"


# --- the cluster: binding Secrets of the application ---------------------------------------------------


@pytest.fixture
def kube(kube_api: KubeAPI) -> Iterator[KubeClient]:
    client = KubeClient(kube_api.api_client())
    yield client
    client.close()


def string_secret(name: str, namespace: str, data: Mapping[str, str]) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": encoded,
    }


@dataclass(frozen=True)
class Bindings:
    xsuaa_secret: str
    sms_client_secret: str


@pytest.fixture
def bindings(
    kube: KubeClient, kube_namespace: str, saas_registry: SaasRegistry, secrets_never_logged: SecretWatch
) -> Bindings:
    """The binding Secrets in the application's namespace, one per shape a binding Secret can have."""
    xsuaa_secret = f"xsuaa-secret-{secrets.token_hex(8)}"
    sms_secret = f"sms-secret-{secrets.token_hex(8)}"
    secrets_never_logged.values += [xsuaa_secret, sms_secret]
    xsuaa = {
        "xsappname": XSAPPNAME,
        "uaadomain": "localhost",
        "clientid": f"sb-{XSAPPNAME}",
        "clientsecret": xsuaa_secret,
        "url": "https://provider.localhost",
    }
    registry_fields = {
        "clientid": saas_registry.client_id,
        "clientsecret": saas_registry.client_secret,
        "url": saas_registry.url,
        "saas_registry_url": saas_registry.url,
        "uaadomain": "localhost",
        "appUrls": json.dumps({"callbackTimeoutMillis": 300000, "onSubscriptionAsync": True}),
    }
    metadata = {
        "credentialProperties": [{"name": k, "format": "text"} for k in registry_fields],
        "metaDataProperties": [{"name": "instance_name", "format": "text"}],
    }
    sms_fields = {
        "clientid": "sb-sms!b9",
        "clientsecret": sms_secret,
        "url": saas_registry.url,
        "subscription_manager_url": saas_registry.url,
        "callback_certificate_subject": json.dumps(SMS_SUBJECT),
        "callback_certificate_issuer": json.dumps(SMS_ISSUER),
        "app_urls": json.dumps({"subscriptionCallbacks": {"async": {"timeoutInMillis": 600000}}}),
    }
    dependency = {"xsappname": DEPENDENCY_XSAPPNAME, "uri": "https://destination.example.com"}
    html5 = {"xsappname": "html5-not-a-dependency!b1"}
    namespace = kube_namespace
    for secret in (
        string_secret(f"{APP}-uaa-binding", namespace, {"credentials": json.dumps(xsuaa)}),
        string_secret(
            f"{APP}-registry-binding",
            namespace,
            {**registry_fields, "instance_name": f"{APP}-registry", ".metadata": json.dumps(metadata)},
        ),
        string_secret(f"{APP}-sms-binding", namespace, sms_fields),
        string_secret(f"{APP}-destination-binding", namespace, {"credentials": json.dumps(dependency)}),
        string_secret(f"{APP}-html5-binding", namespace, {"credentials": json.dumps(html5)}),
    ):
        kube.create(SECRET, secret, namespace)
    return Bindings(xsuaa_secret, sms_secret)


# --- the source repository -----------------------------------------------------------------------------


def run_git(directory: Path, *args: str) -> str:
    return str(
        git.Git(directory).execute(
            ["git", *args],
            env={
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@e",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@e",
            },
        )
    )


class BusyWriter:
    """A third writer with a clone of its own, pushing a commit to main every 0.2 to 0.4 s (the pace
    of a busy CI job) until stopped; its commits, in order, are in `pushed`. Its first push goes out
    at once, so it has pushed by the time any answer comes back. Its pace decides only how often it
    meets the replicas, not whether the test passes (tests/controller/test_gitstore.py races a
    writer against every batch, in turns)."""

    def __init__(self, remote: Path, workdir: Path) -> None:
        self.clone = workdir
        run_git(workdir.parent, "clone", "--quiet", str(remote), str(workdir))
        self.pushed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="busy-writer")

    def __enter__(self) -> BusyWriter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        number = 0
        while not self._stop.is_set():
            run_git(self.clone, "fetch", "--quiet", "origin")
            run_git(self.clone, "reset", "--quiet", "--hard", "origin/main")
            line = f"other-{number}"
            with (self.clone / "competitor.txt").open("a") as file:
                file.write(line + "\n")
            run_git(self.clone, "add", "competitor.txt")
            run_git(self.clone, "commit", "--quiet", "--message", line)
            status, _, _ = git.Git(self.clone).execute(
                ["git", "push", "--quiet", "origin", "HEAD:refs/heads/main"],
                with_extended_output=True,
                with_exceptions=False,
            )
            if int(status) == 0:
                self.pushed.append(line)
                number += 1
            self._stop.wait(random.uniform(0.2, 0.4))


def application_documents(namespace: str) -> str:
    services = [
        {"class": "xsuaa", "name": f"{APP}-uaa", "secret": f"{APP}-uaa-binding"},
        {"class": "saas-registry", "name": f"{APP}-registry", "secret": f"{APP}-registry-binding"},
        {"class": "subscription-manager", "name": f"{APP}-sms", "secret": f"{APP}-sms-binding"},
        # a dependency by CAP Operator's Auto rule (its class); html5-apps-repo is none
        {"class": "destination", "name": f"{APP}-destination", "secret": f"{APP}-destination-binding"},
        {"class": "html5-apps-repo", "name": f"{APP}-html5", "secret": f"{APP}-html5-binding"},
    ]
    multi_tenant = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPApplication",
        "metadata": {
            "name": APP,
            "namespace": namespace,
            "annotations": {"sme.sap.com/subscription-domain": SUBSCRIPTION_DOMAIN},
        },
        "spec": {
            "btpAppName": APP,
            "providerSubaccountId": PROVIDER_SUBACCOUNT,
            "provider": {"subDomain": "bookshop-provider", "tenantId": PROVIDER_TENANT},
            "btp": {"services": services},
            "domainRefs": [{"kind": "Domain", "name": APP}, {"kind": "ClusterDomain", "name": "partners"}],
        },
    }
    services_only = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPApplication",
        "metadata": {"name": SERVICES_ONLY_APP, "namespace": namespace},
        "spec": {
            "btpAppName": SERVICES_ONLY_APP,
            "providerSubaccountId": PROVIDER_SUBACCOUNT,
            "btp": {"services": services[:2]},
        },
    }
    return yaml.safe_dump_all([multi_tenant, services_only, *domain_documents(namespace)], sort_keys=False)


def domain_documents(namespace: str) -> list[dict[str, Any]]:
    """The Domain and ClusterDomain the multi-tenant application refers to."""
    selector = {"app": "istio-ingressgateway", "istio": "ingressgateway"}
    return [
        {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "Domain",
            "metadata": {"name": APP, "namespace": namespace},
            "spec": {"domain": APP_DOMAIN, "ingressSelector": selector},
        },
        {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "ClusterDomain",
            "metadata": {"name": "partners"},
            "spec": {"domain": PARTNER_DOMAIN, "ingressSelector": selector},
        },
    ]


@dataclass(frozen=True)
class Sources:
    remote: Path
    repo: SourceRepo
    ledger: GitTenantLedger

    def show(self, path: str) -> str | None:
        """A file of the remote's main branch, None when it has none."""
        status, out, _ = git.Git(self.remote).execute(
            ["git", "show", f"main:{path}"], with_extended_output=True, with_exceptions=False
        )
        return str(out) if int(status) == 0 else None

    def head(self) -> str:
        return run_git(self.remote, "rev-parse", "refs/heads/main")


def bare_remote(directory: Path, files: Mapping[str, str]) -> Path:
    bare = directory / "remote.git"
    run_git(directory, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = directory / "seed"
    run_git(directory, "clone", "--quiet", str(bare), str(seed))
    for relative, text in files.items():
        (seed / relative).parent.mkdir(parents=True, exist_ok=True)
        (seed / relative).write_text(text)
    run_git(seed, "add", "--all")
    run_git(seed, "commit", "--quiet", "-m", "seed")
    run_git(seed, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    return bare


SourcesFactory = Callable[..., Sources]


@pytest.fixture
def sources_factory(tmp_path: Path, kube_namespace: str) -> Iterator[SourcesFactory]:
    started: list[SourceRepo] = []

    def make(
        files: Mapping[str, str] | None = None,
        url_of: Callable[[Path], str] = str,
        **repo_settings: Any,
    ) -> Sources:
        """`url_of` maps the bare remote's path to the URL the writer uses (another way to serve it)."""
        directory = tmp_path / f"sources-{len(started)}"
        directory.mkdir()
        remote = bare_remote(
            directory, files or {f"apps/{APP}/capapplication.yaml": application_documents(kube_namespace)}
        )
        settings = RepoSettings(
            url=url_of(remote), workdir=directory / "clone", batch_window=0.02, **repo_settings
        )
        repo = SourceRepo(settings)
        repo.start()
        started.append(repo)
        return Sources(remote, repo, GitTenantLedger(repo, record_timeout=60))

    yield make
    for repo in started:
        repo.stop()


@pytest.fixture
def sources(sources_factory: SourcesFactory) -> Sources:
    return sources_factory()


# --- the server and a client ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Client:
    port: int
    watch: SecretWatch

    def send(
        self,
        method: str,
        path: str,
        body: bytes | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        connection: http.client.HTTPConnection | None = None,
    ) -> Answer:
        own = connection is None
        conn = connection or http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            payload = json.dumps(body).encode() if isinstance(body, Mapping) else body
            all_headers = {"Content-Type": "application/json", **(headers or {})}
            conn.request(method, path, body=payload, headers=all_headers)
            response = conn.getresponse()
            answer = Answer(response.status, response.headers, response.read())
        finally:
            if own:
                conn.close()
        self.watch.assert_absent(answer.body.decode("utf-8", "replace"), f"the answer to {method} {path}")
        return answer


@dataclass
class Running:
    server: SubscriptionServer
    client: Client
    sources: Sources
    kube: KubeClient
    namespace: str
    metrics: SubscriptionMetrics

    def config_map(self, name: str) -> dict[str, Any] | None:
        return self.kube.get(CONFIG_MAP, name, self.namespace)

    def secret(self, name: str) -> dict[str, Any] | None:
        return self.kube.get(SECRET, name, self.namespace)


ServerFactory = Callable[..., Running]


@pytest.fixture
def server_factory(
    kube: KubeClient,
    kube_namespace: str,
    bindings: Bindings,
    pki: Pki,
    issuer: Issuer,
    sources: Sources,
    secrets_never_logged: SecretWatch,
) -> Iterator[ServerFactory]:
    servers: list[SubscriptionServer] = []

    def make(sources_to_use: Sources | None = None, **settings: Any) -> Running:
        values: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "jwks_ca_file": str(pki.ca_file),
            "jwks_refetch_interval": 0.0,
            "shutdown_grace": 5.0,
        }
        values.update(settings)
        chosen = sources_to_use or sources
        metrics = SubscriptionMetrics()
        server = build_subscription_server(SubscriptionServerSettings(**values), kube, chosen.ledger, metrics)
        server.start()
        servers.append(server)
        return Running(
            server, Client(server.port, secrets_never_logged), chosen, kube, kube_namespace, metrics
        )

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def running(server_factory: ServerFactory) -> Running:
    return server_factory()


# --- request bodies ------------------------------------------------------------------------------------


def saas_payload(tenant_id: str, sub_domain: str, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "subscriptionGUID": f"guid-{tenant_id}",
        "subscribedTenantId": tenant_id,
        "subscribedSubdomain": sub_domain,
        "globalAccountGUID": GLOBAL_ACCOUNT,
        "providerSubaccountId": PROVIDER_SUBACCOUNT,
        "subscriptionAppName": APP,
        "subscribedSubaccountId": f"subaccount-{tenant_id}",
        "userId": "someone@example.com",
        "additionalInformation": {"token": "payload-internal-value"},
    }
    body.update(overrides)
    return body


def sms_payload(tenant_id: str, sub_domain: str, guid: str | None = None) -> dict[str, Any]:
    return {
        "subscriber": {
            "subscriptionGUID": guid or f"sms-guid-{tenant_id}",
            "app_tid": tenant_id,
            "subaccountSubdomain": sub_domain,
            "globalAccountId": GLOBAL_ACCOUNT,
            "subaccountId": f"subaccount-{tenant_id}",
        },
        "rootApplication": {"appName": APP, "providerSubaccountId": PROVIDER_SUBACCOUNT},
        "eventType": "CREATE",
    }


def bearer(
    token: str, callback: str | None = "/saas-manager/v1/subscription-callback/1234/result"
) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}"}
    if callback:
        headers["STATUS_CALLBACK"] = callback
    return headers


APP_HASH = sha1_hex(PROVIDER_SUBACCOUNT, APP)


def rfc3339_parse(value: str) -> dt.datetime:
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
