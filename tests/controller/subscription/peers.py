"""Local stand-ins for what cannot run here: an XSUAA issuer publishing its token keys over HTTPS, and
the SaaS registry (its UAA token endpoint and the status-callback endpoint). Both are real HTTP servers
on 127.0.0.1; the PKI (a CA, a `localhost` server certificate, client certificates) is made with
cryptography. Everything they received is recorded for the tests to assert on."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import ssl
import threading
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# --- PKI -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issued:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> str:
        return self.certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def name_of(**attributes: str | list[str]) -> x509.Name:
    oids = {
        "C": NameOID.COUNTRY_NAME,
        "O": NameOID.ORGANIZATION_NAME,
        "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
        "L": NameOID.LOCALITY_NAME,
        "CN": NameOID.COMMON_NAME,
    }
    entries = []
    for key, value in attributes.items():
        for item in value if isinstance(value, list) else [value]:
            entries.append(x509.NameAttribute(oids[key], item))
    return x509.Name(entries)


def issue(
    subject: x509.Name,
    issuer: Issued | None = None,
    *,
    ca: bool = False,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    client: bool = False,
) -> Issued:
    """A certificate for `subject`, signed by `issuer` (self-signed without one)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.certificate.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if dns or ips:
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if not ca:
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    signer = issuer.key if issuer else key
    return Issued(builder.sign(signer, hashes.SHA256()), key)


@dataclass(frozen=True)
class Pki:
    ca: Issued
    localhost: Issued
    ca_file: Path

    def server_context(self, directory: Path) -> ssl.SSLContext:
        cert, key = directory / "localhost.pem", directory / "localhost-key.pem"
        cert.write_text(self.localhost.pem)
        key.write_bytes(self.localhost.key_pem())
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        return context


def make_pki(directory: Path) -> Pki:
    ca = issue(name_of(CN="btp-gitops test CA"), ca=True)
    localhost = issue(name_of(CN="localhost"), ca, dns=("localhost",), ips=("127.0.0.1",))
    ca_file = directory / "ca.pem"
    ca_file.write_text(ca.pem)
    return Pki(ca, localhost, ca_file)


# --- a small threaded HTTP server ----------------------------------------------------------------------


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Peers stay silent: the tests assert on the server's logs alone."""

    def reply(self, status: int, document: Any) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], context: ssl.SSLContext | None = None) -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    if context is not None:
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


# --- the XSUAA issuer: token keys over HTTPS, signed tokens ---------------------------------------------


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": kid, "use": "sig", "alg": "RS256"})
    return dict(jwk)


@dataclass
class Issuer:
    """Publishes `keys` at https://localhost:<port>/token_keys and counts the fetches."""

    keys: dict[str, rsa.RSAPrivateKey]
    port: int = 0
    fetches: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def jku(self) -> str:
        return f"https://localhost:{self.port}/token_keys"

    def document(self) -> dict[str, Any]:
        with self.lock:
            self.fetches += 1
            return {"keys": [public_jwk(key, kid) for kid, key in self.keys.items()]}


@contextmanager
def running_issuer(issuer: Issuer, context: ssl.SSLContext) -> Iterator[Issuer]:
    class Handler(_Quiet):
        def do_GET(self) -> None:
            if urllib.parse.urlsplit(self.path).path.endswith("token_keys"):
                self.reply(200, issuer.document())
            else:
                self.reply(404, {"error": "not found"})

    with serving(Handler, context) as port:
        issuer.port = port
        yield issuer


@dataclass
class TokenFactory:
    """Signs XSUAA-like tokens; every token it made is remembered (no log may show one)."""

    issuer: Issuer
    xsappname: str
    made: list[str] = field(default_factory=list)

    def __call__(
        self,
        *,
        claims: Mapping[str, Any] | None = None,
        drop: tuple[str, ...] = (),
        header: Mapping[str, Any] | None = None,
        kid: str = "key-1",
        key: rsa.RSAPrivateKey | None = None,
        hmac_secret: bytes | None = None,
    ) -> str:
        now = int(dt.datetime.now(dt.UTC).timestamp())
        body: dict[str, Any] = {
            "jti": uuid.uuid4().hex,
            "iss": f"{self.issuer.jku.removesuffix('/token_keys')}/oauth/token",
            "cid": "sb-sap-provisioning!b5",
            "client_id": "sb-sap-provisioning!b5",
            "aud": [self.xsappname, "uaa"],
            "scope": [f"{self.xsappname}.Callback", "uaa.resource"],
            "iat": now,
            "exp": now + 600,
        }
        body.update(claims or {})
        for name in drop:
            body.pop(name, None)
        headers = {"jku": self.issuer.jku, "kid": kid, **(header or {})}
        if hmac_secret is not None:  # an algorithm-confusion attempt: HS256 with a shared secret
            token = jwt.encode(body, hmac_secret, algorithm="HS256", headers=headers)
        else:
            token = jwt.encode(body, key or self.issuer.keys[kid], algorithm="RS256", headers=headers)
        self.made.append(token)
        return token


# --- the SaaS registry: UAA token endpoint and status callbacks ------------------------------------------


@dataclass
class SaasRegistry:
    """POST /oauth/token issues client-credentials tokens to `client_id`/`client_secret`; any PUT is a
    status callback, recorded when it carries a token issued here."""

    client_id: str
    client_secret: str
    port: int = 0
    issued: list[str] = field(default_factory=list)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    callback_status: int = 200
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def token_for(self, authorization: str, form: Mapping[str, list[str]]) -> str | None:
        scheme, _, credentials = authorization.partition(" ")
        if scheme != "Basic":
            return None
        decoded = base64.b64decode(credentials).decode()
        grant = form.get("grant_type") == ["client_credentials"] and form.get("client_id") == [self.client_id]
        if decoded != f"{self.client_id}:{self.client_secret}" or not grant:
            return None
        token = f"issued-{uuid.uuid4().hex}"
        with self.lock:
            self.issued.append(token)
        return token


@contextmanager
def running_saas_registry(registry: SaasRegistry) -> Iterator[SaasRegistry]:
    class Handler(_Quiet):
        def do_POST(self) -> None:
            form = urllib.parse.parse_qs(self.body().decode())
            with registry.lock:
                registry.token_requests.append(
                    {"path": self.path, "form": form, "content_type": self.headers.get("Content-Type")}
                )
            token = registry.token_for(self.headers.get("Authorization") or "", form)
            if self.path != "/oauth/token" or token is None:
                self.reply(401, {"error": "unauthorized"})
                return
            self.reply(200, {"access_token": token, "token_type": "bearer", "expires_in": 3600})

        def do_PUT(self) -> None:
            body = self.body()
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            if bearer not in registry.issued:
                self.reply(401, {"error": "unauthorized"})
                return
            with registry.lock:
                registry.callbacks.append(
                    {
                        "path": self.path,
                        "body": json.loads(body),
                        "content_type": self.headers.get("Content-Type"),
                        "token": bearer,
                    }
                )
            self.reply(registry.callback_status, {})

    with serving(Handler) as port:
        registry.port = port
        yield registry
