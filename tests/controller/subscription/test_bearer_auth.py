"""Bearer-token authentication of the SaaS registry routes, over HTTP with real RS256 tokens whose keys
a local issuer publishes over HTTPS (test CA, host `localhost`, which is the credentials' uaadomain).
Faked: XSUAA itself (that issuer). The cluster (binding Secrets) and the Git ledger are real.

Covers every rejection (401 / 403 with the Bearer challenge, nothing written to Git or the cluster):
no header, another scheme, a malformed token, jku over http / with another path / on a foreign host /
with a query, an unknown kid, a foreign signature, HS256, expiry (and the leeway), not-yet-valid,
no exp, wrong audience, missing scope. What passes: mtcallback, audience by client id and by broker
suffix. The token-key cache: one fetch for many requests, a new kid refetched, the refetch limit,
unreachable keys (503), and keys served with a certificate the server does not trust.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from btp_gitops.controller.errors import AuthenticationFailed, TemporaryError
from btp_gitops.controller.kube import CONFIG_MAP
from btp_gitops.controller.subscription.auth import (
    JwksCache,
    TokenExpectation,
    TokenVerifier,
    audience_matches,
    audiences_of,
    host_within,
    unverified_header,
)
from tests.controller.subscription.conftest import (
    SAAS_CLIENT_ID,
    XSAPPNAME,
    Running,
    ServerFactory,
    bearer,
    saas_payload,
)
from tests.controller.subscription.peers import Issuer, Pki, TokenFactory, rsa_key

pytestmark = pytest.mark.kube

TENANT = "7d0c3f5e-1a2b-4c3d-9e8f-0a1b2c3d4e5f"
PATH = f"/provision/tenants/{TENANT}"
PENDING = "btp-gitops.io/pending-callback=true"
HeaderMaker = Callable[[TokenFactory, Issuer, rsa.RSAPrivateKey], dict[str, str]]


def now() -> int:
    return int(time.time())


REJECTIONS: dict[str, tuple[HeaderMaker, int, str]] = {
    "no header": (lambda t, i, k: {}, 401, "the request has no Authorization header"),
    "basic scheme": (
        lambda t, i, k: {"Authorization": "Basic dXNlcjpwYXNz"},
        401,
        "the Authorization header does not carry a bearer token",
    ),
    "malformed token": (
        lambda t, i, k: {"Authorization": "Bearer not.a-token"},
        401,
        "the bearer token is not a well-formed JWT",
    ),
    "jku over http": (
        lambda t, i, k: bearer(t(header={"jku": f"http://localhost:{i.port}/token_keys"})),
        401,
        "the token key URL (jku) must use https",
    ),
    "jku with another path": (
        lambda t, i, k: bearer(t(header={"jku": f"https://localhost:{i.port}/keys"})),
        401,
        "the token key URL (jku) must end with token_keys",
    ),
    "jku with a query": (
        lambda t, i, k: bearer(t(header={"jku": f"https://localhost:{i.port}/token_keys?x=1"})),
        401,
        "the token key URL (jku) must have no query, fragment or user info",
    ),
    "jku on a foreign host": (
        lambda t, i, k: bearer(t(header={"jku": "https://uaa.evil.example.com/token_keys"})),
        401,
        "the token key URL (jku) is outside the UAA domain of the application",
    ),
    "jku on a host merely ending like the domain": (
        lambda t, i, k: bearer(t(header={"jku": f"https://evillocalhost:{i.port}/token_keys"})),
        401,
        "the token key URL (jku) is outside the UAA domain of the application",
    ),
    "unknown kid": (
        lambda t, i, k: bearer(t(kid="key-9", key=k)),
        401,
        "the bearer token is signed by a key its issuer does not publish",
    ),
    "signed by another key": (
        lambda t, i, k: bearer(t(key=k)),
        401,
        "the bearer token's signature does not verify",
    ),
    "HS256": (
        lambda t, i, k: bearer(t(hmac_secret=b"a-shared-secret-of-32-bytes-long!")),
        401,
        "the bearer token must be signed with RS256",
    ),
    "expired": (
        lambda t, i, k: bearer(t(claims={"exp": now() - 120, "iat": now() - 720})),
        401,
        "the bearer token has expired",
    ),
    "not valid yet": (
        lambda t, i, k: bearer(t(claims={"nbf": now() + 300})),
        401,
        "the bearer token is not valid yet",
    ),
    "no expiry": (lambda t, i, k: bearer(t(drop=("exp",))), 401, "the bearer token has no expiry (exp)"),
    "wrong audience": (
        lambda t, i, k: bearer(
            t(claims={"aud": ["other-app!t1"], "cid": "other-client", "client_id": "other-client"})
        ),
        401,
        "the bearer token is not meant for this application (audience)",
    ),
    "missing scope": (
        lambda t, i, k: bearer(t(claims={"scope": ["uaa.resource", "other-app!t1.Callback"]})),
        403,
        f"the bearer token lacks the scope {XSAPPNAME}.Callback or {XSAPPNAME}.mtcallback",
    ),
}


@pytest.mark.parametrize("case", list(REJECTIONS))
def test_rejected_tokens_write_nothing(
    case: str, running: Running, tokens: TokenFactory, issuer: Issuer, foreign_key: rsa.RSAPrivateKey
) -> None:
    make_headers, status, message = REJECTIONS[case]
    head = running.sources.head()
    headers = {"STATUS_CALLBACK": "/cb/1", **make_headers(tokens, issuer, foreign_key)}

    answer = running.client.send("PUT", PATH, saas_payload(TENANT, "acme"), headers)

    assert (answer.status, answer.json) == (status, {"error": message})
    challenge = 'Bearer error="insufficient_scope"' if status == 403 else 'Bearer error="invalid_token"'
    assert answer.headers["WWW-Authenticate"] == challenge
    assert running.sources.head() == head
    assert running.kube.list(CONFIG_MAP, running.namespace, label_selector=PENDING) == []


@pytest.mark.parametrize(
    "claims",
    [
        pytest.param({"scope": [f"{XSAPPNAME}.mtcallback"]}, id="mtcallback scope"),
        pytest.param({"aud": [], "cid": SAAS_CLIENT_ID}, id="audience by the registry's client id"),
        pytest.param({"aud": [f"tenant-xyz|{SAAS_CLIENT_ID}"], "cid": "x"}, id="broker audience"),
        pytest.param({"aud": None, "scope": [f"{XSAPPNAME}.Callback"]}, id="audience from namespaced scopes"),
        # Seconds from now, resolved when the test runs (not when it is collected).
        pytest.param({"exp": -10}, id="expired within the leeway"),
        pytest.param({"scope": f"uaa.resource {XSAPPNAME}.Callback"}, id="scope as a string"),
    ],
)
def test_accepted_tokens(claims: dict[str, object], running: Running, tokens: TokenFactory) -> None:
    if claims.get("exp") == -10:
        claims = {**claims, "exp": int(time.time()) - 10}
    answer = running.client.send("PUT", PATH, saas_payload(TENANT, "acme"), bearer(tokens(claims=claims)))

    assert answer.status == 202, answer.body


def test_token_keys_are_fetched_once_and_refetched_for_a_new_kid(
    running: Running, tokens: TokenFactory, issuer: Issuer
) -> None:
    for _ in range(3):
        assert (
            running.client.send(
                "GET",
                "/dependencies/0d3e5f6a-1b2c-4d5e-8f90-a1b2c3d4e5f6/bookshop/",
                None,
                bearer(tokens(), None),
            ).status
            == 200
        )
    assert issuer.fetches == 1

    issuer.keys["key-2"] = rsa_key()
    rotated = running.client.send("PUT", PATH, saas_payload(TENANT, "acme"), bearer(tokens(kid="key-2")))

    assert rotated.status == 202, rotated.body
    assert issuer.fetches == 2


def test_unknown_kids_do_not_refetch_more_often_than_allowed(
    server_factory: ServerFactory, tokens: TokenFactory, issuer: Issuer, foreign_key: rsa.RSAPrivateKey
) -> None:
    running = server_factory(jwks_refetch_interval=300.0)
    assert running.client.send("PUT", PATH, saas_payload(TENANT, "acme"), bearer(tokens())).status == 202

    answers = [
        running.client.send(
            "PUT", PATH, saas_payload(TENANT, "acme"), bearer(tokens(kid=f"key-{n}", key=foreign_key))
        )
        for n in range(5, 10)
    ]

    assert {a.status for a in answers} == {401}
    assert issuer.fetches == 1


def test_unreachable_token_keys_answer_503(running: Running, tokens: TokenFactory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    token = tokens(header={"jku": f"https://localhost:{closed_port}/token_keys"})

    answer = running.client.send("PUT", PATH, saas_payload(TENANT, "acme"), bearer(token))

    assert answer.status == 503
    assert answer.json["reason"] == "Retrying"


def test_token_keys_behind_an_untrusted_certificate_are_not_used(
    server_factory: ServerFactory, tokens: TokenFactory
) -> None:
    running = server_factory(jwks_ca_file=None)  # system CAs only: the test CA is not among them

    answer = running.client.send("PUT", PATH, saas_payload(TENANT, "acme"), bearer(tokens()))

    assert answer.status == 503
    assert running.client.send("GET", "/metrics").status == 200


# --- the audience rules, as functions ------------------------------------------------------------------

EXPECTED = TokenExpectation(uaadomain="localhost", xsappname=XSAPPNAME, clientid=SAAS_CLIENT_ID)


@pytest.mark.parametrize(
    ("claims", "audiences"),
    [
        ({"aud": ["bookshop!t42.Callback", "uaa"]}, {"bookshop!t42", "uaa"}),
        ({"aud": "single"}, {"single"}),
        ({"scope": ["a!t1.read", "openid"]}, {"a!t1"}),
        ({"aud": ["x"], "scope": ["a!t1.read"], "cid": "client"}, {"x", "client"}),
        ({}, set()),
    ],
)
def test_audiences_of(claims: dict[str, object], audiences: set[str]) -> None:
    assert audiences_of(claims) == audiences


def test_audience_matches_the_registry_client_or_the_xsappname_only() -> None:
    assert audience_matches({"aud": [XSAPPNAME]}, EXPECTED)
    assert audience_matches({"cid": SAAS_CLIENT_ID}, EXPECTED)
    assert audience_matches({"aud": [f"t1|{SAAS_CLIENT_ID}"]}, EXPECTED)
    assert not audience_matches({"aud": [f"t1|{XSAPPNAME}"]}, EXPECTED)  # the xsappname is no broker id
    assert not audience_matches({"aud": ["bookshop!t4"]}, EXPECTED)


@pytest.mark.parametrize(
    ("host", "within"),
    [
        ("localhost", True),
        ("uaa.localhost", True),
        ("LOCALHOST.", True),
        ("evillocalhost", False),
        ("localhost.evil.com", False),
    ],
)
def test_host_within(host: str, within: bool) -> None:
    assert host_within(host, "localhost") is within
    assert host_within(host, "") is False


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_failed_key_fetch_is_remembered() -> None:
    cache = JwksCache(ssl.create_default_context(), fetch_timeout=1, failure_ttl=60)
    url = f"https://127.0.0.1:{closed_port()}/token_keys"

    with pytest.raises(TemporaryError, match="cannot fetch"):
        cache.key(url, "k")
    with pytest.raises(TemporaryError, match="could not be fetched lately") as again:
        cache.key(url, "k")

    assert cache.fetches == 1
    assert 0 < again.value.delay <= 60


def test_fetches_of_urls_no_binding_names_are_rate_limited() -> None:
    cache = JwksCache(ssl.create_default_context(), fetch_timeout=1, fetch_rate=0.01, fetch_burst=3)
    port = closed_port()

    for n in range(3):
        with pytest.raises(TemporaryError, match="cannot fetch"):
            cache.key(f"https://127.0.0.1:{port}/{n}/token_keys", "k")
    with pytest.raises(TemporaryError, match="too many token key fetches") as limited:
        cache.key(f"https://127.0.0.1:{port}/3/token_keys", "k")

    assert cache.fetches == 3
    assert limited.value.delay > 1


def test_the_bindings_key_set_survives_any_number_of_other_urls(issuer: Issuer, pki: Pki) -> None:
    cache = JwksCache(
        ssl.create_default_context(cafile=str(pki.ca_file)), fetch_timeout=1, fetch_rate=1e6, max_other_urls=8
    )
    cache.key(issuer.jku, "key-1", trusted=True)
    fetched = issuer.fetches
    port = closed_port()

    for n in range(300):
        with pytest.raises(TemporaryError):
            cache.key(f"https://127.0.0.1:{port}/{n}/token_keys", "k")

    assert cache.key(issuer.jku, "key-1", trusted=True) is not None
    assert issuer.fetches == fetched
    assert len(cache._others) <= 8


def test_a_remembered_token_header_does_not_spare_its_verification(
    issuer: Issuer, pki: Pki, tokens: TokenFactory
) -> None:
    """The header of a token is remembered (it is read three times per callback), never whether
    the token verified: the same token is refused once it expired, and a tampered copy with the
    same header fails its signature. Callers get a copy of the remembered header."""
    cache = JwksCache(ssl.create_default_context(cafile=str(pki.ca_file)), fetch_timeout=5)
    verifier = TokenVerifier(cache, leeway=0)
    expected = TokenExpectation(
        uaadomain="localhost", xsappname=XSAPPNAME, clientid=SAAS_CLIENT_ID, key_urls=frozenset()
    )
    token = tokens(claims={"exp": now() + 2})
    header = unverified_header(token)
    header["jku"] = "https://elsewhere.example.com/token_keys"
    assert unverified_header(token)["jku"] == issuer.jku

    verifier.verify(token, expected)
    head, _, signature = token.split(".")
    other = tokens(claims={"exp": now() + 600}).split(".")[1]
    with pytest.raises(AuthenticationFailed, match="signature does not verify"):
        verifier.verify(f"{head}.{other}.{signature}", expected)
    time.sleep(max(0.0, jwt.decode(token, options={"verify_signature": False})["exp"] - time.time() + 1.1))
    with pytest.raises(AuthenticationFailed, match="has expired"):
        verifier.verify(token, expected)
