"""core.ownership's fast paths give what the straightforward rules give, on every input.

The manifests are built, read and the removal guard decided with bulk operations, because a
cluster directory of 20,000 tenants holds 80,000 files; each of them is held here against the
rule it stands in for: the manifests against a path-by-path build, the reading against the
line-by-line check (which also decides whenever the fast one cannot), the removal guard's bound
against counting every app.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core import ownership
from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.core.ownership import (
    MANIFEST_FILE,
    SHARDED_LAYOUT_LINE,
    manifest_files,
)

# -- the manifests ------------------------------------------------------------------------------


def _manifests_path_by_path(paths: list[str], sharded: bool) -> dict[str, str]:
    """The manifests, each path placed by its own reading of the layout and each text joined from
    its sorted relative paths: the rule manifest_files follows."""
    listings: dict[str, set[str]] = {"": set()}
    for path in paths:
        if path.rpartition("/")[2] == MANIFEST_FILE:
            continue
        directory = ownership._listing_directory(path)
        listings.setdefault(directory, set()).add(path)
        while directory:
            parent = ownership._parent_listing(directory)
            listings.setdefault(parent, set()).add(f"{directory}/{MANIFEST_FILE}")
            directory = parent
    texts = {}
    for directory, listed in listings.items():
        prefix = f"{directory}/" if directory else ""
        head = ownership._PART_HEAD if directory else ownership._MANIFEST_HEAD
        if not directory and sharded:
            head += SHARDED_LAYOUT_LINE
        texts[prefix + MANIFEST_FILE] = head + "".join(
            path.removeprefix(prefix) + "\n" for path in sorted(listed)
        )
    return dict(sorted(texts.items()))


_GROUPS = ["shop.shop", "hr.hr"]
_APPS = [
    "cap-tenant.shop.acme",
    "cap-tenant.shop.globex",
    "cap-tenant.hr.initech",
    "btp-operator",
    "a",
    "a-b",
]
_PIECES = ["kustomization.yaml", "deployment-x.yaml", "01-crds/crd-x.yaml", "01-crds/kustomization.yaml", "x"]


@st.composite
def _cluster_paths(draw: st.DrawFn) -> list[str]:
    """Paths of a cluster directory of either layout, both at once (a directory half moved), and
    the odd ones: files at the top, in dot directories, directly in a shard or group directory, in
    a directory that only looks like a shard, nested stage directories, manifests anywhere."""
    apps = draw(st.lists(st.sampled_from(_APPS), unique=True))
    paths = draw(
        st.lists(
            st.sampled_from(
                [
                    ".kyma-modules.json",
                    "kustomization.yaml",
                    ".wiring/kustomization.yaml",
                    ".wiring/applicationset.yaml",
                    MANIFEST_FILE,
                    "tenants/shop.shop/readme.yaml",
                    "tenants/shop.shop/0a/loose.yaml",
                    f"tenants/shop.shop/0a/{MANIFEST_FILE}",
                    "tenants/shop.shop/zz/t/x.yaml",
                    "tenants/shop.shop/0A/t/x.yaml",
                    "tenants/x.yaml",
                    f"a/{MANIFEST_FILE}",
                ]
            )
        )
    )
    for app in apps:
        grouped = app.startswith("cap-tenant.")
        directories = [app]
        if grouped:
            group = draw(st.sampled_from(_GROUPS))
            directories = draw(
                st.lists(st.sampled_from([app, app_directory(app, group)]), min_size=1, unique=True)
            )
        for directory in directories:
            pieces = draw(st.lists(st.sampled_from(_PIECES), min_size=1, unique=True))
            paths += [f"{directory}/{piece}" for piece in pieces]
    return draw(st.permutations(paths)) if draw(st.booleans()) else sorted(paths)


@settings(max_examples=400, deadline=None)
@given(_cluster_paths(), st.booleans())
def test_the_manifests_are_built_as_path_by_path(paths: list[str], sharded: bool) -> None:
    assert manifest_files(paths, sharded=sharded) == _manifests_path_by_path(paths, sharded)


def test_the_manifests_of_many_tenants_are_built_as_path_by_path() -> None:
    """Every shard in use (2,000 tenants), paths in a render's sorted order, given twice, and as a set."""
    paths = [".kyma-modules.json", "btp-operator/deployment.yaml", "kustomization.yaml"]
    for n in range(2_000):
        directory = app_directory(f"cap-tenant.shop.t{n}", "shop.shop")
        paths += [f"{directory}/captenant-t{n}.yaml", f"{directory}/kustomization.yaml"]
    expected = _manifests_path_by_path(paths, True)
    assert len(expected) == 1 + 1 + 256
    assert manifest_files(sorted(paths)) == expected
    assert manifest_files(paths + paths[::-1]) == expected
    assert manifest_files(set(paths)) == expected
