"""Unit tests of where an app directory sits (`generator.core.layout.app_directory`, `app_path`)
and of the readers that follow it (removal guard, diff matching, layout detection).

Covered: an app of its own sits directly in the cluster directory; a grouped app (a CAP tenant)
in `tenants/<group>/<shard>/<app>/`, the shard being the first two hex digits of the SHA-256 of
the app's name (a known value, so a change of the scheme is seen); every path of either layout
reads back as its app; the removal guard counts a tenant moved into its shard as kept; diff
matches the moved objects as moves; the layout detection finds Flux stage directories inside
shard directories.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.core.layout import (
    TENANTS_DIR,
    AppPath,
    app_directory,
    app_path,
    shard_of,
)
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.ownership import (
    MANIFEST_FILE,
    SHARDED_LAYOUT_LINE,
    manifest_files,
    object_counts,
    parse_manifest,
    removal_refusal,
    shards_tenants,
)
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.diff.compare import ChangeKind, compare_trees
from btp_gitops.generator.pipeline.render import reject_unsafe_paths
from btp_gitops.generator.wiring.layout import detect_layout
from btp_gitops.generator.wiring.objects import ARGOCD, FLUX

TENANT = "cap-tenant.bookshop.acme"


def test_an_app_of_its_own_sits_in_the_cluster_directory() -> None:
    assert app_directory("btp-operator") == "btp-operator"
    assert app_directory("cap.bookshop.bookshop", None) == "cap.bookshop.bookshop"


def test_a_grouped_app_sits_in_its_groups_shard() -> None:
    expected_shard = hashlib.sha256(TENANT.encode()).hexdigest()[:2]
    assert shard_of(TENANT) == expected_shard
    assert (
        app_directory(TENANT, "bookshop.bookshop") == f"tenants/bookshop.bookshop/{expected_shard}/{TENANT}"
    )


def test_the_shard_is_known_and_depends_on_the_name_only() -> None:
    # A fixed value: a change of the hash or its length would move every tenant of every repository.
    assert shard_of("cap-tenant.bookshop.acme") == hashlib.sha256(b"cap-tenant.bookshop.acme").hexdigest()[:2]
    assert shard_of("cap-tenant.bookshop.acme") == shard_of("cap-tenant.bookshop.acme")
    assert app_directory(TENANT, "a.b").rsplit("/", 2)[1] == app_directory(TENANT, "c.d").rsplit("/", 2)[1]


def test_tenants_spread_over_the_shards() -> None:
    """20,000 tenants named as the subscription server names them: every shard used, none with
    more than twice its share (about 78)."""
    names = [
        f"cap-tenant.bookshop.bookshop-consumer-{hashlib.sha1(str(n).encode()).hexdigest()[:8]}"
        for n in range(20_000)
    ]
    counts = Counter(shard_of(name) for name in names)
    assert len(counts) == 256
    assert max(counts.values()) < 2 * 20_000 / 256


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("btp-operator/deployment-x.yaml", AppPath("btp-operator", "btp-operator", "deployment-x.yaml")),
        ("btp-operator/00-crds/crd-x.yaml", AppPath("btp-operator", "btp-operator", "00-crds/crd-x.yaml")),
        (f"{TENANT}/job-x.yaml", AppPath(TENANT, TENANT, "job-x.yaml")),  # the layout before sharding
        (
            f"tenants/bookshop.bookshop/3f/{TENANT}/job-x.yaml",
            AppPath(f"tenants/bookshop.bookshop/3f/{TENANT}", TENANT, "job-x.yaml"),
        ),
        (
            f"tenants/bookshop.bookshop/3f/{TENANT}/30-release-jobs/job-x.yaml",
            AppPath(f"tenants/bookshop.bookshop/3f/{TENANT}", TENANT, "30-release-jobs/job-x.yaml"),
        ),
        (".wiring/kustomization.yaml", AppPath(".wiring", ".wiring", "kustomization.yaml")),
        ("kustomization.yaml", AppPath("", "", "kustomization.yaml")),
        (".kyma-modules.json", AppPath("", "", ".kyma-modules.json")),
    ],
)
def test_every_path_reads_back_as_its_app(path: str, expected: AppPath) -> None:
    assert app_path(path) == expected
    assert app_path(path).grouped == path.startswith(f"{TENANTS_DIR}/")


def test_a_path_written_with_app_directory_reads_back_as_its_app() -> None:
    directory = app_directory(TENANT, "bookshop.bookshop")
    assert app_path(f"{directory}/10-resources/x.yaml") == AppPath(directory, TENANT, "10-resources/x.yaml")


def _flat_and_sharded(tenants: int) -> tuple[list[str], list[str]]:
    flat = ["btp-operator/deployment-x.yaml", "btp-operator/kustomization.yaml"]
    sharded = list(flat)
    for n in range(tenants):
        app = f"cap-tenant.bookshop.t{n}"
        for name in ("captenant-x.yaml", "job-x.yaml", "kustomization.yaml"):
            flat.append(f"{app}/{name}")
            sharded.append(f"{app_directory(app, 'bookshop.bookshop')}/{name}")
    return flat, sharded


def test_moving_tenants_into_shards_keeps_their_objects_for_the_removal_guard() -> None:
    flat, sharded = _flat_and_sharded(20)
    assert object_counts(flat) == object_counts(sharded)
    assert object_counts(sharded)["cap-tenant.bookshop.t3"] == 2
    assert removal_refusal(flat, sharded) is None
    # The guard still sees tenants that are really gone.
    assert removal_refusal(flat, sharded[:2]) is not None


def test_diff_shows_a_tenant_moved_into_its_shard_as_moves() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: bookshop\n"
    directory = app_directory(TENANT, "bookshop.bookshop")
    diff = compare_trees({f"{TENANT}/configmap-x.yaml": text}, {f"{directory}/configmap-x.yaml": text})
    [change] = diff.changes
    assert (change.app, change.kind, change.diff) == (TENANT, ChangeKind.CHANGED, "")
    assert change.note == f"moved from {TENANT}/configmap-x.yaml"


def test_the_layout_is_read_through_shard_directories() -> None:
    directory = app_directory(TENANT, "bookshop.bookshop")
    flux = detect_layout({f"{directory}/30-release-jobs/job-x.yaml": b"kind: Job\n"})
    argocd = detect_layout({f"{directory}/job-x.yaml": b"kind: Job\n"})
    assert flux is not None and (flux.target, flux.emit) == (FLUX, False)
    assert argocd is not None and (argocd.target, argocd.emit) == (ARGOCD, False)


def test_an_app_named_like_the_tenants_directory_or_an_unsafe_group_is_refused() -> None:
    config = Manifest({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "source.yaml")
    lay_out = [AppRender(TENANTS_DIR, [config]), AppRender(TENANT, [config], group="Bad/Group")]

    with pytest.raises(InvalidSpec) as raised:
        reject_unsafe_paths(lay_out, {})

    messages = [problem.message for problem in raised.value.problems]
    assert any("may not be named 'tenants'" in message for message in messages), messages
    assert any(message.startswith("app group ") for message in messages), messages
    # Grouped, an app may be called anything a directory may: only the top level is reserved.
    reject_unsafe_paths([AppRender(TENANTS_DIR, [config], group="bookshop.bookshop")], {})


FILES = ["btp-operator/deployment.yaml", "cap-tenant.shop.acme/job.yaml"]
SHARDED = ["btp-operator/deployment.yaml", f"{TENANTS_DIR}/shop.shop/1f/cap-tenant.shop.acme/job.yaml"]


def manifest_text(paths: list[str], *, sharded: bool = True) -> str:
    """The cluster directory's ownership manifest (the one holding the layout line)."""
    return manifest_files(paths, sharded=sharded)[MANIFEST_FILE]


