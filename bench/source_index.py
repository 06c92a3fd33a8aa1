"""Benchmark: how long the controller's Git writer takes to index a source tree, per change.

    .venv/bin/python -m bench.source_index [--tenants 1000 5000] [--repeat 5]

The subscription server's writer applies each change to the clone's working tree and, to do so,
indexes the tree (`controller.records.SourceIndex.of_tree`): every CAPApplication, version and
tenant record. Files are parsed once and then recognised by their stat signature, so what a
change pays is the walk and the index ("warm"). The tree is examples/cap-app with --tenants
records (bench.cap_tenants' steady scenario), written and then left to age past the racy-write
window so that no file is re-read.

Baseline, measured in the same run on the same tree: the walk alone, `os.walk` listing every
YAML file (what no index can avoid while it looks at the tree), so the ratio is the index's cost
above the walk. Best wall time of --repeat.
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.cap_tenants import steady, write_source
from btp_gitops.controller.records import SourceIndex

RACY_WAIT = 2.5  # seconds: older than controller.records' racy window, so files are not re-read


def best_seconds(action: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def walk_yaml_files(root: Path) -> int:
    return sum(
        1
        for _, directories, names in os.walk(root)
        for name in names
        if name.endswith((".yaml", ".yml")) and not name.startswith(".")
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("source index: SourceIndex.of_tree on examples/cap-app with N tenant records, warm (files parsed)")
    with tempfile.TemporaryDirectory(prefix="bench-index-") as scratch:
        for count in args.tenants:
            tree = write_source(Path(scratch) / f"t{count}", count, steady)
            time.sleep(RACY_WAIT)
            index = SourceIndex.of_tree(tree)  # the first, cold pass parses every file
            assert len(index.tenants) == count, (len(index.tenants), count)
            indexed = best_seconds(functools.partial(SourceIndex.of_tree, tree), args.repeat)
            walked = best_seconds(functools.partial(walk_yaml_files, tree), args.repeat)
            figures = f"index {indexed * 1000:7.1f} ms   baseline (walk only) {walked * 1000:6.1f} ms"
            print(f"  {count:>6} tenants: {figures}")
            print(f"          ratio: {indexed / walked:.1f}x the walk")


if __name__ == "__main__":
    main()
