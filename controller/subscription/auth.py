"""Who may call the subscription server: XSUAA bearer tokens (SaaS registry) and client certificates
(subscription manager), checked as CAP Operator's subscription server checks them
(https://sap.github.io/cap-operator/docs/concepts/operator-components/subscription-server/).

Bearer tokens, in this order (each failure is an `AuthenticationFailed` with the HTTP status):

1. `Authorization: Bearer <JWT>`, header algorithm RS256 (401).
2. The `jku` header: `https`, no query, fragment or user info, path ending in `token_keys`, host equal
   to the expected UAA domain or a subdomain of it (`.<uaadomain>`) (401). Only such URLs are ever
   fetched, so a token cannot make the server call an arbitrary host.
3. The signing key: the JWKS at `jku`, cached per URL for `jwks_ttl` seconds; a `kid` the cached set
   lacks refetches at most once per `jwks_refetch_interval` (unknown kid: 401). Fetch failures are
   `TemporaryError`s (503 with `Retry-After`): the server cannot check the token now, the caller
   did nothing wrong. They are remembered (`jwks_failure_ttl`), fetches of URLs no binding names
   are rate-limited, and the key sets of the URLs the bindings name are kept apart from the
   others, so no choice of `jku` makes the server fetch much or forget the keys that matter
   (`JwksCache`).
4. Signature, `exp` (required), `nbf`/`iat` when present, with `leeway` seconds of clock skew (401);
   `iss` an https URL on a host within the UAA domain (401).
5. Audience (401): XSUAA puts the audience in `aud` as `<client or xsappname>[.<scope>]`; the part
   before the first `.` of each entry counts. A token without `aud` is read as XSUAA does: the
   prefixes of its namespaced scopes. `cid` / `client_id` count too. One of them must equal the
   SaaS registry binding's `clientid` or the XSUAA `xsappname`; for a broker client id
   (containing `!b`) an audience ending in `|<clientid>` also matches.
6. Scope (403): `scope` (list, or a space-separated string) holds `<xsappname>.Callback` (approuter
   convention) or `<xsappname>.mtcallback` (CAP's).

Client certificates (`/sms/...`): the `X-Forwarded-Client-Cert` header set by the ingress gateway,
in Envoy's format (`By=...;Hash=...;Cert="<url-encoded PEM>";Subject="...";URI=...`, elements
separated by commas; the first element is the original client, later ones are hops in the mesh) or
as a bare URL-encoded PEM (what CAP Operator reads), percent-encoded or query-encoded (`+` for a
space, as Go's `url.QueryEscape` writes it). The certificate must be there (Envoy's
`Subject` alone carries no issuer): missing or unreadable is 401. Its subject and issuer must equal
the subscription manager binding's `callback_certificate_subject` / `callback_certificate_issuer`
(403 otherwise), compared as CAP Operator compares them, on C, O, OU, L and CN only (other
attributes of either side are ignored), as multisets of (attribute, value) pairs, so neither
order nor notation matter:
JSON objects (`{"C": "DE", "OU": ["a", "b"], "CN": "x"}`, a value `"*"` accepts any values of that
attribute), RFC 4514 strings (`CN=x,OU=a,C=DE`) or OpenSSL one-liners (`/C=DE/OU=a/CN=x`). The
header is trustworthy only when the gateway sanitizes it (Istio `SANITIZE_SET`) and the server is
reachable through that gateway alone; the chain and validity were checked by the gateway.

Tokens, claims and keys are never logged or put into messages.
"""

from __future__ import annotations

import functools
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography import x509
from cryptography.x509.oid import NameOID

from btp_gitops.controller.errors import AuthenticationFailed, TemporaryError

ALGORITHM = "RS256"
MAX_JWKS_BYTES = 1 << 20
LOCK_STRIPES = 64
MAX_REMEMBERED_FAILURES = 1024
HEADERS_REMEMBERED = 1024  # tokens whose header `unverified_header` keeps (LRU)


