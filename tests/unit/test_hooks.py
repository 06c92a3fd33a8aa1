"""Unit tests of `generator.transforms.hooks`: which Helm hooks stay in GitOps output.

Covered: `hook_phases` parses the comma-separated `helm.sh/hook` annotation (spaces and empty
items ignored, non-string values treated as no hook); `split_hooks` with the uninstall-only phases
moves pre-delete and post-delete hooks out, keeps pre-install, post-install, pre-upgrade and test
hooks and non-hook objects, and keeps the input order in both lists; `drop_uninstall_hooks` trims
the uninstall phases off mixed hooks, leaves out pure uninstall hooks and notes each one it left out.

Nothing is faked: YAML literals in, the real functions, exact names out.
"""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.report import Level
from btp_gitops.generator.transforms.hooks import (
    UNINSTALL_ONLY_HOOKS,
    drop_uninstall_hooks,
    hook_phases,
    split_hooks,
)
from tests.unit.helpers import manifests


def hooked(name: str, annotation: str | None) -> str:
    annotations = "" if annotation is None else f"\n  annotations: {{helm.sh/hook: '{annotation}'}}"
    return f"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}{annotations}\n"


@pytest.mark.parametrize(
    ("annotation", "phases"),
    [
        (None, set()),
        ("", set()),
        ("pre-install", {"pre-install"}),
        ("pre-install,pre-upgrade", {"pre-install", "pre-upgrade"}),
        (" post-delete , pre-delete ,", {"post-delete", "pre-delete"}),
    ],
)
def test_hook_phases(annotation: str | None, phases: set[str]) -> None:
    [manifest] = manifests(hooked("j", annotation))
    assert hook_phases(manifest) == phases


def test_hook_phases_of_a_non_string_annotation_is_empty() -> None:
    [manifest] = manifests("kind: Job\nmetadata:\n  name: j\n  annotations: {helm.sh/hook: 1}\n")
    assert hook_phases(manifest) == set()


def test_uninstall_only_hooks_are_pre_and_post_delete() -> None:
    assert frozenset({"pre-delete", "post-delete"}) == UNINSTALL_ONLY_HOOKS


def test_split_hooks_moves_uninstall_hooks_out_and_keeps_the_rest_in_order() -> None:
    stream = manifests(
        "---\n".join(
            [
                hooked("plain", None),
                hooked("pre-delete", "pre-delete"),
                hooked("pre-install", "pre-install"),
                hooked("post-delete", "post-delete"),
                hooked("post-install", "post-install"),
                hooked("both-deletes", "pre-delete,post-delete"),
                hooked("pre-upgrade", "pre-upgrade"),
                hooked("test", "test"),
            ]
        )
    )
    kept, excluded = split_hooks(stream, UNINSTALL_ONLY_HOOKS)
    assert [m.body["metadata"]["name"] for m in kept] == [
        "plain",
        "pre-install",
        "post-install",
        "pre-upgrade",
        "test",
    ]
    assert [m.body["metadata"]["name"] for m in excluded] == ["pre-delete", "post-delete", "both-deletes"]
    assert {id(m) for m in kept} | {id(m) for m in excluded} == {id(m) for m in stream}


def test_split_hooks_with_a_single_phase() -> None:
    stream = manifests(hooked("pre-delete", "pre-delete") + "---\n" + hooked("post-delete", "post-delete"))
    kept, excluded = split_hooks(stream, frozenset({"pre-delete"}))
    assert [m.body["metadata"]["name"] for m in kept] == ["post-delete"]
    assert [m.body["metadata"]["name"] for m in excluded] == ["pre-delete"]


def test_drop_uninstall_hooks_notes_every_hook_it_leaves_out() -> None:
    stream = manifests(
        "---\n".join(
            [
                hooked("plain", None),
                hooked("cleanup", "pre-delete"),
                hooked("migrate", "pre-install,post-delete"),
                hooked("farewell", "post-delete"),
            ]
        ),
        origin="charts/app/templates/hooks.yaml",
    )
    kept, notes = drop_uninstall_hooks(stream)
    assert [m.body["metadata"]["name"] for m in kept] == ["plain", "migrate"]
    assert kept[1].body["metadata"]["annotations"]["helm.sh/hook"] == "pre-install"
    assert [(n.level, n.reason) for n in notes] == [(Level.INFO, "ExcludedHook")] * 2
    assert [n.subject for n in notes] == [
        "charts/app/templates/hooks.yaml (Job cleanup)",
        "charts/app/templates/hooks.yaml (Job farewell)",
    ]


def test_drop_uninstall_hooks_without_hooks_notes_nothing() -> None:
    stream = manifests(hooked("plain", None) + "---\n" + hooked("setup", "post-install"))
    kept, notes = drop_uninstall_hooks(stream)
    assert [m.body["metadata"]["name"] for m in kept] == ["plain", "setup"]
    assert notes == []
