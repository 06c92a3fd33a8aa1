"""Benchmark: render a CAP application with many tenants, against PyYAML's C dumper.

    .venv/bin/python -m bench.cap_tenants [--tenants 5000] [--incremental-tenants 20000] [--repeat 3]
        [--baseline-src DIR] [--end-to-end-only]

Sources: examples/cap-app (versions 1.0.0 and 1.1.0, its two domains) with its tenant files
replaced by generated ones, one file per tenant as the subscription server writes them.
Scenarios:

- upgrade-wave (goal a's): 1.1.0 was just published; 60 % of the tenants run on 1.0.0 and get
  its two upgrade steps, 30 % run on 1.1.0 already, 5 % just subscribed (provisioning), 5 %
  unsubscribed (deprovisioning);
- steady: every tenant runs on 1.1.0, so each renders its CAPTenant and VirtualService only.

Each run is a fresh child process (so peak RSS is the render's alone), measuring CPU (user +
system of the process) and wall time:

- render: `render_cluster` from the source directory, everything before writing: loading and
  schema validation of every file, the CAP domain, the layout into files and their YAML;
- baseline: `yaml.dump_all(objects, Dumper=yaml.CSafeDumper)` of the very objects that render
  produced, in the same child, right after it (so the two are interleaved run by run);
- memory: the child's peak RSS (VmHWM) after the render, above an idle interpreter with the same
  imports.

Goal (a), issue #22: the render of --tenants (upgrade wave) within 2x the baseline, in CPU.
Goal (b): adding one tenant to --incremental-tenants (steady) costs at most 10 % of the full
render's CPU. Each round, in fresh children: a full render of N tenants without the render cache
(the reference), a full render of N with an empty cache (which fills it), and a render of N + 1
tenants (the same files and one more) with the cache the N render left; the medians of the first and
the last are compared, CPU and wall. Then the whole CLI as CI runs it (issue #34): a fresh `git
clone` of the repository the N render wrote (committed), N + 1 tenant records in the sources, and
`btp-gitops render --out` of them with `--no-cache` (the full render, the reference), with an empty
cache that it fills (a CI job's first run, or the first after an upgrade: goal at most 1.1x the full
render's CPU), with the cache the N render warmed, and `btp-gitops diff --against HEAD` with that
cache (what the pull-request comment runs), each followed by `git status`; and Argo CD's plugin,
`render . --stdout --argocd-parameters` in a new directory for the request (the CMP server unpacks
the repository into one per request), the sidecar's cache warmed by a request for N. The repository
is packed before it is cloned, as a fetch receives it. The warm runs are printed as a ratio of the
full render's CPU (goal: at most 10 %). The sources are cloned anew with Git for each of those runs, as CI
checks them out (new inodes and mtimes; `--kept-sources`: the same files every run). With
`--baseline-src DIR` (another revision's source tree, e.g. `git archive main | tar -x -C DIR`) the
same runs of that code, interleaved with ours. `--end-to-end-only` runs only those,
`--incremental-only` only the in-process renders of --incremental-tenants (the warm ratio and the
cold fill's: a render filling an empty cache, goal <= 1.1x the render without one). Every figure is
the median of --repeat runs (at least 3 for the goals), printed with the load average around it: the
machine is shared, so only ratios from one run are comparable. Linearity: the render at a quarter,
half and all of --tenants, in seconds per 1,000 tenants."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cap-app"
CLI = Path(sys.executable).parent / "btp-gitops"
GOAL_RATIO = 2.0
GOAL_INCREMENTAL = 0.10
GOAL_COLD_FILL = 1.1  # issue #34: a render filling an empty cache, against one without a cache
COLD_MODE = "render --cache-dir, empty: the render fills it"
OLD, NEW = "bookshop-1-0-0", "bookshop-1-1-0"

_CHILD = """
import json, sys, time
from pathlib import Path
import yaml
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import render_cluster
from btp_gitops.generator.io.render_cache import RenderCache
engine, schemas = EmbeddedHelm(), load_schema_registry()
cache = RenderCache(Path(sys.argv[2])) if len(sys.argv) > 2 else None
wall, cpu = time.perf_counter(), time.process_time()
result = render_cluster((Path(sys.argv[1]),), "bench", engine, schemas, cache=cache)
seconds, cpu = time.perf_counter() - wall, time.process_time() - cpu
# VmHWM, not ru_maxrss: the latter survives exec and may be the parent's high-water mark.
peak_kib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
objects = [manifest.body for app in result.apps for manifest in app.manifests]
wall, baseline_cpu = time.perf_counter(), time.process_time()
text = yaml.dump_all(objects, Dumper=yaml.CSafeDumper)
baseline, baseline_cpu = time.perf_counter() - wall, time.process_time() - baseline_cpu
print(json.dumps({
    "seconds": seconds, "cpu": cpu, "baseline": baseline, "baseline_cpu": baseline_cpu,
    "peak_mib": peak_kib / 1024, "objects": len(objects),
    "files": len(result.files), "rendered_mb": sum(len(t) for t in result.files.values()) / 1e6,
    "baseline_mb": len(text) / 1e6,
}))
"""

_IDLE = (
    "import yaml, btp_gitops.generator.pipeline.render\n"
    'print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024)'
)


def tenant(index: int, current: str | None, deprovision: bool = False) -> dict[str, Any]:
    name = f"customer-{index:05d}"
    record: dict[str, Any] = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenant",
        "metadata": {
            "name": name,
            "namespace": "bookshop",
            "annotations": {"sme.sap.com/subscription-context-secret": f"{name}-subscription-context"},
        },
        "spec": {
            "capApplicationInstance": "bookshop",
            "subDomain": name,
            "tenantId": f"{index:08x}-5d2b-4c8e-9a3f-1b6d2c4e8f00",
        },
    }
    if deprovision:
        record["metadata"]["annotations"]["btp-gitops.io/deprovision"] = "true"
    if current is not None:
        record["status"] = {
            "state": "Ready",
            "currentCAPApplicationVersionInstance": current,
            "lastCompletedOperation": {"operation": "provisioning", "capApplicationVersionInstance": current},
        }
    return record


def upgrade_wave(index: int) -> dict[str, Any]:
    slot = index % 20
    if slot == 0:
        return tenant(index, None)  # just subscribed
    if slot == 1:
        return tenant(index, NEW, deprovision=True)
    return tenant(index, OLD if slot < 14 else NEW)


def steady(index: int) -> dict[str, Any]:
    return tenant(index, NEW)


SCENARIOS: dict[str, Callable[[int], dict[str, Any]]] = {"upgrade-wave": upgrade_wave, "steady": steady}


def write_source(target: Path, tenants: int, scenario: Callable[[int], dict[str, Any]]) -> Path:
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("tenants"))
    directory = target / "tenants"
    directory.mkdir()
    for index in range(tenants):
        record = scenario(index)
        (directory / f"{record['metadata']['name']}.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    return target


def measure(source: Path, cache: Path | None = None) -> dict[str, float]:
    command = [sys.executable, "-c", _CHILD, str(source), *([str(cache)] if cache else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs (figures of one run are not kept together)."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def idle_mib() -> float:
    done = subprocess.run([sys.executable, "-c", _IDLE], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(done.stdout)


def verdict(ratio: float, goal: float) -> str:
    return "meets" if ratio <= goal else "MISSES"


def report(name: str, work: Path, tenants: int, repeat: int, idle: float) -> None:
    source = write_source(work / name, tenants, SCENARIOS[name])
    before = load()
    run = median_of([measure(source) for _ in range(repeat)])
    ratio = run["cpu"] / run["baseline_cpu"]
    goal = (
        f"goal (a) <= {GOAL_RATIO}x: {verdict(ratio, GOAL_RATIO)}"
        if name == "upgrade-wave"
        else "information"
    )
    counts = f"{int(run['objects'])} objects in {int(run['files'])} files"
    print(f"{name}: {tenants} tenants, {counts}; median of {repeat} ({before}; after: {load()})")
    print(f"  {'':<54}{'CPU':>8}{'wall':>9}")
    print(
        f"  {'render (render_cluster, everything before writing):':<54}"
        f"{run['cpu']:>7.2f}s{run['seconds']:>8.2f}s"
    )
    print(
        f"  {'baseline (yaml.dump_all, CSafeDumper, same objects):':<54}"
        f"{run['baseline_cpu']:>7.2f}s{run['baseline']:>8.2f}s"
    )
    print(f"  ratio: {ratio:.2f}x CPU, {run['seconds'] / run['baseline']:.2f}x wall ({goal})")
    print(
        f"  output: {run['rendered_mb']:.1f} MB in files, {run['baseline_mb']:.1f} MB from the baseline dump"
    )
    print(f"  peak RSS above an idle interpreter: {run['peak_mib'] - idle:.0f} MiB")


def incremental(work: Path, tenants: int, repeat: int) -> None:
    """Goal (b): one tenant added to `tenants` (steady state), against the full render.

    The tenant is added to the same source directory, as a commit adds a file to a checkout: an
    entry names its file's path (origins and notes do), so a copy elsewhere would find none.
    """
    source = write_source(work / "incremental", tenants, steady)
    record = steady(tenants)
    extra = source / "tenants" / f"{record['metadata']['name']}.yaml"
    before = load()
    fulls, colds, warms = [], [], []
    for round_ in range(repeat):  # interleaved: a change of load hits all alike
        cache = work / f"render-cache-{round_}"
        fulls.append(measure(source))
        colds.append(measure(source, cache))
        extra.write_text(yaml.safe_dump(record, sort_keys=False))
        warms.append(measure(source, cache))
        extra.unlink()
        shutil.rmtree(cache)
    whole, cold, one = median_of(fulls), median_of(colds), median_of(warms)
    ratio = one["cpu"] / whole["cpu"]
    print(
        f"incremental: one tenant added to {tenants} (steady); median of {repeat} ({before}; after: {load()})"
    )
    print(f"  {'':<58}{'CPU':>8}{'wall':>9}")
    rows = (
        (f"full render of {tenants}, no cache (render_cluster):", whole),
        (f"full render of {tenants}, empty cache (fills it):", cold),
        (f"{tenants + 1} tenants, cache warmed by that render:", one),
    )
    for label, run in rows:
        print(f"  {label:<58}{run['cpu']:>7.2f}s{run['seconds']:>8.2f}s")
    print(
        f"  ratio: {ratio:.0%} CPU, {one['seconds'] / whole['seconds']:.0%} wall "
        f"(goal (b) <= {GOAL_INCREMENTAL:.0%}: {verdict(ratio, GOAL_INCREMENTAL)})"
    )
    fill = cold["cpu"] / whole["cpu"]
    print(
        f"  cold fill: {fill:.2f}x CPU, {cold['seconds'] / whole['seconds']:.2f}x wall of the render "
        f"without a cache (goal <= {GOAL_COLD_FILL}x: {verdict(fill, GOAL_COLD_FILL)})"
    )


def run_cli(*args: str | Path, env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[float, float]:
    """CPU (the child's user + system) and wall of one `btp-gitops` run. Python may keep its
    compiled modules, as an installed wheel has them (pip compiles at install): a shell that
    forbids it (PYTHONDONTWRITEBYTECODE) would have every run compile ~180 modules again."""
    run_env = {key: value for key, value in (env or os.environ).items() if key != "PYTHONDONTWRITEBYTECODE"}
    before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    script = [str(console_script(env)), *map(str, args)]
    subprocess.run(script, capture_output=True, check=True, cwd=cwd, env=run_env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, time.perf_counter() - wall


def run_git(repo: Path, *args: str) -> tuple[float, float]:
    """CPU and wall of one `git` command in `repo`."""
    before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
    # No automatic gc: it would pack the objects in the background while the repository is copied.
    command = ["git", "-c", "gc.auto=0", "-C", str(repo), *args]
    subprocess.run(command, capture_output=True, check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), time.perf_counter() - wall


def console_script(env: dict[str, str] | None) -> Path:
    """The `btp-gitops` script of the code `env` runs: a baseline's own, installed with it
    (`install_baseline`: its folder first on PYTHONPATH), so that each revision starts and ends its
    process as its own console script does; this revision's otherwise."""
    installed = (env or {}).get("PYTHONPATH", "").split(os.pathsep)[0]
    script = Path(installed) / "bin" / "btp-gitops" if installed else None
    return script if script is not None and script.is_file() else CLI


def install_baseline(tree: Path, work: Path) -> Path:
    """The baseline revision's package, installed from its source tree as its own build backend lays
    it out (`pip install --target`, without dependencies: the venv's serve), into a folder that goes
    first on the CLI's PYTHONPATH. A source tree itself on PYTHONPATH would run this revision's code:
    its folders become `btp_gitops.*` only through the build (pyproject.toml's package-dir)."""
    target = work / "baseline-install"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(tree)],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise SystemExit(f"--baseline-src {tree}: pip cannot install it:\n{built.stderr}")
    # Which code the CLI would run with it: refuse to compare this revision with itself.
    where = subprocess.run(
        [sys.executable, "-c", "import btp_gitops.generator.cli as cli; print(cli.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(target)},
    ).stdout.strip()
    if not Path(where).is_relative_to(target):
        raise SystemExit(f"--baseline-src {tree}: its package does not come first ({where})")
    if console_script({"PYTHONPATH": str(target)}) == CLI:
        raise SystemExit(f"--baseline-src {tree}: pip installed no btp-gitops script into {target}/bin")
    return target


def plugin_request(
    work: Path, source: Path, home: Path, request: str, env: dict[str, str] | None
) -> tuple[float, float]:
    """`render . --stdout --argocd-parameters` as Argo CD's plugin runs it (argocd-cmp/plugin.yaml):
    in a directory of its own that the CMP server makes for every generate request, unpacks the
    repository into and removes after; the Application in the build environment; the sidecar's
    cache under its `home`."""
    app = work / f"cmp-request-{request}" / "apps" / "bench"
    # The files, not the repository's `.git`: the CMP server hands the plugin the files.
    shutil.copytree(source, app, copy_function=shutil.copyfile, ignore=shutil.ignore_patterns(".git"))
    application = {
        "ARGOCD_APP_NAME": "bench",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_SOURCE_PATH": "apps/bench",
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.org/bench.git",
    }
    plugin_env = {**(env or os.environ), **application, "HOME": str(home)}
    plugin_env.pop("XDG_CACHE_HOME", None)
    try:
        return run_cli(
            "render", ".", "--stdout", "--argocd-parameters", "--cluster", "bench", env=plugin_env, cwd=app
        )
    finally:
        shutil.rmtree(app.parents[1])


def timed_plugin_request(
    work: Path, source: Path, home: Path, request: str, env: dict[str, str] | None
) -> tuple[float, float, float, float]:
    """`plugin_request` with a copy of the sidecar's `home` (its warmed cache): CPU and wall."""
    run_home = work / "e2e-sidecar-home"
    shutil.copytree(home, run_home)
    try:
        cpu, wall = plugin_request(work, source, run_home, request, env)
    finally:
        shutil.rmtree(run_home)
    return cpu, wall, 0.0, 0.0


def timed_clone_run(
    work: Path,
    repo_n: Path,
    command: str,
    checked_out: Path,
    *,
    cache: Path | None,
    env: dict[str, str] | None,
    empty_cache: bool = False,
) -> tuple[float, float, float, float]:
    """`render --out` or `diff --against HEAD` on a fresh clone of `repo_n` with a copy of `cache`
    (None: --no-cache; `empty_cache`: an empty cache directory, which the command fills, as a CI
    job's first run or the first after an upgrade does), then `git status`: CPU and wall of each."""
    repo, run_cache = work / "e2e-repo", work / "e2e-cache"
    # A fresh clone, as CI checks the repository out: every file has a new inode, and Git's index
    # was written by the checkout (not timed).
    run_git(work, "clone", "-q", "--no-hardlinks", str(repo_n), str(repo))
    options: tuple[str | Path, ...] = ("--no-cache",)
    if cache is not None:
        shutil.copytree(cache, run_cache)
        options = ("--cache-dir", run_cache)
    elif empty_cache:
        run_cache.mkdir()
        options = ("--cache-dir", run_cache)
    if command == "render":
        arguments: tuple[str | Path, ...] = ("render", checked_out, "--out", repo)
    else:
        arguments = ("diff", checked_out, "--against", "HEAD", "--repo", repo, "-o", "json")
    try:
        cpu, wall = run_cli(*arguments, "--cluster", "bench", *options, env=env)
        git_cpu, git_wall = run_git(repo, "status", "--porcelain")
    finally:
        shutil.rmtree(repo)
        shutil.rmtree(run_cache, ignore_errors=True)
    return cpu, wall, git_cpu, git_wall


def end_to_end(
    work: Path,
    source: Path,
    extra: Path,
    record: dict[str, Any],
    *,
    baseline: Path | None = None,
    repeat: int = 1,
    kept_sources: bool = False,
) -> None:
    """The CLI on a fresh `git clone` of the committed repository of N, with one tenant record
    added to the sources: `render --out` without a cache (the full render, the reference), with
    the cache warmed by the render of N, and `diff --against HEAD` with that cache, each followed
    by `git status`; and Argo CD's plugin on the sources unpacked into a new directory, with the
    sidecar's cache warmed by a request for N (`plugin_request`). With `baseline` (a source tree
    of another revision, e.g. `git archive main | tar -x -C DIR`), the same runs of that code,
    interleaved, and each run's ratio to the baseline's run beside it in the same round.

    The sources are checked out anew for every run too (a `git clone` of the N sources, committed
    once, to one path: every file with a new inode and mtime, as CI clones them; the added record
    copied in), unless `kept_sources` (the same files every run, as on a workstation between two
    renders)."""
    checkout = work / "e2e-sources"
    # The N sources committed, as the repository CI checks out; the added record is a file of the
    # checkout that Git does not vouch for (it is read, as a record the pack lacks always is).
    run_git(source, "init", "-q", "-b", "main")
    run_git(source, "add", "-A")
    run_git(source, "commit", "-qm", "N tenants")

    def sources() -> Path:
        if kept_sources:
            return source
        shutil.rmtree(checkout, ignore_errors=True)
        run_git(work, "clone", "-q", "--no-hardlinks", str(source), str(checkout))  # new inodes, mtimes
        if extra.exists():
            shutil.copyfile(extra, checkout / extra.relative_to(source))
        return checkout

    repo_n = work / "repo-n"
    run_cli("render", source, "--out", repo_n, "--cluster", "bench", "--no-cache")
    run_git(repo_n, "init", "-q", "-b", "main")
    run_git(repo_n, "add", "-A")
    run_git(repo_n, "commit", "-qm", "N tenants")
    # Packed, as a clone over the network receives its objects (actions/checkout, Argo CD's and
    # Flux's fetches): a local clone copies loose objects as they are, and reading 100,000 loose
    # objects costs `diff --against HEAD` several times what reading them from a pack does.
    run_git(repo_n, "repack", "-adq")
    codes: dict[str, dict[str, str] | None] = {"this revision": None}
    if baseline is not None:
        codes[f"baseline ({baseline.name})"] = {
            **os.environ,
            "PYTHONPATH": str(install_baseline(baseline, work)),
        }
    # An entry's key holds a digest of the code: each code fills a cache of its own with N.
    caches = {code: work / f"cli-cache-{index}" for index, code in enumerate(codes)}
    for code, env in codes.items():
        filled = work / "fill-repo"
        run_cli(
            "render", sources(), "--out", filled, "--cluster", "bench", "--cache-dir", caches[code], env=env
        )
        shutil.rmtree(filled)
    # The plugin's cache is the sidecar's, under its home, warmed by a request for N.
    homes = {code: work / f"sidecar-home-{index}" for index, code in enumerate(codes)}
    for code, env in codes.items():
        plugin_request(work, source, homes[code], "fill", env)
    modes = {
        "render --no-cache (the full render)": ("render", "--no-cache"),
        COLD_MODE: ("render", "--empty-cache"),
        "render --cache-dir, warmed by the render before": ("render", "--cache-dir"),
        "diff --against HEAD --cache-dir, warmed likewise": ("diff", "--cache-dir"),
        "Argo CD plugin, render . --stdout, warmed by a request": ("plugin", "--cache-dir"),
    }
    runs: Runs = {}
    tenants = sum(1 for _ in (source / "tenants").glob("*.yaml"))
    extra.write_text(yaml.safe_dump(record, sort_keys=False))
    before = load()
    for round_ in range(repeat):  # interleaved: a change of load hits all alike
        # Which code runs first alternates round by round, so neither always follows the other.
        order = list(codes.items()) if round_ % 2 == 0 else list(reversed(codes.items()))
        for mode, (command, cache_flag) in modes.items():
            for code, env in order:
                if command == "plugin":
                    measured = timed_plugin_request(work, source, homes[code], f"{round_}", env)
                else:
                    warmed = caches[code] if cache_flag == "--cache-dir" else None
                    measured = timed_clone_run(
                        work,
                        repo_n,
                        command,
                        sources(),
                        cache=warmed,
                        env=env,
                        empty_cache=cache_flag == "--empty-cache",
                    )
                runs.setdefault((mode, code), []).append(measured)
                shown = f"{measured[0]:.2f} s CPU ({load()})"
                print(f"    round {round_ + 1}, {code}, {mode}: {shown}", file=sys.stderr)
    extra.unlink()
    shutil.rmtree(checkout, ignore_errors=True)
    print(
        f"  the CLI on a fresh clone of the committed repository of {tenants} tenants, one "
        f"more tenant in the sources ({'kept from run to run' if kept_sources else 'checked out anew'}), "
        f"then `git status`; median of {repeat} ({before}; after: {load()}):"
    )
    summarise(runs, list(modes), list(codes), baseline)


Runs = dict[tuple[str, str], list[tuple[float, float, float, float]]]


def summarise(runs: Runs, modes: list[str], codes: list[str], baseline: Path | None) -> None:
    """The medians of each mode and code, the warm ones as a share of the full render's CPU, and
    with a baseline each mode's ratio, from the medians and paired round by round."""
    print(f"  {'':<64}{'CPU':>8}{'wall':>9}{'git CPU':>9}{'git wall':>9}")
    for (mode, code), measured in runs.items():
        cpu, wall, git_cpu, git_wall = (statistics.median(m[i] for m in measured) for i in range(4))
        label = f"  {mode}, {code}:"
        print(f"  {label:<64}{cpu:>7.2f}s{wall:>8.2f}s{git_cpu:>8.2f}s{git_wall:>8.2f}s")
    median = {key: statistics.median(m[0] for m in measured) for key, measured in runs.items()}
    median_wall = {key: statistics.median(m[1] for m in measured) for key, measured in runs.items()}
    full, *warm = modes
    for code in codes:
        reference = median[(full, code)]
        for mode in warm:
            ratio = median[(mode, code)] / reference
            if mode == COLD_MODE:
                print(
                    f"  {code}, the cold render filling an empty cache: {median[(mode, code)]:.2f} s CPU = "
                    f"{ratio:.2f}x the full render's, {median_wall[(mode, code)]:.2f} s wall "
                    f"(goal <= {GOAL_COLD_FILL}x: {verdict(ratio, GOAL_COLD_FILL)})"
                )
                continue
            print(
                f"  {code}, {mode.split(' --cache-dir')[0]}: {median[(mode, code)]:.2f} s CPU = {ratio:.0%} "
                f"of the full render's, {median_wall[(mode, code)]:.2f} s wall "
                f"(goal <= {GOAL_INCREMENTAL:.0%}: {verdict(ratio, GOAL_INCREMENTAL)})"
            )
    if baseline is not None:
        other = f"baseline ({baseline.name})"
        for mode in modes:
            ours, theirs = median[(mode, "this revision")], median[(mode, other)]
            # Each run against the baseline's beside it: the load of the moment hits both alike.
            paired = [
                mine[0] / base[0]
                for mine, base in zip(runs[(mode, "this revision")], runs[(mode, other)], strict=True)
            ]
            shown = ", ".join(f"{ratio:.0%}" for ratio in paired)
            print(
                f"  {mode}: this revision {ours / theirs:.0%} of the baseline's CPU (medians); "
                f"paired by round {statistics.median(paired):.0%} ({shown})"
            )


def linearity(work: Path, tenants: int) -> None:
    print(f"linearity (upgrade-wave, one run each): seconds per 1,000 tenants ({load()})")
    for size in (tenants // 4, tenants // 2, tenants):
        if size == 0:
            continue
        run = measure(write_source(work / f"linear-{size}", size, upgrade_wave))
        print(f"  {size:>6} tenants: {run['seconds']:.2f} s, {run['seconds'] * 1000 / size:.3f} s per 1,000")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, default=5_000)
    parser.add_argument("--incremental-tenants", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="a source tree of another revision (git archive REV | tar -x -C DIR): the end-to-end "
        "runs of its code are interleaved with this revision's",
    )
    parser.add_argument(
        "--end-to-end-only", action="store_true", help="only the CLI runs over the N-tenant repository"
    )
    parser.add_argument(
        "--kept-sources",
        action="store_true",
        help="the CLI runs read the same source files every run (default: checked out anew each run, "
        "as CI does: new inodes and mtimes)",
    )
    parser.add_argument(
        "--incremental-only",
        action="store_true",
        help="only the in-process renders of --incremental-tenants: no cache, filling one, warm",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        if args.incremental_only:
            incremental(work, args.incremental_tenants, args.repeat)
            return 0
        if not args.end_to_end_only:
            idle = idle_mib()
            for name in SCENARIOS:
                report(name, work, args.tenants, args.repeat, idle)
            incremental(work, args.incremental_tenants, args.repeat)
        source = write_source(work / "end-to-end", args.incremental_tenants, steady)
        record = steady(args.incremental_tenants)
        extra = source / "tenants" / f"{record['metadata']['name']}.yaml"
        end_to_end(
            work,
            source,
            extra,
            record,
            baseline=args.baseline_src,
            repeat=args.repeat,
            kept_sources=args.kept_sources,
        )
        if not args.end_to_end_only:
            linearity(work, args.tenants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
