"""A tenant's traffic: its VirtualService and the DNS entries of its subdomain.

VirtualService `<tenant>` (networking.istio.io/v1): hosts `<subDomain>.<domain>` and the Gateway
of every domain of the application, and a default route (`uri.prefix "/"`, weight 100) to the
Router Service of the version the tenant runs on (`<cav>-<router>-svc.<ns>.svc.cluster.local`,
the router's first port). It is in the routing stage of the tenant's app, so it switches to a
new version only after the upgrade Jobs before it succeeded.

Version affinity (CAPApplication annotation `sme.sap.com/enable-version-affinity: "true"`), route
for route as CAP Operator routes (Istio takes the first match; no route has a name):

    logout, each previous   for every previous version still in the sources, oldest first: a
                            `Cookie` header holding `CAPOP_CAV=<previous>` and a URI matching the
                            logout endpoint, to that version; `response.set` expires the cookie
                            (`CAPOP_CAV=<previous>;Path=/;HttpOnly;Secure;Max-Age=0`)
    logout, current         the same for the version the tenant runs on
    cookie, each previous   only that version's cookie, to that version, oldest first
    cookie, current         only the current version's cookie, to the current version
    default                 no match, to the current version; `response.add` gives the cookie
                            `CAPOP_CAV=<current>;Path=/;HttpOnly;Secure` (`add`, so that the
                            Router's own Set-Cookie headers survive)

The previous versions are the tenant's history as CAP Operator keeps it in
`status.previousCAPApplicationVersions` (first to last), followed by
`status.currentCAPApplicationVersionInstance` while an upgrade renders: a user whose session began
two versions ago stays there until logout. A version of the history no longer in the sources has
no routes (the others keep theirs). The cookie regex is
`(^|.*; )CAPOP_CAV=<cav>($|; .*)` (other cookies before and after it); the URI regex
`^|.*(logout|logoff).*`, or `^|.*(<endpoint>).*` with the version's annotation
`sme.sap.com/logout-endpoint` (no leading slash), each version its own; with version affinity on,
one that is no regular expression Istio reads (RE2) is refused at render.

Headers from the annotations `sme.sap.com/vs-route-request-header-set` and
`sme.sap.com/vs-route-response-header-set` (JSON objects of header name to value) are `set`:
without version affinity on the route's destination, with it on every route, the cookie's
`Set-Cookie` joining the response headers.

DNS entries: a domain with dnsMode Subdomain gets `<subDomain>.<domain>`, and a Custom domain one
record per template whose name uses `{{.subDomain}}`; they are the tenant's, in its app, so the
domain's app does not change when a tenant comes or goes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.core.sources import problem_at
from btp_gitops.generator.domains.cap.dns import DnsRecord, template_record, uses_subdomain
from btp_gitops.generator.domains.cap.identity import CAV_VERSION, gateway_reference, service_host
from btp_gitops.generator.domains.cap.model import Application, DnsMode, Domain, Version
from btp_gitops.generator.domains.cap.networking import dns_entry
from btp_gitops.generator.domains.cap.tenants.model import Tenant

VERSION_AFFINITY_ANNOTATION = "sme.sap.com/enable-version-affinity"
LOGOUT_ENDPOINT_ANNOTATION = "sme.sap.com/logout-endpoint"
REQUEST_HEADERS_ANNOTATION = "sme.sap.com/vs-route-request-header-set"
RESPONSE_HEADERS_ANNOTATION = "sme.sap.com/vs-route-response-header-set"
VERSION_COOKIE = "CAPOP_CAV"
DEFAULT_LOGOUT_ENDPOINTS = ("logout", "logoff")
_COOKIE_ATTRIBUTES = "Path=/;HttpOnly;Secure"


@dataclass(frozen=True, slots=True)
class RoutingSettings:
    """The application's routing annotations, read once for all of its tenants."""

    version_affinity: bool = False
    request_headers: Mapping[str, str] = field(default_factory=dict)
    response_headers: Mapping[str, str] = field(default_factory=dict)


