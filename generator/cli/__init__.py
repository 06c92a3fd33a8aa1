"""The `btp-gitops` command line: parse options, run one command, turn errors into exit codes.

Each command is a module of this package (render, diff, module_resources, crds, validate,
post_render; options holds what several share) with an `add_<command>_parser` that sets its
handler. This module only builds the parser and dispatches; `main` is the only place that maps
errors to exit codes and prints them (see generator.core.errors for the table). Controller
commands (`controller`, `subscription-server`) are contributed through the `btp_gitops.commands`
entry-point group, so the generator never imports the controller.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any

from btp_gitops import __version__
from btp_gitops.generator.cli.crds import add_crds_parser
from btp_gitops.generator.cli.diff import add_diff_parser
from btp_gitops.generator.cli.module_resources import add_module_resources_parser
from btp_gitops.generator.cli.post_render import add_post_render_parser
from btp_gitops.generator.cli.render import add_render_parser
from btp_gitops.generator.cli.validate import add_validate_parser
from btp_gitops.generator.core.errors import BtpGitopsError
from btp_gitops.generator.core.exit_codes import exit_code_for
from btp_gitops.generator.core.redact import redact

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="btp-gitops",
        description="Render SAP BTP workloads (BTP operator, Kyma modules, CAP) into a GitOps repository.",
    )
    parser.add_argument("--version", action="version", version=f"btp-gitops {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_render_parser(commands)
    add_module_resources_parser(commands)
    add_crds_parser(commands)
    add_post_render_parser(commands)
    add_diff_parser(commands)
    add_validate_parser(commands)

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
        return exit_code_for(error)
    except KeyboardInterrupt as error:
        return exit_code_for(error)
    except BrokenPipeError as error:
        # The reader went away (`... | head`): not our failure. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again, and exit as a SIGPIPE'd tool would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_code_for(error)
    except Exception as error:
        print("internal error in btp-gitops (please report it with this trace):", file=sys.stderr)
        print(redact(traceback.format_exc()), end="", file=sys.stderr)  # it may quote input values
        return exit_code_for(error)


if __name__ == "__main__":
    sys.exit(main())
