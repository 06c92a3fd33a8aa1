"""Which versions are candidates for cleanup (pure): no Ready version, the highest Ready version and
newer ones kept, versions below it (Ready or not) taken, and every way a tenant holds a version
(runs on it, pinned to it, upgrading to the newest, provisioning, deprovisioning, `never`), as the
generator's selection decides them; plus the annotation's values and reading an application with
its derived provider tenant from a source tree. Nothing is faked."""

from __future__ import annotations

from pathlib import Path

import pytest

from btp_gitops.controller.cap.version_cleanup import (
    CleanupMode,
    cleanup_mode,
    read_application,
    select_candidates,
    tenant_holds,
)
from btp_gitops.controller.errors import UnreadableSource
from btp_gitops.generator.domains.cap.model import Version
from tests.controller.version_cleanup.builders import (
    Document,
    application,
    as_application,
    as_tenant,
    as_version,
    domain,
    tenant,
    version,
    version_name,
    write_tree,
)

NS = "shop-ns"
SEMVERS = ("1.0.0", "1.1.0", "1.2.0", "2.0.0")
VERSIONS = [as_version(version(NS, v)) for v in SEMVERS]


def _names(versions: tuple[Version, ...]) -> list[str]:
    return [v.version for v in versions]


def _kept(ready: set[str], holds: dict[str, str] | None = None) -> dict[str, str]:
    selection = select_candidates(VERSIONS, {version_name(v) for v in ready}, holds or {})
    return {k.version.version: k.reason for k in selection.kept}


@pytest.mark.parametrize(
    ("ready", "candidates"),
    [
        (set(), []),
        ({"1.0.0"}, []),
        ({"1.1.0"}, ["1.0.0"]),
        ({"1.0.0", "1.1.0"}, ["1.0.0"]),
        ({"1.2.0"}, ["1.0.0", "1.1.0"]),  # below the highest Ready version, Ready or not
        ({"1.0.0", "2.0.0"}, ["1.0.0", "1.1.0", "1.2.0"]),
    ],
)
def test_candidates_lie_below_the_highest_ready_version(ready: set[str], candidates: list[str]) -> None:
    selection = select_candidates(VERSIONS, {version_name(v) for v in ready}, {})
    assert _names(selection.candidates) == candidates


def test_without_a_ready_version_nothing_is_a_candidate() -> None:
    selection = select_candidates(VERSIONS, set(), {})
    assert selection.highest_ready is None
    assert _kept(set()) == dict.fromkeys(SEMVERS, "no version of the application is Ready")


def test_highest_ready_and_newer_versions_are_kept() -> None:
    assert _kept({"1.0.0", "1.1.0"}) == {
        "1.1.0": "the highest Ready version",
        "1.2.0": "newer than the highest Ready version 1.1.0",
        "2.0.0": "newer than the highest Ready version 1.1.0",
    }


def test_versions_a_tenant_holds_are_kept() -> None:
    holds = {version_name("1.0.0"): "CAPTenant shop-ns/acme runs on it"}
    selection = select_candidates(VERSIONS, {version_name("2.0.0")}, holds)
    assert _names(selection.candidates) == ["1.1.0", "1.2.0"]
    assert _kept({"2.0.0"}, holds)["1.0.0"] == "CAPTenant shop-ns/acme runs on it"


def test_a_version_that_is_not_semver_is_kept() -> None:
    odd = as_version(version(NS, "latest", name="shop-odd"))  # the schema refuses it; no trip here either
    selection = select_candidates([*VERSIONS, odd], {version_name("2.0.0")}, {})
    assert "shop-odd" not in [v.name for v in selection.candidates]
    assert [k.reason for k in selection.kept if k.version is odd] == [
        "spec.version 'latest' is not a semantic version"
    ]


# --- what tenants hold, as the generator's selection sees it ----------------------------------------


def _holds(*tenants: Document) -> dict[str, str]:
    app = as_application(application(NS))
    return tenant_holds(app, VERSIONS, [as_tenant(t) for t in tenants])


def test_tenant_on_a_version_holds_it() -> None:
    holds = _holds(tenant(NS, "acme", current="1.1.0", never_upgrade=True))
    assert holds == {version_name("1.1.0"): "CAPTenant shop-ns/acme runs on it"}


