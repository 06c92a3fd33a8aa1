"""The subscription server's request handlers: authenticate, find the application, record, answer.

Order of checks for every callback (each step answers with its own status):

1. the credentials' form, without I/O: bearer token with a well-formed header and `jku` (SaaS
   registry) or a readable forwarded client certificate (subscription manager) -> 401; the
   server (`server._Dispatcher`) checks this before it reads any body, then the body's
   `Content-Type` (415), size (413) and arrival time (408);
2. the body and parameters -> 400, naming the field;
3. the application (`sha1(providerSubaccountId + appName)`) or, for a subscription-manager DELETE,
   the tenant by subscription GUID. When there is none, the caller is checked against every
   application the server serves: a caller valid for some application learns 404, anyone else
   gets 401. So unauthenticated callers cannot probe which applications exist, while a
   misrouted SaaS registry still gets an honest 404;
4. the credentials against that application's binding Secrets -> 401 / 403 (503 when the Secrets
   cannot be read now);
5. a subscriptionDomain that is none of the application's domains -> 406 (`domains`); a subdomain
   another tenant of the application holds (as far as the records seen show) -> 409;
6. the work: cluster objects first (idempotent), then the tenant record, which the ledger returns
   from only once it is pushed. 202 after that, never before; 503 with a JSON error and
   `Retry-After` when the record could not be written (the pending callback opened for it is
   withdrawn), or when its outcome is unknown (a push timed out and the remote could not be asked
   since; the callback stays, and the caller's retry finds the record or writes it).
   When the write finds the subdomain taken on the newest records (another replica
   got there first): 409, the callback withdrawn and a new tenant's subscription context deleted.

A SaaS registry PUT answers 202 `{"message", "tenant", "subscriptionUrl"}` (`applicationUrl` for
the subscription manager; the message CAP Operator's: created, exists, or updated for a known
tenant with a new subscription GUID): the SaaS registry ignores the body of an asynchronous
answer, the URL is what the completion callback reports too. DELETE answers 202 or 404 (no such tenant).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.controller.clients.cluster_side import ClusterSide, Operation, PendingCallback
from btp_gitops.controller.clients.credentials import (
    CredentialReader,
    CredentialsUnavailable,
    ServiceNotBound,
)
from btp_gitops.controller.clients.saas_client import check_callback_path
from btp_gitops.controller.clients.targets import AppTarget
from btp_gitops.controller.errors import (
    AuthenticationFailed,
    ControllerError,
    OutcomeUnknown,
    PermanentError,
)
from btp_gitops.controller.records import SubdomainTaken
from btp_gitops.controller.subscription.auth import (
    TokenExpectation,
    TokenVerifier,
    bearer_token,
    check_client_certificate,
    forwarded_client_certificate,
    token_key_url,
    trusted_key_url,
    unverified_header,
)
from btp_gitops.controller.subscription.domains import application_url, url_domain
from btp_gitops.controller.subscription.ledger import (
    DEFAULT_CONTEXT_SECRET_SUFFIX,
    SubscriptionEntry,
    TenantLedger,
    TenantTarget,
)
from btp_gitops.controller.subscription.metrics import SubscriptionMetrics
from btp_gitops.controller.subscription.payloads import (
    InvalidPayload,
    SubscriptionKind,
    SubscriptionPayload,
    parse_saas_payload,
    parse_sms_payload,
    parse_sms_unsubscription,
)
from btp_gitops.generator.domains.cap import sha1_hex

log = logging.getLogger("btp_gitops.subscription")

STATUS_CALLBACK_HEADER = "STATUS_CALLBACK"
CLIENT_CERT_HEADER = "X-Forwarded-Client-Cert"
CREATED = "resource created successfully"
UPDATED = "resource exists"
GUID_UPDATED = "resource updated successfully"  # an existing tenant with a new subscription GUID
DELETED = "resource deleted successfully"


class NotFound(PermanentError):
    reason = "NotFound"


class NotSubscribable(PermanentError):
    """The request conflicts with the application (services-only, or the provider's own subdomain)."""

    reason = "NotSubscribable"


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]  # case-insensitive (the server's multidict)
    body: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    payload: Any = None  # JSON-serialisable, or bytes sent as they are
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HandlerSettings:
    callback_timeout: dt.timedelta = dt.timedelta(minutes=15)
    namespaces: frozenset[str] = frozenset()  # empty: applications of every namespace


