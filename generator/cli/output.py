"""How command results are shown: text for people, or one JSON or YAML document for programs.

Every command that prints a result takes `-o/--output text|json|yaml` (`diff` also `markdown`)
and `-q/--quiet`, `-v/--verbose` (add_output_options). In JSON and YAML mode stdout holds exactly
one document: the result, or, when the command fails, the error (`error_document`, printed by
`cli.main`; docs/errors.md shows its shape). Keys are camelCase, as in Kubernetes objects.

The long-running `controller` and `subscription-server` print no result (they log), and
`post-render` and `render --stdout` print a manifest stream for Helm or Argo CD: none of them
takes `--output`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.redact import printable
from btp_gitops.generator.core.report import Level, Note

TEXT, JSON, YAML = "text", "json", "yaml"
OUTPUT_FORMATS = (TEXT, JSON, YAML)
STRUCTURED = (JSON, YAML)

if TYPE_CHECKING:  # post-render prints notes too, and reads no source directory
    from btp_gitops.generator.core.source_contents import Skipped


def add_output_options(
    parser: argparse.ArgumentParser, formats: Sequence[str] = OUTPUT_FORMATS, formats_help: str = ""
) -> None:
    """`-o/--output`, and `-q/--quiet` or `-v/--verbose`: the same flags, meaning the same, on every
    command that prints a result."""
    parser.add_argument(
        "-o",
        "--output",
        choices=formats,
        default=TEXT,
        help=f"the result on stdout: {formats_help or ', '.join(formats)} (default: text); with json or "
        "yaml, an error is a document on stdout too, with the exit code (see docs/errors.md)",
    )
    add_verbosity_options(parser)


def add_verbosity_options(parser: argparse.ArgumentParser) -> None:
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only warnings and errors (on stderr): no summary, no report, no progress line; the "
        "exit code says the rest (with -o json|yaml the result is still printed: it is what was asked for)",
    )
    verbosity.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also say what was done in detail: every file added, changed or removed, each step with its "
        "count and time on stderr (also where no progress line is drawn, as in CI)",
    )


# What a command made, left to the end of the process (`keep_until_exit`).
_KEPT: list[object] = []


def keep_until_exit(*made: object) -> None:
    """Leave what a command made (a render's result: its apps, files and records, millions of
    objects at 20,000 tenants) to be freed with the process, not one object at a time as the
    command returns: the console script ends the process without taking its heap apart
    (`generator.cli.run`). A caller of `main` in the same process (a test) frees it when `main`
    runs the next command."""
    _KEPT.extend(made)


def forget_kept() -> None:
    """Drop what the previous command in this process kept (`keep_until_exit`)."""
    _KEPT.clear()


def structured(args: argparse.Namespace) -> bool:
    return getattr(args, "output", TEXT) in STRUCTURED


def print_result(data: Mapping[str, Any], output: str, stream: TextIO) -> None:
    """One document on `stream`: the result of a command in JSON or YAML, keys sorted."""
    if output == YAML:
        # The YAML writer (and PyYAML) only in YAML mode: `post-render` and `--version` never pay for it.
        from btp_gitops.generator.core.yamlio import dump_report  # noqa: PLC0415

        stream.write(dump_report(data))
    else:
        json.dump(data, stream, indent=2, sort_keys=True)
        stream.write("\n")


def error_document(kind: str, message: str, problems: Sequence[Problem], exit_code: int) -> dict[str, Any]:
    """A failed command in JSON or YAML mode: what went wrong and the exit code, on stdout."""
    return {
        "error": {"type": kind, "message": message, "problems": [p.as_dict() for p in problems]},
        "exitCode": int(exit_code),
    }


def requested_output(argv: Sequence[str]) -> str:
    """The `-o/--output` of a command line argparse refused (its last one, as argparse takes it), so
    that a usage error is a JSON document when JSON was asked for."""
    output = TEXT
    for index, argument in enumerate(argv):
        if argument == "--":
            break
        if argument in ("-o", "--output") and index + 1 < len(argv):
            output = argv[index + 1]
        elif argument.startswith("--output="):
            output = argument.removeprefix("--output=")
        elif argument.startswith("-o") and not argument.startswith("--") and len(argument) > 2:
            output = argument[2:].removeprefix("=")
    return output if output in STRUCTURED else TEXT


def changes_dict(
    added: Sequence[str], changed: Sequence[str], removed: Sequence[str]
) -> dict[str, list[str]]:
    return {"added": list(added), "changed": list(changed), "removed": list(removed)}


def print_changed_files(
    added: Sequence[str], changed: Sequence[str], removed: Sequence[str], stream: TextIO
) -> None:
    """--verbose: each file a command wrote or removed, marked as `diff`'s summary marks them."""
    for sign, paths in (("+", added), ("~", changed), ("-", removed)):
        for path in paths:
            print(printable(f"  {sign} {path}"), file=stream)


def print_notes(notes: list[Note], stream: TextIO, *, quiet: bool = False) -> None:
    """Each note on a line; with --quiet only warnings and errors."""
    for note in notes:
        if quiet and note.level == Level.INFO:
            continue
        print(printable(f"  {note.level}: {note.reason}: {note.subject}: {note.message}"), file=stream)


def print_module_problems(problems: list[Problem], stream: TextIO) -> None:
    """Kyma modules that could not be resolved (their previous files kept), each named."""
    if not problems:
        return
    print(
        f"warning: rendered with {len(problems)} Kyma module problem(s); their previous files are kept:",
        file=stream,
    )
    for problem in problems:
        print(printable(f"  {problem.render()}"), file=stream)


def print_skipped(skipped: list[Skipped], stream: TextIO, quiet: bool) -> None:
    """What under the source paths was passed over as no source (a kustomization, Helm values, a
    chart, a render's output, other kinds), one note a line; `--quiet` leaves them out."""
    if quiet:
        return
    for entry in skipped:
        print(f"note: {entry.render()}", file=stream)
