"""The asynchronous status callback to the SaaS registry (or subscription manager) once a tenant's
operation finished, failed or timed out.

1. A client-credentials token: `POST <uaa url>/oauth/token` with `grant_type=client_credentials`
   and `client_id`, authenticated by HTTP Basic (client id and secret of the binding); for a
   binding with `credential-type: x509` (a client `certificate` and `key` instead of a secret) as
   CAP Operator sends it: `POST <certurl>/oauth/token` over mutual TLS with that certificate and
   no Authorization header (`client_certificate`).
2. `PUT <saas_registry_url><STATUS_CALLBACK path>` with the token and the JSON
   `{"status": "SUCCEEDED" | "FAILED", "message", "additionalOutput"?, "subscriptionUrl"}`
   (`applicationUrl` instead of `subscriptionUrl` for the subscription manager).

The callback path came from a request header: it must be a plain absolute path (`check_callback_path`),
and the final URL must keep the host of the binding's URL, so the token can never be sent elsewhere.
Every call has a timeout. Failures are `CallbackFailed` (a `TemporaryError`: retry later) carrying the
HTTP status when there was one; messages never include tokens, secrets or response bodies.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.controller.clients.client_certificate import client_context
from btp_gitops.controller.clients.credentials import (
    SaasRegistryCredentials,
    SubscriptionManagerCredentials,
)
from btp_gitops.controller.errors import ConfigurationError, TemporaryError

log = logging.getLogger("btp_gitops.subscription")

X509 = "x509"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
MAX_TOKEN_RESPONSE_BYTES = 1 << 20
_PATH = re.compile(r"^/(?!/)[A-Za-z0-9._~!$&'()*+,;=:@%/-]*(\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$")


class CallbackFailed(TemporaryError):
    """The token or the callback request failed; `status` is the HTTP status if an answer came."""

    reason = "CallbackFailed"

    def __init__(self, message: str, status: int | None = None, delay: float = 30.0) -> None:
        super().__init__(message, delay)
        self.status = status


def check_callback_path(path: str) -> str:
    """A STATUS_CALLBACK value usable as the path of the callback URL, else ValueError."""
    if not _PATH.match(path):
        raise ValueError("the callback path must be an absolute path (/...) without scheme or host")
    return path


@dataclass(frozen=True, slots=True)
class CallbackTarget:
    """Where and as whom to call back, from one binding's credentials: a client secret, or (x509
    bindings) a client certificate and key presented to the token endpoint."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    callback_base_url: str
    url_field: str  # subscriptionUrl (SaaS registry) or applicationUrl (subscription manager)
    client_certificate: str = field(default="", repr=False)  # PEM chain (x509 bindings)
    client_key: str = field(default="", repr=False)
    service: str = "saas-registry"  # names the binding in errors

    @property
    def uses_certificate(self) -> bool:
        return bool(self.client_certificate)

    @classmethod
    def of_saas_registry(cls, credentials: SaasRegistryCredentials) -> CallbackTarget:
        c = credentials
        return cls._of(
            "saas-registry",
            c.credential_type,
            c.saas_registry_url,
            "subscriptionUrl",
            url=c.url,
            certurl=c.certurl,
            clientid=c.clientid,
            clientsecret=c.clientsecret,
            certificate=c.certificate,
            key=c.key,
            base_name="saas_registry_url",
        )

    @classmethod
    def of_subscription_manager(cls, credentials: SubscriptionManagerCredentials) -> CallbackTarget:
        c = credentials
        return cls._of(
            "subscription-manager",
            c.credential_type,
            c.subscription_manager_url,
            "applicationUrl",
            url=c.url,
            certurl=c.certurl,
            clientid=c.clientid,
            clientsecret=c.clientsecret,
            certificate=c.certificate,
            key=c.key,
            base_name="subscription_manager_url",
        )

    @classmethod
    def _of(
        cls,
        service: str,
        credential_type: str,
        base: str,
        url_field: str,
        *,
        url: str,
        certurl: str,
        clientid: str,
        clientsecret: str,
        certificate: str,
        key: str,
        base_name: str,
    ) -> CallbackTarget:
        if credential_type == X509:
            _require(
                service,
                {
                    "certurl": certurl,
                    "clientid": clientid,
                    "certificate": certificate,
                    "key": key,
                    base_name: base,
                },
            )
            return cls(
                _token_url(certurl), clientid, "", base.rstrip("/"), url_field, certificate, key, service
            )
        _require(service, {"url": url, "clientid": clientid, "clientsecret": clientsecret, base_name: base})
        return cls(_token_url(url), clientid, clientsecret, base.rstrip("/"), url_field, service=service)


