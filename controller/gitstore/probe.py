"""The remote's health as the writer last saw it, and the probe that keeps it current.

The writer keeps the outcome of its last contact with the remote (`remote_health`): a success
(the remote answered, a rejection included) or a failure (timeout, refused connection, ...). When
idle for `probe_interval` it probes with `git ls-remote`, from its own thread, one process at a
time, so readiness follows the remote without probes piling up behind a hung one."""

from __future__ import annotations

import logging
import threading
import time

from btp_gitops.controller.gitstore.interface import REMOTE, RemoteHealth
from btp_gitops.controller.gitstore.messages import detail
from btp_gitops.controller.gitstore.runner import GitRunner
from btp_gitops.generator.core import GitError

log = logging.getLogger(__name__)


class RemoteWatch:
    """The outcome of the last contact with the remote `remote` (masked), kept thread-safe: the
    writer, its pushes and any reader report to it (`contacted`), readiness reads it (`health`)."""

    def __init__(self, remote: str, probe_interval: float) -> None:
        self._remote = remote
        self._interval = probe_interval
        self._lock = threading.Lock()
        self._health = RemoteHealth(False, "the remote has not been contacted yet", None)
        self._last_network = time.monotonic()  # end of the last network operation, either outcome

    def health(self) -> RemoteHealth:
        with self._lock:
            return self._health

    def contacted(self, problem: str) -> None:
        """A network operation ended: the remote answered (`problem` ""), or not, and why."""
        now = time.monotonic()
        self._last_network = now
        with self._lock:
            if problem:
                if self._health.reachable:
                    log.warning("the remote %s is unreachable: %s", self._remote, problem)
                self._health = RemoteHealth(False, problem, self._health.last_contact)
            else:
                if not self._health.reachable and self._health.last_contact is not None:
                    log.info("the remote %s answers again", self._remote)
                self._health = RemoteHealth(True, "", now)

    def probe_due_in(self) -> float:
        """Seconds until an idle writer probes (<= 0: now), counted from the last network operation."""
        return self._interval - (time.monotonic() - self._last_network)

    def probe(self, runner: GitRunner, branch: str) -> None:
        """One `git ls-remote` of the branch (no lock: it does not touch the tree); its outcome
        reaches `contacted` through the runner. Nothing before the clone is open."""
        if runner.repo is None:
            return
        try:
            runner.network("ls-remote", "ls-remote", "--heads", REMOTE, f"refs/heads/{branch}")
        except GitError as error:
            log.debug("probing %s: %s", self._remote, error.message)


def branch_head(runner: GitRunner, branch: str, remote: str) -> str:
    """Sha of the remote's `branch` now, asked with `git ls-remote` (nothing fetched)."""
    runner.require()
    ref = f"refs/heads/{branch}"
    status, listed, err = runner.network("ls-remote", "ls-remote", "--heads", REMOTE, ref)
    if status != 0:
        raise GitError(f"git ls-remote failed for {remote}: {detail(err or listed)}")
    for line in listed.splitlines():
        sha, _, listed_ref = line.partition("\t")
        if listed_ref.strip() == ref:
            return sha.strip()
    raise GitError(f"branch {branch} does not exist on {remote}")
