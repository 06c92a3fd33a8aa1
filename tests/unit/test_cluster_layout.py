"""How the apps' files are laid out in the cluster directory, and which move.

pipeline.reused_output.lay_out_cluster puts the apps' files in path order by visiting the
apps in the order of their directories: the files and their order are those of laying out each
app and sorting every path (pipeline.render.cluster_files), whatever the names, groups, shared
directories and the order of an app's own files."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.pipeline.render import cluster_files, moved_into_groups
from btp_gitops.generator.pipeline.reused_output import ClusterLayout, lay_out_cluster

# Names where a directory sorts differently from its paths (`a` and `a-b`: `a-b/` comes first),
# and a name that is a prefix of another.
NAME = st.sampled_from(["a", "a-b", "a.b", "ab", "b", "a0", "tenants-x"])
APP = st.tuples(NAME, st.sampled_from([None, "g", "g-h"]))
FILES = st.dictionaries(
    st.sampled_from(["x.yaml", "kustomization.yaml", "01-s/y.yaml", "a/z"]), st.text(max_size=3)
)


@given(st.lists(st.tuples(APP, FILES), max_size=12))
def test_the_files_and_their_order_are_those_of_sorting_every_path(
    laid: list[tuple[tuple[str, str | None], dict[str, str]]],
) -> None:
    apps = [AppRender(name, [], group=group) for (name, group), _ in laid]
    per_app = [files for _, files in laid]
    expected = cluster_files(apps, per_app)
    found = lay_out_cluster(apps, per_app).files
    assert list(found.items()) == list(expected.items())


def test_an_app_whose_files_come_unsorted_still_gives_sorted_paths() -> None:
    apps = [AppRender("b", []), AppRender("a", [])]
    per_app = [{"z.yaml": "1", "a.yaml": "2"}, {"y.yaml": "3"}]
    assert list(lay_out_cluster(apps, per_app).files) == ["a/y.yaml", "b/a.yaml", "b/z.yaml"]


# --- which tenants move into shard directories (pipeline.render.moved_into_groups) ---------------

PREVIOUS_PART = st.sampled_from(["tenants", "g", "0f", "a", "ab", "x.yaml", ""])
PREVIOUS = st.lists(st.lists(PREVIOUS_PART, min_size=1, max_size=5).map("/".join), max_size=20)


def flat_by_directory(previous: list[str], apps: list[AppRender]) -> list[str]:
    """The apps the previous tree holds outside a shard, read directory by directory."""
    directories = {path.rpartition("/")[0] for path in previous}
    flat = {place.app for directory in directories if not (place := app_path(f"{directory}/-")).grouped}
    return sorted(app.app for app in apps if app.group is not None and app.object_count and app.app in flat)


@given(PREVIOUS, st.lists(st.tuples(st.sampled_from(["a", "ab", "g", "tenants"]), st.booleans()), max_size=6))
def test_the_tenants_moved_into_shards_are_those_each_directory_tells(
    previous: list[str], named: list[tuple[str, bool]]
) -> None:
    apps = [
        AppRender(name, [Manifest({"kind": "ConfigMap"}, "x")], group="g" if grouped else None)
        for name, grouped in named
    ]
    assert moved_into_groups(dict.fromkeys(previous, ""), apps) == flat_by_directory(previous, apps)


def test_an_app_named_like_the_shards_directory_moves_only_when_it_was_flat() -> None:
    objects = [Manifest({"kind": "ConfigMap"}, "x")]
    tenants = [AppRender("tenants", objects, group="g"), AppRender("a", objects, group="g")]
    assert moved_into_groups({"tenants/g/0f/a/x.yaml": ""}, tenants) == []
    assert moved_into_groups({"tenants/x.yaml": "", "a/x.yaml": ""}, tenants) == ["a", "tenants"]


def test_a_claim_is_kept_only_where_the_files_still_hold_the_packs_text() -> None:
    kept, replaced, wiring = "a: 1\n", "b: 1\n", "w: 1\n"
    layout = ClusterLayout(
        {"app/a.yaml": kept, "app/b.yaml": replaced},
        claims={"app/a.yaml": "1" * 40, "app/b.yaml": "2" * 40},
    )
    files = {"app/a.yaml": kept, "app/b.yaml": "b: kept from the previous render\n", ".wiring/w.yaml": wiring}
    # Every path looked at (Kyma apps kept as they were), or only the ones that may hold another text.
    assert layout.claims_in(files) == {"app/a.yaml": "1" * 40}
    assert layout.claims_in(files, ["app/b.yaml", ".wiring/w.yaml"]) == {"app/a.yaml": "1" * 40}
    assert layout.claims_in(files, [".wiring/w.yaml"]) == layout.claims  # b said not to change: kept
