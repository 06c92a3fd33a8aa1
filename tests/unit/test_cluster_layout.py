"""pipeline.reused_output.lay_out_cluster puts the apps' files in path order by visiting the
apps in the order of their directories: the files and their order are those of laying out each
app and sorting every path (pipeline.render.cluster_files), whatever the names, groups, shared
directories and the order of an app's own files."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.pipeline.render import cluster_files
from btp_gitops.generator.pipeline.reused_output import lay_out_cluster

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
