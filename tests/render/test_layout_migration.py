"""A repository rendered before the tenants were sharded keeps its layout until asked; then one
render (`--migrate-layout`) migrates it.

The old repository is what an older btp-gitops wrote: every tenant app directly in the cluster
directory, the Flux stage Kustomizations and the ApplicationSet pointing there, the ownership
manifest listing those paths (`bench.shard_commit.flat_layout` of a fresh render; it was checked
to give byte for byte what btp-gitops before the sharding rendered from the same sources, for
each target below). One `render --commit` over it, by the installed CLI in real Git, must leave
exactly the tree a fresh render writes: every tenant moved into its shard directory, no old
directory left, the committed cluster tree the fresh one's. A file a person put into an old
tenant directory stops the migration (nothing is deleted that is not the render's), and `diff`
against the old repository shows the move as moves, not as added and removed objects.

A repository rendered sharded before the ownership manifest was split (one manifest listing every
path) is rewritten by the next plain render with the split manifests and nothing else changed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.shard_commit import flat_layout
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.layout import TENANTS_DIR
from btp_gitops.generator.core.ownership import MANIFEST_FILE, SHARDED_LAYOUT_LINE, is_manifest
from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree

CLUSTER = "demo"
SOURCES = (EXAMPLES / "cap-app", EXAMPLES / "kyma-modules")
EMIT = ("--emit-wiring", "--repo-url", "https://github.com/example/platform-gitops.git")
TARGETS = {
    "argocd": ("--target", "argocd"),
    "argocd-emit-wiring": ("--target", "argocd", *EMIT),
    "flux-emit-wiring": ("--target", "flux", *EMIT),
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def render(
    run_cli: RunCli, out: Path, options: tuple[str, ...], *more: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "render", *SOURCES, "--out", out, "--cluster", CLUSTER, "--commit", *options, *more, cwd=ROOT
    )


def old_repository(path: Path, fresh: dict[str, bytes]) -> Path:
    """A Git repository holding the cluster directory as an older btp-gitops rendered it."""
    cluster = path / "clusters" / CLUSTER
    for relative, text in flat_layout({p: data.decode() for p, data in fresh.items()}).items():
        (cluster / relative).parent.mkdir(parents=True, exist_ok=True)
        (cluster / relative).write_text(text)
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "add", "--all")
    git(
        path, "-c", "user.name=old", "-c", "user.email=old@localhost", "commit", "--quiet", "-m", "old layout"
    )
    return path


@pytest.mark.parametrize("options", TARGETS.values(), ids=list(TARGETS))
def test_one_render_moves_an_old_repository_to_the_fresh_layout(
    tmp_path: Path, run_cli: RunCli, options: tuple[str, ...]
) -> None:
    done = render(run_cli, tmp_path / "fresh", options)
    assert done.returncode == 0, done.stderr
    fresh = read_tree(tmp_path / "fresh" / "clusters" / CLUSTER)
    assert any(path.startswith(f"{TENANTS_DIR}/") for path in fresh)
    old = old_repository(tmp_path / "old", fresh)
    before = read_tree(old / "clusters" / CLUSTER)
    assert any(path.startswith("cap-tenant.") for path in before)
    assert before != fresh

    kept = render(run_cli, old, options)

    assert kept.returncode == 0, kept.stderr
    assert "info: FlatLayoutKept: 4 tenant app(s)" in kept.stdout, kept.stdout
    after_plain = read_tree(old / "clusters" / CLUSTER)
    assert not [path for path in after_plain if path.startswith(f"{TENANTS_DIR}/")]
    # the tenants' own files are untouched; what changed is wiring and bookkeeping only
    changed = {p for p in set(before) | set(after_plain) if before.get(p) != after_plain.get(p)}
    assert changed <= {MANIFEST_FILE} | {p for p in changed if p.startswith(".wiring/")}
    assert "TenantsMoved" not in kept.stdout

    migrated = render(run_cli, old, options, "--migrate-layout")

    assert migrated.returncode == 0, migrated.stderr
    assert read_tree(old / "clusters" / CLUSTER) == fresh
    # Argo CD must learn the new directories before it sees the commit: the render says so.
    warned = "warning: TenantsMoved: 4 tenant app(s): cap-tenant.bookshop.acme, " in migrated.stdout
    assert warned == ("argocd" in options), migrated.stdout
    assert not [p for p in (old / "clusters" / CLUSTER).iterdir() if p.name.startswith("cap-tenant.")]
    # Git holds the very tree a fresh render commits, and nothing is left to commit.
    subtree = f"HEAD:clusters/{CLUSTER}"
    assert git(old, "rev-parse", subtree) == git(tmp_path / "fresh", "rev-parse", subtree)
    assert git(old, "status", "--porcelain") == ""
    again = render(run_cli, old, options)
    assert again.returncode == 0, again.stderr
    assert "0 added, 0 changed, 0 removed" in again.stdout
    assert "TenantsMoved" not in again.stdout
    assert "FlatLayoutKept" not in again.stdout  # the migrated repository stays sharded
    commits = 3 if changed else 2  # the plain render committed only if the wiring changed
    assert git(old, "rev-list", "--count", "HEAD") == str(commits)


def test_a_file_a_person_put_into_an_old_tenant_directory_stops_the_migration(
    tmp_path: Path, run_cli: RunCli
) -> None:
    done = render(run_cli, tmp_path / "fresh", TARGETS["argocd"])
    assert done.returncode == 0, done.stderr
    old = old_repository(tmp_path / "old", read_tree(tmp_path / "fresh" / "clusters" / CLUSTER))
    note = old / "clusters" / CLUSTER / "cap-tenant.bookshop.acme" / "NOTES.md"
    note.write_text("kept by a person\n")
    before = read_tree(old / "clusters" / CLUSTER)

    refused = render(run_cli, old, TARGETS["argocd"], "--migrate-layout")

    assert refused.returncode == ExitCode.OUTPUT, refused.stderr
    assert "cap-tenant.bookshop.acme/NOTES.md" in refused.stderr
    assert "not written by btp-gitops" in refused.stderr
    assert read_tree(old / "clusters" / CLUSTER) == before


@pytest.mark.parametrize("target", ["argocd-emit-wiring", "flux-emit-wiring"])
def test_diff_against_an_old_repository_shows_the_tenants_moving(
    tmp_path: Path, run_cli: RunCli, target: str
) -> None:
    """Same target and wiring: no layout mismatch is reported, the objects are matched by app
    and identity across the move, and the only changes are the moves and the wiring's paths."""
    done = render(run_cli, tmp_path / "fresh", TARGETS[target])
    assert done.returncode == 0, done.stderr
    old = old_repository(tmp_path / "old", read_tree(tmp_path / "fresh" / "clusters" / CLUSTER))

    result = run_cli(
        "diff",
        *SOURCES,
        "--against",
        old,
        "--cluster",
        CLUSTER,
        "--output",
        "json",
        "--migrate-layout",
        *TARGETS[target],
        cwd=ROOT,
    )

    assert result.returncode == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    moved = [c for c in changes if c["note"].startswith("moved from cap-tenant.")]
    assert {c["app"] for c in moved} == {
        "cap-tenant.bookshop.acme",
        "cap-tenant.bookshop.bookshop-provider",
        "cap-tenant.bookshop.globex",
        "cap-tenant.bookshop.initech",
    }
    assert all(c["newPath"].startswith(f"{TENANTS_DIR}/bookshop.bookshop/") and not c["diff"] for c in moved)
    others = [c for c in changes if c not in moved]
    # Besides the moves: the tenants' kustomizations (matched by path) and the wiring.
    assert {c["app"] for c in others} <= {".wiring", *(c["app"] for c in moved)}
    assert any(c["app"] == ".wiring" and c["change"] == "changed" for c in others)


