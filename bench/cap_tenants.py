"""Benchmark: render a CAP application with 2 versions and 5,000 tenants, against PyYAML's C dumper.

    .venv/bin/python -m bench.cap_tenants [--tenants 5000] [--repeat 3]

Sources: examples/cap-app (versions 1.0.0 and 1.1.0, its two domains) with its tenant files
replaced by --tenants generated ones, one file per tenant as the subscription server writes them.
Two scenarios:

- upgrade-wave (the goal's): 1.1.0 was just published; 60 % of the tenants run on 1.0.0 and get
  its two upgrade steps, 30 % run on 1.1.0 already, 5 % just subscribed (provisioning), 5 %
  unsubscribed (deprovisioning);
- steady: every tenant runs on 1.1.0, so each renders its CAPTenant and VirtualService only.

Each run is a fresh child process (so peak RSS is the render's alone); best wall time of --repeat:

- render: `render_cluster` from the source directory, everything before writing: loading and
  schema validation of every file, the CAP domain, the layout into files and their YAML;
- baseline: `yaml.dump_all(objects, Dumper=yaml.CSafeDumper)` of the very objects that render
  produced, in the same child, right after it;
- memory: the child's peak RSS (VmHWM) after the render, above an idle interpreter with the same
  imports.

Linearity: the render at a quarter, half and all of the tenants, in seconds per 1,000 tenants.
Goal (issue #6): the whole render within 2x the baseline, for the upgrade wave.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cap-app"
GOAL_RATIO = 2.0
OLD, NEW = "bookshop-1-0-0", "bookshop-1-1-0"

_CHILD = """
import json, sys, time
from pathlib import Path
import yaml
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import render_cluster
engine, schemas = EmbeddedHelm(), load_schema_registry()
start = time.perf_counter()
result = render_cluster((Path(sys.argv[1]),), "bench", engine, schemas)
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: the latter survives exec and may be the parent's high-water mark.
peak_kib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
objects = [manifest.body for app in result.apps for manifest in app.manifests]
start = time.perf_counter()
text = yaml.dump_all(objects, Dumper=yaml.CSafeDumper)
baseline = time.perf_counter() - start
print(json.dumps({
    "seconds": seconds, "baseline": baseline, "peak_mib": peak_kib / 1024, "objects": len(objects),
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


def measure(source: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(source)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def best_of(source: Path, repeat: int) -> dict[str, float]:
    runs = [measure(source) for _ in range(repeat)]
    best = min(runs, key=lambda run: run["seconds"])
    best["baseline"] = min(run["baseline"] for run in runs)
    return best


def idle_mib() -> float:
    done = subprocess.run([sys.executable, "-c", _IDLE], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(done.stdout)


def report(name: str, work: Path, tenants: int, repeat: int, idle: float) -> None:
    source = write_source(work / name, tenants, SCENARIOS[name])
    run = best_of(source, repeat)
    ratio = run["seconds"] / run["baseline"]
    verdict = "meets" if ratio <= GOAL_RATIO else "MISSES"
    goal = f"goal <= {GOAL_RATIO}x: {verdict}" if name == "upgrade-wave" else "for information"
    counts = f"{int(run['objects'])} objects in {int(run['files'])} files"
    print(f"{name}: {tenants} tenants, {counts}; best of {repeat}")
    print(f"  {'render (render_cluster, everything before writing):':<54}{run['seconds']:.2f} s")
    print(f"  {'baseline (yaml.dump_all, CSafeDumper, same objects):':<54}{run['baseline']:.2f} s")
    print(f"  ratio: {ratio:.2f}x ({goal})")
    print(
        f"  output: {run['rendered_mb']:.1f} MB in files, {run['baseline_mb']:.1f} MB from the baseline dump"
    )
    print(f"  peak RSS above an idle interpreter: {run['peak_mib'] - idle:.0f} MiB")


def linearity(work: Path, tenants: int) -> None:
    print("linearity (upgrade-wave, one run each): seconds per 1,000 tenants")
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
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    idle = idle_mib()
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        for name in SCENARIOS:
            report(name, work, args.tenants, args.repeat, idle)
        linearity(work, args.tenants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
