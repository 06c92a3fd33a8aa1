"""`btp-gitops import`: what CAP Operator (and, once wired in, Lifecycle Manager and BTP Manager)
manage in a running cluster, or in `kubectl get -o yaml` dumps, written as source files.

Reading a cluster needs the `controller` extra's Kubernetes client, imported only then
(io.live_objects); `--from-dir` needs nothing more than the generator.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from btp_gitops.generator.cli.output import add_output_options, print_result, structured
from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.names import NameRule, name_message
from btp_gitops.generator.core.redact import printable
from btp_gitops.generator.io.live_objects import ClusterSource
from btp_gitops.generator.pipeline.import_sources import ImportOptions, ImportReport, import_sources


def _options(args: argparse.Namespace) -> ImportOptions:
    if args.from_dir is not None and (args.kubeconfig or args.context or args.namespace):
        raise UsageError(
            "--from-dir reads dumps: it cannot be combined with --kubeconfig, --context or --namespace"
        )
    for namespace in args.namespace:
        message = name_message(namespace, NameRule.LABEL)
        if message is not None:
            raise UsageError(f"--namespace {message}")
    cluster = None
    if args.from_dir is None:
        namespaces = tuple(sorted(set(args.namespace)))
        cluster = ClusterSource(args.kubeconfig, args.context, namespaces)
    return ImportOptions(
        out=Path(args.out),
        cluster=cluster,
        from_dir=Path(args.from_dir) if args.from_dir is not None else None,
        force=args.force,
    )


def _print_text(report: ImportReport, quiet: bool) -> None:
    for skip in report.skipped:
        print(printable(f"warning: skipped {skip.object} ({skip.origin}): {skip.reason}"), file=sys.stderr)
    for item in report.follow_ups:
        print(printable(f"to do: {item.object} ({item.origin}): {item.action}"), file=sys.stderr)
    if quiet:
        return
    for entry in report.passed_over:
        print(
            printable(f"note: passed over {entry.object} ({entry.origin}): {entry.reason}"), file=sys.stderr
        )
    if not report.files:
        print(printable(f"nothing to import from {report.source} ({report.objects} objects read)"))
        return
    overwritten = f", {len(report.overwritten)} of them overwritten" if report.overwritten else ""
    skipped = f"; {len(report.skipped)} skipped (above)" if report.skipped else ""
    skipped += f"; {len(report.follow_ups)} to do before a render (above)" if report.follow_ups else ""
    print(
        printable(
            f"imported {report.objects} objects from {report.source} into {len(report.files)} files "
            f"under {report.out}{overwritten}{skipped}"
        )
    )
    for path in report.files:
        print(printable(f"  {path}"))


def run_import(args: argparse.Namespace) -> int:
    report = import_sources(_options(args))
    if structured(args):
        print_result(report.as_dict(), args.output, sys.stdout)
    else:
        _print_text(report, args.quiet)
    return ExitCode.OK


def add_import_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "import",
        help="write sources from what CAP Operator manages in a cluster, or from kubectl dumps",
        description=(
            "Read the objects CAP Operator is driven by (CAPApplication, CAPApplicationVersion, CAPTenant "
            "with its status, Domain, ClusterDomain) from a cluster or from `kubectl get -o yaml` dumps, "
            "and write them as source files under --out, one file per tenant record. Objects that cannot "
            "be expressed are listed with the reason; no Secret value is ever written."
        ),
    )
    source = parser.add_argument_group("where the objects are read (a cluster, or --from-dir)")
    source.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig of the cluster (default: $KUBECONFIG)"
    )
    source.add_argument("--context", help="the kubeconfig's context (default: its current context)")
    source.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="NAME",
        help="read only this namespace (repeatable; default: all); cluster-scoped kinds are read either way",
    )
    source.add_argument(
        "--from-dir",
        metavar="DIR",
        help="read `kubectl get -o yaml` dumps under DIR instead of a cluster (no cluster access needed)",
    )
    parser.add_argument("--out", required=True, metavar="SRCDIR", help="the source directory to write into")
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite files SRCDIR already holds (default: refuse, nothing written)",
    )
    add_output_options(parser)
    parser.set_defaults(handler=run_import)
