"""How the writer runs Git: local commands in its clone, and the commands that talk to the remote
within a time limit.

Every Git command that talks to the remote (fetch, push, ls-remote) runs in a process group of its
own and is killed, group and all (Git's remote helpers are children of it), after
`network_timeout`: a hung remote fails the batch with `GitTimeout` instead of holding every caller
for minutes. Each such command's outcome is reported (`on_contact`): an answer, a rejection
included, or the problem (a timeout, a refused connection, ...), which `remote_health` follows.

Git runs with a fixed identity and with hooks and commit signing off, so the local Git
configuration cannot change what is committed; every message built from Git's output is masked."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import git

from btp_gitops.controller.errors import GitTimeout
from btp_gitops.controller.gitstore.interface import RepoSettings
from btp_gitops.controller.gitstore.messages import detail
from btp_gitops.generator.core import GitError

log = logging.getLogger(__name__)

# Git's markers of a push the remote refused to take as it is: another writer got there first
# ("fetch first", "non-fast-forward"), a concurrent update of the ref, or a hook that declined.
REJECTION_MARKERS = ("[rejected]", "[remote rejected]", "non-fast-forward", "fetch first")
MISSING_BRANCH_MARKERS = ("couldn't find remote ref", "could not find remote ref")


def git_environment(settings: RepoSettings) -> dict[str, str]:
    """Identity, no prompts, no hooks, no signing: the commit depends on the settings alone."""
    overrides = {"core.hooksPath": "/dev/null", "commit.gpgSign": "false", "gc.autoDetach": "false"}
    env = {
        "GIT_AUTHOR_NAME": settings.author_name,
        "GIT_AUTHOR_EMAIL": settings.author_email,
        "GIT_COMMITTER_NAME": settings.author_name,
        "GIT_COMMITTER_EMAIL": settings.author_email,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": str(len(overrides)),
    }
    for index, (key, value) in enumerate(overrides.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


class GitRunner:
    """Git commands in the clone at `tree`, once `repo` (gitpython's view of it) is open.
    `remote` is the remote's URL, masked: what messages name. `on_contact(problem)` hears the
    outcome of every command that talked to the remote ("" when it answered)."""

    def __init__(
        self, settings: RepoSettings, tree: Path, remote: str, on_contact: Callable[[str], None]
    ) -> None:
        self.repo: git.Repo | None = None
        self._timeout = settings.network_timeout
        self._tree = tree
        self._remote = remote
        self._on_contact = on_contact
        self._env = git_environment(settings)

    def require(self) -> git.Repo:
        if self.repo is None:
            raise GitError(f"the source repository {self._remote} is not open (start() first)")
        return self.repo

    def run(self, *args: str) -> str:
        """Run one Git command in the clone; GitError (masked) when it fails."""
        status, out, err = self.execute(*args)
        if status != 0:
            raise GitError(f"git {args[0]} failed for {self._remote}: {detail(err or out)}")
        return out

    def execute(self, *args: str) -> tuple[int, str, str]:
        """Run one local Git command through gitpython: (status, stdout, stderr), stripped."""
        repo = self.require()
        try:
            status, out, err = repo.git.execute(
                ["git", *args], with_extended_output=True, with_exceptions=False, env=self._env
            )
        except git.GitCommandNotFound as error:
            raise GitError("the git executable was not found") from error
        return int(status), str(out), str(err)

    def read_commit(self, sha: str) -> bytes:
        """The raw commit object `sha`, from gitpython's `git cat-file --batch`, kept running: no
        process to start."""
        try:
            return bytes(self.require().odb.stream(bytes.fromhex(sha)).read())
        except (ValueError, OSError, git.GitError) as error:
            raise GitError(
                f"cannot read commit {sha[:12]} of {self._remote}: {type(error).__name__}"
            ) from error

    def run_bytes(self, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> bytes:
        """Run one local Git command with `stdin`, its output as bytes, unstripped; GitError
        (masked) when it fails."""
        try:
            done: subprocess.CompletedProcess[bytes] = subprocess.run(
                ["git", *args],
                cwd=self._tree,
                env={**os.environ, **self._env, **(env or {})},
                input=stdin,
                capture_output=True,
                check=False,
            )
        except OSError as error:
            raise GitError(f"cannot run git {args[0]}: {type(error).__name__}") from error
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace") or done.stdout.decode("utf-8", "replace")
            raise GitError(f"git {args[0]} failed for {self._remote}: {detail(reason)}")
        return done.stdout

    def network(self, operation: str, *args: str) -> tuple[int, str, str]:
        """Run a Git command that talks to the remote, within `network_timeout`.

        Not through gitpython: the command gets a process group of its own, so a timeout kills Git
        and its remote helper (git-remote-https, ssh) together; a helper left behind would keep the
        connection, and its pipes, open. The outcome goes to `on_contact`."""
        env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **self._env}
        timeout = self._timeout
        try:
            process = subprocess.Popen(
                ["git", *args],
                cwd=self._tree,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,
            )
        except OSError as error:
            raise GitError(f"cannot run git {operation}: {type(error).__name__}") from error
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process)
            self._on_contact(f"git {operation} did not answer within {timeout:g}s")
            raise GitTimeout(operation, self._remote, timeout) from None
        status = process.returncode
        output = f"{err}\n{out}"
        answered = status == 0 or any(
            marker in output for marker in (*REJECTION_MARKERS, *MISSING_BRANCH_MARKERS)
        )
        self._on_contact("" if answered else f"git {operation} failed: {detail(err or out)}")
        return status, out.rstrip("\n"), err.rstrip("\n")


def kill_group(process: subprocess.Popen[str]) -> None:
    """Kill the process and everything it started (its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError):  # it ended just now
        os.killpg(process.pid, signal.SIGKILL)
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a helper that left the group still holds the pipes
        log.warning("git process %d left a helper holding its output open", process.pid)
