"""Version affinity in a tenant's VirtualService, route for route as CAP Operator routes.

Inputs as the upstream documentation writes them ("Version Affinity during Upgrade"): the
CAPApplication annotated `sme.sap.com/enable-version-affinity: "true"`, one version with its own
`sme.sap.com/logout-endpoint: "custom-logout"`. The tenant runs on shop-2 with shop-1 before it and
is upgraded to shop-3. Asserted field by field (route order, match regexes, headers), then as
behaviour: requests (path, Cookie header) are matched against the rendered routes the way Istio
does (first match wins; `regex` is a full match, RE2 syntax that Python's `re` reads the same
for these patterns), and the table says which route and version serve each one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cap_tenants.conftest import (
    objects_of_kind,
    recorded_status,
    render_files,
    tenant_objects,
    tenant_record,
    write_tenants,
)

DEFAULT_LOGOUT = "^(/[^?#]*)?/(logout|logoff)([/?#].*)?$"
CUSTOM_LOGOUT = "^(/[^?#]*)?/(custom-logout)([/?#].*)?$"
EXPIRED = "CAPOP_CAV=; Max-Age=0; Path=/; Secure; HttpOnly"


def _annotate(path: Path, annotations: dict[str, str]) -> None:
    documents = list(yaml.safe_load_all(path.read_text()))
    documents[0]["metadata"]["annotations"] = annotations
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def cookie(version: str) -> str:
    return f"^(.*;\\s*)?CAPOP_CAV={version}(\\s*;.*)?$"


@pytest.fixture
def routes(shop_source: Path) -> list[dict[str, Any]]:
    _annotate(shop_source / "capapplication.yaml", {"sme.sap.com/enable-version-affinity": "true"})
    _annotate(shop_source / "version-1.yaml", {"sme.sap.com/logout-endpoint": "custom-logout"})
    status = recorded_status("shop-2", previousCAPApplicationVersions=["shop-1"])
    write_tenants(shop_source, [tenant_record("acme", status=status)])
    (service,) = objects_of_kind(tenant_objects(render_files(shop_source), "acme"), "VirtualService")
    http: list[dict[str, Any]] = service["spec"]["http"]
    return http


def _destination(version: str) -> list[dict[str, Any]]:
    host = f"{version}-router-svc.shop.svc.cluster.local"
    return [{"destination": {"host": host, "port": {"number": 5000}}, "weight": 100}]


def test_routes_field_by_field(routes: list[dict[str, Any]]) -> None:
    logout_headers = {"response": {"set": {"Set-Cookie": EXPIRED}}}
    assert routes == [
        {
            "name": "logout-shop-3",
            "match": [{"uri": {"regex": DEFAULT_LOGOUT}, "headers": {"cookie": {"regex": cookie("shop-3")}}}],
            "route": _destination("shop-3"),
            "headers": logout_headers,
        },
        {
            "name": "logout-shop-2",
            "match": [{"uri": {"regex": DEFAULT_LOGOUT}, "headers": {"cookie": {"regex": cookie("shop-2")}}}],
            "route": _destination("shop-2"),
            "headers": logout_headers,
        },
        {
            "name": "affinity-shop-2",
            "match": [{"headers": {"cookie": {"regex": cookie("shop-2")}}}],
            "route": _destination("shop-2"),
        },
        {
            "name": "logout-shop-1",
            "match": [{"uri": {"regex": CUSTOM_LOGOUT}, "headers": {"cookie": {"regex": cookie("shop-1")}}}],
            "route": _destination("shop-1"),
            "headers": logout_headers,
        },
        {
            "name": "affinity-shop-1",
            "match": [{"headers": {"cookie": {"regex": cookie("shop-1")}}}],
            "route": _destination("shop-1"),
        },
        {
            "name": "default",
            "match": [{"uri": {"prefix": "/"}}],
            "route": _destination("shop-3"),
            "headers": {"response": {"add": {"Set-Cookie": "CAPOP_CAV=shop-3; Path=/; Secure; HttpOnly"}}},
        },
    ]


def _string_match(rule: dict[str, str], value: str | None) -> bool:
    if value is None:
        return False
    if "prefix" in rule:
        return value.startswith(rule["prefix"])
    return re.fullmatch(rule["regex"], value) is not None


def served_by(routes: list[dict[str, Any]], path: str, cookie_header: str | None) -> dict[str, Any]:
    """The first route whose match holds for the request, as Istio picks it."""
    for route in routes:
        for match in route["match"]:
            uri_ok = "uri" not in match or _string_match(match["uri"], path)
            headers_ok = all(
                _string_match(rule, cookie_header if name == "cookie" else None)
                for name, rule in match.get("headers", {}).items()
            )
            if uri_ok and headers_ok:
                return route
    raise AssertionError(f"no route for {path} {cookie_header}")


REQUESTS = [
    # path, Cookie header -> route, version served, Set-Cookie (how, value)
    ("/", None, "default", "shop-3", ("add", "CAPOP_CAV=shop-3; Path=/; Secure; HttpOnly")),
    ("/books", "CAPOP_CAV=shop-2", "affinity-shop-2", "shop-2", None),
    ("/books", "JSESSIONID=s1; CAPOP_CAV=shop-2", "affinity-shop-2", "shop-2", None),
    ("/books", "a=1;CAPOP_CAV=shop-1; b=2", "affinity-shop-1", "shop-1", None),
    (
        "/books",
        "CAPOP_CAV=shop-2.1",
        "default",
        "shop-3",
        ("add", "CAPOP_CAV=shop-3; Path=/; Secure; HttpOnly"),
    ),
    (
        "/books",
        "XCAPOP_CAV=shop-2",
        "default",
        "shop-3",
        ("add", "CAPOP_CAV=shop-3; Path=/; Secure; HttpOnly"),
    ),
    ("/logout", "JSESSIONID=s1; CAPOP_CAV=shop-3", "logout-shop-3", "shop-3", ("set", EXPIRED)),
    ("/do/logoff?redirect=/", "CAPOP_CAV=shop-2; x=y", "logout-shop-2", "shop-2", ("set", EXPIRED)),
    ("/app/logout/", "CAPOP_CAV=shop-2", "logout-shop-2", "shop-2", ("set", EXPIRED)),
    ("/logouts", "CAPOP_CAV=shop-2", "affinity-shop-2", "shop-2", None),
    ("/custom-logout", "CAPOP_CAV=shop-1", "logout-shop-1", "shop-1", ("set", EXPIRED)),
    ("/logout", "CAPOP_CAV=shop-1", "affinity-shop-1", "shop-1", None),  # shop-1 logs out elsewhere
    ("/logout", None, "default", "shop-3", ("add", "CAPOP_CAV=shop-3; Path=/; Secure; HttpOnly")),
]


@pytest.mark.parametrize(("path", "cookie_header", "name", "version", "set_cookie"), REQUESTS)
def test_requests_are_served_as_cap_operator_serves_them(
    routes: list[dict[str, Any]],
    path: str,
    cookie_header: str | None,
    name: str,
    version: str,
    set_cookie: tuple[str, str] | None,
) -> None:
    route = served_by(routes, path, cookie_header)
    assert (route["name"], route["route"]) == (name, _destination(version))
    response = route.get("headers", {}).get("response", {})
    found = [(how, headers["Set-Cookie"]) for how, headers in response.items() if "Set-Cookie" in headers]
    assert found == ([set_cookie] if set_cookie else [])


def test_without_affinity_one_route_and_no_cookie(shop_source: Path) -> None:
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-2"))])
    (service,) = objects_of_kind(tenant_objects(render_files(shop_source), "acme"), "VirtualService")
    assert service["spec"]["http"] == [
        {"name": "default", "match": [{"uri": {"prefix": "/"}}], "route": _destination("shop-3")}
    ]
