"""`btp-gitops diff`: render in memory and compare with a Git ref or a directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from btp_gitops.generator.cli.engine import allow_paths, chart_engine
from btp_gitops.generator.cli.options import (
    add_source_options,
    add_target_options,
    kyma_options,
    print_cache_use,
    render_cache,
    target_options,
)
from btp_gitops.generator.cli.output import (
    JSON,
    TEXT,
    YAML,
    add_output_options,
    keep_until_exit,
    print_module_problems,
    print_notes,
    print_skipped,
    structured,
)
from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.progress import NO_PROGRESS
from btp_gitops.generator.diff.report import DEFAULT_MAX_LENGTH, MIN_MAX_LENGTH
from btp_gitops.generator.io.progress import StepLog
from btp_gitops.generator.io.schemas import load_schema_registry


def run_diff(args: argparse.Namespace) -> int:
    if args.max_length < MIN_MAX_LENGTH:
        raise UsageError(f"--max-length must be at least {MIN_MAX_LENGTH}")
    if args.against_cluster:
        from btp_gitops.generator.cli.diff_cluster import run_cluster_diff  # noqa: PLC0415 - only this mode

        return run_cluster_diff(args)
    if not args.against:
        raise UsageError("diff compares with --against REF|DIR, or with a running cluster: --against-cluster")
    # The render pipeline is loaded by the diff that runs it, not by building the parser (`--help`,
    # a usage error refused before any work).
    from btp_gitops.generator.pipeline.diff import DiffRequest, diff_cluster, diff_report  # noqa: PLC0415

    request = DiffRequest(
        sources=tuple(Path(s) for s in args.sources),
        against=args.against,
        cluster=args.cluster,
        repo=Path(args.repo) if args.repo else None,
        kyma=kyma_options(args),
        target=target_options(args),
        allow_paths=allow_paths(args),
        new_cluster=args.new_cluster,
        allow_layout_change=args.allow_layout_change,
        migrate_layout=args.migrate_layout,
        cache=render_cache(args),
    )
    # A step log with --verbose; no progress line otherwise: a diff renders in memory, quickly.
    progress = StepLog(sys.stderr) if args.verbose else NO_PROGRESS
    try:
        result = diff_cluster(request, chart_engine(args), load_schema_registry(args.schemas), progress)
    finally:
        progress.finish()
    keep_until_exit(result, request)
    print_cache_use(request.cache, args)
    if args.verbose and result.render.held:
        print(
            f"diff: {len(result.render.held)} app(s) at {result.title.against} hold the files the render "
            "pack gives them (the same Git tree ids): not compared",
            file=sys.stderr,
        )
    print_skipped(result.render.skipped, sys.stderr, args.quiet)
    result.render.raise_if_strict(args.strict)
    if not args.quiet or structured(args):
        sys.stdout.write(diff_report(result, args.output, args.max_length))
    # Notes go to stderr: stdout is the report, which a workflow posts as it is.
    for app in result.render.apps:
        print_notes(app.notes, sys.stderr, quiet=args.quiet)
    print_notes(result.render.notes, sys.stderr, quiet=args.quiet)
    print_module_problems(result.render.module_problems, sys.stderr)
    return ExitCode.CHANGES if args.exit_code and not result.diff.empty else ExitCode.OK


def add_diff_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "diff",
        help="render in memory and compare with the rendered repo at a Git ref or directory",
        description="Renders the sources as `render` would (nothing is written) and compares the result "
        "with clusters/<cluster>/ at --against: a directory (the GitOps repo's root) if one exists at that "
        "path, else a Git ref of --repo. Objects are matched by app, kind, namespace and name; Secret "
        "values, caBundles, PEM bodies and private keys in any encoding are masked on both sides. With "
        "--against-cluster it compares with the live objects of a cluster instead and prints the cutover "
        "plan (object names and field paths, never a value).",
    )
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="YAML files or directories")
    parser.add_argument("--against", metavar="REF|DIR", help="what to compare with (or --against-cluster)")
    parser.add_argument(
        "--against-cluster",
        action="store_true",
        help="compare with the live objects of a running cluster instead: the cutover plan (which objects "
        "are adopted in place, created, recreated, or left behind by CAP Operator, Lifecycle Manager or "
        "BTP Manager); only reads the cluster; needs the controller extra",
    )
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for --against-cluster")
    parser.add_argument("--context", help="kubeconfig context for --against-cluster")
    parser.add_argument(
        "--repo",
        metavar="DIR",
        help="the GitOps repo (where clusters/ is) a ref is read from; default: the top of the current "
        "directory's Git work tree",
    )
    add_source_options(parser)
    add_target_options(parser)
    parser.add_argument(
        "--new-cluster",
        action="store_true",
        help="the cluster is not rendered yet: compare with an empty cluster directory (without it, a "
        "missing clusters/<cluster> is an error: a misspelt --cluster would show everything as added)",
    )
    parser.add_argument(
        "--allow-layout-change",
        action="store_true",
        help="compare even when the repository was rendered with another --target or --emit-wiring "
        "(without it that is an error: every file would show as moved)",
    )
    parser.add_argument(
        "--migrate-layout",
        action="store_true",
        help="render as `render --migrate-layout` would: show the tenant apps of a flat cluster directory "
        "moving into their shard directories",
    )
    add_output_options(
        parser,
        formats=(TEXT, "markdown", JSON, YAML),
        formats_help="text (summary and unified diffs), markdown (for a pull-request comment), json or yaml",
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=DEFAULT_MAX_LENGTH,
        metavar="CHARS",
        help="markdown: at most this many characters; a note says what was left out "
        f"(default: {DEFAULT_MAX_LENGTH})",
    )
    parser.add_argument(
        "--exit-code",
        action="store_true",
        help="exit 1 when there are changes, 0 when none (--against-cluster: anything but objects adopted "
        "unchanged is a change)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 3) when a Kyma module cannot be resolved; without it the report lists such "
        "modules (their previous files kept, as `render` keeps them) and the exit code is unchanged",
    )
    parser.add_argument(
        "--helm-binary",
        metavar="PATH",
        help="render charts with this helm CLI (v3 or v4) instead of the embedded Helm engine",
    )
    parser.set_defaults(handler=run_diff)