class WorkSlots:
    """Bounds the handlers at work at once (`limit`): reading credentials, writing the cluster
    objects, queueing the record. A handler gives its slot up while it waits for the Git push of
    its record (`waiting`), which takes seconds under load and costs no CPU: the requests behind it
    do their own work meanwhile, and their records join the writer's next batch instead of
    waiting for a slot until this push landed. The slot is not taken again after the wait: what
    is left (the answer, or withdrawing a callback) is small."""

    def __init__(self, limit: int) -> None:
        self._slots = threading.BoundedSemaphore(limit)
        self._held = threading.local()

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        self._slots.acquire()
        self._held.slot = True
        try:
            yield
        finally:
            if self._held.slot:
                self._held.slot = False
                self._slots.release()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Give the slot up (if this thread holds one) for the rest of the handler."""
        if getattr(self._held, "slot", False):
            self._held.slot = False
            self._slots.release()
        yield


@dataclass(slots=True)
class SubscriptionService:
    """Everything a handler needs; shared by all request threads (each part is thread-safe)."""

    ledger: TenantLedger
    credentials: CredentialReader
    verifier: TokenVerifier
    cluster: ClusterSide
    metrics: SubscriptionMetrics
    settings: HandlerSettings = field(default_factory=HandlerSettings)
    now: Callable[[], dt.datetime] = field(default=lambda: dt.datetime.now(dt.UTC))
    slots: WorkSlots = field(default_factory=lambda: WorkSlots(128))

    # --- applications and tenants ----------------------------------------------------------------

    def served(self, app: AppTarget | None) -> AppTarget | None:
        if app is None or (self.settings.namespaces and app.namespace not in self.settings.namespaces):
            return None
        return app

    def application(self, kind: SubscriptionKind, request: Request, identifier_hash: str) -> AppTarget:
        app = self.served(self.ledger.find_application(identifier_hash))
        if app is None:
            self.authenticate_for_any(kind, request)
            raise NotFound("no application is registered for this provider subaccount and app name")
        return app

    def tenant_by_subscription(
        self, request: Request, subscription_guid: str, tenant_id: str
    ) -> TenantTarget:
        tenant = self.ledger.find_tenant_by_subscription(subscription_guid, tenant_id)
        if tenant is None or self.served(tenant.app) is None:
            self.authenticate_for_any(SubscriptionKind.SMS, request)
            raise NotFound("no tenant has this subscription")
        return tenant

    # --- authentication ----------------------------------------------------------------------------

    def authenticate(self, kind: SubscriptionKind, request: Request, app: AppTarget) -> int | None:
        """Check the caller against `app`'s credentials; the callback timeout (ms) they configure."""
        try:
            if kind is SubscriptionKind.SMS:
                manager = self.credentials.subscription_manager(app)
                check_client_certificate(
                    request.headers.get(CLIENT_CERT_HEADER),
                    manager.callback_certificate_subject,
                    manager.callback_certificate_issuer,
                )
                return manager.callback_timeout_ms
            xsuaa = self.credentials.xsuaa(app)
            registry = self.credentials.saas_registry(app)
            key_urls = {trusted_key_url(xsuaa.url), trusted_key_url(registry.url)} - {""}
            expected = TokenExpectation(
                uaadomain=registry.uaadomain or xsuaa.uaadomain,
                xsappname=xsuaa.xsappname,
                clientid=registry.clientid,
                key_urls=frozenset(key_urls),
            )
            self.verifier.verify(bearer_token(request.headers.get("Authorization")), expected)
            return registry.callback_timeout_ms
        except ServiceNotBound as error:
            log.warning("cannot authenticate callers of %s/%s: %s", app.namespace, app.name, error.message)
            raise AuthenticationFailed("the caller could not be authenticated") from error

    def authenticate_for_any(self, kind: SubscriptionKind, request: Request) -> None:
        """Pass when the caller is valid for some served application, else 401."""
        for app in self.ledger.applications():
            if self.served(app) is None:
                continue
            try:
                self.authenticate(kind, request, app)
            except (AuthenticationFailed, CredentialsUnavailable):
                continue
            except ControllerError as error:  # e.g. the issuer's keys are unreachable: try the others
                log.debug("authenticating against %s/%s: %s", app.namespace, app.name, error.reason)
                continue
            return
        raise AuthenticationFailed("the caller could not be authenticated")

    # --- cluster and records -----------------------------------------------------------------------

    def deadline(self, timeout_ms: int | None) -> dt.datetime:
        timeout = dt.timedelta(milliseconds=timeout_ms) if timeout_ms else self.settings.callback_timeout
        return self.now() + timeout

    def open_then_record(self, callback: PendingCallback | None, record: Callable[[], bool]) -> bool:
        """Open the pending callback, run `record`; withdraw the callback when it fails or finds nothing.

        Not when the outcome is unknown (the push timed out and may have landed): a record that
        landed without its callback would be provisioned with nobody telling the caller. The callback
        stays; the caller's retry finds the record (or records it) and answers for it, and a
        callback for a record that never lands expires at its deadline (reported FAILED)."""
        previous = self.cluster.open_callback(callback) if callback else None
        try:
            with self.slots.waiting():  # the wait for the push: other requests work meanwhile
                recorded = record()
        except OutcomeUnknown:
            log.warning("the record's outcome is unknown: the pending callback stays for the retry")
            raise
        except BaseException:
            self._withdraw(callback, previous)
            raise
        if not recorded:
            self._withdraw(callback, previous)
        return recorded

    def remove_context(self, app: AppTarget, secret_name: str) -> None:
        try:
            self.cluster.remove_subscription_context(app, secret_name)
        except ControllerError as error:
            log.warning("could not remove subscription context %s/%s: %s", app.namespace, secret_name, error)

    def _withdraw(self, callback: PendingCallback | None, previous: Any) -> None:
        if callback is None:
            return
        try:
            self.cluster.withdraw_callback(callback, previous)
        except ControllerError as error:
            # It then expires at its deadline and the watcher reports FAILED: late, but not lost.
            log.warning(
                "could not withdraw pending callback %s/%s: %s", callback.app.namespace, callback.name, error
            )


