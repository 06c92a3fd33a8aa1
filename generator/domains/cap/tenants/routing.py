"""A tenant's traffic: its VirtualService and the DNS entries of its subdomain.

VirtualService `<tenant>` (networking.istio.io/v1): hosts `<subDomain>.<domain>` and the Gateway
of every domain of the application, and a default route (`uri.prefix "/"`, weight 100) to the
Router Service of the version the tenant runs on (`<cav>-<router>-svc.<ns>.svc.cluster.local`,
the router's first port). It is in the routing stage of the tenant's app, so it switches to a
new version only after the upgrade Jobs before it succeeded.

Version affinity (CAPApplication annotation `sme.sap.com/enable-version-affinity: "true"`): the
default route adds the cookie `CAPOP_CAV=<cav>` to every response, and for each version the
tenant's users may still have sessions on (`selection.session_versions`) a route sends requests
carrying that version's cookie to that version's Router, so a session survives the switch. Its
logout endpoint (annotation `sme.sap.com/logout-endpoint`, default `logout`) still goes to the old
version but clears the cookie, so the next session starts on the new one. Logout routes come
first, then cookie routes, then the default route (Istio takes the first match).

Headers from the annotations `sme.sap.com/vs-route-request-header-set` and
`sme.sap.com/vs-route-response-header-set` (JSON objects of header name to value) are set on
every route. The cookie goes in `response.add`, never `set`: the Router's own Set-Cookie headers
must survive.

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
from btp_gitops.generator.domains.cap.dns import DnsRecord, expand, uses_subdomain
from btp_gitops.generator.domains.cap.identity import CAV_VERSION, gateway_reference, service_host
from btp_gitops.generator.domains.cap.model import Application, DnsMode, Domain, Version
from btp_gitops.generator.domains.cap.networking import dns_entry
from btp_gitops.generator.domains.cap.tenants.model import Tenant

VERSION_AFFINITY_ANNOTATION = "sme.sap.com/enable-version-affinity"
LOGOUT_ENDPOINT_ANNOTATION = "sme.sap.com/logout-endpoint"
REQUEST_HEADERS_ANNOTATION = "sme.sap.com/vs-route-request-header-set"
RESPONSE_HEADERS_ANNOTATION = "sme.sap.com/vs-route-response-header-set"
VERSION_COOKIE = "CAPOP_CAV"
DEFAULT_LOGOUT_ENDPOINT = "logout"
_COOKIE_ATTRIBUTES = "Path=/; Secure; HttpOnly"


@dataclass(frozen=True, slots=True)
class RoutingSettings:
    """The application's routing annotations, read once for all of its tenants."""

    version_affinity: bool = False
    logout_path: str = f"/{DEFAULT_LOGOUT_ENDPOINT}"
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
    logout = str(annotations.get(LOGOUT_ENDPOINT_ANNOTATION) or DEFAULT_LOGOUT_ENDPOINT).strip("/")
    settings = RoutingSettings(
        version_affinity=annotations.get(VERSION_AFFINITY_ANNOTATION) == "true",
        logout_path=f"/{logout}",
        request_headers=_header_map(app, REQUEST_HEADERS_ANNOTATION, problems),
        response_headers=_header_map(app, RESPONSE_HEADERS_ANNOTATION, problems),
    )
    return settings, problems


def router_destination(version: Version) -> dict[str, Any]:
    router = version.router
    if router is None:  # refused by the version rules for a multi-tenant application
        raise ValueError(f"CAPApplicationVersion {version.name} has no Router")
    return {
        "destination": {"host": service_host(version, router), "port": {"number": router.ports[0].port}},
        "weight": 100,
    }


def cookie_match(version: Version) -> dict[str, Any]:
    """A `Cookie` header holding `CAPOP_CAV=<cav>` among any others (RE2, whole header)."""
    name = version.name.replace(".", "\\.")  # object names hold [a-z0-9.-]: only dots need escaping
    return {"cookie": {"regex": f"^(.*;\\s*)?{VERSION_COOKIE}={name}(;.*)?$"}}


def _headers(settings: RoutingSettings, set_cookie: str | None) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if settings.request_headers:
        headers["request"] = {"set": dict(settings.request_headers)}
    response: dict[str, Any] = {}
    if settings.response_headers:
        response["set"] = dict(settings.response_headers)
    if set_cookie is not None:
        response["add"] = {"Set-Cookie": set_cookie}
    if response:
        headers["response"] = response
    return headers


def _route(
    name: str, match: dict[str, Any], version: Version, settings: RoutingSettings, set_cookie: str | None
) -> dict[str, Any]:
    route: dict[str, Any] = {"name": name, "match": [match], "route": [router_destination(version)]}
    headers = _headers(settings, set_cookie)
    if headers:
        route["headers"] = headers
    return route


def http_routes(
    route_to: Version, sessions: tuple[Version, ...], settings: RoutingSettings
) -> list[dict[str, Any]]:
    if not settings.version_affinity:
        return [_route("default", {"uri": {"prefix": "/"}}, route_to, settings, None)]
    clear = f"{VERSION_COOKIE}=; Max-Age=0; {_COOKIE_ATTRIBUTES}"
    logouts = [
        _route(
            f"logout-{v.name}",
            {"uri": {"prefix": settings.logout_path}, "headers": cookie_match(v)},
            v,
            settings,
            clear,
        )
        for v in sessions
    ]
    affinity = [
        _route(f"affinity-{v.name}", {"headers": cookie_match(v)}, v, settings, None) for v in sessions
    ]
    keep = f"{VERSION_COOKIE}={route_to.name}; {_COOKIE_ATTRIBUTES}"
    return [*logouts, *affinity, _route("default", {"uri": {"prefix": "/"}}, route_to, settings, keep)]


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
    values = {"domain": domain.host, "dnsTarget": domain.dns_target, "subDomain": sub_domain}
    records = {
        DnsRecord(expand(t.name, values), expand(t.target, values))
        for t in domain.dns_templates
        if uses_subdomain(t.name)
    }
    return sorted(records)


def tenant_dns_entries(tenant: Tenant, domains: tuple[Domain, ...]) -> list[KubeObject]:
    return [dns_entry(d, record) for d in domains for record in tenant_dns_records(d, tenant.sub_domain)]
