"""Benchmark: moving a running CAP application with many tenants to btp-gitops, the CLI end to end.

    .venv/bin/python -m bench.migration [--tenants 500] [--repeat 3]

Setup (not timed): a real kube-apiserver and etcd (the tools tests/support/kubeapi.py starts),
btp-gitops' CRDs and the pinned third-party ones, and in the namespace `bookshop` what CAP
Operator leaves for examples/cap-app with --tenants tenants: its CAPApplication, versions,
Domains and CAPTenants with CAP Operator's finalizers, labels, owner references and statuses
(tests/migration/cap_operator.py; 60 % of the tenants on 1.0.0, 35 % upgraded to 1.1.0, 5 %
not reconciled yet), and the workloads rendered from the same sources laid out as CAP Operator's
(tests/support/cap_workloads.py: its pod selectors, VCAP Secrets, generateName'd Job, DNSEntries
and Certificates, the version's NetworkPolicy, each tenant's VirtualService routed to the version
it runs on). The CAP objects are also dumped once as
`kubectl get -o yaml` prints them (`kind: List` files).

Timed, each run a fresh `btp-gitops` process (the venv's console script), CPU (user + system of
the child, from os.wait4) and wall, median of --repeat:

1. `import --kubeconfig K --context C --namespace bookshop --out DIR`: reading the cluster;
2. `import --from-dir DUMPS --out DIR`: the same objects from the dumps;
3. `render IMPORTED --out REPO --cluster NAME`: the imported sources' render, the baseline the
   other steps are compared with (each step's ratio to it is printed);
4. `diff IMPORTED --cluster NAME --against-cluster --kubeconfig K --context C -o json`: the
   cutover plan (a render in memory, then the live objects read), with its summary counts.

Each result is checked (exit 0, one imported file per tenant, the same files from the cluster and
from the dumps, adopted objects in the plan), so a broken run fails instead of printing figures.
The load average is printed before and after: the machine may be shared, so only the ratios of
one run compare. A run on 500 tenants (docs/benchmarks.md, "Migration"; load average 6.5):
import from the cluster 1.33 s CPU / 3.81 s wall, from the dumps 1.97 / 3.76 s, render 1.57 /
2.25 s, the cutover plan 5.10 / 13.57 s (3.25x the render's CPU), medians of 3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from bench.cap_tenants import NEW, OLD, tenant, write_source
from btp_gitops.generator.migration.kinds import IMPORTED_KINDS
from tests.migration.cap_operator import as_left_by_operator
from tests.support.cap_workloads import lay_out
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.dry_run import (
    ServedResources,
    create_namespace,
    install_crds_the_output_uses,
    namespaces_used,
    render,
    rendered_objects,
    request,
)
from tests.support.kubeapi import KubeAPI, install_crds, start_kube_api

ROOT = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).parent / "btp-gitops"
NAMESPACE = "bookshop"
CLUSTER = "bench"
CONTEXT = "btp-gitops-test"  # the context of the test server's kubeconfig
TENANTS_DIR = f"cap/{NAMESPACE}/bookshop/tenants"


def operator_tenant(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tenant record (bench.cap_tenants') and the status CAP Operator gives it: 60 % on 1.0.0,
    35 % upgraded from 1.0.0 to 1.1.0, 5 % not reconciled yet (no status)."""
    slot = index % 20
    if slot == 0:
        return tenant(index, None), {}
    current = OLD if slot < 13 else NEW
    status: dict[str, Any] = {"state": "Ready", "currentCAPApplicationVersionInstance": current}
    if current == NEW:
        status["previousCAPApplicationVersions"] = [OLD]
    return tenant(index, current), status


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass(frozen=True)
class Run:
    cpu: float
    wall: float
    stdout: str