@dataclass(frozen=True, slots=True)
class TokenExpectation:
    """What a token for one application must match; all from that application's binding Secrets."""

    uaadomain: str
    xsappname: str
    clientid: str
    key_urls: frozenset[str] = frozenset()  # token key URLs the bindings name (`trusted_key_url`)

    @property
    def scopes(self) -> tuple[str, str]:
        return f"{self.xsappname}.Callback", f"{self.xsappname}.mtcallback"


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer` header, or 401."""
    if not authorization:
        raise AuthenticationFailed("the request has no Authorization header")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationFailed("the Authorization header does not carry a bearer token")
    return token.strip()


def unverified_header(token: str) -> dict[str, Any]:
    """The token's header (not verified: what it claims), or 401 for a token that is no JWT or
    not RS256-signed. A copy of the remembered one (`_header_of`)."""
    return dict(_header_of(token))


@functools.lru_cache(maxsize=HEADERS_REMEMBERED)
def _header_of(token: str) -> Mapping[str, Any]:
    """The header of a token, remembered for the tokens seen last: a callback's token is read for
    its header up to three times (its form before the body is read, the handler, the
    verification), and reading it decodes and checks every part of the token, not just the
    header. A pure function of the token (a refusal is raised again each time, not remembered)."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as error:
        raise AuthenticationFailed("the bearer token is not a well-formed JWT") from error
    if header.get("alg") != ALGORITHM:
        raise AuthenticationFailed(f"the bearer token must be signed with {ALGORITHM}")
    return header


def token_key_url(header: Mapping[str, Any]) -> urllib.parse.SplitResult:
    """The parsed `jku` of a token header; only its form is checked here (https, token_keys path)."""
    jku = header.get("jku")
    if not isinstance(jku, str) or not jku:
        raise AuthenticationFailed("the bearer token names no token key URL (jku)")
    try:
        url = urllib.parse.urlsplit(jku)
        url.port  # noqa: B018 -- raises ValueError on a malformed port
    except ValueError as error:
        raise AuthenticationFailed("the token key URL (jku) is malformed") from error
    if url.scheme != "https":
        raise AuthenticationFailed("the token key URL (jku) must use https")
    if url.query or url.fragment or url.username is not None or url.password is not None:
        raise AuthenticationFailed("the token key URL (jku) must have no query, fragment or user info")
    if not url.path.rstrip("/").endswith("token_keys"):
        raise AuthenticationFailed("the token key URL (jku) must end with token_keys")
    if not url.hostname:
        raise AuthenticationFailed("the token key URL (jku) has no host")
    return url


def trusted_key_url(uaa_url: str) -> str:
    """`<url>/token_keys` of a binding's UAA `url`, normalised as `normal_key_url` does ("" if none)."""
    if not uaa_url.startswith("https://"):
        return ""
    try:
        return normal_key_url(urllib.parse.urlsplit(uaa_url.rstrip("/") + "/token_keys"))
    except ValueError:
        return ""


def normal_key_url(url: urllib.parse.SplitResult) -> str:
    """One spelling per URL (host lowercase, no trailing dot or slash): a cache key callers cannot vary."""
    host = (url.hostname or "").rstrip(".")
    port = f":{url.port}" if url.port is not None else ""
    return f"https://{host}{port}{url.path.rstrip('/')}"


def host_within(host: str, domain: str) -> bool:
    host, domain = host.lower().rstrip("."), domain.lower().strip(".")
    return bool(domain) and (host == domain or host.endswith("." + domain))


@dataclass(slots=True)
class _KeySet:
    fetched_at: float
    keys: dict[str, jwt.PyJWK]


class JwksCache:
    """Signing keys per token key URL, fetched over HTTPS and kept for `ttl` seconds.

    Callers choose the `jku` of a token before its signature can be checked, so what they name must
    not cost much nor push out what matters:
    - the URLs a binding names (`trusted=True`: `<XSUAA url>/token_keys`) are kept apart, never
      evicted by others;
    - any other URL (its host already checked against the application's UAA domain) lives in a
      bounded LRU of `max_other_urls`, and fetches of such URLs draw from a token bucket
      (`fetch_rate` per second, `fetch_burst` at once): past it, 503 with `Retry-After`;
    - a failed fetch is remembered for `failure_ttl` seconds (bounded too): the same URL is
      answered 503 from memory instead of being fetched again.
    """

    def __init__(
        self,
        ssl_context: ssl.SSLContext,
        *,
        ttl: float = 600.0,
        fetch_timeout: float = 10.0,
        refetch_interval: float = 30.0,
        failure_ttl: float = 60.0,
        fetch_rate: float = 1.0,
        fetch_burst: int = 10,
        max_other_urls: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ssl = ssl_context
        self._ttl = ttl
        self._timeout = fetch_timeout
        self._refetch_interval = refetch_interval
        self._failure_ttl = failure_ttl
        self._fetch_rate = fetch_rate
        self._fetch_burst = float(fetch_burst)
        self._max_other_urls = max_other_urls
        self._clock = clock
        self._lock = threading.Lock()  # guards the maps and the bucket, never held while fetching
        # One lock per stripe, not per URL: attacker-chosen URLs cannot grow a map of locks.
        self._stripes = tuple(threading.Lock() for _ in range(LOCK_STRIPES))
        self._trusted: dict[str, _KeySet] = {}
        self._others: OrderedDict[str, _KeySet] = OrderedDict()
        self._failures: OrderedDict[str, float] = OrderedDict()  # URL -> until
        self._tokens = self._fetch_burst
        self._tokens_at = clock()
        self.fetches = 0  # fetches attempted, for tests and metrics

    def key(self, url: str, kid: str | None, trusted: bool = False) -> jwt.PyJWK:
        """The key `kid` of the set at `url`; 401 when the set has no such key."""
        with self._stripes[hash(url) % LOCK_STRIPES]:
            cached = self._cached(url, trusted)
            now = self._clock()
            age = now - cached.fetched_at if cached else float("inf")
            missing = cached is None or _pick(cached.keys, kid) is None
            if cached is None or age > self._ttl or (missing and age > self._refetch_interval):
                keys = self._fetch_checked(url, trusted)
                cached = _KeySet(self._clock(), keys)
                self._store(url, cached, trusted)
        found = _pick(cached.keys, kid)
        if found is None:
            raise AuthenticationFailed("the bearer token is signed by a key its issuer does not publish")
        return found

    def _cached(self, url: str, trusted: bool) -> _KeySet | None:
        with self._lock:
            if trusted:
                return self._trusted.get(url)
            found = self._others.get(url)
            if found is not None:
                self._others.move_to_end(url)
            return found

    def _store(self, url: str, keys: _KeySet, trusted: bool) -> None:
        with self._lock:
            if trusted:
                self._trusted[url] = keys
                return
            self._others[url] = keys
            self._others.move_to_end(url)
            while len(self._others) > self._max_other_urls:
                self._others.popitem(last=False)

    def _fetch_checked(self, url: str, trusted: bool) -> dict[str, jwt.PyJWK]:
        """A fetch, unless the URL failed recently or (untrusted) the fetch budget is spent."""
        with self._lock:
            now = self._clock()
            until = self._failures.get(url)
            if until is not None and now < until:
                raise TemporaryError(
                    f"the token keys at {url} could not be fetched lately", delay=until - now
                )
            self._failures.pop(url, None)
            if not trusted:
                self._tokens = min(
                    self._fetch_burst, self._tokens + (now - self._tokens_at) * self._fetch_rate
                )
                self._tokens_at = now
                if self._tokens < 1:
                    wait = (
                        (1 - self._tokens) / self._fetch_rate if self._fetch_rate > 0 else self._failure_ttl
                    )
                    raise TemporaryError("too many token key fetches; try again later", delay=wait)
                self._tokens -= 1
            self.fetches += 1
        try:
            return self._fetch(url)
        except TemporaryError:
            with self._lock:
                self._failures[url] = self._clock() + self._failure_ttl
                self._failures.move_to_end(url)
                while len(self._failures) > MAX_REMEMBERED_FAILURES:
                    self._failures.popitem(last=False)
            raise

    def _fetch(self, url: str) -> dict[str, jwt.PyJWK]:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout, context=self._ssl) as response:
                body = response.read(MAX_JWKS_BYTES + 1)
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise TemporaryError(f"cannot fetch the token keys at {url}: {type(error).__name__}") from error
        if len(body) > MAX_JWKS_BYTES:
            raise TemporaryError(f"the token keys at {url} exceed {MAX_JWKS_BYTES} bytes")
        try:
            document = json.loads(body)
        except (ValueError, RecursionError) as error:
            raise TemporaryError(f"the token keys at {url} are not JSON") from error
        return _usable_keys(document)


def _usable_keys(document: Any) -> dict[str, jwt.PyJWK]:
    """RSA signing keys of a JWKS by kid ("" for a key without one); others are skipped."""
    entries = document.get("keys") if isinstance(document, dict) else None
    keys: dict[str, jwt.PyJWK] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(entry, algorithm=ALGORITHM)
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
            continue
        keys[str(entry.get("kid") or "")] = key
    return keys


def _pick(keys: Mapping[str, jwt.PyJWK], kid: str | None) -> jwt.PyJWK | None:
    if kid:
        return keys.get(kid)
    return next(iter(keys.values())) if len(keys) == 1 else None


class TokenVerifier:
    """Checks SaaS registry bearer tokens against one application's expectations."""

    def __init__(self, jwks: JwksCache, leeway: float = 30.0) -> None:
        self._jwks = jwks
        self._leeway = leeway

    def verify(self, token: str, expected: TokenExpectation) -> None:
        header = unverified_header(token)
        url = token_key_url(header)
        if not host_within(url.hostname or "", expected.uaadomain):
            raise AuthenticationFailed("the token key URL (jku) is outside the UAA domain of the application")
        kid = header.get("kid")
        key_url = normal_key_url(url)
        key = self._jwks.key(key_url, kid if isinstance(kid, str) else None, key_url in expected.key_urls)
        claims = self._decode(token, key)
        if not issuer_matches(claims, expected.uaadomain):
            raise AuthenticationFailed(
                "the bearer token's issuer (iss) is outside the UAA domain of the application"
            )
        if not audience_matches(claims, expected):
            raise AuthenticationFailed("the bearer token is not meant for this application (audience)")
        if not set(scopes_of(claims)) & set(expected.scopes):
            raise AuthenticationFailed(
                f"the bearer token lacks the scope {expected.scopes[0]} or {expected.scopes[1]}", status=403
            )

    def _decode(self, token: str, key: jwt.PyJWK) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                options={"require": ["exp"], "verify_aud": False, "verify_iss": False},
                leeway=self._leeway,
            )
        except jwt.ExpiredSignatureError as error:
            raise AuthenticationFailed("the bearer token has expired") from error
        except jwt.ImmatureSignatureError as error:
            raise AuthenticationFailed("the bearer token is not valid yet") from error
        except jwt.InvalidSignatureError as error:
            raise AuthenticationFailed("the bearer token's signature does not verify") from error
        except jwt.MissingRequiredClaimError as error:
            raise AuthenticationFailed("the bearer token has no expiry (exp)") from error
        except jwt.InvalidTokenError as error:
            raise AuthenticationFailed("the bearer token is invalid") from error


def issuer_matches(claims: Mapping[str, Any], uaadomain: str) -> bool:
    """XSUAA's `iss` is `https://<subdomain>.authentication.<uaadomain>/oauth/token`: an https URL on
    a host within the binding's `uaadomain`."""
    iss = claims.get("iss")
    if not isinstance(iss, str):
        return False
    try:
        url = urllib.parse.urlsplit(iss)
    except ValueError:
        return False
    return url.scheme == "https" and url.username is None and host_within(url.hostname or "", uaadomain)


