"""Version affinity in a tenant's VirtualService, route for route as CAP Operator routes.

Inputs as the upstream documentation writes them ("Version Affinity during Upgrade"): the
CAPApplication annotated `sme.sap.com/enable-version-affinity: "true"`, a version with its own
`sme.sap.com/logout-endpoint`, and the `vs-route-*-header-set` annotations with JSON objects.
Expected routes are written out field by field from CAP Operator's behaviour (its tenant
VirtualService: logout routes of each previous version still there and of the current one, cookie
routes in the same order, a default route without match; cookie `CAPOP_CAV`; `response.set` with `Max-Age=0` on logout,
`response.add` on the default route; no route names). Then as behaviour: requests (path, Cookie
header) are matched against the rendered routes the way Istio does (first match wins; `regex` is
a full match, RE2 syntax that Python's `re` reads the same for these patterns).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import InvalidSpec
from tests.cap_tenants.conftest import (
    objects_of_kind,
    recorded_status,
    render_files,
    tenant_objects,
    tenant_record,
    write_tenants,
)

AFFINITY = {"sme.sap.com/enable-version-affinity": "true"}
HEADERS = {
    "sme.sap.com/vs-route-request-header-set": '{"x-downstream-peer-subject": "%DOWNSTREAM_PEER_SUBJECT%"}',
    "sme.sap.com/vs-route-response-header-set": '{"foo": "bar"}',
}


def _annotate(path: Path, annotations: dict[str, str]) -> None:
    documents = list(yaml.safe_load_all(path.read_text()))
    documents[0]["metadata"]["annotations"] = annotations
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def destination(version: str) -> dict[str, Any]:
    return {"host": f"{version}-router-svc.shop.svc.cluster.local", "port": {"number": 5000}}


def cookie_match(version: str) -> dict[str, Any]:
    return {"Cookie": {"regex": f"(^|.*; )CAPOP_CAV={version}($|; .*)"}}


def logout(
    version: str, uri: str = "^|.*(logout|logoff).*", *, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    headers: dict[str, Any] = {
        "response": {"set": {"Set-Cookie": f"CAPOP_CAV={version};Path=/;HttpOnly;Secure;Max-Age=0"}}
    }
    if extra:
        headers = {
            "request": {"set": extra["request"]},
            "response": {"set": {**extra["response"], **headers["response"]["set"]}},
        }
    return {
        "headers": headers,
        "match": [{"headers": cookie_match(version), "uri": {"regex": uri}}],
        "route": [{"destination": destination(version), "weight": 100}],
    }


def cookie(version: str, *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    route: dict[str, Any] = {}
    if extra:
        route["headers"] = {"request": {"set": extra["request"]}, "response": {"set": extra["response"]}}
    route["match"] = [{"headers": cookie_match(version)}]
    route["route"] = [{"destination": destination(version), "weight": 100}]
    return route


def default(version: str, *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"add": {"Set-Cookie": f"CAPOP_CAV={version};Path=/;HttpOnly;Secure"}}
    headers: dict[str, Any] = {"response": response}
    if extra:
        headers = {"request": {"set": extra["request"]}, "response": {"set": extra["response"], **response}}
    return {"headers": headers, "route": [{"destination": destination(version), "weight": 100}]}


EXTRA = {"request": {"x-downstream-peer-subject": "%DOWNSTREAM_PEER_SUBJECT%"}, "response": {"foo": "bar"}}


@dataclass(frozen=True)
class Row:
    name: str
    status: dict[str, Any]  # the tenant's recorded status
    expected: list[dict[str, Any]]
    application: dict[str, str] = field(default_factory=lambda: dict(AFFINITY))
    versions: dict[str, dict[str, str]] = field(default_factory=dict)  # file -> annotations


ROWS = [
    Row(
        "upgrade renders: the recorded current version is the previous one",
        recorded_status("shop-2"),
        [logout("shop-2"), logout("shop-3"), cookie("shop-2"), cookie("shop-3"), default("shop-3")],
    ),
    Row(
        "after the upgrade: every earlier version still in the sources, oldest first",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-1", "shop-2"]),
        [
            logout("shop-1"),
            logout("shop-2"),
            logout("shop-3"),
            cookie("shop-1"),
            cookie("shop-2"),
            cookie("shop-3"),
            default("shop-3"),
        ],
    ),
    Row(
        "first version: logout, cookie and default of the current version only",
        recorded_status("shop-3"),
        [logout("shop-3"), cookie("shop-3"), default("shop-3")],
    ),
    Row(
        "previous version no longer in the sources: no routes for it, older ones keep theirs",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-1", "shop-0"]),
        [logout("shop-1"), logout("shop-3"), cookie("shop-1"), cookie("shop-3"), default("shop-3")],
    ),
    Row(
        "each version's own logout endpoint",
        recorded_status("shop-2"),
        [
            logout("shop-2", "^|.*(custom-logout).*"),
            logout("shop-3"),
            cookie("shop-2"),
            cookie("shop-3"),
            default("shop-3"),
        ],
        versions={"version-2.yaml": {"sme.sap.com/logout-endpoint": "custom-logout"}},
    ),
    Row(
        "the logout endpoint is read from the versions only, as CAP Operator reads it",
        recorded_status("shop-3"),
        [logout("shop-3"), cookie("shop-3"), default("shop-3")],
        application={**AFFINITY, "sme.sap.com/logout-endpoint": "custom-logout"},
    ),
    Row(
        "header annotations on every route, the cookie's Set-Cookie among the response headers",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-2"]),
        [
            logout("shop-2", extra=EXTRA),
            logout("shop-3", extra=EXTRA),
            cookie("shop-2", extra=EXTRA),
            cookie("shop-3", extra=EXTRA),
            default("shop-3", extra=EXTRA),
        ],
        application={**AFFINITY, **HEADERS},
    ),
    Row(
        "without version affinity: one route, no cookie",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-2"]),
        [
            {
                "match": [{"uri": {"prefix": "/"}}],
                "route": [{"destination": destination("shop-3"), "weight": 100}],
            }
        ],
        application={},
    ),
    Row(
        "without version affinity the header annotations go on the destination",
        recorded_status("shop-3"),
        [
            {
                "match": [{"uri": {"prefix": "/"}}],
                "route": [
                    {
                        "destination": destination("shop-3"),
                        "weight": 100,
                        "headers": {
                            "request": {"set": EXTRA["request"]},
                            "response": {"set": EXTRA["response"]},
                        },
                    }
                ],
            }
        ],
        application=dict(HEADERS),
    ),
]


def _routes(source: Path, row: Row) -> list[dict[str, Any]]:
    if row.application:
        _annotate(source / "capapplication.yaml", row.application)
    for file, version_annotations in row.versions.items():
        _annotate(source / file, version_annotations)
    write_tenants(source, [tenant_record("acme", status=row.status)])
    (service,) = objects_of_kind(tenant_objects(render_files(source), "acme"), "VirtualService")
    http: list[dict[str, Any]] = service["spec"]["http"]
    return http


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_routes_field_by_field(shop_source: Path, row: Row) -> None:
    assert _routes(shop_source, row) == row.expected


def _string_match(rule: dict[str, str], value: str | None) -> bool:
    if value is None:
        return False
    if "prefix" in rule:
        return value.startswith(rule["prefix"])
    return re.fullmatch(rule["regex"], value) is not None


def served_by(routes: list[dict[str, Any]], path: str, cookie_header: str | None) -> int:
    """The index of the first route whose match holds for the request, as Istio picks it (header
    names compare without case, as Envoy compares them)."""
    for index, route in enumerate(routes):
        for match in route.get("match", [{}]):
            uri_ok = "uri" not in match or _string_match(match["uri"], path)
            headers_ok = all(
                _string_match(rule, cookie_header if name.lower() == "cookie" else None)
                for name, rule in match.get("headers", {}).items()
            )
            if uri_ok and headers_ok:
                return index
    raise AssertionError(f"no route for {path} {cookie_header}")


@pytest.fixture
def upgrade_routes(shop_source: Path) -> list[dict[str, Any]]:
    return _routes(shop_source, ROWS[0])


EXPIRE_2 = ("set", "CAPOP_CAV=shop-2;Path=/;HttpOnly;Secure;Max-Age=0")
EXPIRE_3 = ("set", "CAPOP_CAV=shop-3;Path=/;HttpOnly;Secure;Max-Age=0")
KEEP_3 = ("add", "CAPOP_CAV=shop-3;Path=/;HttpOnly;Secure")
REQUESTS = [
    # path, Cookie header -> route index, version served, Set-Cookie (how, value)
    ("/", None, 4, "shop-3", KEEP_3),
    ("/books", "CAPOP_CAV=shop-2", 2, "shop-2", None),
    ("/books", "JSESSIONID=s1; CAPOP_CAV=shop-2", 2, "shop-2", None),
    ("/books", "a=1; CAPOP_CAV=shop-2; b=2", 2, "shop-2", None),
    ("/books", "CAPOP_CAV=shop-3", 3, "shop-3", None),
    ("/books", "CAPOP_CAV=shop-1", 4, "shop-3", KEEP_3),  # not in the tenant's history: current version
    ("/books", "XCAPOP_CAV=shop-2", 4, "shop-3", KEEP_3),
    ("/logout", "JSESSIONID=s1; CAPOP_CAV=shop-3", 1, "shop-3", EXPIRE_3),
    ("/do/logoff?redirect=/", "CAPOP_CAV=shop-2; x=y", 0, "shop-2", EXPIRE_2),
    ("/app/logout/", "CAPOP_CAV=shop-2", 0, "shop-2", EXPIRE_2),
    ("/logout", None, 4, "shop-3", KEEP_3),
]


@pytest.mark.parametrize(("path", "cookie_header", "index", "version", "set_cookie"), REQUESTS)
def test_requests_are_served_as_cap_operator_serves_them(
    upgrade_routes: list[dict[str, Any]],
    path: str,
    cookie_header: str | None,
    index: int,
    version: str,
    set_cookie: tuple[str, str] | None,
) -> None:
    found = served_by(upgrade_routes, path, cookie_header)
    route = upgrade_routes[found]
    assert (found, route["route"][0]["destination"]) == (index, destination(version))
    response = route.get("headers", {}).get("response", {})
    cookies = [(how, headers["Set-Cookie"]) for how, headers in response.items() if "Set-Cookie" in headers]
    assert cookies == ([set_cookie] if set_cookie else [])


@pytest.mark.parametrize(
    ("endpoint", "refused"),
    [
        pytest.param("custom-logout", False, id="the docs' example"),
        pytest.param("sign(out|off)", False, id="a regular expression"),
        pytest.param("do/logout", False, id="a path"),
        pytest.param("sign(out", True, id="no regular expression"),
        pytest.param("(?!x)logout", True, id="lookahead: RE2 cannot read it"),
        pytest.param("(a)\\1", True, id="a backreference: RE2 cannot read it"),
        pytest.param("log\nout", True, id="a control character"),
        pytest.param("x" * 254, True, id="too long"),
    ],
)
def test_a_logout_endpoint_istio_cannot_read_is_refused_by_field(
    shop_source: Path, endpoint: str, refused: bool
) -> None:
    _annotate(shop_source / "capapplication.yaml", AFFINITY)
    _annotate(shop_source / "version-2.yaml", {"sme.sap.com/logout-endpoint": endpoint})
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-3"))])
    if not refused:
        render_files(shop_source)
        return
    with pytest.raises(InvalidSpec) as raised:
        render_files(shop_source)
    [problem] = raised.value.problems
    assert (problem.object_ref, problem.field_path) == (
        "CAPApplicationVersion shop/shop-2",
        "metadata.annotations.sme.sap.com/logout-endpoint",
    )
    assert problem.message.startswith("must be a path (a regular expression Istio reads, RE2)")


def test_the_logout_endpoint_is_not_read_without_version_affinity(shop_source: Path) -> None:
    _annotate(shop_source / "version-2.yaml", {"sme.sap.com/logout-endpoint": "sign(out"})
    write_tenants(shop_source, [tenant_record("acme", status=recorded_status("shop-3"))])
    render_files(shop_source)  # CAP Operator reads it only for version affinity: no problem