def callback_path(request: Request) -> str:
    """The STATUS_CALLBACK header ('' when absent: a synchronous caller expects no callback)."""
    value = (request.headers.get(STATUS_CALLBACK_HEADER) or "").strip()
    if not value:
        return ""
    try:
        return check_callback_path(value)
    except ValueError as error:
        raise InvalidPayload(STATUS_CALLBACK_HEADER, str(error)) from error


def subscribe_url(service: SubscriptionService, app: AppTarget, sub_domain: str, requested: str) -> str:
    """The application URL of a subscribe (`domains.url_domain`); 406 for a subscriptionDomain
    the application does not use. The domains are looked up only when the answer needs them."""
    if not requested and app.subscription_domain:
        return application_url(sub_domain, app.subscription_domain)
    return application_url(sub_domain, url_domain(requested, app, service.ledger.application_domains(app)))


def unsubscribe_url(service: SubscriptionService, app: AppTarget, sub_domain: str) -> str:
    """The application URL of an unsubscribe: the default one (annotation, else first domain), as
    CAP Operator's DELETE builds it; its body's subscriptionDomain is not read."""
    if app.subscription_domain:
        return application_url(sub_domain, app.subscription_domain)
    return application_url(sub_domain, service.ledger.application_domains(app).first)


def url_field(kind: SubscriptionKind) -> str:
    return "applicationUrl" if kind is SubscriptionKind.SMS else "subscriptionUrl"


# --- preliminary credential checks (no I/O) --------------------------------------------------------


def precheck_bearer(headers: Mapping[str, str]) -> None:
    token_key_url(unverified_header(bearer_token(headers.get("Authorization"))))


def precheck_certificate(headers: Mapping[str, str]) -> None:
    forwarded_client_certificate(headers.get(CLIENT_CERT_HEADER))


def precheck(kind: SubscriptionKind, headers: Mapping[str, str]) -> None:
    """The credentials' form (401), before the server reads a body: no I/O."""
    if kind is SubscriptionKind.SMS:
        precheck_certificate(headers)
    else:
        precheck_bearer(headers)


# --- subscribe ---------------------------------------------------------------------------------------


def check_subscribable(app: AppTarget, payload: SubscriptionPayload) -> None:
    """What the tenant record would refuse, answered before anything is written."""
    if not app.multi_tenant:
        raise NotSubscribable(
            f"CAPApplication {app.namespace}/{app.name} is services-only: it has no tenants"
        )
    # Subdomains are checked against the records when the change is applied (records.changes:
    # SubdomainTaken, 409): the provider may move to another subdomain as any tenant may, and the
    # one it left is free, which only the records know.