def _header_map(app: Application, key: str, problems: list[Problem]) -> dict[str, str]:
    text = app.source.body.get("metadata", {}).get("annotations", {}).get(key)
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        problems.append(problem_at(app.source, f"metadata.annotations.{key}", f"not JSON: {error.msg}"))
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        problems.append(
            problem_at(app.source, f"metadata.annotations.{key}", "must be a JSON object of strings")
        )
        return {}
    return value


def routing_settings(app: Application) -> tuple[RoutingSettings, list[Problem]]:
    annotations = app.source.body.get("metadata", {}).get("annotations") or {}
    problems: list[Problem] = []
    settings = RoutingSettings(
        version_affinity=annotations.get(VERSION_AFFINITY_ANNOTATION) == "true",
        request_headers=_header_map(app, REQUEST_HEADERS_ANNOTATION, problems),
        response_headers=_header_map(app, RESPONSE_HEADERS_ANNOTATION, problems),
    )
    return settings, problems


def _logout_endpoint(body: Mapping[str, Any]) -> str:
    """The version's `sme.sap.com/logout-endpoint`, as written (CAP Operator puts it into its regex)."""
    annotations = body.get("metadata", {}).get("annotations") or {}
    return str(annotations.get(LOGOUT_ENDPOINT_ANNOTATION) or "")


_MAX_LOGOUT_ENDPOINT = 253
# What Python's `re` reads but RE2 (Istio's regex engine) refuses: lookaround, backreferences.
_NOT_RE2 = re.compile(r"\(\?[=!<]|\\[1-9]|\(\?P=")


def logout_endpoint_problems(versions: Iterable[Version]) -> list[Problem]:
    """A version's logout endpoint goes into its logout route's URI regex as written, as CAP
    Operator puts it there: one Istio would refuse is refused at render, by field."""
    problems = []
    for version in versions:
        endpoint = _logout_endpoint(version.source.body)
        if not endpoint:
            continue
        where = f"metadata.annotations.{LOGOUT_ENDPOINT_ANNOTATION}"
        try:
            re.compile(endpoint)
            readable = not _NOT_RE2.search(endpoint)
        except re.error:
            readable = False
        if len(endpoint) > _MAX_LOGOUT_ENDPOINT or not endpoint.isprintable() or not readable:
            problems.append(
                problem_at(
                    version.source,
                    where,
                    f"must be a path (a regular expression Istio reads, RE2) of at most "
                    f"{_MAX_LOGOUT_ENDPOINT} characters: it goes into the logout route's URI regex",
                )
            )
    return problems


def logout_uri_regex(version: Version) -> str:
    """The logout URIs of a version: any URI containing its logout endpoint (CAP Operator's regex)."""
    endpoint = _logout_endpoint(version.source.body)
    return f"^|.*({endpoint or '|'.join(DEFAULT_LOGOUT_ENDPOINTS)}).*"


def router_destination(version: Version) -> dict[str, Any]:
    router = version.router
    if router is None:  # refused by the version rules for a multi-tenant application
        raise ValueError(f"CAPApplicationVersion {version.name} has no Router")
    return {"host": service_host(version, router), "port": {"number": router.ports[0].port}}


def cookie_regex(version: Version) -> str:
    """A `Cookie` header holding `CAPOP_CAV=<cav>`, alone or among other cookies (`; ` between)."""
    return f"(^|.*; ){VERSION_COOKIE}={version.name}($|; .*)"


def session_cookie(version: Version) -> str:
    return f"{VERSION_COOKIE}={version.name};{_COOKIE_ATTRIBUTES}"


def expired_cookie(version: Version) -> str:
    return f"{session_cookie(version)};Max-Age=0"


