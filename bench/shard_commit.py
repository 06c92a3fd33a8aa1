"""Benchmark: the Git objects one tenant's change writes, sharded layout against the flat one.

    .venv/bin/python -m bench.shard_commit [--tenants 20000] [--repeat 3] [--write full|changed]

Sources: examples/cap-app with --tenants + --repeat generated tenants (bench.cap_tenants, the
steady scenario: every tenant on the current version), rendered once with `render_cluster`.
Tenant apps render independently of each other (adding a tenant adds files and changes none:
generator.domains.cap.tenants.names), so the tree of the first N + k tenants is that render
without the apps of the others (the provider's app is always kept).

Two repositories in real Git, one per layout:

- sharded: the tree as `render` writes it (`tenants/<group>/<shard>/<app>/`, core.layout);
- flat (the baseline): the same files with every tenant app directly in the cluster directory,
  and one ownership manifest listing every file, as btp-gitops wrote them before the sharding
  (`flat_layout`).

Each starts with N tenants committed. Then, --repeat times, interleaved (sharded, flat, flat,
sharded, ...): one tenant more, written by the real writer (`io.repo.write_subtree`, ownership
manifests included: `core.ownership.manifest_files`) and committed by the real
`io.git.commit_subtree` (`git add --all` of the cluster directory, then `git commit`). At 20,000
tenants the real writer rewrites 80,000 files per step, which a shared machine's disk may not do
within a session: `--write changed` writes only the files that differ (`write_changes`); the
commit, and so every byte counted, is the same (the bench smoke test compares the two).
Printed per layout, median of the repeats:

- tree bytes: the sizes of the tree objects that commit created (those its parent does not
  have: `git diff-tree -r -t` old -> new, plus the new root tree), the goal's figure;
- blob bytes: the same for file contents (the new tenant's files, its kustomization, and the
  ownership manifests: sharded, its shard's, which lists that shard's files only; flat, the one
  listing every file of the cluster directory);
- commit wall and CPU (this process and its Git children) of `commit_subtree`.

The load average is printed with the figures: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cap_tenants import steady, write_source
from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.ownership import is_manifest, manifest_files
from btp_gitops.generator.io.git import commit_subtree
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.repo import write_subtree
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import render_cluster

CLUSTER = "bench"
SUBTREE = f"clusters/{CLUSTER}"
_TENANT_PATTERNS = re.compile(r"^ *- path: clusters/[^/\n]+/tenants/\*/\*/\*\n", re.MULTILINE)
_TENANT_EXCLUDE = re.compile(r"^( *)- exclude: true\n\1  path: clusters/[^/\n]+/tenants\n", re.MULTILINE)
_STAGE_PATH = re.compile(r"(path: \./clusters/[^/\n]+/)tenants/[^/\n]+/[0-9a-f]{2}/")


def flat_layout(files: dict[str, str]) -> dict[str, str]:
    """A rendered cluster directory (paths relative to it) as btp-gitops laid it out before the
    tenants were sharded: every app directory in the cluster directory, the Flux stage
    Kustomizations' paths and the ApplicationSet's directories to match, the ownership manifest
    listing those paths. What a repository rendered by an older version holds."""
    flat: dict[str, str] = {}
    for path, text in files.items():
        if is_manifest(path):
            continue
        where = app_path(path)
        wiring = path.startswith(".wiring/")
        flat[f"{where.app}/{where.inside}" if where.grouped else path] = (
            _STAGE_PATH.sub(r"\1", _TENANT_EXCLUDE.sub("", _TENANT_PATTERNS.sub("", text)))
            if wiring
            else text
        )
    if any(is_manifest(path) for path in files):  # one manifest listing every path, as before the sharding
        flat.update(manifest_files(flat, sharded=False))
    return dict(sorted(flat.items()))


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout


def new_object_bytes(repo: Path) -> tuple[int, int]:
    """(tree bytes, blob bytes) of the objects HEAD created that HEAD^ did not have."""
    listed = _git(repo, "diff-tree", "-r", "-t", "--no-renames", "HEAD^", "HEAD")
    new = {line.split()[3] for line in listed.splitlines() if line.split()[4][0] in "AMT"}
    new.add(_git(repo, "rev-parse", "HEAD^{tree}").strip())
    sizes = _git(repo, "cat-file", "--batch-check=%(objecttype) %(objectsize)", stdin="\n".join(new) + "\n")
    totals = {"tree": 0, "blob": 0}
    for line in sizes.splitlines():
        kind, size = line.split()
        totals[kind] = totals.get(kind, 0) + int(size)
    return totals["tree"], totals["blob"]


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def write_changes(repo: Path, before: dict[str, str], after: dict[str, str]) -> None:
    """Make the cluster directory, holding `before`, hold `after` by writing only the files that
    differ (`--write changed`). Git stores contents, not how they got there: the commit that follows
    has the very trees and blobs the real writer's would have."""
    root = repo / SUBTREE
    for path in before.keys() - after.keys():
        (root / path).unlink()
    for path, text in after.items():
        if before.get(path) != text:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")


