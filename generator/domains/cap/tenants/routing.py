"""A tenant's traffic: its VirtualService and the DNS entries of its subdomain.

VirtualService `<tenant>` (networking.istio.io/v1): hosts `<subDomain>.<domain>` and the Gateway
of every domain of the application, and a default route (`uri.prefix "/"`, weight 100) to the
Router Service of the version the tenant runs on (`<cav>-<router>-svc.<ns>.svc.cluster.local`,
the router's first port). It is in the routing stage of the tenant's app, so it switches to a
new version only after the upgrade Jobs before it succeeded.

Version affinity (CAPApplication annotation `sme.sap.com/enable-version-affinity: "true"`), route
for route as CAP Operator routes (Istio takes the first match):

    logout-<current>      URI matching the logout endpoint and a `cookie` header holding
                          `CAPOP_CAV=<current>`: to the current version, the cookie expired
                          (`Max-Age=0`) by `response.set`
    logout-<older>        the same for each version the tenant's users may still have sessions on
    affinity-<older>      (`selection.session_versions`, newest first): logout, then any request
                          carrying that version's cookie, to that version's Router
    default               `uri.prefix "/"` to the current version; `response.add` gives the cookie
                          `CAPOP_CAV=<current>` (`add`, so that the Router's own Set-Cookie headers
                          survive on every other response)

The logout endpoint is a path segment of the URI (regex, RE2): `logout` or `logoff` by default,
else the version's annotation `sme.sap.com/logout-endpoint` (no leading slash; CAP Operator reads
it from the CAPApplicationVersion, and btp-gitops also from the CAPApplication for applications
written before). The cookie regex accepts other cookies before and after the version's.

Headers from the annotations `sme.sap.com/vs-route-request-header-set` and
`sme.sap.com/vs-route-response-header-set` (JSON objects of header name to value) are set on
every route; on a logout route the expired cookie is set with them.

DNS entries: a domain with dnsMode Subdomain gets `<subDomain>.<domain>`, and a Custom domain one
record per template whose name uses `{{.subDomain}}`; they are the tenant's, in its app, so the
domain's app does not change when a tenant comes or goes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
_COOKIE_ATTRIBUTES = "Path=/; Secure; HttpOnly"


@dataclass(frozen=True, slots=True)
class RoutingSettings:
    """The application's routing annotations, read once for all of its tenants."""

    version_affinity: bool = False
    logout_endpoint: str = ""  # the CAPApplication's logout-endpoint annotation, "" when unset
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
        logout_endpoint=_logout_endpoint(app.source.body),
        request_headers=_header_map(app, REQUEST_HEADERS_ANNOTATION, problems),
        response_headers=_header_map(app, RESPONSE_HEADERS_ANNOTATION, problems),
    )
    return settings, problems


def _logout_endpoint(body: Mapping[str, Any]) -> str:
    annotations = body.get("metadata", {}).get("annotations") or {}
    return str(annotations.get(LOGOUT_ENDPOINT_ANNOTATION) or "").strip().strip("/")


_REGEX_SPECIAL = frozenset("\\.+*?()|[]{}^$")


def regex_literal(text: str) -> str:
    """`text` matched literally by RE2 (Istio's regex engine): its special characters escaped."""
    return "".join(f"\\{c}" if c in _REGEX_SPECIAL else c for c in text)


def logout_uri_regex(version: Version, settings: RoutingSettings) -> str:
    """A URI with the version's logout endpoint as a path segment, query or fragment after it."""
    endpoint = _logout_endpoint(version.source.body) or settings.logout_endpoint
    alternatives = (regex_literal(endpoint),) if endpoint else DEFAULT_LOGOUT_ENDPOINTS
    return f"^(/[^?#]*)?/({'|'.join(alternatives)})([/?#].*)?$"


def router_destination(version: Version) -> dict[str, Any]:
    router = version.router
    if router is None:  # refused by the version rules for a multi-tenant application
        raise ValueError(f"CAPApplicationVersion {version.name} has no Router")
    return {
        "destination": {"host": service_host(version, router), "port": {"number": router.ports[0].port}},
        "weight": 100,
    }


def cookie_regex(version: Version) -> str:
    """A `Cookie` header holding `CAPOP_CAV=<cav>` among any others, before or after (RE2, whole
    header): the version name ends at `;` or at the end, so `cav-1` never matches `cav-1.1`."""
    return f"^(.*;\\s*)?{VERSION_COOKIE}={regex_literal(version.name)}(\\s*;.*)?$"


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


def _route(name: str, match: dict[str, Any], version: Version, headers: dict[str, Any]) -> dict[str, Any]:
    route: dict[str, Any] = {"name": name, "match": [match], "route": [router_destination(version)]}
    if headers:
        route["headers"] = headers
    return route


def _logout_route(version: Version, settings: RoutingSettings) -> dict[str, Any]:
    match = {
        "uri": {"regex": logout_uri_regex(version, settings)},
        "headers": {"cookie": {"regex": cookie_regex(version)}},
    }
    expired = f"{VERSION_COOKIE}=; Max-Age=0; {_COOKIE_ATTRIBUTES}"
    return _route(f"logout-{version.name}", match, version, _headers(settings, set_cookie=expired))


def http_routes(
    route_to: Version, sessions: tuple[Version, ...], settings: RoutingSettings
) -> list[dict[str, Any]]:
    default_match = {"uri": {"prefix": "/"}}
    if not settings.version_affinity:
        return [_route("default", default_match, route_to, _headers(settings))]
    routes = [_logout_route(route_to, settings)]
    for older in sessions:
        affinity = {"headers": {"cookie": {"regex": cookie_regex(older)}}}
        routes += [
            _logout_route(older, settings),
            _route(f"affinity-{older.name}", affinity, older, _headers(settings)),
        ]
    keep = f"{VERSION_COOKIE}={route_to.name}; {_COOKIE_ATTRIBUTES}"
    return [*routes, _route("default", default_match, route_to, _headers(settings, add_cookie=keep))]


@dataclass(frozen=True, slots=True)
class TenantRoutes:
    """Where one tenant's traffic goes."""

    route_to: Version
    sessions: tuple[Version, ...]  # versions sessions may stay on (version affinity)


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
            "http": http_routes(routes.route_to, routes.sessions, settings),
        },
    }


def tenant_dns_records(domain: Domain, sub_domain: str) -> list[DnsRecord]:
    """The records of one subdomain on a domain; records without a subdomain are the domain's."""
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
