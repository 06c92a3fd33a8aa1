"""diff.compare.paths_in_apps: the search over joined paths that narrows a comparison to the
changed apps picks exactly the paths the path-by-path rule (`app_of`) gives, in their order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from btp_gitops.generator.diff.compare import CLUSTER_ROOT, app_of, paths_in_apps

# Parts that make both layouts (tenants/<group>/<shard>/<app>/...), names that are a prefix or a
# suffix of others, names regular expressions would read as syntax, and the empty part.
PART = st.sampled_from(["tenants", "g", "00", "0f", "a", "ab", "b.a", "a+", "(a)", "x", ""])
PATH = st.lists(PART, min_size=1, max_size=6).map("/".join)
APPS = st.sets(
    st.sampled_from(["a", "ab", "b.a", "a+", "(a)", "x", "g", "tenants", CLUSTER_ROOT]), max_size=5
)


def by_rule(paths: list[str], apps: set[str]) -> list[str]:
    return [path for path in paths if app_of(path) in apps]


@given(st.lists(PATH, max_size=30), APPS)
def test_the_paths_found_are_those_of_the_apps(paths: list[str], apps: set[str]) -> None:
    assert paths_in_apps(paths, apps) == by_rule(paths, apps)


@given(st.lists(PATH, max_size=30), st.sets(PART, max_size=11))
def test_many_apps_are_looked_up_path_by_path_with_the_same_result(paths: list[str], apps: set[str]) -> None:
    many = apps | {f"filler-{index}" for index in range(17)}  # past the count searched at once
    assert paths_in_apps(paths, many) == by_rule(paths, many)


def test_a_tenant_app_is_found_in_both_layouts_and_nothing_else_is() -> None:
    paths = [
        ".btp-gitops-files",
        "kustomization.yaml",
        "cap-tenant.x/deployment.yaml",
        "cap-tenant.xy/deployment.yaml",
        "tenants/bookshop/3f/cap-tenant.x/01-setup/job.yaml",
        "tenants/bookshop/3f/cap-tenant.x2/job.yaml",
        "other/cap-tenant.x/file.yaml",
    ]
    assert paths_in_apps(paths, {"cap-tenant.x"}) == [
        "cap-tenant.x/deployment.yaml",
        "tenants/bookshop/3f/cap-tenant.x/01-setup/job.yaml",
    ]
    assert paths_in_apps(paths, {CLUSTER_ROOT}) == [".btp-gitops-files", "kustomization.yaml"]
    assert paths_in_apps(paths, set()) == []
