"""The CAP tenant rules and the render see one tenant type, whatever has a tenant's app (issue 32).

A caller may have some tenants' apps from elsewhere (the pipeline's render cache takes the apps an
earlier render made: `TenantRenders.app_of`), but only through the one function the render has
each app with (`AppOf`, handed the tenant and what makes its app): the rules across records (`build_tenant_catalog`) are given the
sources and nothing else, read every record as a `Tenant`, and run before any app is had. Here
that seam is driven directly with the domain's own functions on the `shop` application.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from btp_gitops.generator.core.errors import InvalidSpec, Problem
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.domains.cap import CAP_TENANT, build_catalog
from btp_gitops.generator.domains.cap import render as cap_render
from btp_gitops.generator.domains.cap.tenants import catalog, jobs, model, names, render, routing, selection
from btp_gitops.generator.domains.cap.tenants.catalog import build_tenant_catalog
from btp_gitops.generator.domains.cap.tenants.model import (
    Tenant,
    TenantType,
    tenant_from_source,
    tenant_of_record,
)
from btp_gitops.generator.domains.cap.tenants.render import MakeApp, always_make
from btp_gitops.generator.io.sources import load_sources
from btp_gitops.generator.pipeline.tenant_renders import TenantRenders
from tests.cap_tenants.conftest import recorded_status, tenant_record, write_tenants

TENANT_MODULES = (model, catalog, selection, render, routing, jobs, names, cap_render)


def _tenant_views(hint: Any) -> set[type]:
    """The classes in a type hint that view a tenant record: a dataclass with a tenant id and the
    record it was read from (not `Provider`, the CAPApplication's `spec.provider`)."""
    found: set[type] = set()
    if isinstance(hint, list):
        for item in hint:
            found |= _tenant_views(item)
        return found
    fields = dataclasses.fields(hint) if isinstance(hint, type) and dataclasses.is_dataclass(hint) else ()
    if {"tenant_id", "source"} <= {f.name for f in fields}:
        found.add(hint)
    for argument in typing.get_args(hint):
        found |= _tenant_views(argument)
    return found


def _annotated(module: ModuleType) -> list[tuple[str, Any]]:
    """Every function, class, method and property a module defines, by name."""
    found: list[tuple[str, Any]] = []
    for name, value in vars(module).items():
        if not (inspect.isfunction(value) or isinstance(value, type)) or value.__module__ != module.__name__:
            continue
        found.append((name, value))
        if isinstance(value, type):
            for member, attribute in vars(value).items():
                function = attribute.fget if isinstance(attribute, property) else attribute
                if inspect.isfunction(function) and not member.startswith("__"):  # not dataclass-made
                    found.append((f"{name}.{member}", function))
    return found


def test_the_rules_and_the_render_take_only_the_one_tenant_type() -> None:
    """No function or field of the tenant modules names another view of a tenant record (before:
    `Tenant | KnownTenant` in thirteen places of the catalog), and the model has no other."""
    seen: dict[str, set[type]] = {}
    for module in TENANT_MODULES:
        for name, value in _annotated(module):
            views = set().union(*map(_tenant_views, typing.get_type_hints(value).values()))
            if views:
                seen[f"{module.__name__}.{name}"] = views
    assert {view for views in seen.values() for view in views} == {Tenant}, seen
    assert f"{catalog.__name__}._tenant_id_problems" in seen  # the walk reaches the rules
    in_model = {v for v in vars(model).values() if isinstance(v, type) and _tenant_views(v)}
    assert in_model == {Tenant}
    # The rules are told the sources and the CAP catalog: nothing about where an app comes from.
    assert list(inspect.signature(build_tenant_catalog).parameters) == ["sources", "catalog"]


@pytest.fixture
def tenants_source(shop_source: Path) -> Path:
    return write_tenants(
        shop_source,
        [
            tenant_record("acme", status=recorded_status("shop-2")),  # an upgrade to 3.0.0
            tenant_record("globex"),  # provisioning
            tenant_record("initech", status=recorded_status("shop-3")),  # nothing to do
        ],
    )


def sources_of(source: Path) -> SourceSet:
    return SourceSet.of(load_sources((source,)))


def records_of(sources: SourceSet) -> dict[str, tuple[str, int]]:
    """Each tenant record's key (file as shown, document), by tenant name."""
    return {d.body["metadata"]["name"]: (d.file, d.document) for d in sources.of_kind(*CAP_TENANT)}


def stand_in(tenant: Tenant, make: MakeApp) -> AppRender:
    """An app had without planning or rendering the tenant, as a cache would hand one back."""
    return AppRender(f"elsewhere.{tenant.name}", [], [])


def test_every_tenant_reaches_the_render_as_a_tenant(tenants_source: Path) -> None:
    """Each tenant, the derived provider too, is had once through the function the caller gave,
    as a `Tenant` with its record; what that function returns is the tenant's app, in order."""
    sources = sources_of(tenants_source)
    seen: list[Tenant] = []

    def recording(tenant: Tenant, make: MakeApp) -> AppRender | None:
        seen.append(tenant)
        return make(tenant)

    made = cap_render.render_cap_applications(sources, recording)
    assert [app.app for app in made] == [app.app for app in cap_render.render_cap_applications(sources)]
    assert all(type(tenant) is Tenant for tenant in seen)
    records = records_of(sources)
    assert [(t.name, t.source and (t.source.file, t.source.document)) for t in seen] == [
        ("shop-provider", None),
        ("acme", records["acme"]),
        ("globex", records["globex"]),
        ("initech", records["initech"]),
    ]
    taken = cap_render.render_cap_applications(sources, stand_in)
    tenant_apps = [app.app for app in taken if app.app.startswith("elsewhere.")]
    assert tenant_apps == [
        "elsewhere.shop-provider",
        "elsewhere.acme",
        "elsewhere.globex",
        "elsewhere.initech",
    ]


def refusal(sources: SourceSet, app_of: Any = always_make) -> list[Problem]:
    with pytest.raises(InvalidSpec) as raised:
        cap_render.render_cap_applications(sources, app_of)
    return list(raised.value.problems)


@pytest.mark.parametrize(
    "clash",
    [
        {"tenantId": "tenant-acme"},
        {"subDomain": "acme"},
        {"tenantId": "1a2b3c4d-0000-4000-8000-00000000c001", "subDomain": "shop-provider"},
    ],
    ids=["tenant-id", "subdomain", "provider"],
)
def test_the_rules_across_records_hold_however_the_apps_are_had(
    tenants_source: Path, clash: dict[str, str]
) -> None:
    """A record taking another's tenant id or subdomain, or the provider's (then it must be named
    as the provider): the same problems whether the apps are made or all had elsewhere, and
    none of them is had at all (the rules ran first)."""
    write_tenants(tenants_source, [tenant_record("zeta", spec=clash)])
    sources = sources_of(tenants_source)
    asked: list[Tenant] = []

    def never(tenant: Tenant, make: MakeApp) -> AppRender:
        asked.append(tenant)
        return stand_in(tenant, make)

    problems = refusal(sources, never)
    assert problems == refusal(sources)
    assert asked == []
    shown = "\n".join(problem.render() for problem in problems)
    assert "zeta.yaml" in shown, shown


def test_tenant_renders_take_a_known_app_without_planning_and_keep_the_ones_they_make(
    tenants_source: Path,
) -> None:
    """`TenantRenders.app_of`, the seam the pipeline's cache uses: a record whose app is known is
    neither planned nor rendered (acme asks for a version no CAPApplicationVersion has, a
    problem its plan would report); every other record's app is made and kept by record."""
    write_tenants(tenants_source, [tenant_record("acme", spec={"version": "9.9.9"})])
    sources = sources_of(tenants_source)
    records = records_of(sources)
    assert any("9.9.9" in problem.message for problem in refusal(sources))
    known = AppRender("cap-tenant.shop.acme", [], [])
    renders = TenantRenders(known={records["acme"]: known})
    apps = cap_render.render_cap_applications(sources, renders.app_of)
    assert known in apps
    made = {app.app: app for app in apps}
    assert set(renders.rendered) == {records["globex"], records["initech"]}
    assert all(made[app.app] is app for app in renders.rendered.values() if app is not None)
    # The known record is a tenant like any other to the rules across records.
    tenants = build_tenant_catalog(sources, build_catalog(sources))
    assert [t.name for group in tenants.applications for t in group.tenants] == [
        "shop-provider",
        "acme",
        "globex",
        "initech",
    ]


def test_a_tenant_read_for_the_rules_is_the_whole_tenant_on_first_use(shop_source: Path) -> None:
    """The catalog reads a record's identity at once (`tenant_of_record`) and the rest when the
    tenant is planned: the same fields as `tenant_from_source` reads at once. A status no state
    has is found then, not by the rules across records, which never read it."""
    record = tenant_record(
        "acme",
        status=recorded_status("shop-2", previousCAPApplicationVersions=["shop-1"]),
        annotations={"btp-gitops.io/deprovision": "true", "team": "a"},
        spec={"version": "2.0.0", "versionUpgradeStrategy": "never"},
    )
    record["metadata"]["labels"] = {"tier": "gold"}
    document = SourceDocument("tenants/acme.yaml", 1, record, shop_source)
    lazy, whole = (read(document, TenantType.CONSUMER) for read in (tenant_of_record, tenant_from_source))
    assert lazy == whole and lazy.deprovision_mark == "true"
    assert lazy.details == whole.details
    assert (lazy.version, lazy.status.previous_instances, lazy.labels) == (
        "2.0.0",
        ("shop-1",),
        {"tier": "gold"},
    )
    record["status"]["state"] = "Sleeping"
    broken = tenant_of_record(
        SourceDocument("tenants/acme.yaml", 1, record, shop_source), TenantType.CONSUMER
    )
    assert (broken.tenant_id, broken.sub_domain) == ("tenant-acme", "acme")
    with pytest.raises(ValueError, match="Sleeping"):
        _ = broken.status
