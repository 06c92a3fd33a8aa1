"""`btp-gitops chart-path [CHART]`: where a chart bundled with btp-gitops is, for `helm install`
(`helm install btp-gitops "$(btp-gitops chart-path)" -n btp-gitops`) when there is no checkout."""

from __future__ import annotations

import argparse
from typing import Any

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io import bundled

CHARTS = (bundled.INSTALL_CHART, bundled.SAP_BTP_OPERATOR_CHART)


def run_chart_path(args: argparse.Namespace) -> int:
    print(bundled.chart_dir(args.chart))
    return ExitCode.OK


def add_chart_path_parser(commands: Any) -> None:
    chart_path = commands.add_parser(
        "chart-path", help="print the directory of a bundled chart (for helm install or helm template)"
    )
    chart_path.add_argument(
        "chart",
        nargs="?",
        default=bundled.INSTALL_CHART,
        choices=CHARTS,
        help=f"default: {bundled.INSTALL_CHART} (the controller and subscription server); "
        f"{bundled.SAP_BTP_OPERATOR_CHART}: the SAP BTP service operator chart render uses",
    )
    chart_path.set_defaults(handler=run_chart_path)
