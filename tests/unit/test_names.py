"""The rules of generator.core.names, value by value (the CLI tests show where each one is used)."""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.names import NameRule, is_name, object_name_message, path_message, shown

LABELS_OK = ["a", "demo", "kyma-system", "0", "a" * 63, "1-a"]
LABELS_BAD = ["", ".", "..", "-a", "a-", "A", "a.b", "a/b", "a_b", "a\nb", "a" * 64, " a", None, 7]
SUBDOMAINS_OK = [*LABELS_OK, "cap.bookshop.bookshop", "kyma-greeter", ".".join(["a" * 63] * 3) + ".a"]
SUBDOMAINS_BAD = ["", ".", "..", "a..b", ".a", "a.", "a/b", "a.-b", "A.b", "/etc", "a\x00", "a" * 254]


@pytest.mark.parametrize("value", LABELS_OK)
def test_labels(value: str) -> None:
    assert is_name(value, NameRule.LABEL)


@pytest.mark.parametrize("value", LABELS_BAD)
def test_not_labels(value: object) -> None:
    assert not is_name(value, NameRule.LABEL)


@pytest.mark.parametrize("value", SUBDOMAINS_OK)
def test_subdomains(value: str) -> None:
    assert is_name(value, NameRule.SUBDOMAIN)


@pytest.mark.parametrize("value", SUBDOMAINS_BAD)
def test_not_subdomains(value: str) -> None:
    assert not is_name(value, NameRule.SUBDOMAIN)


@pytest.mark.parametrize("name", ["system:controller:x", "a.b", "UPPER_ok"])
def test_object_names_kubernetes_takes_for_some_kind(name: str) -> None:
    assert object_name_message(name) is None


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a%2f", "a\tb", None])
def test_object_names_no_kind_takes(name: object) -> None:
    assert object_name_message(name) is not None


@pytest.mark.parametrize("path", ["a.yaml", "chart/templates/a.yaml", "a/..b/c"])
def test_plain_relative_paths(path: str) -> None:
    assert path_message(path) is None


@pytest.mark.parametrize("path", ["", "/a", "a//b", "a/./b", "a/../b", "..", "a\\b", "a\x7fb", 3])
def test_paths_that_could_leave_the_tree(path: object) -> None:
    assert path_message(path) is not None


def test_shown_values_are_short_reprs() -> None:
    assert shown("a\nb") == "'a\\nb'"
    long = shown("x" * 5000)
    assert long == "'xxxxxxxxxxxxxxxxxxxxxxx... (5000 characters)"  # a short prefix and the length
