"""The `btp-gitops` command line: parse options, run one command, turn errors into exit codes.

Each command is a module of this package (render, diff, module_resources, crds, validate,
post_render, completion; options holds what several share, output how results and errors are
printed) with an `add_<command>_parser` that sets its
handler. This module only builds the parser and dispatches; `main` is the only place that maps
errors to exit codes and prints them (see generator.core.errors for the table). Controller
commands (`controller`, `subscription-server`) are contributed through the `btp_gitops.commands`
entry-point group, so the generator never imports the controller.

A command pays only for its own imports: `main` imports the module of the command it runs and no
other (`COMMANDS` names them the way entry points do), and looks at the entry points only when
the command line names none of ours (`--help`, a controller command, a mistake). Helm runs
`btp-gitops post-render` on every install and upgrade, where the start-up is most of the work;
`tests/packaging/test_startup.py` keeps `--version` and `post-render` free of the heavy packages,
and `render --help` and `diff --help` free of the pipeline.

A lone `--version` imports no command at all. The faces the commands pass through
(`generator.core`, `generator.io`, `generator.domains.kyma`) are lazy (core.faces). `render` and
`diff` load the render pipeline in their handler, not with their parser. A heavy package is
imported where the one mode that needs it starts, with a comment saying so: `jsonschema` when a
schema registry builds its first validator, the Kubernetes schemas and the manifest validator
with `--validate` (and `validate`), `cryptography` when core.keys meets the shape of a DER key
or a certificate bundle and in self-signed certificate mode, the CAP and Kyma post-render
pipeline with `--domain cap|kyma`, GitPython with `render --commit` (never with `diff`),
the Kubernetes client with `--from-cluster`. The embedded Helm engine is never imported here:
io.helm_process starts io.helm_worker, a child process that loads it; io.helm loads that process
code when it renders its first chart.

The console script is `run`: `main`, then the process ends without freeing its heap object by
object (what `render` and `diff` made is kept to the end, cli.output.keep_until_exit), after
what the interpreter's shutdown would do that anyone sees (output flushed, atexit functions run,
other threads waited for).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Collection, Sequence
from typing import Any, NoReturn

from btp_gitops import __version__
from btp_gitops.generator.cli.output import (
    STRUCTURED,
    TEXT,
    error_document,
    forget_kept,
    print_result,
    requested_output,
)
from btp_gitops.generator.core.errors import BtpGitopsError, Problem, UsageError
from btp_gitops.generator.core.exit_codes import ExitCode, exit_code_for
from btp_gitops.generator.core.redact import printable, redact
from btp_gitops.generator.core.suggestions import did_you_mean

Handler = Callable[[argparse.Namespace], int]
Register = Callable[[Any], None]  # adds one command's parser to the subparsers action

# Our commands, in the order `--help` lists them: "module:function" as an entry point names it.
COMMANDS = {
    "render": "btp_gitops.generator.cli.render:add_render_parser",
    "module-resources": "btp_gitops.generator.cli.module_resources:add_module_resources_parser",
    "crds": "btp_gitops.generator.cli.crds:add_crds_parser",
    "post-render": "btp_gitops.generator.cli.post_render:add_post_render_parser",
    "diff": "btp_gitops.generator.cli.diff:add_diff_parser",
    "validate": "btp_gitops.generator.cli.validate:add_validate_parser",
    "import": "btp_gitops.generator.cli.import_sources:add_import_parser",
    "examples": "btp_gitops.generator.cli.examples:add_examples_parser",
    "chart-path": "btp_gitops.generator.cli.chart_path:add_chart_path_parser",
    "completion": "btp_gitops.generator.cli.completion:add_completion_parser",
}
ENTRY_POINT_GROUP = "btp_gitops.commands"


def _load(reference: str) -> Register:
    module, _, function = reference.partition(":")
    register: Register = getattr(importlib.import_module(module), function)
    return register


def _contributed() -> list[Register]:
    """The commands other distributions (the controller) add, by entry point name."""
    # Reading every installed distribution's entry points costs more than the rest of a
    # post-render's start-up (~0.05 s); it is done only when the command is not one of ours.
    from importlib.metadata import entry_points  # noqa: PLC0415

    return [entry.load() for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)]


def _terminal_columns() -> int:
    """What shutil.get_terminal_size() says: $COLUMNS, else the terminal's width, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's, sized without importing shutil: argparse makes a formatter for every option it
    adds, and shutil imports bz2 and lzma (a tenth of `post-render`'s start-up)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        width = _terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class UsageRefused(SystemExit):
    """argparse refused the command line: raised instead of its print-and-exit, so that `main` can
    answer in the output format asked for (a JSON document with -o json). Still the SystemExit(2)
    argparse documents for any other caller of `parse_args`."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(ExitCode.USAGE)
        self.parser = parser
        self.message = message


class _ArgumentParser(argparse.ArgumentParser):
    """The parser of `btp-gitops` and of each command (subparsers are of their parent's class).

    No prefix abbreviations (`allow_abbrev=False`): `--clust` is refused, not taken for `--cluster`,
    so adding an option can never change what an existing command line means."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageRefused(self, message)


def build_parser(only: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of every command; with `only`, of those of our commands alone."""
    parser = _ArgumentParser(
        prog="btp-gitops",
        description="Render SAP BTP workloads (BTP operator, Kyma modules, CAP) into a GitOps repository.",
    )
    parser.add_argument("--version", action="version", version=f"btp-gitops {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, reference in COMMANDS.items():
        if only is None or name in only:
            _load(reference)(commands)
    for register in _contributed() if only is None else []:
        register(commands)
    return parser


def commands_needed(argv: Sequence[str]) -> set[str] | None:
    """Which of our commands the parser needs for `argv`: the one it starts with, none for a lone
    `--version`, or None (all, and the contributed ones) for anything else (`--help`, `-h render`,
    a controller command, a mistake: argparse may list every command then)."""
    if list(argv) == ["--version"]:
        return set()
    if argv and argv[0] in COMMANDS:
        return {argv[0]}
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    forget_kept()
    parser = build_parser(commands_needed(arguments))
    if not arguments:
        # As kubectl and helm: the bare command is a request for help, not a mistake.
        parser.print_help()
        return ExitCode.OK
    try:
        args = parser.parse_args(arguments)
    except UsageRefused as refused:
        return _refused(refused, arguments, requested_output(arguments))
    output = getattr(args, "output", TEXT)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BtpGitopsError as error:
        for line in error.lines():
            # A file name or value from a pushed tree may hold escape sequences: shown, not acted on.
            print(printable(f"error: {line}" if line == error.message else line), file=sys.stderr)
        code = exit_code_for(error)
        _print_error(output, type(error).__name__, error.message, error.problems, code)
        return code
    except KeyboardInterrupt as error:
        code = exit_code_for(error)
        _print_error(output, "Interrupted", "interrupted", (), code)
        return code
    except BrokenPipeError as error:
        # The reader went away (`... | head`): not our failure. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again, and exit as a SIGPIPE'd tool would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_code_for(error)
    except Exception as error:
        print("internal error in btp-gitops (please report it with this trace):", file=sys.stderr)
        print(printable(redact(traceback.format_exc())), end="", file=sys.stderr)  # it may quote input values
        code = exit_code_for(error)
        message = "internal error in btp-gitops (the trace is on stderr; please report it)"
        _print_error(output, "InternalError", message, (), code)
        return code


def _refused(refused: UsageRefused, arguments: Sequence[str], output: str) -> int:
    """A command line argparse refused: its usage and message on stderr, as argparse prints them,
    and with -o json|yaml the error document on stdout."""
    message = refused.message + _nearest_option(refused, arguments)
    refused.parser.print_usage(sys.stderr)
    print(f"{refused.parser.prog}: error: {message}", file=sys.stderr)
    _print_error(output, UsageError.__name__, message, (), ExitCode.USAGE)
    return ExitCode.USAGE


def _nearest_option(refused: UsageRefused, arguments: Sequence[str]) -> str:
    """' (did you mean "--cluster"?)' for an option the command does not know (`--clust`: no prefix
    is taken for an option, but the one meant is named)."""
    unknown = [a for a in arguments if a.startswith("--") and f" {a.split('=')[0]}" in f" {refused.message}"]
    if not refused.message.startswith("unrecognized arguments:") or not unknown:
        return ""
    command = refused.parser
    for action in refused.parser._actions:  # argparse has no public walk of its commands
        if isinstance(action, argparse._SubParsersAction) and arguments and arguments[0] in action.choices:
            command = action.choices[arguments[0]]
    known = [flag for action in command._actions for flag in action.option_strings if flag.startswith("--")]
    return did_you_mean(unknown[0].split("=")[0], known)


def _print_error(output: str, kind: str, message: str, problems: Sequence[Problem], code: int) -> None:
    """In JSON and YAML mode the failure is the one document on stdout (the lines on stderr stay,
    for the log)."""
    if output in STRUCTURED:
        print_result(error_document(kind, message, problems, code), output, sys.stdout)


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """The `btp-gitops` console script: `main`, then out of the process without taking its heap
    apart. A warm render of 20,000 tenants ends holding millions of objects (what the command
    kept, cli.output.keep_until_exit), and the interpreter's shutdown would free them one by one
    and run a last collection over them: a tenth of a warm `diff`'s CPU that changes nothing
    (docs/benchmarks.md). What shutdown does that matters is done first: stdout and stderr
    flushed (a reader that went away ends the command as `main` ends it for one, see
    `BrokenPipeError` there), the atexit functions run (the Helm worker stopped, logging flushed,
    temporary directories removed). While another thread that is not a daemon still runs (a
    controller command that returned before its workers ended), the usual shutdown, which waits
    for it."""
    code = main(argv)
    threads = sys.modules.get("threading")  # never imported: no other thread was started
    if threads is not None and any(
        thread is not threads.current_thread() and not thread.daemon and thread.is_alive()
        for thread in threads.enumerate()
    ):
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError as error:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = exit_code_for(error)
    atexit._run_exitfuncs()  # what shutdown would run, in its order (last registered first)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or its reader gone: nothing to keep
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
