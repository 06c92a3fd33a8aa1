"""core.ownership: which files of a cluster directory are btp-gitops's, and the removal rule."""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.ownership import (
    MANIFEST_FILE,
    manifest_text,
    owned_files,
    owned_without_manifest,
    removal_refusal,
)

KUSTOMIZATION = b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"


def test_the_manifest_is_sorted_and_leaves_itself_out() -> None:
    text = manifest_text(["b/x.yaml", MANIFEST_FILE, "a/kustomization.yaml", ".kyma-modules.json"])
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        ".kyma-modules.json",
        "a/kustomization.yaml",
        "b/x.yaml",
    ]
    files = {path: b"" for path in ("a/kustomization.yaml", "b/x.yaml", "b/mine.yaml", MANIFEST_FILE)}
    files[MANIFEST_FILE] = text.encode()
    assert owned_files(files, {".kyma-modules.json"}) == {"a/kustomization.yaml", "b/x.yaml", MANIFEST_FILE}


def test_without_manifest_only_what_our_kustomizations_list_is_ours() -> None:
    files = {
        "app/kustomization.yaml": KUSTOMIZATION + b"- deployment-x.yaml\n- '0.yaml'\n",
        "app/deployment-x.yaml": b"",
        "app/0.yaml": b"",
        "app/stray.yaml": b"",
        "app/01-crds/kustomization.yaml": KUSTOMIZATION + b"- crd.yaml\n",
        "app/01-crds/crd.yaml": b"",
        "hand/kustomization.yaml": KUSTOMIZATION + b"- a.yaml\npatches:\n- p.yaml\n",  # not our shape
        "hand/a.yaml": b"",
        "escape/kustomization.yaml": KUSTOMIZATION + b"- ../app/stray.yaml\n",
        ".kyma-modules.json": b"{}",
        "notes.md": b"",
    }
    assert owned_without_manifest(files, {".kyma-modules.json"}) == {
        "app/kustomization.yaml",
        "app/deployment-x.yaml",
        "app/0.yaml",
        "app/01-crds/kustomization.yaml",
        "app/01-crds/crd.yaml",
        ".kyma-modules.json",
    }


def _tree(**apps: int) -> list[str]:
    paths = [".kyma-modules.json", ".wiring/kustomization.yaml", ".wiring/x.yaml", "kustomization.yaml"]
    for app, count in apps.items():
        paths += [f"{app}/kustomization.yaml", *(f"{app}/obj-{i}.yaml" for i in range(count))]
    return paths


@pytest.mark.parametrize(
    ("before", "after", "refused"),
    [
        (_tree(a=3, b=3), _tree(), True),  # empty render
        (_tree(a=3, b=3), _tree(c=10), True),  # a different set of apps: keeps none
        (_tree(a=4, b=3), _tree(b=3), True),  # drops 4 of 7
        (_tree(a=3, b=3), _tree(b=3), False),  # drops exactly half
        (_tree(a=3, b=3), _tree(a=1, b=1), False),  # fewer objects in kept apps: not counted
        (_tree(), _tree(), False),  # nothing there before
        (
            _tree(a=1),
            [f"a/01-stage/{p}" for p in ("obj-0.yaml", "kustomization.yaml")],
            False,
        ),  # --target flux
    ],
)
def test_removal_refusal(before: list[str], after: list[str], refused: bool) -> None:
    assert (removal_refusal(before, after) is not None) == refused
