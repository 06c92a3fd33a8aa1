"""`btp-gitops module-resources`: BTP Manager's module-resources/ artifact from a chart."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from btp_gitops.generator.cli.engine import add_engine_options, chart_engine
from btp_gitops.generator.cli.output import (
    add_output_options,
    changes_dict,
    print_changed_files,
    print_notes,
    print_result,
    structured,
)
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io import bundled
from btp_gitops.generator.pipeline.module_resources import generate_module_resources


def run_module_resources(args: argparse.Namespace) -> int:
    result = generate_module_resources(
        chart=Path(args.chart) if args.chart else bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART),
        values_files=tuple(Path(v) for v in args.values),
        release=args.release,
        namespace=args.namespace,
        out=Path(args.out),
        engine=chart_engine(args),
    )
    changes = result.changes
    if structured(args):
        report = {
            "files": sorted(result.files),
            "changes": changes_dict(changes.added, changes.changed, changes.removed),
            "notes": [n.as_dict() for n in result.notes],
        }
        print_result(report, args.output, sys.stdout)
        return ExitCode.OK
    if args.quiet:
        print_notes(result.notes, sys.stderr, quiet=True)
        return ExitCode.OK
    print(
        f"wrote {args.out}: {len(result.files)} files; {len(changes.added)} added, "
        f"{len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    if args.verbose:
        print_changed_files(changes.added, changes.changed, changes.removed, sys.stdout)
    print_notes(result.notes, sys.stdout)
    return ExitCode.OK


def add_module_resources_parser(commands: Any) -> None:
    module_resources = commands.add_parser(
        "module-resources",
        help="write BTP Manager's module-resources/ (apply, delete, excluded) from a chart",
    )
    module_resources.add_argument(
        "--chart", metavar="DIR", help="the module chart (default: the SAP BTP operator chart shipped)"
    )
    module_resources.add_argument("--values", action="append", default=[], metavar="FILE")
    module_resources.add_argument("--release", default="sap-btp-operator", metavar="TAG")
    module_resources.add_argument("--namespace", default="kyma-system")
    module_resources.add_argument("--out", default="module-resources", metavar="DIR")
    add_engine_options(module_resources)
    add_output_options(module_resources)
    module_resources.set_defaults(handler=run_module_resources)
