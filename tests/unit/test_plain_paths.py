"""io.output_tree.unplain_paths: the writer's bulk check of every path it is given is the
path-by-path rule (`plain_path`), whatever the paths hold."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from btp_gitops.generator.io.output_tree import plain_path, unplain_paths

# Names built from the characters that matter to the rule, and some that do not.
NAME = st.text(alphabet=st.sampled_from(["a", "b", ".", "/", "\0", "\t", "é", "-"]), max_size=8)


@given(st.lists(NAME, max_size=12))
def test_the_bulk_check_finds_exactly_the_paths_the_rule_refuses(paths: list[str]) -> None:
    assert unplain_paths(paths) == sorted(path for path in paths if not plain_path(path))


def test_each_kind_of_unplain_path_is_found_among_plain_ones() -> None:
    plain = ["a.yaml", "tenants/g/00/app/f.yaml", "a/...", "a/.b", "..c/d"]
    for bad in ("", "/a", "a/", "a//b", ".", "..", "./a", "a/./b", "a/..", "../a", "a/../b"):
        assert unplain_paths([*plain, bad]) == [bad]
    assert unplain_paths(plain) == []
