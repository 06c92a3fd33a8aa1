"""The options of every command that renders charts: which Helm engine, and which files beyond the
sources charts may read.

Apart from cli.options (which imports the render pipeline for the options of `render` and `diff`),
so that `module-resources` and `post-render --domain kyma` import only what rendering a chart
needs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from btp_gitops.generator.core.errors import UsageError

if TYPE_CHECKING:
    from btp_gitops.generator.charts.renderer import ChartRenderer


def chart_engine(args: argparse.Namespace) -> ChartRenderer:
    # The Helm engine's module (its process, the chart schema check) is loaded by the command
    # that renders, not by building the parser (`--help`, a usage error).
    from btp_gitops.generator.io.helm import EmbeddedHelm, HelmCli  # noqa: PLC0415

    if args.helm_binary:
        return HelmCli(args.helm_binary)
    return EmbeddedHelm()


def allow_paths(args: argparse.Namespace) -> tuple[Path, ...]:
    for path in args.allow_path:
        if not Path(path).exists():
            raise UsageError(f"--allow-path {path}: no such file or directory")
    return tuple(Path(path) for path in args.allow_path)


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--helm-binary",
        metavar="PATH",
        help="render charts with this helm CLI (v3 or v4) instead of the embedded Helm engine",
    )
