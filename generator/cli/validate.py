"""`btp-gitops validate`: manifests checked offline against Kubernetes' schemas and CRDs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from btp_gitops.generator.cli.options import (
    add_validation_options,
    validate_options,
)
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.pipeline.validate import validate_paths


def run_validate(args: argparse.Namespace) -> int:
    report = validate_paths(args.paths, validate_options(args))
    if args.output == "json":
        json.dump(report.as_dict(), sys.stdout, indent=2, sort_keys=True)
        print()
        return ExitCode.OK if report.valid else ExitCode.INPUT
    for problem in report.problems:
        print(problem.render(), file=sys.stderr)
    for warning in report.warnings:
        print(f"warning: {warning.render()}", file=sys.stderr)
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
    validate.add_argument(
        "--output", choices=("text", "json"), default="text", help="result format on stdout"
    )
    validate.set_defaults(handler=run_validate)