def _headers(settings: RoutingSettings, *, add_cookie: str = "", set_cookie: str = "") -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if settings.request_headers:
        headers["request"] = {"set": dict(settings.request_headers)}
    response: dict[str, Any] = {}
    replaced = {**settings.response_headers, **({"Set-Cookie": set_cookie} if set_cookie else {})}
    if replaced:
        response["set"] = replaced
    if add_cookie:
        response["add"] = {"Set-Cookie": add_cookie}
    if response:
        headers["response"] = response
    return headers


def _route(match: dict[str, Any] | None, version: Version, headers: dict[str, Any]) -> dict[str, Any]:
    route: dict[str, Any] = {}
    if headers:
        route["headers"] = headers
    if match is not None:
        route["match"] = [match]
    route["route"] = [{"destination": router_destination(version), "weight": 100}]
    return route


def _logout_route(version: Version, settings: RoutingSettings) -> dict[str, Any]:
    match = {
        "headers": {"Cookie": {"regex": cookie_regex(version)}},
        "uri": {"regex": logout_uri_regex(version)},
    }
    return _route(match, version, _headers(settings, set_cookie=expired_cookie(version)))


def _cookie_route(version: Version, settings: RoutingSettings) -> dict[str, Any]:
    return _route({"headers": {"Cookie": {"regex": cookie_regex(version)}}}, version, _headers(settings))


def http_routes(
    route_to: Version, previous: Sequence[Version], settings: RoutingSettings
) -> list[dict[str, Any]]:
    """The tenant's routes: one to `route_to` without version affinity; with it, CAP Operator's: a
    logout route of each previous version (oldest first) and of `route_to`, a cookie route of each
    in the same order, and the default route."""
    if not settings.version_affinity:
        destination = {"destination": router_destination(route_to), "weight": 100}
        headers = _headers(settings)
        return [
            {
                "match": [{"uri": {"prefix": "/"}}],
                "route": [{**destination, **({"headers": headers} if headers else {})}],
            }
        ]
    versions = [*previous, route_to]
    return [
        *(_logout_route(v, settings) for v in versions),
        *(_cookie_route(v, settings) for v in versions),
        _route(None, route_to, _headers(settings, add_cookie=session_cookie(route_to))),
    ]


@dataclass(frozen=True, slots=True)
class TenantRoutes:
    """Where one tenant's traffic goes."""

    route_to: Version
    previous: tuple[Version, ...] = ()  # versions sessions may stay on, oldest first (version affinity)


def tenant_virtual_service(
    tenant: Tenant,
    identity: tuple[dict[str, str], dict[str, str]],
    domains: tuple[Domain, ...],
    routes: TenantRoutes,
    settings: RoutingSettings,
) -> KubeObject:
    """`identity` is the tenant's (labels, annotations)."""
    labels = {**identity[0], CAV_VERSION: routes.route_to.version}
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {
            "name": tenant.name,
            "namespace": tenant.namespace,
            "labels": labels,
            "annotations": dict(identity[1]),
        },
        "spec": {
            "gateways": [gateway_reference(d) for d in domains],
            "hosts": [f"{tenant.sub_domain}.{d.host}" for d in domains],
            "http": http_routes(routes.route_to, routes.previous, settings),
        },
    }


def tenant_dns_records(domain: Domain, sub_domain: str) -> list[DnsRecord]:
    """The records of one subdomain on a domain; records without a subdomain are the domain's."""
    if not domain.makes_dns_entries:
        return []
    if domain.dns_mode == DnsMode.SUBDOMAIN:
        return [DnsRecord(f"{sub_domain}.{domain.host}", domain.dns_target)]
    if domain.dns_mode != DnsMode.CUSTOM:
        return []
    records = {
        template_record(domain, index, sub_domain)
        for index, template in enumerate(domain.dns_templates)
        if uses_subdomain(template.name)
    }
    return sorted(records)


def tenant_dns_entries(tenant: Tenant, domains: tuple[Domain, ...]) -> list[KubeObject]:
    return [dns_entry(d, record) for d in domains for record in tenant_dns_records(d, tenant.sub_domain)]
