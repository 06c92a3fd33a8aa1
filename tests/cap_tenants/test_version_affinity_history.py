"""Version affinity keeps every earlier version a tenant ran on, through `btp-gitops render`.

CAP Operator routes logout and cookie requests to every version of the tenant's
`status.previousCAPApplicationVersions` that still exists, not only to the last one: its
"upgraded a third time" test has a tenant on its third version whose history holds the first and
the second, and expects a logout route of each of the three (first to last), a cookie route of
each in the same order, then the default route; its "previous version removed" test expects a
version that no longer exists to lose its routes. The rows below restate those cases with the
shop application of these tests (versions shop-1, shop-2, shop-3), plus the cases in between
(an upgrade that renders, a gap in the history), and render them as a user does, with the
installed CLI. Then requests are matched against the rendered routes as Istio matches them
(first match; `regex` is a full match): a session that began on shop-1 stays there until logout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cap_tenants.conftest import NAMESPACE, recorded_status, tenant_record, write_tenants
from tests.conftest import RunCli

AFFINITY = {"sme.sap.com/enable-version-affinity": "true"}
HEADERS = {
    "sme.sap.com/vs-route-request-header-set": '{"x-caller": "edge"}',
    "sme.sap.com/vs-route-response-header-set": '{"x-served-by": "shop"}',
}


def _host(version: str) -> dict[str, Any]:
    return {"host": f"{version}-router-svc.{NAMESPACE}.svc.cluster.local", "port": {"number": 5000}}


def _cookie_regex(version: str) -> str:
    return f"(^|.*; )CAPOP_CAV={version}($|; .*)"


def _extra(headers: bool, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """The route's `headers`: the application's header annotations (when on) and the cookie."""
    found: dict[str, Any] = {}
    if headers:
        found["request"] = {"set": {"x-caller": "edge"}}
    answer: dict[str, Any] = {}
    sets = {**({"x-served-by": "shop"} if headers else {}), **(response or {}).get("set", {})}
    if sets:
        answer["set"] = sets
    if response and "add" in response:
        answer["add"] = response["add"]
    if answer:
        found["response"] = answer
    return found


def logout_route(version: str, headers: bool = False) -> dict[str, Any]:
    expire = {"set": {"Set-Cookie": f"CAPOP_CAV={version};Path=/;HttpOnly;Secure;Max-Age=0"}}
    return {
        "headers": _extra(headers, expire),
        "match": [
            {
                "headers": {"Cookie": {"regex": _cookie_regex(version)}},
                "uri": {"regex": "^|.*(logout|logoff).*"},
            }
        ],
        "route": [{"destination": _host(version), "weight": 100}],
    }


def cookie_route(version: str, headers: bool = False) -> dict[str, Any]:
    route: dict[str, Any] = {}
    if headers:
        route["headers"] = _extra(headers)
    route["match"] = [{"headers": {"Cookie": {"regex": _cookie_regex(version)}}}]
    route["route"] = [{"destination": _host(version), "weight": 100}]
    return route


def default_route(version: str, headers: bool = False) -> dict[str, Any]:
    keep = {"add": {"Set-Cookie": f"CAPOP_CAV={version};Path=/;HttpOnly;Secure"}}
    return {"headers": _extra(headers, keep), "route": [{"destination": _host(version), "weight": 100}]}


def affinity_routes(sessions: list[str], current: str, headers: bool = False) -> list[dict[str, Any]]:
    """CAP Operator's order: logout of each earlier version and of the current one, then the cookie
    routes in the same order, then the default route."""
    versions = [*sessions, current]
    return [
        *(logout_route(v, headers) for v in versions),
        *(cookie_route(v, headers) for v in versions),
        default_route(current, headers),
    ]


@dataclass(frozen=True)
class Row:
    name: str
    status: dict[str, Any]
    sessions: list[str]  # the earlier versions that keep routes, oldest first
    current: str = "shop-3"
    annotations: dict[str, str] = field(default_factory=lambda: dict(AFFINITY))


ROWS = [
    Row(
        "third version: the first and the second keep their routes, first to last",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-1", "shop-2"]),
        ["shop-1", "shop-2"],
    ),
    Row(
        "the upgrade to the third renders: the history, then the recorded current version",
        recorded_status("shop-2", previousCAPApplicationVersions=["shop-1"]),
        ["shop-1", "shop-2"],
    ),
    Row(
        "the order is the history's, not the versions' (a history written out of order stays so)",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-2", "shop-1"]),
        ["shop-2", "shop-1"],
    ),
    Row(
        "a version gone from the sources loses its routes, the others keep theirs",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-1", "shop-0", "shop-2"]),
        ["shop-1", "shop-2"],
    ),
    Row(
        "the only earlier version is gone: the current version's routes alone",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-0"]),
        [],
    ),
    Row(
        "a version named twice has its routes once",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-1", "shop-1", "shop-3"]),
        ["shop-1"],
    ),
]


def _render_routes(run_cli: RunCli, tmp_path: Path, shop_source: Path, row: Row) -> list[dict[str, Any]]:
    application = shop_source / "capapplication.yaml"
    documents = list(yaml.safe_load_all(application.read_text()))
    documents[0]["metadata"]["annotations"] = row.annotations
    application.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    write_tenants(shop_source, [tenant_record("acme", status=row.status)])
    out = tmp_path / "out"
    result = run_cli("render", shop_source, "--out", out, "--cluster", "demo")
    assert result.returncode == 0, result.stderr
    (app,) = (out / "clusters" / "demo").glob(f"tenants/*/*/cap-tenant.{NAMESPACE}.acme")
    services = [
        document
        for path in sorted(app.glob("*.yaml"))
        for document in [yaml.safe_load(path.read_text())]
        if document.get("kind") == "VirtualService"
    ]
    (service,) = services
    routes: list[dict[str, Any]] = service["spec"]["http"]
    return routes


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_every_earlier_version_keeps_its_routes(
    run_cli: RunCli, tmp_path: Path, shop_source: Path, row: Row
) -> None:
    assert _render_routes(run_cli, tmp_path, shop_source, row) == affinity_routes(row.sessions, row.current)


def test_the_header_annotations_go_on_the_routes_of_every_version(
    run_cli: RunCli, tmp_path: Path, shop_source: Path
) -> None:
    row = Row(
        "headers",
        recorded_status("shop-3", previousCAPApplicationVersions=["shop-1", "shop-2"]),
        ["shop-1", "shop-2"],
        annotations={**AFFINITY, **HEADERS},
    )
    routes = _render_routes(run_cli, tmp_path, shop_source, row)
    assert routes == affinity_routes(["shop-1", "shop-2"], "shop-3", headers=True)


def _matches(rule: dict[str, str], value: str | None) -> bool:
    if value is None:
        return False
    if "prefix" in rule:
        return value.startswith(rule["prefix"])
    return re.fullmatch(rule["regex"], value) is not None


def _served(routes: list[dict[str, Any]], path: str, cookie: str | None) -> dict[str, Any]:
    """The first route whose match holds for the request, as Istio picks it."""
    for route in routes:
        for match in route.get("match", [{}]):
            if ("uri" not in match or _matches(match["uri"], path)) and all(
                _matches(rule, cookie) for rule in match.get("headers", {}).values()
            ):
                return route
    raise AssertionError(f"no route serves {path} with cookie {cookie}")


REQUESTS = [
    # path, Cookie header -> version served, Set-Cookie (how, value) or None
    ("/books", "CAPOP_CAV=shop-1", "shop-1", None),  # a session begun two versions ago
    ("/books", "lang=en; CAPOP_CAV=shop-1; theme=dark", "shop-1", None),
    ("/books", "CAPOP_CAV=shop-2", "shop-2", None),
    ("/logout", "CAPOP_CAV=shop-1", "shop-1", ("set", "CAPOP_CAV=shop-1;Path=/;HttpOnly;Secure;Max-Age=0")),
    ("/logout", "CAPOP_CAV=shop-2", "shop-2", ("set", "CAPOP_CAV=shop-2;Path=/;HttpOnly;Secure;Max-Age=0")),
    ("/books", None, "shop-3", ("add", "CAPOP_CAV=shop-3;Path=/;HttpOnly;Secure")),  # after logout
    ("/books", "CAPOP_CAV=shop-0", "shop-3", ("add", "CAPOP_CAV=shop-3;Path=/;HttpOnly;Secure")),
]


@pytest.mark.parametrize(("path", "cookie", "version", "set_cookie"), REQUESTS)
def test_a_session_stays_on_its_version_until_logout(
    run_cli: RunCli,
    tmp_path: Path,
    shop_source: Path,
    path: str,
    cookie: str | None,
    version: str,
    set_cookie: tuple[str, str] | None,
) -> None:
    routes = _render_routes(run_cli, tmp_path, shop_source, ROWS[0])
    route = _served(routes, path, cookie)
    assert route["route"][0]["destination"] == _host(version)
    response = route.get("headers", {}).get("response", {})
    found = [(how, headers["Set-Cookie"]) for how, headers in response.items() if "Set-Cookie" in headers]
    assert found == ([set_cookie] if set_cookie else [])
