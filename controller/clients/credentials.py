"""Credentials of an application's XSUAA, SaaS registry and subscription manager, from their binding Secrets.

A binding Secret (in the application's namespace, named by `spec.btp.services[].secret`) holds its
credentials in one of three shapes:

- a `.metadata` key (the SAP service binding format of the SAP BTP service operator): the
  credentials are the `credentialProperties` it lists, each read from its key (`sourceName`, else
  `name`) as text or, with `format: json`, parsed; a `container: true` property is the whole
  credentials object;
- else a `credentials` key holding the credentials as one JSON object;
- else flat keys, one credential per key, as text.

Which XSUAA: the services of class `xsuaa`; with several, the one named by the CAPApplication
annotation `sme.sap.com/primary-xsuaa`, else the first (CAP Operator's rule).

Values never appear in messages, logs or reprs: errors name the Secret and the field only, and the
secret fields of the credential classes are `repr=False`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.controller.clients.dependencies import (
    SubscriptionDependency,
    dependency_mode,
    qualifies,
    xsappname_of,
)
from btp_gitops.controller.clients.targets import (
    PRIMARY_XSUAA_ANNOTATION,
    SAAS_REGISTRY_CLASS,
    SUBSCRIPTION_MANAGER_CLASS,
    XSUAA_CLASS,
    AppTarget,
    ServiceRef,
)
from btp_gitops.controller.errors import PermanentError, TemporaryError
from btp_gitops.controller.kube import SECRET, KubeClient, KubeObject

log = logging.getLogger("btp_gitops.subscription")

METADATA_KEY = ".metadata"
CREDENTIALS_KEY = "credentials"
Credentials = dict[str, Any]


class CredentialsUnavailable(TemporaryError):
    """A binding Secret is missing or unreadable (the SAP BTP service operator may not have written it)."""

    reason = "CredentialsUnavailable"


class ServiceNotBound(PermanentError):
    """The application lists no service of the class a callback needs (e.g. no subscription-manager)."""

    reason = "ServiceNotBound"


@dataclass(frozen=True, slots=True)
class XsuaaCredentials:
    xsappname: str
    uaadomain: str
    clientid: str
    url: str


@dataclass(frozen=True, slots=True)
class SaasRegistryCredentials:
    clientid: str
    clientsecret: str = field(repr=False)
    url: str  # the UAA of the SaaS registry binding: tokens come from <url>/oauth/token
    saas_registry_url: str
    uaadomain: str
    callback_timeout_ms: int | None
    credential_type: str = ""
    certurl: str = ""  # x509 bindings: the UAA's mTLS host (tokens from <certurl>/oauth/token)
    certificate: str = field(default="", repr=False)  # x509 bindings: client certificate (PEM chain)
    key: str = field(default="", repr=False)  # x509 bindings: its private key (PEM)


@dataclass(frozen=True, slots=True)
class SubscriptionManagerCredentials:
    callback_certificate_subject: Any  # JSON (object or string), or a DN string
    callback_certificate_issuer: Any
    subscription_manager_url: str
    url: str
    clientid: str
    clientsecret: str = field(repr=False)
    callback_timeout_ms: int | None = None
    credential_type: str = ""
    certurl: str = ""
    certificate: str = field(default="", repr=False)
    key: str = field(default="", repr=False)


def decode_binding(data: Mapping[str, str], secret_name: str) -> Credentials:
    """The credentials of a binding Secret's `data` (base64 values), in whichever shape it has."""
    raw = {key: _base64(value, secret_name, key) for key, value in data.items()}
    if METADATA_KEY in raw:
        return _described_credentials(raw, secret_name)
    if CREDENTIALS_KEY in raw:
        parsed = _json(raw[CREDENTIALS_KEY], secret_name, CREDENTIALS_KEY)
        if not isinstance(parsed, dict):
            raise CredentialsUnavailable(f"Secret {secret_name}: key {CREDENTIALS_KEY} is not a JSON object")
        return parsed
    return {key: value.decode("utf-8", errors="replace") for key, value in raw.items()}


def binding_metadata_text(data: Mapping[str, str], name: str) -> str:
    """A metadata property (`metaDataProperties` of `.metadata`, e.g. `plan`) of a binding
    Secret's `data` as text; "" when it is not there or unreadable."""
    try:
        raw = {key: base64.b64decode(value, validate=True) for key, value in data.items()}
        metadata = json.loads(raw[METADATA_KEY]) if METADATA_KEY in raw else {}
    except (binascii.Error, ValueError, RecursionError):
        return ""
    listed = metadata.get("metaDataProperties") if isinstance(metadata, dict) else None
    for descriptor in listed if isinstance(listed, list) else []:
        if isinstance(descriptor, dict) and descriptor.get("name") == name:
            key = str(descriptor.get("sourceName") or name)
            return raw[key].decode("utf-8", errors="replace") if key in raw else ""
    return ""


