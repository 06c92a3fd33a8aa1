"""The asynchronous status callback to the SaaS registry (or subscription manager) once a tenant's
operation finished, failed or timed out.

1. A client-credentials token: `POST <uaa url>/oauth/token` with `grant_type=client_credentials`
   and `client_id`, authenticated by HTTP Basic (client id and secret of the binding).
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

from btp_gitops.controller.clients.credentials import (
    SaasRegistryCredentials,
    SubscriptionManagerCredentials,
)
from btp_gitops.controller.errors import ConfigurationError, TemporaryError

log = logging.getLogger("btp_gitops.subscription")

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
    """Where and as whom to call back, from one binding's credentials."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    callback_base_url: str
    url_field: str  # subscriptionUrl (SaaS registry) or applicationUrl (subscription manager)

    @classmethod
    def of_saas_registry(cls, credentials: SaasRegistryCredentials) -> CallbackTarget:
        c = credentials
        _require_client_credentials(
            "saas-registry",
            c.credential_type,
            url=c.url,
            clientid=c.clientid,
            clientsecret=c.clientsecret,
            saas_registry_url=c.saas_registry_url,
        )
        return cls(
            _token_url(c.url), c.clientid, c.clientsecret, c.saas_registry_url.rstrip("/"), "subscriptionUrl"
        )

    @classmethod
    def of_subscription_manager(cls, credentials: SubscriptionManagerCredentials) -> CallbackTarget:
        c = credentials
        _require_client_credentials(
            "subscription-manager",
            c.credential_type,
            url=c.url,
            clientid=c.clientid,
            clientsecret=c.clientsecret,
            subscription_manager_url=c.subscription_manager_url,
        )
        base = c.subscription_manager_url.rstrip("/")
        return cls(_token_url(c.url), c.clientid, c.clientsecret, base, "applicationUrl")


def _require_client_credentials(service: str, credential_type: str, **fields: str) -> None:
    """Client id and secret plus http(s) URLs; x509 bindings (mTLS token requests) are not supported."""
    if credential_type == "x509":
        raise ConfigurationError(f"the {service} binding uses x509 credentials, which are not supported")
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

    def __init__(self, ssl_context: ssl.SSLContext | None = None, timeout: float = 30.0) -> None:
        self._ssl = ssl_context or ssl.create_default_context()
        self._timeout = timeout

    def fetch_token(self, target: CallbackTarget) -> str:
        basic = base64.b64encode(f"{target.client_id}:{target.client_secret}".encode()).decode("ascii")
        form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": target.client_id})
        request = urllib.request.Request(
            target.token_url,
            data=form.encode("ascii"),
            method="POST",
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
        )
        status, body = self._send(request, "token request")
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

    def _send(self, request: urllib.request.Request, what: str) -> tuple[int, bytes]:
        host = _where(request.full_url)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout, context=self._ssl) as response:
                return int(response.status), response.read(MAX_TOKEN_RESPONSE_BYTES)
        except urllib.error.HTTPError as error:
            error.close()
            raise CallbackFailed(f"{what} to {host} answered {error.code}", error.code) from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise CallbackFailed(f"{what} to {host} failed: {type(error).__name__}") from error


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


def _where(url: str) -> str:
    """Scheme, host, port and path of a URL for messages (no user info, no query)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}{parts.path}"