def scopes_of(claims: Mapping[str, Any]) -> list[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    return [s for s in scope if isinstance(s, str)] if isinstance(scope, list) else []


def audiences_of(claims: Mapping[str, Any]) -> set[str]:
    """The audiences XSUAA means: `aud` entries up to their first dot, else the scopes' namespaces,
    plus the client id."""
    aud = claims.get("aud")
    entries = (
        [aud]
        if isinstance(aud, str)
        else [a for a in aud if isinstance(a, str)]
        if isinstance(aud, list)
        else []
    )
    found = {entry.split(".", 1)[0].strip() for entry in entries}
    if not found:
        found = {scope.split(".", 1)[0].strip() for scope in scopes_of(claims) if "." in scope}
    for key in ("cid", "client_id"):
        client = claims.get(key)
        if isinstance(client, str):
            found.add(client.strip())
    return {a for a in found if a}


def audience_matches(claims: Mapping[str, Any], expected: TokenExpectation) -> bool:
    audiences = audiences_of(claims)
    for wanted in (w for w in (expected.clientid, expected.xsappname) if w):
        if wanted in audiences:
            return True
        if "!b" in wanted and any(a.endswith("|" + wanted) for a in audiences):
            return True
    return False


# --- client certificates ---------------------------------------------------------------------------

# The attributes of a subject or issuer CAP Operator compares (its JSON form of a DN has no others).
COMPARED_ATTRIBUTES = frozenset({"C", "O", "OU", "L", "CN"})
_NAMES = {"S": "ST", "E": "EMAILADDRESS", "EMAIL": "EMAILADDRESS", "SN": "SN"}
_OID_NAMES = {NameOID.EMAIL_ADDRESS: "EMAILADDRESS"}
DistinguishedName = tuple[tuple[str, str], ...]


def forwarded_client_certificate(header: str | None) -> x509.Certificate:
    """The client certificate an ingress gateway forwarded, or 401."""
    if not header or not header.strip():
        raise AuthenticationFailed("the request has no X-Forwarded-Client-Cert header")
    encoded = _encoded_certificate(header.strip())
    if encoded is None:
        raise AuthenticationFailed("X-Forwarded-Client-Cert carries no client certificate (Cert=)")
    # Percent-encoded (Envoy), or query-encoded with `+` for spaces (Go's url.QueryEscape, which
    # BTP's router and CAP Operator's url.QueryUnescape use). A literal `+` of the base64 text
    # stays one in the first reading, so the second is tried only when the first cannot be read.
    for decode in (urllib.parse.unquote, urllib.parse.unquote_plus):
        try:
            return x509.load_pem_x509_certificate(decode(encoded).encode("utf-8"))
        except ValueError:
            continue
    raise AuthenticationFailed("the forwarded client certificate cannot be read")


def _encoded_certificate(header: str) -> str | None:
    """The (still URL-encoded) PEM of the header: the whole value, or the first element's Cert."""
    if urllib.parse.unquote_plus(header).lstrip().startswith("-----BEGIN"):
        return header
    first = next(iter(_split_unquoted(header, ",")), "")
    for pair in _split_unquoted(first, ";"):
        key, _, value = pair.partition("=")
        if key.strip().lower() == "cert":
            return _unquote(value.strip())
    return None


def _split_unquoted(text: str, separator: str) -> Iterable[str]:
    """`text` split at `separator`s outside double quotes (backslash escapes inside quotes)."""
    part: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            yield "".join(part)
            part = []
            continue
        part.append(char)
    yield "".join(part)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        out, index = [], 0
        while index < len(inner):
            if inner[index] == "\\" and index + 1 < len(inner):
                index += 1
            out.append(inner[index])
            index += 1
        return "".join(out)
    return value


def check_client_certificate(header: str | None, expected_subject: Any, expected_issuer: Any) -> None:
    """401 without a readable forwarded certificate, 403 when its subject or issuer differ."""
    certificate = forwarded_client_certificate(header)
    if not name_matches(name_pairs(certificate.subject), expected_subject):
        raise AuthenticationFailed("the client certificate's subject is not the subscription manager's", 403)
    if not name_matches(name_pairs(certificate.issuer), expected_issuer):
        raise AuthenticationFailed("the client certificate's issuer is not the subscription manager's", 403)


def name_pairs(name: x509.Name) -> DistinguishedName:
    pairs = []
    for rdn in name.rdns:
        for attribute in rdn:
            label = _OID_NAMES.get(attribute.oid) or attribute.rfc4514_attribute_name
            value = attribute.value if isinstance(attribute.value, str) else attribute.value.hex()
            pairs.append((_NAMES.get(label.upper(), label.upper()), value.strip()))
    return tuple(sorted(pairs))


def expected_pairs(expected: Any) -> tuple[DistinguishedName, frozenset[str]]:
    """(pairs, attributes accepting any value) of a configured DN in any of the accepted notations."""
    if isinstance(expected, Mapping):
        pairs: list[tuple[str, str]] = []
        wildcards: set[str] = set()
        for key, value in expected.items():
            label = _NAMES.get(str(key).upper(), str(key).upper())
            values = value if isinstance(value, list) else [value]
            if "*" in values:
                wildcards.add(label)
                continue
            pairs.extend((label, str(v).strip()) for v in values if v is not None and str(v) != "")
        return tuple(sorted(pairs)), frozenset(wildcards)
    if isinstance(expected, str):
        return parse_distinguished_name(expected), frozenset()
    raise ValueError("a distinguished name must be a JSON object or a string")


def name_matches(actual: DistinguishedName, expected: Any) -> bool:
    """Whether a certificate's name matches a configured one on the attributes CAP Operator
    compares (`COMPARED_ATTRIBUTES`): each attribute's values as a multiset, any others of either
    side (ST, serialNumber, ...) ignored."""
    try:
        wanted, wildcards = expected_pairs(expected)
    except ValueError as error:
        raise TemporaryError(f"the subscription manager's certificate name is unusable: {error}") from error
    wanted = tuple(pair for pair in wanted if pair[0] in COMPARED_ATTRIBUTES)
    if not wanted and not wildcards & COMPARED_ATTRIBUTES:
        raise TemporaryError("the subscription manager's certificate name is empty")
    relevant = tuple(pair for pair in actual if pair[0] in COMPARED_ATTRIBUTES and pair[0] not in wildcards)
    return relevant == wanted


def parse_distinguished_name(text: str) -> DistinguishedName:
    """RFC 4514 (`CN=a,O=b`) or OpenSSL (`/O=b/CN=a`) notation as sorted (attribute, value) pairs."""
    text = text.strip()
    if text.startswith("/"):
        parts = [p for p in _split_escaped(text[1:], "/") if p]
    else:
        parts = [p for chunk in _split_escaped(text, ",;") for p in _split_escaped(chunk, "+")]
    pairs = []
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{part!r} is no attribute=value pair")
        label = key.strip().upper()
        pairs.append((_NAMES.get(label, label), _unescape(value.strip())))
    return tuple(sorted(pairs))


def _split_escaped(text: str, separators: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = quoted = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == '"':
            current.append(char)
            quoted = not quoted
        elif char in separators and not quoted:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return parts


def _unescape(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return _unquote(value)
    out = bytearray()  # hex escapes are UTF-8 bytes (`\\C3\\A9`), so decode once at the end
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value):
            pair = value[index + 1 : index + 3]
            if len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair):
                out.append(int(pair, 16))
                index += 3
                continue
            char = value[index + 1]
            index += 1
        out += char.encode("utf-8")
        index += 1
    return out.decode("utf-8", errors="replace")