def run_cli(*args: str | Path) -> Run:
    """One fresh `btp-gitops` process; CPU is its own user + system time (os.wait4's rusage)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen([str(CLI), *map(str, args)], stdout=out, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"btp-gitops {' '.join(map(str, args))}: exit {process.returncode}\n{stderr}")
    return Run(usage.ru_utime + usage.ru_stime, wall, stdout)


@contextmanager
def kube_api(work: Path) -> Iterator[KubeAPI]:
    api, stop = start_kube_api(work / "kube-api")
    try:
        yield api
    finally:
        stop()


def source_documents(source: Path) -> list[dict[str, Any]]:
    return [d for path in sorted(source.rglob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]


def set_up(client: k8s.ApiClient, work: Path, tenants: int) -> tuple[Path, int, int]:
    """The cluster as CAP Operator leaves it; the dumps directory, CAP objects, workload objects."""
    install_crds(client, load_crds([*our_crd_files(), *third_party_crd_files()]), timeout=120)
    source = write_source(work / "sources", tenants, lambda index: operator_tenant(index)[0])
    statuses = {}
    for index in range(tenants):
        record, status = operator_tenant(index)
        if status:
            statuses[record["metadata"]["name"]] = status
    files = rendered_objects(render(source, work / "rendered"))
    served = ServedResources(client)
    install_crds_the_output_uses(client, served, files)
    for namespace in sorted(namespaces_used(files, served)):
        create_namespace(client, namespace)
    cap_objects = as_left_by_operator(source_documents(source), statuses)
    live = lay_out(client, served, files, NAMESPACE, cap_objects)
    dumps = work / "dumps"
    dumps.mkdir()
    for kind in IMPORTED_KINDS:
        if kind.group != "sme.sap.com":
            continue
        scope = f"/namespaces/{NAMESPACE}" if kind.namespaced else ""
        reply = request(client, "GET", f"/apis/{kind.api_version}{scope}/{kind.plural}")
        assert reply.status == 200, reply.message()
        items = [{"apiVersion": kind.api_version, "kind": kind.kind, **item} for item in reply.body["items"]]
        listed = {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}
        (dumps / f"{kind.plural}.yaml").write_text(yaml.safe_dump(listed, sort_keys=False))
    return dumps, len(cap_objects), len(live) - len(cap_objects)


def tenant_files(sources: Path) -> int:
    return len(list((sources / TENANTS_DIR).glob("*.yaml")))


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def without_comment_lines(files: dict[str, bytes]) -> dict[str, list[bytes]]:
    """The imported files, the comments saying where each came from aside (the source differs)."""
    return {
        path: [line for line in text.splitlines() if not line.startswith(b"#")]
        for path, text in files.items()
    }


def measure(
    api: KubeAPI, work: Path, dumps: Path, tenants: int, repeat: int
) -> tuple[dict[str, list[Run]], dict[str, int]]:
    kubeconfig = str(api.kubeconfig)
    imported = work / "imported-0"
    steps: dict[str, Callable[[int], list[str | Path]]] = {
        "import (cluster)": lambda i: [
            *("import", "--kubeconfig", kubeconfig, "--context", CONTEXT, "--namespace", NAMESPACE),
            *("--out", work / f"imported-{i}", "-q"),
        ],
        "import --from-dir": lambda i: ["import", "--from-dir", dumps, "--out", work / f"from-dir-{i}", "-q"],
        "render (baseline)": lambda i: [
            "render",
            imported,
            "--out",
            work / f"repo-{i}",
            "--cluster",
            CLUSTER,
            "-q",
        ],
        "diff --against-cluster": lambda i: [
            *("diff", imported, "--cluster", CLUSTER, "--against-cluster"),
            *("--kubeconfig", kubeconfig, "--context", CONTEXT, "-o", "json"),
        ],
    }
    runs: dict[str, list[Run]] = {name: [] for name in steps}
    for round_ in range(repeat):  # interleaved: a change of the machine's load hits every step alike
        for name, command in steps.items():
            runs[name].append(run_cli(*command(round_)))
    for round_ in range(repeat):
        for directory in (f"imported-{round_}", f"from-dir-{round_}"):
            if tenant_files(work / directory) != tenants:
                raise SystemExit(
                    f"{directory}: {tenant_files(work / directory)} tenant files, expected {tenants}"
                )
    from_cluster = without_comment_lines(tree(imported))
    if without_comment_lines(tree(work / "from-dir-0")) != from_cluster:
        raise SystemExit("import --from-dir wrote other sources than import from the cluster")
    summary: dict[str, int] = json.loads(runs["diff --against-cluster"][0].stdout)["summary"]
    if not summary.get("adopted"):
        raise SystemExit(f"the plan adopts nothing: {summary}")
    return runs, summary


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.tenants < 1 or args.repeat < 1:
        parser.error("--tenants and --repeat must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-migration-") as directory:
        work = Path(directory)
        started = time.perf_counter()
        with kube_api(work) as api, api.api_client() as client:
            dumps, cap_objects, workloads = set_up(client, work, args.tenants)
            print(
                f"setup: kube-apiserver + etcd, CRDs, {cap_objects} CAP objects with statuses and "
                f"{workloads} workload objects of CAP Operator's in {NAMESPACE} "
                f"({time.perf_counter() - started:.0f} s, not timed)"
            )
            before = load_average()
            runs, summary = measure(api, work, dumps, args.tenants, args.repeat)
            after = load_average()
    print(f"load average before: {before}; after: {after}")
    print(f"{args.tenants} tenants: {args.tenants} tenant files imported from the cluster and from the dumps")
    print("plan: " + ", ".join(f"{count} {name}" for name, count in summary.items()))
    cpu = {name: statistics.median(run.cpu for run in step) for name, step in runs.items()}
    wall = {name: statistics.median(run.wall for run in step) for name, step in runs.items()}
    base = "render (baseline)"
    print(f"median of {args.repeat} runs, each a fresh btp-gitops process")
    print(f"  {'step':<26}{'CPU':>9}{'wall':>9}{'CPU/render':>12}{'wall/render':>13}")
    for name in runs:
        print(
            f"  {name:<26}{cpu[name]:>8.2f}s{wall[name]:>8.2f}s"
            f"{cpu[name] / cpu[base]:>11.2f}x{wall[name] / wall[base]:>12.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