def _described_credentials(raw: Mapping[str, bytes], secret_name: str) -> Credentials:
    metadata = _json(raw[METADATA_KEY], secret_name, METADATA_KEY)
    properties = metadata.get("credentialProperties") if isinstance(metadata, dict) else None
    if not isinstance(properties, list):
        raise CredentialsUnavailable(f"Secret {secret_name}: {METADATA_KEY} lists no credentialProperties")
    credentials: Credentials = {}
    for descriptor in properties:
        if not isinstance(descriptor, dict) or not isinstance(descriptor.get("name"), str):
            raise CredentialsUnavailable(
                f"Secret {secret_name}: {METADATA_KEY} has a property without a name"
            )
        name = descriptor["name"]
        key = str(descriptor.get("sourceName") or name)
        if key not in raw:
            continue  # described but absent: the reader of that field reports it if it needs it
        if descriptor.get("format") == "json":
            value = _json(raw[key], secret_name, key)
            if descriptor.get("container") and isinstance(value, dict):
                return value
            credentials[name] = value
        else:
            credentials[name] = raw[key].decode("utf-8", errors="replace")
    return credentials


def _base64(value: str, secret_name: str, key: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as error:
        raise CredentialsUnavailable(f"Secret {secret_name}: key {key} is not base64") from error


def _json(value: bytes, secret_name: str, key: str) -> Any:
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as error:
        raise CredentialsUnavailable(f"Secret {secret_name}: key {key} is not valid JSON") from error


def _text(credentials: Credentials, key: str, secret_name: str, required: bool = True) -> str:
    value = credentials.get(key)
    if isinstance(value, str) and value:
        return value
    if required:
        raise CredentialsUnavailable(f"Secret {secret_name}: the credentials have no {key}")
    return ""


def _json_field(value: Any) -> Any:
    """A credential that may be a JSON object or a string holding one (appUrls, certificate DNs)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _timeout_ms(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()) or None
    return None


def saas_callback_timeout(app_urls: Any) -> int | None:
    """`callbackTimeoutMillis` of the SaaS registry's `appUrls`, if set."""
    urls = _json_field(app_urls)
    return _timeout_ms(urls.get("callbackTimeoutMillis")) if isinstance(urls, dict) else None


def sms_callback_timeout(app_urls: Any) -> int | None:
    """`subscriptionCallbacks.async.timeoutInMillis` of the subscription manager's `app_urls`, if set."""
    urls = _json_field(app_urls)
    callbacks = urls.get("subscriptionCallbacks") if isinstance(urls, dict) else None
    asynchronous = callbacks.get("async") if isinstance(callbacks, dict) else None
    return _timeout_ms(asynchronous.get("timeoutInMillis")) if isinstance(asynchronous, dict) else None


def primary_xsuaa(app: AppTarget) -> ServiceRef:
    candidates = app.services_of_class(XSUAA_CLASS)
    if not candidates:
        raise ServiceNotBound(
            f"CAPApplication {app.namespace}/{app.name} has no service of class {XSUAA_CLASS}"
        )
    named = app.annotations.get(PRIMARY_XSUAA_ANNOTATION, "")
    if named and len(candidates) > 1:
        chosen = next((s for s in candidates if s.name == named), None)
        if chosen is None:
            raise ServiceNotBound(
                f"CAPApplication {app.namespace}/{app.name}: {PRIMARY_XSUAA_ANNOTATION} names {named!r}, "
                f"which is no service of class {XSUAA_CLASS}"
            )
        return chosen
    return candidates[0]


def single_service(app: AppTarget, service_class: str) -> ServiceRef:
    candidates = app.services_of_class(service_class)
    if not candidates:
        raise ServiceNotBound(
            f"CAPApplication {app.namespace}/{app.name} has no service of class {service_class}"
        )
    return candidates[0]


class _SharedReads:
    """Reads of one Secret shared by the callers that asked before the read started: a caller gets
    the Secret as a read that started after its call found it, never an older one, so a rotation
    applies at once; but a burst of 1,000 callbacks costs one read in flight at a time per Secret,
    not 1,000 (each waiting caller joins the next read)."""

    def __init__(self, read: Callable[[str, str], KubeObject | None]) -> None:
        self._read = read
        self._changed = threading.Condition()
        self._reads: dict[tuple[str, str], _Read] = {}  # the newest read per Secret

    def get(self, namespace: str, name: str) -> KubeObject | None:
        key = (namespace, name)
        asked = time.monotonic()
        with self._changed:
            while True:
                current = self._reads.get(key)
                if current is not None and current.started >= asked:
                    if current.done:
                        return current.outcome()
                    self._changed.wait()
                    continue
                if current is not None and not current.done:
                    self._changed.wait()  # started before this call: too old; the next one
                    continue
                mine = self._reads[key] = _Read(time.monotonic())
                break
        try:
            mine.secret = self._read(namespace, name)
        except BaseException as error:
            mine.error = error
            raise
        finally:
            with self._changed:
                mine.done = True  # a failure too: the callers that waited for this read get it
                self._changed.notify_all()
        return mine.secret


@dataclass(slots=True)
class _Read:
    started: float
    done: bool = False
    secret: KubeObject | None = None
    error: BaseException | None = None

    def outcome(self) -> KubeObject | None:
        if self.error is not None:
            raise self.error
        return self.secret


class CredentialReader:
    """Reads an application's binding Secrets from the cluster, as of the call (rotations apply at
    once); concurrent callers share reads (`_SharedReads`)."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube
        self._reads = _SharedReads(lambda namespace, name: kube.get(SECRET, name, namespace))

    def binding(self, app: AppTarget, service: ServiceRef) -> Credentials:
        secret = self._reads.get(app.namespace, service.secret)
        if secret is None:
            raise CredentialsUnavailable(
                f"Secret {app.namespace}/{service.secret} of service {service.name} does not exist"
            )
        return decode_binding(secret.get("data") or {}, f"{app.namespace}/{service.secret}")

    def xsuaa(self, app: AppTarget) -> XsuaaCredentials:
        service = primary_xsuaa(app)
        where = f"{app.namespace}/{service.secret}"
        credentials = self.binding(app, service)
        return XsuaaCredentials(
            xsappname=_text(credentials, "xsappname", where),
            uaadomain=_text(credentials, "uaadomain", where, required=False),
            clientid=_text(credentials, "clientid", where, required=False),
            url=_text(credentials, "url", where, required=False),
        )

    def saas_registry(self, app: AppTarget) -> SaasRegistryCredentials:
        service = single_service(app, SAAS_REGISTRY_CLASS)
        where = f"{app.namespace}/{service.secret}"
        credentials = self.binding(app, service)
        return SaasRegistryCredentials(
            clientid=_text(credentials, "clientid", where),
            clientsecret=_text(credentials, "clientsecret", where, required=False),
            url=_text(credentials, "url", where, required=False),
            saas_registry_url=_text(credentials, "saas_registry_url", where, required=False),
            uaadomain=_text(credentials, "uaadomain", where, required=False),
            callback_timeout_ms=saas_callback_timeout(credentials.get("appUrls")),
            credential_type=_text(credentials, "credential-type", where, required=False),
            certurl=_text(credentials, "certurl", where, required=False),
            certificate=_text(credentials, "certificate", where, required=False),
            key=_text(credentials, "key", where, required=False),
        )

    def subscription_manager(self, app: AppTarget) -> SubscriptionManagerCredentials:
        service = single_service(app, SUBSCRIPTION_MANAGER_CLASS)
        where = f"{app.namespace}/{service.secret}"
        credentials = self.binding(app, service)
        for key in ("callback_certificate_subject", "callback_certificate_issuer"):
            if not credentials.get(key):
                raise CredentialsUnavailable(f"Secret {where}: the credentials have no {key}")
        return SubscriptionManagerCredentials(
            callback_certificate_subject=_json_field(credentials["callback_certificate_subject"]),
            callback_certificate_issuer=_json_field(credentials["callback_certificate_issuer"]),
            subscription_manager_url=_text(credentials, "subscription_manager_url", where, required=False),
            url=_text(credentials, "url", where, required=False),
            clientid=_text(credentials, "clientid", where, required=False),
            clientsecret=_text(credentials, "clientsecret", where, required=False),
            callback_timeout_ms=sms_callback_timeout(
                credentials.get("app_urls") or credentials.get("appUrls")
            ),
            credential_type=_text(credentials, "credential-type", where, required=False),
            certurl=_text(credentials, "certurl", where, required=False),
            certificate=_text(credentials, "certificate", where, required=False),
            key=_text(credentials, "key", where, required=False),
        )

    def dependency_xsappnames(self, app: AppTarget) -> list[str]:
        """The `xsappname` of every service that is a subscription dependency (`clients.dependencies`),
        in the order listed, each once."""
        names: list[str] = []
        for service in app.services:
            mode = dependency_mode(service.subscription_dependency)
            if mode is SubscriptionDependency.NEVER:
                continue
            credentials, plan = self.binding_and_plan(app, service)
            if not qualifies(mode, service.service_class, credentials, plan):
                continue
            xsappname = xsappname_of(credentials)
            if xsappname:
                names.append(xsappname)
            else:
                log.warning(
                    "service %s of %s/%s is a subscription dependency but its credentials have no xsappname",
                    service.name,
                    app.namespace,
                    app.name,
                )
        return list(dict.fromkeys(names))

    def binding_and_plan(self, app: AppTarget, service: ServiceRef) -> tuple[Credentials, str]:
        """The credentials and the service plan of a binding Secret (the plan: a `plan` credential,
        else the `plan` key the SAP service binding format lists among its metadata)."""
        credentials = self.binding(app, service)
        plan = credentials.get("plan")
        if isinstance(plan, str) and plan:
            return credentials, plan
        secret = self._reads.get(app.namespace, service.secret) or {}
        return credentials, binding_metadata_text(secret.get("data") or {}, "plan")