@pytest.mark.parametrize(
    ("manifest", "previous", "migrate", "expected"),
    [
        pytest.param(None, [], False, True, id="new-directory"),
        pytest.param(manifest_text(FILES, sharded=False), [], False, True, id="emptied-directory"),
        pytest.param(manifest_text(FILES), FILES, False, True, id="already-sharded"),
        pytest.param(manifest_text(FILES, sharded=False), FILES, False, False, id="flat-kept"),
        pytest.param(None, FILES, False, False, id="flat-without-manifest-kept"),
        pytest.param(None, SHARDED, False, True, id="sharded-without-manifest"),
        pytest.param(manifest_text(FILES, sharded=False), FILES, True, True, id="flat-migrated"),
        pytest.param(None, FILES, True, True, id="no-manifest-migrated"),
    ],
)
def test_which_cluster_directories_shard_their_tenants(
    manifest: str | None, previous: list[str], migrate: bool, expected: bool
) -> None:
    assert shards_tenants(manifest, previous, migrate) is expected


def test_the_layout_line_is_read_from_the_manifest_head_only() -> None:
    """A listed path can never pass for the mark, and the mark is no listed path."""
    marked = manifest_text(FILES)
    assert SHARDED_LAYOUT_LINE in marked
    assert parse_manifest(marked) == set(FILES) == parse_manifest(manifest_text(FILES, sharded=False))
    flat = manifest_text(FILES, sharded=False)
    assert shards_tenants(flat + SHARDED_LAYOUT_LINE, FILES, False) is False  # below the head