def test_tenant_upgrading_to_the_newest_holds_both_versions() -> None:
    holds = _holds(tenant(NS, "acme", current="1.0.0"))
    assert holds == {
        version_name("1.0.0"): "CAPTenant shop-ns/acme runs on it",
        version_name("2.0.0"): "CAPTenant shop-ns/acme is upgrading to it",
    }


def test_tenant_pinned_to_a_version_holds_it() -> None:
    holds = _holds(tenant(NS, "acme", current="1.0.0", pinned="1.1.0"))
    assert holds == {
        version_name("1.0.0"): "CAPTenant shop-ns/acme runs on it",
        version_name("1.1.0"): "CAPTenant shop-ns/acme is upgrading to it",
    }


def test_tenant_being_provisioned_holds_its_target() -> None:
    holds = _holds(tenant(NS, "globex", pinned="1.2.0"))
    assert holds == {version_name("1.2.0"): "CAPTenant shop-ns/globex is being provisioned on it"}


def test_tenant_being_deprovisioned_holds_the_version_it_runs_on() -> None:
    holds = _holds(tenant(NS, "initech", current="1.0.0", never_upgrade=True, deprovision=True))
    assert holds == {version_name("1.0.0"): "CAPTenant shop-ns/initech runs on it"}


def test_tenant_that_would_downgrade_still_holds_both_versions() -> None:
    # The generator refuses the downgrade (a problem, no plan); until someone fixes the record
    # neither version may go.
    holds = _holds(tenant(NS, "acme", current="1.2.0", pinned="1.0.0"))
    assert set(holds) == {version_name("1.2.0"), version_name("1.0.0")}


def test_selection_with_tenants_end_to_end() -> None:
    holds = _holds(tenant(NS, "acme", current="1.0.0", pinned="1.1.0"), tenant(NS, "globex", current="2.0.0"))
    selection = select_candidates(VERSIONS, {version_name("1.2.0"), version_name("2.0.0")}, holds)
    assert _names(selection.candidates) == ["1.2.0"]


# --- the annotation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("true", CleanupMode.ENABLED),
        ("dry-run", CleanupMode.DRY_RUN),
        ("True", CleanupMode.ENABLED),
        ("false", None),
        ("yes", None),
        (None, None),
    ],
)
def test_cleanup_mode_from_the_annotation(value: str | None, mode: CleanupMode | None) -> None:
    assert cleanup_mode(as_application(application(NS, mode=value))) == mode


# --- reading the source tree ---------------------------------------------------------------------------


def test_read_application_includes_the_derived_provider_tenant(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        [
            application(NS),
            domain(NS),
            version(NS, "1.0.0"),
            version(NS, "1.1.0"),
            tenant(NS, "acme", current="1.0.0", never_upgrade=True),
            application("other-ns"),
            version("other-ns", "9.0.0"),
        ],
    )
    sources = read_application(tmp_path, NS, "shop")
    assert sources is not None
    assert [v.version for v in sources.versions] == ["1.0.0", "1.1.0"]
    assert [t.name for t in sources.tenants] == ["shop-provider", "acme"]
    holds = tenant_holds(sources.app, sources.versions, sources.tenants)
    assert holds == {
        version_name("1.1.0"): "CAPTenant shop-ns/shop-provider is being provisioned on it",
        version_name("1.0.0"): "CAPTenant shop-ns/acme runs on it",
    }
    assert read_application(tmp_path, NS, "absent") is None


def test_read_application_refuses_invalid_sources(tmp_path: Path) -> None:
    broken = version(NS, "1.0.0")
    broken["spec"]["workloads"][0]["deploymentDefinition"]["monitoring"] = {
        "deletionRules": {
            "metrics": [{"name": "m", "type": "Histogram", "calculationPeriod": "5m", "thresholdValue": "0"}]
        }
    }
    write_tree(tmp_path, [application(NS), domain(NS), broken])
    with pytest.raises(UnreadableSource, match=r"the source tree has unreadable CAP documents: .*monitoring"):
        read_application(tmp_path, NS, "shop")
