"""What the writer's callers see: its settings, a change's outcome, the remote's health, and the
protocols a change and a tree tracker follow."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

REMOTE = "origin"


@dataclass(frozen=True, slots=True)
class RepoSettings:
    url: str  # the remote (a bare repo path in tests; https/ssh in production)
    workdir: Path  # where the controller keeps its own clone (created if missing)
    branch: str = "main"
    author_name: str = "btp-gitops controller"
    author_email: str = "btp-gitops-controller@users.noreply.local"
    max_attempts: int = 10  # push attempts per batch before its changes fail (a declined push)
    race_timeout: float = 60.0  # seconds a batch whose pushes lose races to other writers retries
    backoff_initial: float = 0.05  # seconds, doubled per attempt with jitter, capped at backoff_max
    backoff_max: float = 2.0
    batch_window: float = 0.05  # how long the writer waits for more changes to share one commit
    max_batch: int = 250
    network_timeout: float = 30.0  # seconds for one clone/fetch/push/ls-remote, then it is killed
    probe_interval: float = 10.0  # an idle writer checks the remote this often (git ls-remote)
    pipeline: bool = True  # apply the next batch while a push is in flight


def tracking_ref(settings: RepoSettings) -> str:
    """The clone's ref of the remote's branch."""
    return f"refs/remotes/{REMOTE}/{settings.branch}"


@dataclass(frozen=True, slots=True)
class RemoteHealth:
    """The outcome of the writer's last contact with the remote."""

    reachable: bool  # the last network operation got an answer (False before any)
    problem: str  # why not, masked ("" when reachable)
    last_contact: float | None  # time.monotonic() of the last answer, None when never

    def unready_reason(self) -> str | None:
        """What readiness probes answer while the remote does not (None when it does)."""
        return None if self.reachable else f"the source repository is unreachable: {self.problem}"


class TreeChange(Protocol):
    """Edits files under `tree` (the clone's working tree at the remote's newest commit) and returns a
    one-line summary of what it changed, or None when nothing needed changing. It must be a pure
    function of the tree: after the remote moved on it is applied again to the new tree. It raises
    controller.errors.PermanentError (or a subclass) when it cannot be applied; that fails only its own
    request."""

    def __call__(self, tree: Path) -> str | None: ...


class Footprint(Protocol):
    """What one change looked up in the tree (keys of its reader's choosing) and which files it
    wrote (paths relative to the tree, `/`-separated)."""

    @property
    def reads(self) -> AbstractSet[Hashable]: ...

    @property
    def writes(self) -> AbstractSet[str]: ...


class TreeTracker(Protocol):
    """Whoever keeps an index of the working tree for the changes (controller.records'
    `WorkingIndex`): the writer opens it for a batch on its own thread, says which files Git
    rewrote, and asks per change what it read and wrote, to rebase a batch after a lost race."""

    def open(self, tree: Path) -> None: ...

    def close(self) -> None: ...

    def forget(self) -> None: ...

    def change_started(self) -> None: ...

    def change_ended(self) -> Footprint: ...

    def rewritten(self, paths: Iterable[str] | None) -> AbstractSet[Hashable]:
        """Git rewrote `paths` (None: possibly any file); the keys their contents answer(ed)."""
        ...

    def keys(self, paths: Iterable[str]) -> AbstractSet[Hashable]:
        """The keys the files at `paths` answer now."""
        ...


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    commit: str | None  # sha of the pushed commit that carries the change; None when nothing changed
    summary: str | None  # the change's own summary line
    attempts: int  # push attempts the batch needed
