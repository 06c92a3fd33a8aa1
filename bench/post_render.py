"""Benchmark: `btp-gitops post-render` against yq, kustomize and a bare PyYAML round trip.

    .venv/bin/python -m bench.post_render [--sizes 1000,2500,10000,50000] [--repeat 3]

Each side is a fresh child process reading the same Helm 3 shaped stream (bench/stream_fixture.py)
on stdin and writing to a file, as Helm runs a post-renderer; runs are interleaved (one run of
every side, then the next round) and the median of --repeat rounds is printed, with the load
average, since the machine may be shared. Per run: CPU (user + sys of the child, from wait4),
wall time and peak RSS (the child's ru_maxrss).

- ours: `btp-gitops post-render` (cert-manager certificates), interpreter start included;
- yq: mikefarah/yq v4 doing the same five assignments on every document (namespace when absent,
  the three module labels, the pod template label of Deployments, the webhook configuration's
  `cert-manager.io/inject-ca-from` annotation and the removal of its inline caBundle); found
  through $YQ, PATH or ~/.cache/btp-gitops/tools; skipped, saying so, when absent;
- kustomize: a kustomization with the same changes (namespace, labels without selectors, two
  patches), up to --kustomize-max documents (its cost grows faster than the stream);
- bare: PyYAML's C loader and C dumper over the stream, nothing else.

Goal (issue #22): at 10,000 documents our CPU <= yq's and our peak RSS <= 2x yq's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.stream_fixture import CHART, bench_stream

CLI = Path(sys.executable).parent / "btp-gitops"
MODULE_LABELS = {
    "app.kubernetes.io/managed-by": "btp-manager",
    "chart-version": "1.4.2",
    "kyma-project.io/module": "btp-operator",
}
WEBHOOK_CERT = "kyma-system/sap-btp-operator-webhook-cert"
YQ_EXPRESSION = (
    'with(select(.kind != "ValidatingWebhookConfiguration"); .metadata.namespace |= (. // "kyma-system")) | '
    ".metadata.labels += {"
    + ", ".join(f'"{key}": "{value}"' for key, value in MODULE_LABELS.items())
    + "} | "
    'with(select(.kind == "Deployment"); .spec.template.metadata.labels."kyma-project.io/module" = '
    '"btp-operator") | '
    'with(select(.kind == "ValidatingWebhookConfiguration"); '
    f'.metadata.annotations."cert-manager.io/inject-ca-from" = "{WEBHOOK_CERT}" | '
    "del(.webhooks[].clientConfig.caBundle))"
)
BARE = (
    "import sys, yaml\n"
    "docs = yaml.load_all(sys.stdin.read(), Loader=yaml.CSafeLoader)\n"
    "sys.stdout.write(yaml.dump_all(docs, Dumper=yaml.CSafeDumper))\n"
)
GOAL_CPU = 1.0  # x yq
GOAL_RSS = 2.0  # x yq


@dataclass(frozen=True)
class Run:
    cpu: float
    wall: float
    rss_mib: float


TIME = Path("/usr/bin/time")  # GNU time: forks the side from a small process, reports its rusage


def run_child(argv: list[str], stdin: Path, cwd: Path) -> Run:
    """One run. The side is started by GNU time, not forked from this interpreter: Linux carries
    the high-water mark of the forked memory across exec, so ru_maxrss of a child of this
    process would never read below this process's own size."""
    report = cwd / "rusage.txt"
    with stdin.open("rb") as source, (cwd / "out.yaml").open("wb") as sink:
        start = time.perf_counter()
        done = subprocess.run(
            [str(TIME), "-f", "%U %S %M", "-o", str(report), *argv],
            stdin=source,
            stdout=sink,
            stderr=subprocess.PIPE,
            cwd=cwd,
            check=False,
        )
        wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{argv[0]} failed ({done.returncode}): {done.stderr.decode(errors='replace')[-2000:]}"
        )
    user, system, max_kib = report.read_text().split()[-3:]
    return Run(float(user) + float(system), wall, int(max_kib) / 1024)


def find_yq() -> str | None:
    candidates = [os.environ.get("YQ", ""), shutil.which("yq") or ""]
    candidates += sorted(str(p) for p in Path.home().glob(".cache/btp-gitops/tools/yq*/yq"))
    candidates.append(str(Path.home() / ".cache/btp-gitops/tools/bin/yq"))
    for candidate in filter(None, candidates):
        try:
            version = subprocess.run([candidate, "--version"], capture_output=True, text=True, check=False)
        except OSError:
            continue
        if "mikefarah" in version.stdout or "version v4" in version.stdout:
            return candidate
    return None


def find_kustomize() -> str | None:
    found = shutil.which("kustomize") or str(Path.home() / ".cache/btp-gitops/tools/bin/kustomize")
    return found if Path(found).is_file() else None


