"""Every exit code of every btp-gitops command, the generator's and the controller's, in one table.

Errors carry their code (`exit_code` on each class of the tree in core.errors and
controller.errors); `exit_code_for` is what the command lines (`generator.cli.main`,
`controller.app.run_command`) ask. docs/errors.md documents this table, and a test keeps the two
identical. Exit 1 means "changes found" and nothing else, so a workflow can tell a diff from a
failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Final


class ExitCode(IntEnum):
    OK = 0
    CHANGES = 1
    USAGE = 2
    INPUT = 3
    CHART = 4
    OUTPUT = 5
    ERROR = 6
    CONTROLLER = 7
    LEASE_LOST = 8
    MODULE_PROBLEMS = 9
    INTERNAL = 70
    INTERRUPTED = 130
    BROKEN_PIPE = 141

    @property
    def meaning(self) -> str:
        return MEANINGS[self]


MEANINGS: Final[Mapping[ExitCode, str]] = {
    ExitCode.OK: "success (with `--exit-code` or `--check`: nothing changed)",
    ExitCode.CHANGES: "changes found (`diff --exit-code`, `crds --check`); never an error",
    ExitCode.USAGE: "wrong command-line usage, or a controller setting that cannot work",
    ExitCode.INPUT: "invalid input: a source, a rendered object, credentials, a policy or a cluster to read",
    ExitCode.CHART: (
        "a chart cannot be found or rendered, renders non-deterministically, reaches outside itself or "
        "overruns its limits"
    ),
    ExitCode.OUTPUT: "the result cannot be written, would contain a credential, or a Git repository failed",
    ExitCode.ERROR: "an error btp-gitops raised on purpose that no other code names",
    ExitCode.CONTROLLER: "the controller or the subscription server stopped: the cluster or a service failed",
    ExitCode.LEASE_LOST: "the controller lost its leader Lease and exits so that a new leader takes over",
    ExitCode.MODULE_PROBLEMS: (
        "rendered with module problems: some Kyma modules could not be resolved and keep their "
        "previous files (`--strict`: a failure, exit 3)"
    ),
    ExitCode.INTERNAL: "a bug in btp-gitops or a broken installation (the trace is printed)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
    ExitCode.BROKEN_PIPE: "the reader of stdout went away (`... | head`), as for a tool killed by SIGPIPE",
}


def exit_code_for(error: BaseException) -> ExitCode:
    """The code a command exits with when `error` ends it: an error of ours says which (its class's
    `exit_code`); anything else is a bug."""
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(error, BrokenPipeError):
        return ExitCode.BROKEN_PIPE
    # Read by attribute, not by class: core.errors imports this module, so it cannot import that one.
    code = getattr(error, "exit_code", None)
    return code if isinstance(code, ExitCode) else ExitCode.INTERNAL
