"""`btp-gitops diff --against-cluster`: the cutover plan of the sources against a running cluster.

Imported only when `--against-cluster` is given: the Kubernetes client (the `controller` extra)
and the migration feature load then, not for a `diff` against a Git ref or directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from btp_gitops.generator.cli.engine import allow_paths, chart_engine
from btp_gitops.generator.cli.options import kyma_options, render_cache, target_options
from btp_gitops.generator.cli.output import print_module_problems, print_notes, print_skipped, structured
from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.progress import NO_PROGRESS
from btp_gitops.generator.io.cluster import require_kubernetes_client
from btp_gitops.generator.io.live_lookup import CLIENT_MISSING, LiveLookup
from btp_gitops.generator.io.progress import StepLog
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.cutover import CutoverRequest, cutover_plan, cutover_report

# Options of a diff against a tree that mean nothing against a cluster: refused, not ignored.
_TREE_ONLY = (
    ("repo", "--repo"),
    ("new_cluster", "--new-cluster"),
    ("allow_layout_change", "--allow-layout-change"),
    ("migrate_layout", "--migrate-layout"),
)


def run_cluster_diff(args: argparse.Namespace) -> int:
    if args.against:
        raise UsageError(
            "--against and --against-cluster exclude each other: compare with a tree or a cluster"
        )
    for attribute, flag in _TREE_ONLY:
        if getattr(args, attribute):
            raise UsageError(f"{flag} applies to a diff against a tree (--against), not --against-cluster")
    require_kubernetes_client(CLIENT_MISSING)
    request = CutoverRequest(
        sources=tuple(Path(s) for s in args.sources),
        cluster=args.cluster,
        kyma=kyma_options(args),
        target=target_options(args),
        allow_paths=allow_paths(args),
        cache=render_cache(args),
    )
    progress = StepLog(sys.stderr) if args.verbose else NO_PROGRESS
    try:
        with LiveLookup(args.kubeconfig, args.context) as lookup:
            result = cutover_plan(
                request, chart_engine(args), load_schema_registry(args.schemas), lookup, progress
            )
    finally:
        progress.finish()
    print_skipped(result.render.skipped, sys.stderr, args.quiet)
    result.render.raise_if_strict(args.strict)
    if not args.quiet or structured(args):
        sys.stdout.write(cutover_report(result.plan, args.output, args.max_length))
    for app in result.render.apps:
        print_notes(app.notes, sys.stderr, quiet=args.quiet)
    print_notes(result.render.notes, sys.stderr, quiet=args.quiet)
    print_module_problems(result.render.module_problems, sys.stderr)
    return ExitCode.CHANGES if args.exit_code and not result.plan.unchanged else ExitCode.OK