def kustomization(directory: Path, stream: Path) -> None:
    """A kustomization making our five changes (the stream's webhook has no caBundle to remove)."""
    shutil.copy(stream, directory / "stream.yaml")
    labels = "".join(f"    {key}: {value}\n" for key, value in MODULE_LABELS.items())
    (directory / "kustomization.yaml").write_text(
        "resources: [stream.yaml]\n"
        "namespace: kyma-system\n"
        f"labels:\n- includeSelectors: false\n  pairs:\n{labels}"
        "patches:\n"
        "- target: {kind: Deployment}\n"
        "  patch: |-\n"
        "    - op: add\n"
        "      path: /spec/template/metadata/labels/kyma-project.io~1module\n"
        "      value: btp-operator\n"
        "- target: {kind: ValidatingWebhookConfiguration}\n"
        "  patch: |-\n"
        "    - op: add\n"
        "      path: /metadata/annotations\n"
        f"      value: {{cert-manager.io/inject-ca-from: {WEBHOOK_CERT}}}\n"
    )


def sides(yq: str | None, kustomize: str | None, work: Path) -> dict[str, Callable[[Path], list[str]]]:
    found: dict[str, Callable[[Path], list[str]]] = {
        "ours": lambda _stream: [str(CLI), "post-render"],
        "bare": lambda _stream: [sys.executable, "-c", BARE],
    }
    if yq:
        found["yq"] = lambda _stream: [yq, YQ_EXPRESSION]
    if kustomize:
        found["kustomize"] = lambda stream: [kustomize, "build", str(stream.parent)]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,2500,10000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kustomize-max", type=int, default=1000)
    parser.add_argument("--sides", default="ours,bare,yq,kustomize", help="which sides to run")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    if not TIME.is_file():
        raise SystemExit(f"{TIME} (GNU time) is needed to measure each side's own CPU and peak RSS")
    wanted = set(args.sides.split(","))
    yq = find_yq() if "yq" in wanted else None
    kustomize = find_kustomize() if "kustomize" in wanted else None
    if yq is None and "yq" in wanted:
        print("yq: not found ($YQ, PATH, ~/.cache/btp-gitops/tools): skipped")
    if kustomize is None and "kustomize" in wanted:
        print("kustomize: not found (PATH, ~/.cache/btp-gitops/tools/bin): skipped")
    print(f"chart {CHART}; median of {args.repeat} interleaved runs; CPU = user+sys of the child")
    header = ("documents", "MB", "side", "CPU s", "wall s", "peak MiB", "CPU/yq", "MiB/yq", "load")
    print("{:>9} {:>6} {:>10} {:>7} {:>7} {:>9} {:>7} {:>7} {:>6}".format(*header))
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for size in sizes:
            directory = work / str(size)
            directory.mkdir()
            stream = directory / "input.yaml"
            stream.write_text(bench_stream(size), encoding="utf-8")
            if kustomize:
                kustomization(directory, stream)
            commands = sides(yq, kustomize, work)
            if size > args.kustomize_max:
                commands.pop("kustomize", None)
            runs: dict[str, list[Run]] = {side: [] for side in commands}
            loads = []
            for _ in range(args.repeat):
                loads.append(os.getloadavg()[0])
                for side, command in commands.items():
                    runs[side].append(run_child(command(stream), stream, directory))
            medians = {
                side: Run(
                    *(statistics.median(getattr(r, f) for r in found) for f in ("cpu", "wall", "rss_mib"))
                )
                for side, found in runs.items()
            }
            megabytes = stream.stat().st_size / 1e6
            for side, median in medians.items():
                base = medians.get("yq")
                cpu_ratio = f"{median.cpu / base.cpu:.2f}x" if base else "-"
                rss_ratio = f"{median.rss_mib / base.rss_mib:.2f}x" if base else "-"
                print(
                    f"{size:>9} {megabytes:>6.1f} {side:>10} {median.cpu:>7.2f} {median.wall:>7.2f} "
                    f"{median.rss_mib:>9.0f} {cpu_ratio:>7} {rss_ratio:>7} {statistics.median(loads):>6.1f}"
                )
            if size > args.kustomize_max and kustomize:
                print(
                    f"{size:>9} {megabytes:>6.1f}  kustomize: skipped above "
                    f"--kustomize-max {args.kustomize_max}"
                )
            if "yq" in medians and size == 10_000:
                ours, peer = medians["ours"], medians["yq"]
                cpu_ok = "meets" if ours.cpu <= GOAL_CPU * peer.cpu else "MISSES"
                rss_ok = "meets" if ours.rss_mib <= GOAL_RSS * peer.rss_mib else "MISSES"
                print(f"  goal at 10,000: CPU <= yq ({cpu_ok}), peak RSS <= 2x yq ({rss_ok})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
