"""`btp-gitops validate`: manifests checked offline against Kubernetes' schemas and CRDs."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

from btp_gitops.generator.cli.options import (
    add_validation_options,
    validate_options,
)
from btp_gitops.generator.cli.output import add_output_options, print_result, structured
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.redact import printable
from btp_gitops.generator.io.kube_schemas import read_manifests
from btp_gitops.generator.pipeline.validate import validate_documents


def run_validate(args: argparse.Namespace) -> int:
    documents, read_problems = read_manifests(args.paths)
    report = validate_documents(documents, validate_options(args), read_problems)
    if structured(args):
        print_result(report.as_dict(), args.output, sys.stdout)
        return ExitCode.OK if report.valid else ExitCode.INPUT
    for problem in report.problems:
        print(printable(problem.render()), file=sys.stderr)
    for warning in report.warnings:
        print(printable(f"warning: {warning.render()}"), file=sys.stderr)
    if args.quiet:
        return ExitCode.OK if report.valid else ExitCode.INPUT
    if args.verbose:
        for file, count in Counter(document.file for document in documents).items():
            print(printable(f"  {file}: {_counted(count, 'object')}"))
    objects = _counted(report.objects, "object")
    problems = _counted(len(report.problems), "problem")
    summary = f"{objects} valid" if report.valid else f"{problems} in {objects}"
    if report.warnings:
        summary += f", {_counted(len(report.warnings), 'warning')}"
    print(f"{summary} (Kubernetes {report.kubernetes_version})")
    return ExitCode.OK if report.valid else ExitCode.INPUT


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def add_validate_parser(commands: Any) -> None:
    validate = commands.add_parser(
        "validate",
        help="validate manifests offline: built-in kinds, our CRDs and the CRDs given",
        description="Checks every object against the Kubernetes schemas of one version and against the "
        "CRDs found among the objects, given with --crds, and those btp-gitops installs. Problems go to "
        "stderr, one per line; a summary to stdout. Exit 3 when anything is invalid.",
    )
    validate.add_argument(
        "paths", nargs="+", metavar="PATH", help="YAML files, directories (walked), or - for stdin"
    )
    add_validation_options(validate)
    add_output_options(validate)
    validate.set_defaults(handler=run_validate)