def subscribe(service: SubscriptionService, request: Request, payload: SubscriptionPayload) -> Response:
    app = service.application(payload.kind, request, payload.identifier_hash)
    timeout_ms = service.authenticate(payload.kind, request, app)
    check_subscribable(app, payload)
    url = subscribe_url(service, app, payload.sub_domain, payload.subscription_domain)
    path = callback_path(request)
    holder = service.ledger.subdomain_holder(app, payload.sub_domain, payload.tenant_id)
    if holder is not None:
        raise NotSubscribable(
            f"subdomain {payload.sub_domain} is taken by CAPTenant {app.namespace}/{holder}"
        )
    existing = service.ledger.find_tenant(app, payload.tenant_id)
    tenant_name = existing.name if existing else service.ledger.new_tenant_name(app, payload.tenant_id)
    secret_name = (
        existing.context_secret_name if existing else f"{tenant_name}{DEFAULT_CONTEXT_SECRET_SUFFIX}"
    )
    service.cluster.store_subscription_context(
        app, secret_name, payload.tenant_id, payload.subscription_guid, payload.raw
    )
    callback = None
    if path:
        callback = PendingCallback(
            app,
            tenant_name,
            payload.tenant_id,
            payload.sub_domain,
            Operation.PROVISIONING,
            path,
            service.deadline(timeout_ms),
            url,
            str(payload.kind),
        )
    entry = SubscriptionEntry(
        app,
        payload.tenant_id,
        payload.sub_domain,
        payload.subscription_guid,
        payload.global_account_id,
        secret_name,
    )

    def record() -> bool:
        service.ledger.record_subscription(entry)
        return True

    try:
        service.open_then_record(callback, record)
    except SubdomainTaken as error:
        # Another replica recorded the subdomain since our look: a conflict, and nothing of this
        # request may stay (the callback is withdrawn already; a new tenant's context goes too).
        if existing is None:
            service.remove_context(app, secret_name)
        raise NotSubscribable(error.message) from error
    message = CREATED if existing is None else UPDATED
    if existing is not None and existing.subscription_guid != payload.subscription_guid:
        message = GUID_UPDATED  # the record's GUID label and annotation were updated
    return Response(202, {"message": message, "tenant": tenant_name, url_field(payload.kind): url})


def saas_subscribe(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    precheck_bearer(request.headers)
    return subscribe(service, request, parse_saas_payload(request.body, params["tenantId"]))


def sms_subscribe(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    precheck_certificate(request.headers)
    return subscribe(service, request, parse_sms_payload(request.body, params["tenantId"]))


# --- unsubscribe -------------------------------------------------------------------------------------


def unsubscribe(
    service: SubscriptionService,
    request: Request,
    tenant: TenantTarget,
    *,
    kind: SubscriptionKind,
    timeout_ms: int | None,
) -> Response:
    path = callback_path(request)
    callback = None
    if path:
        callback = PendingCallback(
            tenant.app,
            tenant.name,
            tenant.tenant_id,
            tenant.sub_domain,
            Operation.DEPROVISIONING,
            path,
            service.deadline(timeout_ms),
            unsubscribe_url(service, tenant.app, tenant.sub_domain),
            str(kind),
        )
    recorded = service.open_then_record(
        callback, lambda: service.ledger.record_unsubscription(tenant.app, tenant.tenant_id)
    )
    if not recorded:
        raise NotFound("the application has no tenant with this id")
    return Response(202, {"message": DELETED, "tenant": tenant.name})


def saas_unsubscribe(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    precheck_bearer(request.headers)
    payload = parse_saas_payload(request.body, params["tenantId"])
    app = service.application(payload.kind, request, payload.identifier_hash)
    timeout_ms = service.authenticate(payload.kind, request, app)
    tenant = service.ledger.find_tenant(app, payload.tenant_id)
    if tenant is None:
        raise NotFound("the application has no tenant with this id")
    return unsubscribe(service, request, tenant, kind=payload.kind, timeout_ms=timeout_ms)


def sms_unsubscribe(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    precheck_certificate(request.headers)
    wanted = parse_sms_unsubscription(params["tenantId"], dict(request.query))
    tenant = service.tenant_by_subscription(request, wanted.subscription_guid, wanted.tenant_id)
    timeout_ms = service.authenticate(SubscriptionKind.SMS, request, tenant.app)
    return unsubscribe(service, request, tenant, kind=SubscriptionKind.SMS, timeout_ms=timeout_ms)


# --- dependencies ------------------------------------------------------------------------------------


def dependencies(
    service: SubscriptionService, request: Request, params: Mapping[str, str], kind: SubscriptionKind
) -> Response:
    precheck(kind, request.headers)
    account, name = params["providerSubaccountId"], params["appName"]
    if not account.strip() or not name.strip():
        raise InvalidPayload("path", "providerSubaccountId and appName must not be empty")
    app = service.application(kind, request, sha1_hex(account, name))
    service.authenticate(kind, request, app)
    return Response(200, [{"xsappname": name} for name in service.credentials.dependency_xsappnames(app)])


def saas_dependencies(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    return dependencies(service, request, params, SubscriptionKind.SAAS)


def sms_dependencies(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    return dependencies(service, request, params, SubscriptionKind.SMS)


# --- probes ------------------------------------------------------------------------------------------


def healthz(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    return Response(200, {"status": "ok"})


def readyz(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    try:
        reason = service.ledger.unready_reason()
    except ControllerError as error:
        log.warning("readiness: the tenant records are not available: %s", error.reason)
        reason = "the tenant records are not available yet"
    if reason is not None:
        return Response(503, {"error": reason}, headers={"Retry-After": "5"})
    return Response(200, {"status": "ready"})


def metrics(service: SubscriptionService, request: Request, params: Mapping[str, str]) -> Response:
    return Response(200, service.metrics.exposition(), content_type=service.metrics.content_type)