def test_the_next_render_splits_a_single_ownership_manifest(tmp_path: Path, run_cli: RunCli) -> None:
    """A repository rendered sharded before the ownership manifest was split holds one manifest
    listing every path; the next plain render writes the split manifests, changes no other file
    and commits the fresh render's very tree."""
    done = render(run_cli, tmp_path / "fresh", TARGETS["argocd"])
    assert done.returncode == 0, done.stderr
    fresh = read_tree(tmp_path / "fresh" / "clusters" / CLUSTER)
    assert len([path for path in fresh if is_manifest(path)]) > 1
    single = {path: data for path, data in fresh.items() if not is_manifest(path)}
    head = [line for line in fresh[MANIFEST_FILE].decode().splitlines(keepends=True) if line.startswith("#")]
    assert SHARDED_LAYOUT_LINE in head
    single[MANIFEST_FILE] = ("".join(head) + "".join(f"{path}\n" for path in sorted(single))).encode()
    old = tmp_path / "old"
    cluster = old / "clusters" / CLUSTER
    for relative, data in single.items():
        (cluster / relative).parent.mkdir(parents=True, exist_ok=True)
        (cluster / relative).write_bytes(data)
    git(old, "init", "--quiet", "--initial-branch=main")
    git(old, "add", "--all")
    git(
        old,
        "-c",
        "user.name=old",
        "-c",
        "user.email=old@localhost",
        "commit",
        "--quiet",
        "-m",
        "one manifest",
    )

    again = render(run_cli, old, TARGETS["argocd"])

    assert again.returncode == 0, again.stderr
    assert "0 added, 0 changed, 0 removed" in again.stdout, again.stdout
    assert "FlatLayoutKept" not in again.stdout and "TenantsMoved" not in again.stdout
    assert read_tree(cluster) == fresh
    subtree = f"HEAD:clusters/{CLUSTER}"
    assert git(old, "rev-parse", subtree) == git(tmp_path / "fresh", "rev-parse", subtree)
    assert git(old, "status", "--porcelain") == ""


def test_diff_leaves_the_split_manifests_out(tmp_path: Path, run_cli: RunCli) -> None:
    """`diff` against a sharded repository, whose group and shard directories hold ownership
    manifests, compares the rendered files only: the same sources show no change."""
    done = render(run_cli, tmp_path / "repo", TARGETS["argocd-emit-wiring"])
    assert done.returncode == 0, done.stderr
    tree = read_tree(tmp_path / "repo" / "clusters" / CLUSTER)
    assert [path for path in tree if is_manifest(path) and path.startswith(f"{TENANTS_DIR}/")]

    result = run_cli(
        "diff",
        *SOURCES,
        "--against",
        tmp_path / "repo",
        "--cluster",
        CLUSTER,
        "--output",
        "json",
        *TARGETS["argocd-emit-wiring"],
        cwd=ROOT,
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["changes"] == []
