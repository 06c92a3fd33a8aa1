"""`core.yaml_resolution`: the memo and the first-character shortcut answer as PyYAML does.

Every scalar read or written asks `resolve` (plain or quoted, which tag?). The loaders and the
dumper remember the answers by value and answer `str` at once for a plain scalar whose first
character no implicit resolver looks at. Compared here with PyYAML's own resolver of the same
class, uncached, on generated scalars and on the ones that resolve to something else; and the
assumptions the shortcut rests on are checked against the installed PyYAML.
"""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core import yaml_block_writer, yaml_resolution, yamlio
from btp_gitops.generator.core.yaml_reading import FastLoader, Loader, StrictLoader
from btp_gitops.generator.core.yaml_style import Dumper, dump_with_pyyaml

_CLASSES = [Loader, StrictLoader, FastLoader, Dumper]
_TRICKY = [
    "", "~", "null", "Null", "NULL", "n", "N", "y", "Y", "yes", "No", "on", "OFF", "true", "False",
    "0", "-1", "+1", "0x1F", "0o17", "017", "1_000", "1:30", "1.5", "-.5", ".inf", "-.Inf", ".nan",
    "1e3", "6.8523015e+5", "190:20:30.15", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "<<", "=",
    "!", "&a", "*a", "worker-1", "value-1-2", "SETTING_0", "é", "日本", " a", "-", ".", "+",
]  # fmt: skip
_IMPLICITS = [(True, False), (False, True), (True, True), (False, False)]


def test_the_shortcut_rests_on_what_pyyaml_registers() -> None:
    assert None not in yaml_resolution.IMPLICIT_FIRSTS  # no wildcard resolver
    assert yaml_resolution.MAY_LOOK_LIKE_GO_YAML_NON_STRING <= yaml_resolution.IMPLICIT_FIRSTS
    for cls in _CLASSES:
        assert not cls.yaml_path_resolvers
        assert set(cls.yaml_implicit_resolvers) <= yaml_resolution.IMPLICIT_FIRSTS


def _pyyaml(cls: type, value: str, implicit: tuple[bool, bool]) -> str:
    resolver = cls.__new__(cls)  # PyYAML's resolve reads only class attributes
    return yaml.resolver.BaseResolver.resolve(resolver, yaml.ScalarNode, value, implicit)  # type: ignore[no-any-return]


def _ours(cls: type, value: str, implicit: tuple[bool, bool]) -> str:
    resolver = cls.__new__(cls)
    return yaml_resolution.MemoizedResolution.resolve(resolver, yaml.ScalarNode, value, implicit)


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("implicit", _IMPLICITS)
def test_tricky_scalars_resolve_as_pyyaml_resolves_them(cls: type, implicit: tuple[bool, bool]) -> None:
    for _ in range(2):  # once to fill the memo, once answered from it
        assert [_ours(cls, v, implicit) for v in _TRICKY] == [_pyyaml(cls, v, implicit) for v in _TRICKY]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=8) | st.sampled_from(_TRICKY), max_size=20), st.sampled_from(_IMPLICITS))
def test_any_scalar_resolves_as_pyyaml_resolves_it(values: list[str], implicit: tuple[bool, bool]) -> None:
    for cls in _CLASSES:
        assert [_ours(cls, v, implicit) for v in values] == [_pyyaml(cls, v, implicit) for v in values]


def test_the_memo_holds_only_what_the_shortcut_cannot_answer() -> None:
    memo = Loader._resolved
    memo.clear()
    for value in ("worker-1", "value-1", "SETTING_0", "yes", "1", ""):
        _ours(Loader, value, (True, False))
    assert set(memo) == {"yes", "1", ""}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("worker-1", "worker-1"), ("yes", "'yes'"), ("y", "'y'"), ("1e3", "'1e3'"), ("name", "name")],
)
def test_the_writer_shortcut_writes_what_pyyaml_writes(value: str, expected: str) -> None:
    assert yaml_block_writer._simple_string_text(value) == expected
    assert dump_with_pyyaml({"k": value}) == f"k: {expected}\n"


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda cls: cls.__name__)
def test_the_path_resolver_hooks_do_nothing_as_pyyaml_s_do_without_path_resolvers(cls: type) -> None:
    instance = cls.__new__(cls)
    node = yaml.ScalarNode("tag:yaml.org,2002:str", "a")
    instance.descend_resolver(node, 0)
    instance.ascend_resolver()
    assert cls.descend_resolver is not yaml.resolver.BaseResolver.descend_resolver
    assert not cls.yaml_path_resolvers  # what makes PyYAML's own hooks return at once


def test_documents_compose_alike_with_the_hooks_as_with_pyyaml_s() -> None:
    text = "a: [1, {b: c}]\nd:\n- e: f\n  g: [h, 'i', yes, ~]\n"
    assert yamlio.load_stream_document(text) == yaml.load(text, Loader=yaml.CSafeLoader)
