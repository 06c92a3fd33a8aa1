"""Benchmark: post-render a 10,000-document (~8 MB) Helm 3 stream against a bare PyYAML round trip.

    .venv/bin/python -m bench.post_render [--documents 10000] [--repeat 5]

Both sides are measured in this run, on the same stream, in fresh child processes (so that
peak RSS belongs to one side only), best wall time of --repeat runs:

- baseline: `yaml.load_all(CSafeLoader)` + `yaml.dump_all(CSafeDumper)` of the stream;
- post-render: the `post_render` pipeline (module btp-operator, cert-manager certificates);
- CLI: `btp-gitops post-render` as Helm runs it, stdin to stdout (interpreter start included).

Memory: peak RSS of each side at a quarter, half and all of the documents, to show whether it
grows faster than the stream. Goal (issue #3): post-render at most 1.3x the baseline.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stream_fixture import bench_stream

GOAL_RATIO = 1.3
CLI = Path(sys.executable).parent / "btp-gitops"

_CHILD = """
import json, sys, time
import yaml
text = open(sys.argv[2], encoding="utf-8").read()
start = time.perf_counter()
if sys.argv[1] == "baseline":
    out = yaml.dump_all(list(yaml.load_all(text, Loader=yaml.CSafeLoader)), Dumper=yaml.CSafeDumper)
else:
    from datetime import UTC, datetime
    from btp_gitops.generator.pipeline.post_render import PostRenderRequest, post_render
    from btp_gitops.generator.transforms.self_signed_certificates import generate_rsa_4096_key
    out = post_render(text, PostRenderRequest(), datetime.now(UTC), generate_rsa_4096_key).text
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: the latter survives exec and may be the parent's high-water mark.
peak_kib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "peak_mib": peak_kib / 1024, "out_bytes": len(out)}))
"""


def measure(side: str, stream_file: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, side, str(stream_file)], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def best_of(side: str, stream_file: Path, repeat: int) -> dict[str, float]:
    runs = [measure(side, stream_file) for _ in range(repeat)]
    return min(runs, key=lambda run: run["seconds"])


def cli_seconds(stream_file: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        with stream_file.open("rb") as stdin:
            start = time.perf_counter()
            subprocess.run([str(CLI), "post-render"], stdin=stdin, capture_output=True, check=True)
            times.append(time.perf_counter() - start)
    return min(times)


def idle_child_mib(side: str) -> float:
    """Peak RSS of a child that only starts Python and imports what that side imports."""
    imports = "yaml" if side == "baseline" else "yaml, btp_gitops.generator.pipeline.post_render"
    code = f"import {imports}\n" + (
        'print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024)'
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        sizes = [args.documents // 4, args.documents // 2, args.documents]
        files = {}
        for size in sizes:
            files[size] = Path(work) / f"stream-{size}.yaml"
            files[size].write_text(bench_stream(size), encoding="utf-8")
        full = files[args.documents]
        megabytes = full.stat().st_size / 1e6
        print(f"stream: {args.documents} documents, {megabytes:.2f} MB (Helm 3 shape); best of {args.repeat}")
        baseline = best_of("baseline", full, args.repeat)
        ours = best_of("post-render", full, args.repeat)
        ratio = ours["seconds"] / baseline["seconds"]
        print(f"  baseline (CSafeLoader + CSafeDumper round trip): {baseline['seconds']:.2f} s")
        print(f"  post-render pipeline:                            {ours['seconds']:.2f} s")
        verdict = "meets" if ratio <= GOAL_RATIO else "MISSES"
        print(f"  ratio: {ratio:.2f}x (goal <= {GOAL_RATIO}x: {verdict})")
        cli = cli_seconds(full, min(args.repeat, 3))
        print(f"  btp-gitops post-render CLI, stdin to stdout:     {cli:.2f} s")
        idle = {side: idle_child_mib(side) for side in ("baseline", "post-render")}
        print("memory: peak RSS above an idle interpreter with the same imports")
        header = ("documents", "MB", "baseline MiB", "post-render MiB", "MiB per MB", "vs baseline")
        print("  {:>9} {:>6} {:>13} {:>16} {:>11} {:>12}".format(*header))
        for size in sizes:
            stream_mb = files[size].stat().st_size / 1e6
            base = measure("baseline", files[size])["peak_mib"] - idle["baseline"]
            post = measure("post-render", files[size])["peak_mib"] - idle["post-render"]
            row = f"  {size:>9} {stream_mb:>6.2f} {base:>13.0f} {post:>16.0f} {post / stream_mb:>11.1f}"
            print(f"{row} {post / base:>11.2f}x" if base > 0 else f"{row} {'n/a':>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