def commit(
    repo: Path, files: dict[str, str], message: str, *, sharded: bool, held: dict[str, str] | None = None
) -> tuple[float, float, dict[str, str]]:
    """Write `files` as the cluster directory, ownership manifests added, and commit it: (wall,
    CPU) of the commit, and what the directory holds. With the real writer, or, given what the
    directory holds (`held`), by writing what changed only."""
    written = {**files, **manifest_files(files, sharded=sharded)}
    if held is None:
        write_subtree(repo, SUBTREE, written)
    else:
        write_changes(repo, held, written)
    wall, cpu = time.perf_counter(), _cpu()
    made = commit_subtree(repo, SUBTREE, lambda _changes: message)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    if made is None:
        raise SystemExit(f"nothing was committed in {repo}")
    tracked = _git(repo, "ls-files", "-z", "--", SUBTREE).count("\0")
    if tracked != len(written) or _git(repo, "status", "--porcelain", "--", SUBTREE):
        raise SystemExit(
            f"{repo}: the commit holds {tracked} files of the cluster directory, not {len(written)}"
        )
    return wall, cpu, written


def tenant_apps(files: dict[str, str]) -> list[str]:
    return sorted({app_path(path).app for path in files if app_path(path).grouped})


def first_tenants(files: dict[str, str], apps: list[str], count: int) -> dict[str, str]:
    """The render's files with the tenant apps after the first `count` left out."""
    dropped = set(apps[count:])
    return {path: text for path, text in files.items() if app_path(path).app not in dropped}


def new_repo(path: Path) -> Path:
    path.mkdir()
    _git(path, "init", "--quiet", "--initial-branch=main")
    _git(path, "config", "user.name", "bench")
    _git(path, "config", "user.email", "bench@localhost")
    _git(path, "config", "gc.auto", "0")  # no repack in the background of the timed commits
    return path


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--write",
        choices=("full", "changed"),
        default="full",
        help="how each step writes the cluster directory: the real writer rewriting every file (full), "
        "or only the files that changed (changed: the same commit, much less disk traffic; the commit's "
        "time then leaves out Git re-reading every rewritten file)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        source = write_source(work / "source", args.tenants + args.repeat, steady)
        started = time.perf_counter()
        rendered = render_cluster((source,), CLUSTER, EmbeddedHelm(), load_schema_registry()).files
        print(f"rendered {args.tenants + args.repeat} tenants once in {time.perf_counter() - started:.1f} s")
        apps = tenant_apps(rendered)
        assert len(apps) == args.tenants + args.repeat + 1, len(apps)  # and the provider's
        layouts = {"sharded": lambda files: files, "flat": flat_layout}
        repos = {name: new_repo(work / name) for name in layouts}
        base = args.tenants + 1
        held: dict[str, dict[str, str]] = {}
        for name, layout in layouts.items():
            files = layout(first_tenants(rendered, apps, base))
            wall, _, held[name] = commit(repos[name], files, f"{base} tenants", sharded=name == "sharded")
            print(f"{name}: committed {base} tenant apps in {wall:.1f} s")
        results: dict[str, list[tuple[int, int, float, float]]] = {name: [] for name in layouts}
        for step in range(args.repeat):
            order = list(layouts) if step % 2 == 0 else list(reversed(layouts))
            files = first_tenants(rendered, apps, base + step + 1)
            for name in order:
                message = f"one tenant more ({step + 1})"
                wall, cpu, held[name] = commit(
                    repos[name],
                    layouts[name](files),
                    message,
                    sharded=name == "sharded",
                    held=held[name] if args.write == "changed" else None,
                )
                trees, blobs = new_object_bytes(repos[name])
                results[name].append((trees, blobs, wall, cpu))
        load = os.getloadavg()
        averages = " ".join(f"{value:.2f}" for value in load)
        print(
            f"one tenant added to {args.tenants} (median of {args.repeat}; --write {args.write}; "
            f"load average {averages}):"
        )
        for name, runs in results.items():
            tree_bytes, blob_bytes, commit_wall, commit_cpu = (
                statistics.median(run[i] for run in runs) for i in range(4)
            )
            label = f"{name}{' (baseline)' if name == 'flat' else ''}:"
            sizes = f"tree bytes {tree_bytes:>10,.0f}  blob bytes {blob_bytes:>10,.0f}"
            print(f"  {label:<18} {sizes}  commit wall {commit_wall:6.2f} s  CPU {commit_cpu:6.2f} s")
        ratio = statistics.median(r[0] for r in results["flat"]) / statistics.median(
            r[0] for r in results["sharded"]
        )
        print(f"  tree bytes, flat / sharded: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
