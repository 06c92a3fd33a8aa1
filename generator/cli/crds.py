"""`btp-gitops crds`: the CustomResourceDefinitions of the chart, from schemas/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from btp_gitops.generator.cli.output import (
    add_output_options,
    changes_dict,
    print_changed_files,
    print_result,
    structured,
)
from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.crd_files import default_crd_dir
from btp_gitops.generator.pipeline.crds import check_crds, write_crds


def run_crds(args: argparse.Namespace) -> int:
    if not args.out and not args.check and not bundled.is_checkout():
        # The default is the install chart inside this installation: never rewrite installed files.
        raise UsageError("btp-gitops crds: pass --out DIR (only a checkout writes its own chart's CRDs)")
    out = Path(args.out) if args.out else default_crd_dir()
    if args.check:
        drifting = check_crds(args.schemas, out)
        if structured(args):
            print_result({"out": str(out), "drifting": drifting}, args.output, sys.stdout)
        elif args.quiet:
            pass  # the exit code says it: 1 when the CRDs drift
        elif drifting:
            print(f"CRDs in {out} drift from the schemas (run `btp-gitops crds` to regenerate them):")
            print("".join(f"  {name}\n" for name in drifting), end="")
        else:
            print(f"CRDs in {out} match the schemas")
        return ExitCode.CHANGES if drifting else ExitCode.OK
    result = write_crds(args.schemas, out)
    changes = result.changes
    if structured(args):
        report = {
            "out": str(out),
            "files": sorted(result.files),
            "changes": changes_dict(changes.added, changes.changed, changes.removed),
        }
        print_result(report, args.output, sys.stdout)
        return ExitCode.OK
    if args.quiet:
        return ExitCode.OK
    print(
        f"wrote {out}: {len(result.files)} CRDs; {len(changes.added)} added, "
        f"{len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    if args.verbose:
        print_changed_files(changes.added, changes.changed, changes.removed, sys.stdout)
    return ExitCode.OK


def add_crds_parser(commands: Any) -> None:
    crds = commands.add_parser("crds", help="write the CustomResourceDefinitions of the chart from schemas/")
    crds.add_argument(
        "--out",
        metavar="DIR",
        help="default: charts/btp-gitops/crds (in a checkout; elsewhere --out is needed)",
    )
    crds.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if DIR drifts from schemas/"
    )
    crds.add_argument("--schemas", type=Path, help=argparse.SUPPRESS)
    add_output_options(crds)
    crds.set_defaults(handler=run_crds)
