"""Benchmark: the cutover plan's classification for a CAP application with many tenants.

    .venv/bin/python -m bench.cutover_plan [--tenants 500] [--repeat 3]

Sources: bench.cap_tenants' upgrade wave (examples/cap-app with --tenants generated tenant
files). The live side is made from the render itself, as a cluster CAP Operator ran would hold
it: every rendered object live under its own name with what the API server adds (a uid, a
resourceVersion), CAP Operator's larger pod selector on every Deployment (so they are
recreated), and, beside each rendered Job and DNSEntry, one of CAP Operator's under a
generateName'd name (so pairing and the left-behind lookups run at full size). Reading the
cluster is not measured here: it is one GET per rendered object and one list per kind and
namespace, bounded as docs/commands/diff.md says, and depends on the API server.

Printed per run: the rendered and operator objects, the render's wall time and the plan's
(`plan_cutover`: checks of every live object, classification, pairing, the report's order),
the median of --repeat runs.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.cap_tenants import upgrade_wave, write_source
from btp_gitops.generator.core.objects import ObjectKey, object_key
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.migration import LiveObject
from btp_gitops.generator.migration.plan import CutoverPlan, Outcome, RenderedObject, plan_cutover
from btp_gitops.generator.pipeline.cutover import rendered_objects
from btp_gitops.generator.pipeline.render import render_cluster

CAP = "sme.sap.com/"


def live_side(rendered: list[RenderedObject]) -> tuple[dict[ObjectKey, LiveObject], list[LiveObject]]:
    live: dict[ObjectKey, LiveObject] = {}
    owned = []
    for index, item in enumerate(rendered):
        body = copy.deepcopy(item.body)
        body["metadata"].update(uid=f"00000000-0000-4000-8000-{index:012}", resourceVersion=str(index))
        if body["kind"] == "Deployment":
            body["spec"]["selector"]["matchLabels"][f"{CAP}owner-generation"] = "1"
        live[object_key(body)] = LiveObject(body, "cluster (bench)")
        if body["kind"] in ("Job", "DNSEntry"):
            old = copy.deepcopy(body)
            old["metadata"]["generateName"] = f"{old['metadata']['name']}-"
            old["metadata"]["name"] = f"{old['metadata']['name']}-x7k2p"
            old["metadata"].setdefault("labels", {})[f"{CAP}category"] = "Workload"
            owned.append(LiveObject(old, "cluster (bench)"))
    return live, owned


def run(source: Path) -> tuple[int, int, float, float, CutoverPlan]:
    started = time.perf_counter()
    result = render_cluster((source,), "bench", EmbeddedHelm(), load_schema_registry(None))
    rendered = rendered_objects(result)
    render_seconds = time.perf_counter() - started
    live, owned = live_side(rendered)
    started = time.perf_counter()
    plan = plan_cutover("bench", "cluster (bench)", rendered, live, owned)
    return len(rendered), len(owned), render_seconds, time.perf_counter() - started, plan


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        source = write_source(Path(directory) / "sources", args.tenants, upgrade_wave)
        runs = [run(source) for _ in range(args.repeat)]
    objects, owned, _, _, plan = runs[0]
    render = statistics.median(r[2] for r in runs)
    planned = statistics.median(r[3] for r in runs)
    counts = ", ".join(f"{plan.count(outcome)} {outcome.value}" for outcome in Outcome)
    print(f"tenants {args.tenants}: {objects} rendered objects, {owned} operator objects; {counts}")
    print(f"render {render:.2f} s, plan {planned:.2f} s (median of {args.repeat})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
