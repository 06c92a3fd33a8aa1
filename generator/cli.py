"""The `btp-gitops` command line: parse options, run one pipeline, turn errors into exit codes.

This is the only place that decides exit codes and prints errors (see generator.core.errors for
the table). Controller commands (`controller`, `subscription-server`) are contributed through the
`btp_gitops.commands` entry-point group, so the generator never imports the controller.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TextIO

from generator import __version__
from generator.core.charts import ChartRenderer
from generator.core.errors import EXIT_INTERNAL, EXIT_OK, BtpGitopsError
from generator.core.report import Note
from generator.io.helm import EmbeddedHelm, HelmCli
from generator.io.schemas import load_schema_registry
from generator.pipeline.module_resources import generate_module_resources
from generator.pipeline.render import RenderRequest, render_into_repo

Handler = Callable[[argparse.Namespace], int]


def chart_engine(args: argparse.Namespace) -> ChartRenderer:
    if args.helm_binary:
        return HelmCli(args.helm_binary)
    return EmbeddedHelm()


def _print_notes(notes: list[Note], stream: TextIO) -> None:
    for note in notes:
        print(f"  {note.level}: {note.reason}: {note.subject}: {note.message}", file=stream)


def run_render(args: argparse.Namespace) -> int:
    request = RenderRequest(
        sources=tuple(Path(s) for s in args.sources),
        out=Path(args.out),
        cluster=args.cluster,
        commit=args.commit,
    )
    result = render_into_repo(request, chart_engine(args), load_schema_registry(args.schemas))
    if args.output == "json":
        json.dump(result.report(), sys.stdout, indent=2, sort_keys=True)
        print()
        return EXIT_OK
    objects = sum(len(app.manifests) for app in result.apps)
    changes = result.changes
    print(
        f"rendered cluster {result.cluster} into {request.out}/clusters/{result.cluster}: "
        f"{objects} objects in {len([a for a in result.apps if a.manifests])} app(s); "
        f"{len(changes.added)} added, {len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    for app in result.apps:
        if app.notes:
            print(f"{app.app}:")
            _print_notes(app.notes, sys.stdout)
    if request.commit:
        print(f"committed {result.commit}" if result.commit else "nothing to commit")
    return EXIT_OK


def run_module_resources(args: argparse.Namespace) -> int:
    result = generate_module_resources(
        chart=Path(args.chart),
        values_files=tuple(Path(v) for v in args.values),
        release=args.release,
        namespace=args.namespace,
        out=Path(args.out),
        engine=chart_engine(args),
    )
    if args.output == "json":
        json.dump(
            {
                "files": sorted(result.files),
                "changes": {
                    "added": list(result.changes.added),
                    "changed": list(result.changes.changed),
                    "removed": list(result.changes.removed),
                },
                "notes": [n.as_dict() for n in result.notes],
            },
            sys.stdout,
            indent=2,
            sort_keys=True,
        )
        print()
        return EXIT_OK
    changes = result.changes
    print(
        f"wrote {args.out}: {len(result.files)} files; {len(changes.added)} added, "
        f"{len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    _print_notes(result.notes, sys.stdout)
    return EXIT_OK


def _add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--helm-binary",
        metavar="PATH",
        help="render charts with this helm CLI (v3 or v4) instead of the embedded Helm engine",
    )
    parser.add_argument("--output", choices=("text", "json"), default="text", help="result format on stdout")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="btp-gitops",
        description="Render SAP BTP workloads (BTP operator, Kyma modules, CAP) into a GitOps repository.",
    )
    parser.add_argument("--version", action="version", version=f"btp-gitops {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    render = commands.add_parser("render", help="render source custom resources into a GitOps repo")
    render.add_argument("sources", nargs="+", metavar="SOURCE", help="YAML files or directories")
    render.add_argument(
        "--out", required=True, metavar="REPO", help="the GitOps repository (work tree) to write"
    )
    render.add_argument("--cluster", default="default", help="writes clusters/<cluster>/ (default: default)")
    render.add_argument("--commit", action="store_true", help="commit the result when the tree changed")
    render.add_argument("--schemas", type=Path, help=argparse.SUPPRESS)
    _add_engine_options(render)
    render.set_defaults(handler=run_render)

    module_resources = commands.add_parser(
        "module-resources",
        help="write BTP Manager's module-resources/ (apply, delete, excluded) from a chart",
    )
    module_resources.add_argument("--chart", required=True, metavar="DIR")
    module_resources.add_argument("--values", action="append", default=[], metavar="FILE")
    module_resources.add_argument("--release", default="sap-btp-operator", metavar="TAG")
    module_resources.add_argument("--namespace", default="kyma-system")
    module_resources.add_argument("--out", default="module-resources", metavar="DIR")
    _add_engine_options(module_resources)
    module_resources.set_defaults(handler=run_module_resources)

    for entry in sorted(entry_points(group="btp_gitops.commands"), key=lambda e: e.name):
        register: Callable[[Any], None] = entry.load()
        register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BtpGitopsError as error:
        for line in error.lines():
            print(f"error: {line}" if line == error.message else line, file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception:
        print("internal error in btp-gitops (please report it with this trace):", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
