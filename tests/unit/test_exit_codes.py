"""One table of exit codes (core.exit_codes) for the generator and the controller: docs/errors.md
documents exactly that table, every error class's code is listed there, exit 1 belongs to
"changes found" alone, and real processes exit with the codes the table gives."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
from pathlib import Path

import pytest

import btp_gitops.controller
import btp_gitops.generator
from btp_gitops.controller.errors import ConfigurationError, ControllerError, TemporaryError
from btp_gitops.generator.core.errors import BtpGitopsError, GitError, InstallationBroken, UsageError
from btp_gitops.generator.core.exit_codes import MEANINGS, ExitCode, exit_code_for
from tests.conftest import CLI, ROOT
from tests.support.contributed import contributed_command_env

DOC = ROOT / "docs" / "errors.md"


def _doc_rows() -> list[list[str]]:
    """The cells of the exit-code table in docs/errors.md (the table whose header starts `| Exit |`)."""
    lines = DOC.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("| Exit |"))
    rows: list[list[str]] = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        # `\|` is a pipe inside a cell (markdown's escape), not a column separator.
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([cell.strip().replace("\\|", "|") for cell in cells])
    return rows


def _all_error_classes() -> set[type[BtpGitopsError]]:
    """Every subclass of the root, after importing every module that could define one."""
    for package in (btp_gitops.generator, btp_gitops.controller):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    found: set[type[BtpGitopsError]] = set()
    pending: list[type[BtpGitopsError]] = [BtpGitopsError]
    while pending:
        cls = pending.pop()
        found.add(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_the_docs_table_is_the_module_table() -> None:
    documented = [(int(row[0]), row[1], row[2]) for row in _doc_rows()]
    table = [(int(code), f"`{code.name}`", MEANINGS[code]) for code in ExitCode]
    assert documented == table
    assert set(MEANINGS) == set(ExitCode)
    assert all(row[3] for row in _doc_rows()), "every code names the commands that return it"


def test_every_error_class_that_sets_a_code_is_documented_under_it() -> None:
    classes = {cls.__name__: cls for cls in _all_error_classes()}
    documented: dict[str, int] = {}
    for row in _doc_rows():
        for name in re.findall(r"`(\w+)`", row[4]):
            documented[name] = int(row[0])
    for name, code in documented.items():
        assert name in classes, f"docs/errors.md names {name}, which is not an error class"
        assert classes[name].exit_code == code, name
    setting_a_code = {name for name, cls in classes.items() if "exit_code" in vars(cls)}
    assert setting_a_code - set(documented) == set()
    assert {"BtpGitopsError", "ControllerError", "GitError", "ConfigurationError"} <= set(documented)


def test_exit_1_means_changes_found_and_nothing_else() -> None:
    assert ExitCode(1) is ExitCode.CHANGES
    assert [cls.__name__ for cls in _all_error_classes() if cls.exit_code == ExitCode.CHANGES] == []
    assert BtpGitopsError.exit_code != ControllerError.exit_code


def test_one_root_and_one_git_error() -> None:
    assert issubclass(ControllerError, BtpGitopsError)
    assert [cls for cls in _all_error_classes() if cls.__name__ == "GitError"] == [GitError]


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (BtpGitopsError("no code of its own"), ExitCode.ERROR),
        (UsageError("--x and --y"), ExitCode.USAGE),
        (GitError("cannot fetch"), ExitCode.OUTPUT),
        (InstallationBroken("no schemas"), ExitCode.INTERNAL),
        (ControllerError("stopped"), ExitCode.CONTROLLER),
        (TemporaryError("later"), ExitCode.CONTROLLER),
        (ConfigurationError("bad flag"), ExitCode.USAGE),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED),
        (BrokenPipeError(), ExitCode.BROKEN_PIPE),
        (ValueError("a bug"), ExitCode.INTERNAL),
    ],
)
def test_exit_code_for(error: BaseException, code: ExitCode) -> None:
    assert exit_code_for(error) is code


# A command contributed through the `btp_gitops.commands` entry-point group, the way the controller
# joins the CLI: it raises what it is told, so the real `btp-gitops` process shows each code.
PROBE = """
from btp_gitops.controller.app import run_command
from btp_gitops.controller.errors import KubeUnavailable
from btp_gitops.generator.core.errors import BtpGitopsError

RAISED = {
    "root": BtpGitopsError("something of ours failed"),
    "bug": ZeroDivisionError("not ours"),
}


def controller_body(args):
    raise KubeUnavailable("the API server did not answer")


def register(commands):
    parser = commands.add_parser("exit-probe")
    parser.add_argument("what")
    parser.set_defaults(handler=handle, log_format="text", log_level="info")


def handle(args):
    if args.what == "controller":
        return run_command(args, controller_body)
    raise RAISED[args.what]
"""


@pytest.fixture
def probe_env(tmp_path: Path) -> dict[str, str]:
    return contributed_command_env(tmp_path, "exit_code_probe", "exit-probe", PROBE)


@pytest.mark.parametrize(
    ("what", "code", "stderr"),
    [
        ("root", ExitCode.ERROR, "error: something of ours failed\n"),
        ("controller", ExitCode.CONTROLLER, "error: the API server did not answer\n"),
    ],
)
def test_a_real_process_exits_with_the_code_of_its_error(
    probe_env: dict[str, str], what: str, code: ExitCode, stderr: str
) -> None:
    done = subprocess.run(
        [str(CLI), "exit-probe", what], capture_output=True, text=True, env=probe_env, check=False, timeout=60
    )
    assert (done.returncode, done.stderr) == (code, stderr)


def test_an_exception_that_is_not_ours_exits_70_with_the_trace(probe_env: dict[str, str]) -> None:
    done = subprocess.run(
        [str(CLI), "exit-probe", "bug"],
        capture_output=True,
        text=True,
        env=probe_env,
        check=False,
        timeout=60,
    )
    assert done.returncode == ExitCode.INTERNAL
    assert done.stderr.startswith("internal error in btp-gitops")
    assert "ZeroDivisionError: not ours" in done.stderr
