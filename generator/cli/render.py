"""`btp-gitops render`: the sources into clusters/<cluster>/ of a GitOps repository, or stdout."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from btp_gitops.generator.cli.argocd_parameters import PARAMETERS_ENV, apply_argocd_parameters
from btp_gitops.generator.cli.engine import add_engine_options, allow_paths, chart_engine
from btp_gitops.generator.cli.options import (
    add_source_options,
    add_target_options,
    add_validation_options,
    flux_sync_options,
    kyma_options,
    print_cache_use,
    render_cache,
    seconds,
    target_options,
    validate_options,
)
from btp_gitops.generator.cli.output import (
    add_output_options,
    keep_until_exit,
    print_changed_files,
    print_module_problems,
    print_notes,
    print_result,
    print_skipped,
    structured,
)
from btp_gitops.generator.core.errors import Problem, UsageError
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress
from btp_gitops.generator.io.progress import StepLog, progress_for
from btp_gitops.generator.io.repo import DEFAULT_LOCK_TIMEOUT
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.wiring.objects import ARGOCD


def run_render_to_stdout(args: argparse.Namespace) -> int:
    if args.commit or structured(args):
        raise UsageError(
            f"--stdout writes only manifests: it cannot be combined with --commit or --output {args.output}"
        )
    if args.target != ARGOCD or args.emit_wiring:
        raise UsageError(
            "--stdout is for Argo CD's plugin: it cannot be combined with --target flux or --emit-wiring"
        )
    flux_sync_options(args)  # refuses a --flux-* option: the stream carries no wiring
    # The render pipeline (every domain, the writer) is loaded by the render that runs it, not
    # by building the parser (`--help`, a usage error refused before any work).
    from btp_gitops.generator.pipeline.render import cluster_stream, render_cluster, validate_render  # noqa: PLC0415

    cache = render_cache(args)
    result = render_cluster(
        tuple(Path(s) for s in args.sources),
        args.cluster,
        chart_engine(args),
        load_schema_registry(args.schemas),
        kyma=kyma_options(args),
        allow_paths=allow_paths(args),
        cache=cache,
    )
    keep_until_exit(result, cache)
    print_cache_use(cache, args)
    print_skipped(result.skipped, sys.stderr, args.quiet)
    result.raise_if_strict(args.strict)
    if args.validate:
        where = Path(f"clusters/{args.cluster}")  # the files go to stdout: name them as in a repo
        result.notes += validate_render(where, result.files, validate_options(args))
    sys.stdout.write(cluster_stream(result))
    for app in result.apps:
        print_notes(app.notes, sys.stderr, quiet=args.quiet)
    print_notes(result.notes, sys.stderr, quiet=args.quiet)
    return module_problems_exit(result.module_problems)


def module_problems_exit(problems: list[Problem]) -> ExitCode:
    """Exit 9 when Kyma modules could not be resolved (their previous apps kept), each named on stderr."""
    print_module_problems(problems, sys.stderr)
    return ExitCode.MODULE_PROBLEMS if problems else ExitCode.OK


def run_render(args: argparse.Namespace) -> int:
    if args.argocd_parameters and not args.stdout:
        raise UsageError("--argocd-parameters is for Argo CD's plugin: it needs --stdout")
    if args.stdout:
        if args.argocd_parameters:
            apply_argocd_parameters(args)
        return run_render_to_stdout(args)
    from btp_gitops.generator.pipeline.render import RenderRequest, render_into_repo  # noqa: PLC0415 - as above

    request = RenderRequest(
        sources=tuple(Path(s) for s in args.sources),
        out=Path(args.out),
        cluster=args.cluster,
        commit=args.commit,
        validate=validate_options(args) if args.validate else None,
        kyma=kyma_options(args),
        target=target_options(args),
        allow_paths=allow_paths(args),
        allow_empty=args.allow_empty,
        lock_timeout=args.lock_timeout,
        strict=args.strict,
        migrate_layout=args.migrate_layout,
        cache=render_cache(args),
    )
    progress = render_progress(args)
    try:
        result = render_into_repo(
            request, chart_engine(args), load_schema_registry(args.schemas), progress=progress
        )
    finally:
        progress.finish()
    keep_until_exit(result, request)
    print_cache_use(request.cache, args)
    if args.verbose and result.held:
        print(
            f"render: {len(result.held)} app(s) in {request.out}/clusters/{result.cluster} hold the files "
            "the render pack gives them (Git vouches for each blob id): left as they are",
            file=sys.stderr,
        )
    print_skipped(result.skipped, sys.stderr, args.quiet)
    if structured(args):
        print_result(result.report(), args.output, sys.stdout)
        return module_problems_exit(result.module_problems)
    if args.quiet:
        for app in result.apps:
            print_notes(app.notes, sys.stderr, quiet=True)
        print_notes(result.notes, sys.stderr, quiet=True)
        return module_problems_exit(result.module_problems)
    objects = sum(app.object_count for app in result.apps)
    changes = result.changes
    print(
        f"rendered cluster {result.cluster} into {request.out}/clusters/{result.cluster}: "
        f"{objects} objects in {len([a for a in result.apps if a.object_count])} app(s); "
        f"{len(changes.added)} added, {len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    if args.verbose:
        print_changed_files(changes.added, changes.changed, changes.removed, sys.stdout)
    for app in result.apps:
        if app.notes:
            print(f"{app.app}:")
            print_notes(app.notes, sys.stdout)
    print_notes(result.notes, sys.stdout)
    if result.kymas:
        from btp_gitops.generator.domains.kyma import report_table  # noqa: PLC0415 - a render of Kymas only

        for kyma in result.kymas:
            print("\n".join(report_table(kyma)))
    if request.commit:
        print(f"committed {result.commit}" if result.commit else "nothing to commit")
    return module_problems_exit(result.module_problems)


def render_progress(args: argparse.Namespace) -> Progress:
    """--verbose: a log line per step; --quiet and -o json|yaml: nothing; else a line on a terminal."""
    if args.verbose:
        return StepLog(sys.stderr)
    if args.quiet or structured(args):
        return NO_PROGRESS
    return progress_for(sys.stderr, os.environ)


def add_render_parser(commands: Any) -> None:
    render = commands.add_parser("render", help="render source custom resources into a GitOps repo")
    render.add_argument("sources", nargs="+", metavar="SOURCE", help="YAML files or directories")
    destination = render.add_mutually_exclusive_group(required=True)
    destination.add_argument("--out", metavar="REPO", help="the GitOps repository (work tree) to write")
    destination.add_argument(
        "--stdout",
        action="store_true",
        help="write the objects to stdout as one YAML stream instead (for an Argo CD plugin)",
    )
    render.add_argument(
        "--argocd-parameters",
        action="store_true",
        help=f"with --stdout, in Argo CD's plugin: also take the options the Application's plugin "
        f"parameters set (${PARAMETERS_ENV}; see docs/gitops/argocd-cmp.md)",
    )
    render.add_argument("--commit", action="store_true", help="commit the result when the tree changed")
    render.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 3, nothing written) when a Kyma module cannot be resolved, instead of keeping its "
        "previous files, rendering the other modules and exiting 9",
    )
    render.add_argument(
        "--migrate-layout",
        action="store_true",
        help="move the tenant apps of a cluster directory rendered before the sharding into "
        "tenants/<group>/<shard>/ (without it such a directory keeps its flat layout; first let the GitOps "
        "controller run the wiring a plain render writes: see docs/gitops/index.md)",
    )
    render.add_argument(
        "--allow-empty",
        action="store_true",
        help="allow a render that removes every app of a populated cluster directory, or apps holding "
        "more than half of its objects (refused by default: an empty source directory or a glob that "
        "matched nothing would make Argo CD or Flux prune everything)",
    )
    render.add_argument(
        "--lock-timeout",
        type=seconds,
        default=DEFAULT_LOCK_TIMEOUT,
        metavar="SECONDS",
        help="wait this long for another render writing the same --out, then fail with exit 5 "
        f"(default: {DEFAULT_LOCK_TIMEOUT:g})",
    )
    add_source_options(render)
    add_target_options(render)
    render.add_argument(
        "--validate",
        action="store_true",
        help="validate the rendered objects (as `validate` does) before anything is written",
    )
    add_validation_options(render, applies=" (with --validate)")
    add_engine_options(render)
    add_output_options(render)
    render.set_defaults(handler=run_render)