def _require(service: str, fields: Mapping[str, str]) -> None:
    """Every field set, and the URLs http(s). Messages name fields, never values."""
    missing = [name for name, value in fields.items() if not value]
    if missing:
        raise ConfigurationError(f"the {service} binding lacks {', '.join(missing)} for callbacks")
    for name, value in fields.items():
        if name.endswith("url") and urllib.parse.urlsplit(value).scheme not in ("https", "http"):
            raise ConfigurationError(f"the {service} binding's {name} is not an http(s) URL")


def _token_url(uaa_url: str) -> str:
    return uaa_url.rstrip("/") + "/oauth/token"


@dataclass(frozen=True, slots=True)
class CallbackStatus:
    succeeded: bool
    message: str
    app_url: str
    additional_output: Mapping[str, Any] | None = None

    def body(self, url_field: str) -> dict[str, Any]:
        document: dict[str, Any] = {
            "status": SUCCEEDED if self.succeeded else FAILED,
            "message": self.message,
        }
        if self.additional_output is not None:
            document["additionalOutput"] = dict(self.additional_output)
        document[url_field] = self.app_url
        return document


class SaasCallbackClient:
    """Gets a token and sends one status callback; stateless apart from its TLS settings."""

    def __init__(self, ca_file: str | None = None, timeout: float = 30.0) -> None:
        """`ca_file`: the CAs the token endpoints and registries are checked against (None: the
        system's)."""
        self._ca_file = ca_file
        self._ssl = ssl.create_default_context(cafile=ca_file)
        self._timeout = timeout

    def fetch_token(self, target: CallbackTarget) -> str:
        form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": target.client_id})
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        context = self._ssl
        if target.uses_certificate:
            # mTLS: the certificate authenticates the client; built per token (rotations apply).
            context = client_context(
                target.client_certificate,
                target.client_key,
                ca_file=self._ca_file,
                what=f"the {target.service} binding",
            )
        else:
            basic = base64.b64encode(f"{target.client_id}:{target.client_secret}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {basic}"
        request = urllib.request.Request(
            target.token_url, data=form.encode("ascii"), method="POST", headers=headers
        )
        status, body = self._send(request, "token request", context)
        try:
            token = json.loads(body).get("access_token")
        except (ValueError, AttributeError, RecursionError) as error:
            raise CallbackFailed("the token response is not a JSON object", status) from error
        if not isinstance(token, str) or not token:
            raise CallbackFailed("the token response has no access_token", status)
        return token

    def send_status(self, target: CallbackTarget, callback_path: str, status: CallbackStatus) -> int:
        """PUT the status; the HTTP status of the answer (2xx), else `CallbackFailed`."""
        url = callback_url(target.callback_base_url, callback_path)
        token = self.fetch_token(target)
        request = urllib.request.Request(
            url,
            data=json.dumps(status.body(target.url_field)).encode("utf-8"),
            method="PUT",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        answered, _ = self._send(request, "status callback")
        outcome = SUCCEEDED if status.succeeded else FAILED
        log.info("status callback %s to %s answered %d", outcome, _where(url), answered)
        return answered

    def _send(
        self, request: urllib.request.Request, what: str, context: ssl.SSLContext | None = None
    ) -> tuple[int, bytes]:
        host = _where(request.full_url)
        try:
            with urllib.request.urlopen(
                request, timeout=self._timeout, context=context or self._ssl
            ) as response:
                return int(response.status), response.read(MAX_TOKEN_RESPONSE_BYTES)
        except urllib.error.HTTPError as error:
            error.close()
            raise CallbackFailed(f"{what} to {host} answered {error.code}", error.code) from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise CallbackFailed(f"{what} to {host} failed: {_cause(error)}") from error


def callback_url(base: str, path: str) -> str:
    """`base` + `path`, refusing anything that would leave `base`'s scheme and host."""
    try:
        check_callback_path(path)
    except ValueError as error:
        raise CallbackFailed(str(error), delay=0) from error
    url = base.rstrip("/") + path
    joined, origin = urllib.parse.urlsplit(url), urllib.parse.urlsplit(base)
    if (joined.scheme, joined.netloc) != (origin.scheme, origin.netloc):
        raise CallbackFailed("the callback path would leave the SaaS registry's host", delay=0)
    return url


def _cause(error: BaseException) -> str:
    """The failure's class and, for a socket error, what the system said ("URLError:
    ConnectionRefusedError [Errno 111]"): enough to tell a refused connection from a reset or a
    timeout in an operator's log, without any part of the request (its URL, headers or body)."""
    reason = error.reason if isinstance(error, urllib.error.URLError) else None
    inner = reason if isinstance(reason, BaseException) else error
    errno = getattr(inner, "errno", None)
    detail = type(inner).__name__ + (f" [Errno {errno}]" if isinstance(errno, int) else "")
    return f"{type(error).__name__}: {detail}" if inner is not error else detail


def _where(url: str) -> str:
    """Scheme, host, port and path of a URL for messages (no user info, no query)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}{parts.path}"
