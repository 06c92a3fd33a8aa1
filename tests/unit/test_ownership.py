"""core.ownership: which files of a cluster directory are btp-gitops's, and the removal rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core import ownership
from btp_gitops.generator.core.errors import UnsafeOutput
from btp_gitops.generator.core.layout import app_directory, app_path
from btp_gitops.generator.core.ownership import (
    MANIFEST_FILE,
    SHARDED_LAYOUT_LINE,
    manifest_files,
    object_counts,
    owned_files,
    owned_without_manifest,
    parse_manifest,
    removal_refusal,
)

KUSTOMIZATION = b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"


def test_the_manifest_is_sorted_and_leaves_itself_out() -> None:
    text = manifest_files(["b/x.yaml", MANIFEST_FILE, "a/kustomization.yaml", ".kyma-modules.json"])[
        MANIFEST_FILE
    ]
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
        (_tree(a=3, b=3), _tree(a=1, b=1), True),  # 4 of 6 gone from apps that stay
        (_tree(a=4, b=4), _tree(a=2, b=2), False),  # exactly half, spread over the apps
        (_tree(a=4, b=2), _tree(a=1), True),  # one app gone, the other shrinks: 5 of 6
        (_tree(a=3, b=3), _tree(a=5, b=1), False),  # b loses 2 of 6; a's new objects do not offset it
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


TENANT_FILES = {
    "acme": ["kustomization.yaml", "captenant-acme.yaml"],
    "globex": ["kustomization.yaml", "captenant-globex.yaml", "job-globex.yaml"],
}


def _split_tree(tenants: dict[str, list[str]], group: str = "shop.shop") -> list[str]:
    """The paths of a sharded cluster directory: two apps of their own, the wiring, and tenants."""
    paths = [
        ".kyma-modules.json",
        ".wiring/kustomization.yaml",
        "btp-operator/deployment.yaml",
        "kustomization.yaml",
    ]
    for tenant, names in tenants.items():
        directory = app_directory(f"cap-tenant.shop.{tenant}", group)
        paths += [f"{directory}/{name}" for name in names]
    return paths


def _bytes(texts: dict[str, str]) -> dict[str, bytes]:
    return {path: text.encode() for path, text in texts.items()}


def test_manifests_are_split_along_the_shard_directories() -> None:
    paths = _split_tree(TENANT_FILES)
    acme = app_directory("cap-tenant.shop.acme", "shop.shop")
    globex = app_directory("cap-tenant.shop.globex", "shop.shop")
    acme_shard, globex_shard = acme.rpartition("/")[0], globex.rpartition("/")[0]
    assert acme_shard != globex_shard  # (the test needs two shards: the names are chosen for it)
    manifests = manifest_files(paths)
    assert set(manifests) == {
        MANIFEST_FILE,
        f"tenants/shop.shop/{MANIFEST_FILE}",
        f"{acme_shard}/{MANIFEST_FILE}",
        f"{globex_shard}/{MANIFEST_FILE}",
    }
    listed = {path: parse_manifest(text) for path, text in manifests.items()}
    # Each lists paths relative to its own directory: the top its files and the group's manifest,
    # the group its shards' manifests, a shard its tenants' files.
    assert listed[MANIFEST_FILE] == {
        ".kyma-modules.json",
        ".wiring/kustomization.yaml",
        "btp-operator/deployment.yaml",
        "kustomization.yaml",
        f"tenants/shop.shop/{MANIFEST_FILE}",
    }
    assert listed[f"tenants/shop.shop/{MANIFEST_FILE}"] == {
        f"{acme_shard.rpartition('/')[2]}/{MANIFEST_FILE}",
        f"{globex_shard.rpartition('/')[2]}/{MANIFEST_FILE}",
    }
    assert listed[f"{acme_shard}/{MANIFEST_FILE}"] == {
        "cap-tenant.shop.acme/kustomization.yaml",
        "cap-tenant.shop.acme/captenant-acme.yaml",
    }
    assert SHARDED_LAYOUT_LINE in manifests[MANIFEST_FILE]
    assert all(SHARDED_LAYOUT_LINE not in text for path, text in manifests.items() if path != MANIFEST_FILE)
    # Read back from the top, they own exactly the files and themselves.
    files = {**{path: b"" for path in paths}, **_bytes(manifests)}
    assert owned_files(files, {".kyma-modules.json"}) == set(files)
    assert manifest_files([*paths, *manifests]) == manifests  # manifests left out of what is listed


def test_a_flat_directory_keeps_one_manifest() -> None:
    flat = ["btp-operator/deployment.yaml", "cap-tenant.shop.acme/captenant-acme.yaml", "kustomization.yaml"]
    manifests = manifest_files(flat, sharded=False)
    assert list(manifests) == [MANIFEST_FILE]
    assert parse_manifest(manifests[MANIFEST_FILE]) == set(flat)
    assert SHARDED_LAYOUT_LINE not in manifests[MANIFEST_FILE]


def test_one_tenant_more_rewrites_its_shards_manifest_only() -> None:
    """With 2,000 tenants every shard is in use: a new tenant changes one small manifest, the
    cluster directory's and the group's stay as they are."""
    tenants = {f"t{n}": ["kustomization.yaml", f"captenant-t{n}.yaml"] for n in range(2_001)}
    before = manifest_files(_split_tree({name: tenants[name] for name in list(tenants)[:-1]}))
    after = manifest_files(_split_tree(tenants))
    changed = {path for path in after if before.get(path) != after[path]}
    shard = app_directory("cap-tenant.shop.t2000", "shop.shop").rpartition("/")[0]
    assert changed == {f"{shard}/{MANIFEST_FILE}"}
    assert set(before) == set(after)
    assert len(after[f"{shard}/{MANIFEST_FILE}"]) < sum(map(len, after.values())) / 50


def test_the_single_manifest_of_an_earlier_render_is_read() -> None:
    """Before the split one manifest listed every path of the cluster directory, shard
    directories included: it is read as it is (the next render writes the split ones)."""
    paths = _split_tree(TENANT_FILES)
    files = {path: b"" for path in paths}
    files[MANIFEST_FILE] = (
        "# an earlier render's\n" + SHARDED_LAYOUT_LINE + "".join(f"{p}\n" for p in sorted(paths))
    ).encode()
    assert owned_files(files, set()) == set(files)


def test_only_manifests_listed_from_above_are_read() -> None:
    """A manifest file no manifest above lists is foreign, and so is what it lists; a listed path
    is matched against the files there, and one leading out of its directory stops the read."""
    paths = _split_tree(TENANT_FILES)
    manifests = manifest_files(paths)
    acme = app_directory("cap-tenant.shop.acme", "shop.shop")
    files = {**{path: b"" for path in paths}, **_bytes(manifests)}
    files[f"{acme}/extra.yaml"] = b"kind: ConfigMap\n"
    files[f"{acme}/{MANIFEST_FILE}"] = b"extra.yaml\n"  # a person's own manifest in a tenant's directory
    files["notes.md"] = b""
    shard_manifest = f"{acme.rpartition('/')[0]}/{MANIFEST_FILE}"
    listed = files[shard_manifest]
    files[shard_manifest] = listed + b"../../../notes.md\n"  # out of its directory
    with pytest.raises(UnsafeOutput, match=f"manifest c1/{shard_manifest}") as refused:
        owned_files(files, set(), "c1")
    line = len(listed.splitlines()) + 1
    assert refused.value.problems[0].file == f"c1/{shard_manifest}:{line}"
    files[shard_manifest] = listed + MANIFEST_FILE.encode() + b"\n"  # itself
    owned = owned_files(files, set())
    assert set(files) - owned == {f"{acme}/extra.yaml", f"{acme}/{MANIFEST_FILE}", "notes.md"}
    # A shard manifest the group's does not list is not read: its tenants' files are foreign.
    group = f"tenants/shop.shop/{MANIFEST_FILE}"
    files[group] = manifests[group].replace(shard_manifest.split("/", 2)[2] + "\n", "").encode()
    unread = set(files) - owned_files(files, set())
    assert shard_manifest in unread
    assert {f"{acme}/kustomization.yaml", f"{acme}/captenant-acme.yaml"} <= unread


_ENTRY_PIECES = st.sampled_from(
    ["a", "b", ".", "..", "/", "\x00", "\x1f", "\x7f", "\x9f", "\xa0", "é", " ", "#", "x" * 254, "y" * 256]
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_ENTRY_PIECES, max_size=10))
def test_a_manifest_line_is_accepted_by_the_one_match_exactly_when_every_rule_holds(
    pieces: list[str],
) -> None:
    """parse_manifest checks each line with one regular expression and spells out the rule only
    for a line it refuses: the two must agree on every line."""
    line = "".join(pieces)
    assert (ownership._PLAIN_ENTRY.fullmatch(line) is not None) == (
        bool(line) and ownership._entry_problem(line) is None
    )


def test_a_manifest_line_of_the_longest_path_is_accepted_and_one_longer_refused() -> None:
    longest = "/".join(["n" * 255] * 16)[: ownership.MAX_ENTRY_CHARS].rstrip("/")
    assert ownership._PLAIN_ENTRY.fullmatch(longest) is not None
    assert ownership._PLAIN_ENTRY.fullmatch(longest + "/x" * 3) is None


def test_objects_are_counted_per_app_as_app_path_reads_each_path() -> None:
    paths = [
        "top.yaml",
        ".wiring/appset.yaml",
        "app/kustomization.yaml",
        "app/a.yaml",
        "app/00-crds/b.yaml",
        "tenants/g/0a/cap-tenant.x/t.yaml",
        "tenants/g/0a/cap-tenant.x/kustomization.yaml",
        "tenants/g/zz/other/t.yaml",
        "tenants/g/0a/short.yaml",
    ]
    expected: dict[str, int] = {}
    for path in paths:
        where = app_path(path)
        if where.app and not where.app.startswith(".") and not path.endswith("/kustomization.yaml"):
            expected[where.app] = expected.get(where.app, 0) + 1
    assert object_counts(paths) == expected == {"app": 2, "cap-tenant.x": 1, "tenants": 2}
