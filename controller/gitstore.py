"""The controller's writer for the source repository: many concurrent edits, few commits, safe pushes.

The subscription server and the reconcilers describe an edit as a `TreeChange`, a pure function of
the working tree, and `SourceRepo.submit` queues it. One writer thread owns the clone:

    take the first queued change, wait `batch_window` for more (at most `max_batch`)
    fetch, hard-reset to origin/<branch>, apply every change        (a change that raises leaves
                                                                      the batch; the rest are applied
                                                                      again on a clean tree)
    one commit for the batch, if anything changed                   (never an empty commit)
    push that commit (by sha); while it is in flight:               the next batch: taken from the
                                                                      queue, applied on top of the
                                                                      commit, committed (pushed next,
                                                                      once ours landed)
    rejected: back off, fetch, rebase the commit on the new head, push again (max_attempts; a
              push that lost a race to another writer: for race_timeout seconds)

A change's future resolves only once the push carrying it succeeded, so whoever answers a caller
after `apply` knows the change is durable on the remote. Batches are pushed in the order they were
taken, each on the one before: a batch prepared on a commit whose push failed is dropped and
applied anew once that batch is settled, so two changes of the same record never swap.

With a `TreeTracker` (controller.records' `WorkingIndex`), the writer keeps one index of its tree
across batches and tells it which files Git rewrote; the tracker records per change what it
looked up and which files it wrote. A refused commit is then rebased, not rebuilt: HEAD and Git's
index move to the new head, the competitor's files come from it, ours stay, and only the changes
whose files or lookups the competitor touched (and those depending on them) are applied again.
When none is, the rebased commit is made from Git's index with plumbing (`_rebase`), so the next
push follows the fetch after a handful of local commands rather than a dozen.
Without a tracker every attempt applies the whole batch to the new head.

Every Git command that talks to the remote (fetch, push, ls-remote) runs in a process group of its
own and is killed, group and all (Git's remote helpers are children of it), after
`network_timeout`: a hung remote fails the batch with `GitTimeout` instead of holding every caller
for minutes, and the changes queued meanwhile fail with it rather than wait one timeout more. A
push that got no answer (timed out, connection lost) may have landed, or may still: the remote can
finish a push whose client is gone. The writer fetches and looks for its commit. Landed: the
futures succeed as for any push. Not there and the remote's branch moved on: the push can never
land (a ref update replaces only the commit it was made on), so the batch is applied again like a
rejected one. Not there and the branch still where the push started, or the remote cannot be asked:
the futures fail with `OutcomeUnknown`, and the caller must leave in place whatever exists for the
change's sake; a repeated change finds the landed record (or writes it) and nothing is applied
twice.

The writer keeps the outcome of its last contact with the remote (`remote_health`): a success
(the remote answered, a rejection included) or a failure (timeout, refused connection, ...). When
idle for `probe_interval` it probes with `git ls-remote`, from its own thread, one process at a
time, so readiness follows the remote without probes piling up behind a hung one.

Because changes are rebased onto (or re-applied to) the remote's newest tree after every rejection,
other writers (people, CI, other controllers) may push to the same branch at any time without any
change being lost or applied twice, and without any of their commits being lost.

Reads (`read`) run under the writer's lock, on a tree that is exactly a commit of the remote.
Git runs with a fixed identity and with hooks and commit signing off, so the local Git
configuration cannot change what is committed. Nothing here prints a remote URL's credentials:
every message built from Git's output is masked first.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import math
import os
import queue
import random
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import git

from btp_gitops.controller.clone_files import discard_beneath
from btp_gitops.controller.errors import GitPushRejected, GitTimeout, OutcomeUnknown
from btp_gitops.generator.core import BtpGitopsError, GitError

log = logging.getLogger(__name__)

T = TypeVar("T")

REMOTE = "origin"
COMMITTED_BY_TRAILER = "Committed-By: btp-gitops controller"

# Git's markers of a push the remote refused to take as it is: another writer got there first
# ("fetch first", "non-fast-forward"), a concurrent update of the ref, or a hook that declined.
_REJECTION_MARKERS = ("[rejected]", "[remote rejected]", "non-fast-forward", "fetch first")
# A rejection because the branch moved since our fetch: Git's own check before sending
# (`[rejected]`, "fetch first", "non-fast-forward"), or the remote's, when another push updated the
# branch while ours was in flight ("cannot lock ref ...: is at X but expected Y", reported as
# `[remote rejected] ... (failed to update ref)`). Any other `[remote rejected]` is the remote
# declining the push whatever the branch (a hook, a protection rule).
_LOST_RACE_MARKERS = ("[rejected]", "non-fast-forward", "fetch first", "but expected", "cannot lock ref")
_MISSING_BRANCH_MARKERS = ("couldn't find remote ref", "could not find remote ref")
# Git's words for a connection lost after the push may have been sent: the remote may have taken it.
# (A refused connection, an unknown host or an HTTP error status are answers: nothing landed.)
_LOST_CONNECTION_MARKERS = (
    "hung up unexpectedly",
    "rpc failed",
    "connection reset",
    "broken pipe",
    "early eof",
    "transfer closed",
    "empty reply from server",
)
# Greedy up to the last `@` before the host's `/`: a password may hold an unescaped `@` itself.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s]*@")
_MAX_DETAIL = 400


def mask_credentials(text: str) -> str:
    """`text` with the user:password part of every URL in it replaced by `***`."""
    return _URL_USERINFO.sub(r"\g<scheme>***@", text)


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


@dataclass(slots=True)
class _Request:
    change: TreeChange
    message: str
    future: concurrent.futures.Future[CommitOutcome]
    summary: str | None = None
    footprint: Footprint | None = None  # of its last application, when a tracker recorded it


@dataclass(frozen=True, slots=True)
class _Follower:
    """The batch behind one whose push is in flight, applied on top of that push's commit."""

    requests: list[_Request]
    commit: str | None  # its commit (None: it changed nothing, or it was dropped)
    prepared: bool  # applied on top of the commit in flight (False: to be applied anew)
    stopping: bool  # the stop marker was met while collecting it
    base: str = ""  # the commit in flight it was applied on
    moves: int = -1  # the writer's count of tree resets when it was committed


class _PushInFlight:
    """One push of a commit (by sha, so a commit made meanwhile cannot slip into it), in a thread
    of its own: the writer prepares the next batch meanwhile."""

    def __init__(self, repo: SourceRepo, commit: str) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(repo, commit), daemon=True)
        self._thread.start()

    def _run(self, repo: SourceRepo, commit: str) -> None:
        try:
            repo._push(commit)
        except BaseException as error:  # handed to the writer by result()
            self._error = error

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> None:
        """Wait for the push; raise what `_push` raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error


@dataclass(frozen=True, slots=True)
class _Pushed:
    """A batch's commit that the remote refused: what a rebase starts from."""

    commit: str
    base: str  # the remote's commit it was made on
    moves: int = -1  # the writer's count of tree resets when it was refused (-1: unknown)


class _PushUnanswered(GitError):
    """The connection was lost during a push: it may have landed."""


class _PushRejected(Exception):
    """The remote refused the push; `detail` is Git's masked explanation. `lost_race`: because
    another writer moved the branch first (not a hook or the remote's policy declining it)."""

    def __init__(self, detail: str, *, lost_race: bool | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.lost_race = (
            any(marker in detail for marker in _LOST_RACE_MARKERS) if lost_race is None else lost_race
        )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _detail(output: str) -> str:
    """Git's own explanation, masked, on one line and bounded (it may quote long ref lists)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    text = mask_credentials("; ".join(lines))
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


def _backoff(settings: RepoSettings, attempt: int, *, lost_race: bool = False) -> float:
    """Exponential with jitter: competing writers that collided do not collide again in step.

    After a lost race, at most `backoff_initial`, whatever the attempt: the branch moved just
    now, so the rebase should fetch and push again before the winner's next push (a writer that
    pushes every 200 ms leaves about that long); waiting longer only lands us at a random point of
    its cycle. Each lost race is another writer's push that landed, so nobody livelocks, and
    the jitter still keeps two writers of our kind from retrying in step."""
    if lost_race:
        return random.uniform(0.0, settings.backoff_initial)
    ceiling = min(settings.backoff_max, settings.backoff_initial * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)


def commit_message(changes: list[tuple[str, str]]) -> str:
    """The message of a batch's commit; `changes` are (message, summary) of the changes that changed
    something. One change keeps its own message; several get a count and their summaries, sorted."""
    if len(changes) == 1:
        text = changes[0][0].strip() or changes[0][1]
    else:
        listed = "\n".join(f"- {_one_line(summary)}" for summary in sorted(s for _, s in changes))
        text = f"Record {len(changes)} changes\n\n{listed}"
    return f"{text}{_trailer_separator(text)}{COMMITTED_BY_TRAILER}\n"


_TRAILER_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*: \S")


def _trailer_separator(text: str) -> str:
    """Join our trailer to the message's own trailer block (Git reads only the last paragraph as
    trailers), else start one."""
    paragraphs = text.rstrip("\n").split("\n\n")
    last = paragraphs[-1].splitlines()
    own_trailers = len(paragraphs) > 1 and bool(last) and all(_TRAILER_LINE.match(line) for line in last)
    return "\n" if own_trailers else "\n\n"


def _remove_stale_locks(git_dir: Path) -> None:
    """Remove the lock files a Git command killed mid-way left in a clone this process now owns.

    Only called when the writer opens its clone, before it runs any Git command there: the workdir
    is the writer's own (one per replica), so a lock found then belongs to a process that is gone,
    e.g. a container killed by the OOM killer with its Git children, whose emptyDir (and clone)
    the restarted container reuses. Left in place, `index.lock` makes every checkout fail and the
    process could never start again. Git writes objects and refs to a temporary file and renames
    it, so what a killed command leaves is a lock, never a half-written object."""
    for lock in sorted(git_dir.rglob("*.lock")):  # index, HEAD, config, packed-refs, refs, ...
        if lock.is_file():
            lock.unlink()
            log.warning(
                "removed %s, left behind by a Git command that did not finish", lock.relative_to(git_dir)
            )


class SourceRepo:
    """The source repository as the controller edits it: one clone, one writer thread."""

    def __init__(self, settings: RepoSettings, *, tracker: TreeTracker | None = None) -> None:
        self._settings = settings
        self._tracker = tracker
        self._tree = settings.workdir
        self._remote = mask_credentials(settings.url)
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._lock = threading.Lock()  # the working tree: the writer's cycles and every read
        self._state = threading.Lock()  # accepting submissions / stopping
        self._accepting = True
        self._thread: threading.Thread | None = None
        self._repo: git.Repo | None = None
        self._head = ""
        self._last_fetch_started = float("-inf")
        self._tree_pristine = False  # the tree is exactly origin/<branch>, nothing else in it
        self._tree_moves = 0  # resets of the tree so far (a reader may move it between batches)
        self._committed: dict[str, frozenset[str]] = {}  # our last commits: the files each changed
        self._env = self._git_environment()
        self._head_listeners: list[Callable[[Path, str], None]] = []
        self._commit_listeners: list[Callable[[Path, str], None]] = []
        self._pushed_listeners: list[Callable[[str], None]] = []
        self._announced_head = ""
        self._health_lock = threading.Lock()
        self._health = RemoteHealth(False, "the remote has not been contacted yet", None)
        self._last_network = time.monotonic()  # end of the last network operation, either outcome

    # --- public API -----------------------------------------------------------------------------

    @property
    def settings(self) -> RepoSettings:
        return self._settings

    @property
    def tracker(self) -> TreeTracker | None:
        return self._tracker

    def track_tree(self, tracker: TreeTracker) -> None:
        """Keep `tracker` informed of the tree (before `start`; a second call is ignored)."""
        with self._lock:
            if self._tracker is None:
                self._tracker = tracker

    @property
    def head(self) -> str:
        """Sha of the last commit known to be on the remote's branch ("" before `start`)."""
        return self._head

    def remote_health(self) -> RemoteHealth:
        """Whether the remote answered the last time it was asked (by a fetch, push or probe)."""
        with self._health_lock:
            return self._health

    def start(self) -> None:
        """Clone the remote into `workdir` (or reuse the clone there), check out the remote's newest
        commit, and start the writer. Raises GitError when the remote or its branch cannot be read."""
        with self._state:
            if self._thread is not None:
                raise GitError(f"the writer of {self._remote} is already running")
            self._accepting = True
        with self._lock:
            self._repo = self._open_clone()
            self._fetch()
            self._run_git(
                "checkout", "--quiet", "--force", "--no-track", "-B", self._settings.branch, self._tracking
            )
            self._run_git("clean", "-ffdxq")
            self._tree_pristine = True
        thread = threading.Thread(
            target=self._write_loop, name=f"source-repo-writer:{self._tree}", daemon=True
        )
        self._thread = thread
        thread.start()
        log.info("source repository %s (branch %s) at %s", self._remote, self._settings.branch, self._head)

    def stop(self) -> None:
        """Finish every change queued so far, then stop the writer. Changes submitted afterwards (or
        left when the writer never ran) fail with GitError."""
        with self._state:
            self._accepting = False
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None:
            thread.join()
        self._fail_queued(GitError(f"the writer of {self._remote} has stopped"))
        with self._lock:
            if self._repo is not None:
                self._repo.close()
                self._repo = None

    def on_new_head(self, listener: Callable[[Path, str], None]) -> None:
        """Call `listener(tree, head)` whenever the clone's tree is at a new commit of the remote
        (after our push, or a read that fetched), under the tree's lock: readers keep what they
        need of each commit (an index) and then answer without waiting for the lock."""
        with self._lock:
            self._head_listeners.append(listener)
            if self._tree_pristine and self._head:
                listener(self._tree, self._head)

    def on_commit(self, listener: Callable[[Path, str], None]) -> None:
        """Call `listener(tree, commit)` when the tree is exactly at a commit of ours whose push is
        in flight (not on the remote yet) and the next batch is about to be applied on top, under
        the tree's lock: a reader indexes the commit now, to publish it on `on_pushed`."""
        with self._lock:
            self._commit_listeners.append(listener)

    def on_pushed(self, listener: Callable[[str], None]) -> None:
        """Call `listener(head)` once our push made `head` the remote's commit while the tree has
        moved on (the next batch is applied on top of it already); `on_new_head` otherwise."""
        with self._lock:
            self._pushed_listeners.append(listener)

    def _announce_commit(self, commit: str) -> None:
        for listener in self._commit_listeners:
            try:
                listener(self._tree, commit)
            except Exception:  # a reader's failure must not fail the writer's push
                log.exception("a listener of %s failed on %s", self._remote, commit[:12])

    def _announce_pushed(self) -> None:
        if self._tree_pristine:
            self._announce_head()
            return
        self._announced_head = self._head
        for listener in self._pushed_listeners:
            try:
                listener(self._head)
            except Exception:
                log.exception("a listener of %s failed on %s", self._remote, self._head[:12])

    def _announce_head(self) -> None:
        if not self._tree_pristine or self._head == self._announced_head:
            return
        self._announced_head = self._head
        for listener in self._head_listeners:
            try:
                listener(self._tree, self._head)
            except Exception:  # a reader's failure must not fail the writer's push
                log.exception("a listener of %s failed on %s", self._remote, self._head[:12])

    def submit(self, change: TreeChange, message: str) -> concurrent.futures.Future[CommitOutcome]:
        """Queue `change`; the future resolves once a push carrying it succeeded (commit None when it
        changed nothing), or fails with the change's own error, GitPushRejected or GitError."""
        future: concurrent.futures.Future[CommitOutcome] = concurrent.futures.Future()
        with self._state:
            if self._accepting:
                self._queue.put(_Request(change, message, future))
                return future
        future.set_exception(GitError(f"the writer of {self._remote} has stopped"))
        return future

    def apply(self, change: TreeChange, message: str, timeout: float | None = None) -> CommitOutcome:
        """`submit` and wait (concurrent.futures.TimeoutError after `timeout` seconds: the change
        may still be pushed later)."""
        return self.submit(change, message).result(timeout)

    def read(self, reader: Callable[[Path], T], *, refresh: bool = True) -> T:
        """Run `reader` on the tree at a commit of the remote, under the writer's lock; with `refresh`,
        that commit is at least as new as the remote's branch when `read` was called. `reader` must
        not edit the tree, nor wait for a change of this repository (the writer waits for the lock)."""
        called = time.monotonic()
        with self._lock:
            self._require_started()
            # A fetch that began after this call is as fresh as one of our own: concurrent readers
            # (and the writer) share it rather than each paying for a round trip.
            if refresh and self._last_fetch_started < called:
                self._fetch()
                self._tree_pristine = self._tree_pristine and self._local_head() == self._head
            if not self._tree_pristine:
                self._reset_to_remote()
            self._announce_head()
            return reader(self._tree)

    def remote_head(self) -> str:
        """Sha of the remote's branch now, asked with `git ls-remote`: nothing is fetched and the
        writer's lock is not taken, so it costs one round trip even while a push is in flight.
        Readers compare it with `head` to learn whether a fetch would bring anything new."""
        self._require_started()
        branch = self._settings.branch
        ref = f"refs/heads/{branch}"
        status, listed, err = self._network("ls-remote", "ls-remote", "--heads", REMOTE, ref)
        if status != 0:
            raise GitError(f"git ls-remote failed for {self._remote}: {_detail(err or listed)}")
        for line in listed.splitlines():
            sha, _, listed_ref = line.partition("\t")
            if listed_ref.strip() == ref:
                return sha.strip()
        raise GitError(f"branch {branch} does not exist on {self._remote}")

    def has_commit(self, sha: str) -> bool:
        """Whether the clone holds commit `sha` (without the writer's lock). A remote head the
        clone holds but `head` is not yet at is the writer's own commit, its push in flight."""
        status, _, _ = self._execute("cat-file", "-e", f"{sha}^{{commit}}")
        return status == 0

    # --- the writer -----------------------------------------------------------------------------

    def _write_loop(self) -> None:
        while True:
            idle = self._settings.probe_interval - (time.monotonic() - self._last_network)
            try:
                first = self._queue.get(timeout=max(idle, 0.0)) if idle > 0 else self._queue.get_nowait()
            except queue.Empty:
                self._probe()
                continue
            if first is None:
                return
            batch, stopping = self._collect_batch(first)
            if batch:
                stopping = self._process_safely(batch) or stopping
            if not self.remote_health().reachable:
                # What queued up meanwhile would wait for the same silent remote once more: fail it
                # now (nothing of it was written), so no caller waits longer than one timeout or so.
                stopping = self._fail_waiting() or stopping
            if stopping:
                return

    def _collect_batch(self, first: _Request) -> tuple[list[_Request], bool]:
        """The first request and whatever else arrives within the batch window; (batch, stop seen)."""
        batch = [first] if first.future.set_running_or_notify_cancel() else []
        deadline = time.monotonic() + self._settings.batch_window
        while len(batch) < self._settings.max_batch:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            if item.future.set_running_or_notify_cancel():  # a cancelled future is dropped here
                batch.append(item)
        return batch, False

    def _process_safely(self, batch: list[_Request]) -> bool:
        """Nothing may end the writer thread: an unexpected failure fails its batch (and the
        batches prepared behind it) and is logged. True when the stop marker was seen."""
        taken = list(batch)  # every request taken from the queue, followers included
        try:
            return self._process(batch, taken)
        except Exception as error:
            log.exception("writing a batch of %d changes to %s failed", len(batch), self._remote)
            self._tree_pristine = False  # whatever state the tree was left in, a reset comes first
            if self._tracker is not None:
                self._tracker.forget()  # and whatever it knew of the tree, a walk
            failure = GitError(f"writing to {self._remote} failed unexpectedly ({type(error).__name__})")
            for request in taken:
                if not request.future.done():
                    request.future.set_exception(failure)
            return False

    def _process(self, batch: list[_Request], taken: list[_Request]) -> bool:
        """Push `batch`, then each batch prepared while the one before was being pushed, in order.
        True when the stop marker was seen while collecting them."""
        live: list[_Request] = batch
        prepared: _Follower | None = None
        stopping = False
        while live:
            follower = self._push_batch(live, prepared)
            if follower is None:
                return stopping
            taken += follower.requests
            stopping = stopping or follower.stopping
            if not self.remote_health().reachable:
                error = GitError(f"the remote {self._remote} does not answer: {self.remote_health().problem}")
                self._fail(follower.requests, error)
                return stopping
            live, prepared = follower.requests, (follower if follower.commit is not None else None)
        return stopping

    def _push_batch(self, live: list[_Request], prepared: _Follower | None) -> _Follower | None:
        """Commit and push one batch (`prepared`: it was committed while the batch before was being
        pushed), rebasing it after a lost race. While its push is in flight the next batch is taken
        from the queue and applied on top of it (`_Follower`): pushed next once this one landed,
        applied again from scratch otherwise. Returns that next batch, if any."""
        pushes = 0
        rejected: _PushRejected | None = None  # the last refusal
        started = time.monotonic()
        refused: _Pushed | None = None  # the last attempt's commit, when the remote refused it
        follower: _Follower | None = None
        while True:
            with self._lock:
                self._open_tracker()
                commit: str | None = None
                try:
                    commit = self._make_commit(live, prepared, refused)
                    prepared = None
                    refused = None
                    if commit is None:
                        self._resolve(live, None, pushes)
                        return follower
                    pushes += 1
                    base = self._head
                    pushing, follower = self._start_push(commit, follower)
                    try:
                        pushing.result()
                        self._head = commit
                        self._tree_pristine = follower is None or follower.commit is None
                    except (GitTimeout, _PushUnanswered) as failure:
                        follower = self._drop(follower, commit)
                        if self._settle_unanswered_push(live, commit, base, pushes, failure):
                            return follower
                        raise _PushRejected(failure.message, lost_race=True) from None
                    except BaseException:
                        follower = self._drop(follower, commit)
                        raise
                    return self._landed(live, commit, pushes, follower)
                except _PushRejected as rejection:
                    rejected = rejection
                    # The tree stays at our commit: the next attempt rebases it onto the new head.
                    refused = (
                        _Pushed(commit, base, self._tree_moves)
                        if commit and self._local_head() == commit
                        else None
                    )
                    if refused is None:
                        self._restore_quietly()
                except GitError as error:
                    self._restore_quietly()
                    self._fail(live, error)
                    return follower
                finally:
                    self._close_tracker()
            detail = rejected.detail if rejected is not None else ""
            if self._give_up(pushes, rejected, started):
                if refused is not None:
                    self._restore_quietly_locked()
                self._fail(
                    live,
                    GitPushRejected(
                        f"{self._remote} rejected {pushes} pushes to {self._settings.branch}: {detail}",
                        delay=self._settings.backoff_max,
                    ),
                )
                return follower
            log.info("push to %s rejected (attempt %d): %s; trying again", self._remote, pushes, detail)
            time.sleep(
                _backoff(self._settings, pushes, lost_race=rejected is not None and rejected.lost_race)
            )

    def _give_up(self, pushes: int, rejected: _PushRejected | None, started: float) -> bool:
        """After a refused push: whether the batch fails now. A push refused as such (a hook, the
        remote's policy) fails after `max_attempts`; one that lost a race to another writer is
        rebased and pushed again for `race_timeout` seconds from the batch's start, however many
        attempts that takes: the remote answers every time, and a busy competitor (CI, the other
        replica, people) would otherwise fail changes whose callers are still waiting."""
        if pushes < self._settings.max_attempts:
            return False
        if rejected is None or not rejected.lost_race:
            return True
        return time.monotonic() - started >= self._settings.race_timeout

    def _start_push(self, commit: str, follower: _Follower | None) -> tuple[_PushInFlight, _Follower | None]:
        """Start pushing `commit`; meanwhile the next batch is applied on top (unless a batch
        prepared before was dropped: it goes next, alone, in its order)."""
        pushing = _PushInFlight(self, commit)
        if follower is None and self._settings.pipeline:
            follower = self._prepare_follower(commit, pushing)
        return pushing, follower

    def _make_commit(
        self, live: list[_Request], prepared: _Follower | None, refused: _Pushed | None
    ) -> str | None:
        """The batch's commit: the one prepared during the last push, its refused one rebased, or
        the batch applied to the remote's newest tree. None when nothing changed."""
        commit = self._resume(prepared) if prepared is not None else None
        if commit is not None:
            return commit
        if refused is not None and self._can_rebase(live):
            return self._rebase(live, refused)
        return self._prepare_commit(live)

    def _landed(
        self, live: list[_Request], commit: str, pushes: int, follower: _Follower | None
    ) -> _Follower | None:
        """The push of `commit` succeeded: answer its changes, publish it; the next batch."""
        self._resolve(live, commit, pushes)
        log.info("pushed %s to %s (%d changes, attempt %d)", commit[:12], self._remote, len(live), pushes)
        if follower is not None and follower.commit is None and follower.prepared:
            # The next batch changed nothing on top of this commit, now the remote's.
            self._resolve(follower.requests, None, 0)
            follower = None
        self._announce_pushed()  # after the answers: they need not wait for readers
        return follower

    # --- pipelining: the next batch prepared while a push is in flight ------------------------------

    def _prepare_follower(self, commit: str, pushing: _PushInFlight) -> _Follower | None:
        """Take what is queued while the push of `commit` runs (for one batch window from the
        first, as `_collect_batch`) and apply it on top of `commit`, the push still in flight.
        None when nothing was queued before the push ended."""
        requests: list[_Request] = []
        stopping = False
        deadline = math.inf  # the batch window, from the first request taken
        while not pushing.done() and len(requests) < self._settings.max_batch:
            if time.monotonic() >= deadline:
                break  # applied now, while the push is still in flight
            try:
                item = self._queue.get(timeout=0.002)
            except queue.Empty:
                continue
            if item is None:
                stopping = True
                break
            if item.future.set_running_or_notify_cancel():
                requests.append(item)
                deadline = min(deadline, time.monotonic() + self._settings.batch_window)
        if not requests:
            return _Follower([], None, prepared=False, stopping=True) if stopping else None
        # Readers index `commit` now, before the tree moves on (published once the push landed).
        self._announce_commit(commit)
        try:
            self._apply_all(requests, commit)
            status = self._status_paths()
            if self._tracker is not None and not self._tracked_everything(requests, status):
                return self._drop(_Follower(requests, None, prepared=True, stopping=stopping), commit)
            follower_commit = self._commit_batch(requests, commit, status)
        except GitError as error:
            log.warning("preparing the next batch on %s failed: %s", commit[:12], error.message)
            return self._drop(_Follower(requests, None, prepared=True, stopping=stopping), commit)
        return _Follower(requests, follower_commit, True, stopping, base=commit, moves=self._tree_moves)

    def _drop(self, follower: _Follower | None, commit: str) -> _Follower | None:
        """The prepared batch cannot go on top of `commit` (its push failed): the tree goes back
        to `commit` and the batch's changes will be applied anew, after this batch settled."""
        if follower is None:
            return None
        if follower.prepared:
            self._reset_to(commit)
        for request in follower.requests:
            request.summary = None
            request.footprint = None
        return _Follower(follower.requests, None, prepared=False, stopping=follower.stopping)

    def _resume(self, prepared: _Follower) -> str | None:
        """The tree at the prepared batch's commit, made on the remote's head while the batch
        before was pushed (a reader may have moved the tree since); None when it is not on the
        head any more."""
        if prepared.commit is None or prepared.base != self._head:
            return None
        if prepared.moves != self._tree_moves:
            self._reset_to(prepared.commit)
        self._tree_pristine = False
        return prepared.commit

    def _restore_quietly_locked(self) -> None:
        with self._lock:
            self._restore_quietly()

    # --- the tracker of the tree ------------------------------------------------------------------

    def _open_tracker(self) -> None:
        if self._tracker is not None:
            self._tracker.open(self._tree)

    def _close_tracker(self) -> None:
        if self._tracker is not None:
            self._tracker.close()

    def _rewritten(self, paths: Iterable[str] | None) -> AbstractSet[Hashable]:
        return self._tracker.rewritten(paths) if self._tracker is not None else frozenset()

    # --- rebasing a refused commit ----------------------------------------------------------------

    def _can_rebase(self, live: list[_Request]) -> bool:
        return self._tracker is not None and all(r.footprint is not None for r in live)

    def _rebase(self, live: list[_Request], refused: _Pushed) -> str | None:
        """Our commit, made on `refused.base`, lost the race: put it on the remote's new head.

        Fetch; the competitor's files (those that changed between the base and the new head) are
        taken from the new head, ours stay as we wrote them: only our commit is re-applied, every
        competitor commit is kept. A change whose files the competitor also changed, or that
        looked up something the competitor's files answer (a tenant id, a subdomain, the
        application...), is applied again to the new files, and so is one that depends on such a
        change; the rest are not run again. When a change applied again no longer fits (it
        fails, or writes where an untouched change wrote or looked), the whole batch is applied
        again as on any new head. None when nothing is left to commit.

        The window between the fetch and the next push decides whether that push wins against a
        busy competitor, so the common case, where no change is to be applied again, takes a few
        local Git commands (`_take_theirs`, `_commit_rebased`); the rest goes the long way
        (`_rebase_slowly`). The tree is at our commit unless a reader moved it (`refused.moves`)."""
        assert self._tracker is not None  # _can_rebase
        if refused.moves != self._tree_moves:
            self._reset_to(refused.commit)  # a reader moved the tree meanwhile: back to our commit
        self._fetch()
        if self._head == refused.base:
            return self._prepare_commit(live)  # refused for another reason
        theirs = self._changed_paths(refused.base, self._head)
        ours = self._committed.get(refused.commit)
        if ours is None or self._overlaps(live, ours, theirs):
            return self._rebase_slowly(live, refused, theirs, None)
        dirty_keys = self._take_theirs(theirs)
        if any(r.footprint is None or r.footprint.reads & dirty_keys for r in live):
            return self._rebase_slowly(live, refused, theirs, dirty_keys)
        return self._commit_rebased(refused, ours, len(theirs))

    @staticmethod
    def _overlaps(live: list[_Request], ours: AbstractSet[str], theirs: list[str]) -> bool:
        """Whether the competitor changed a file that our commit or one of its changes wrote, or
        put a file where our commit has a directory (or the other way round)."""
        changed = set(theirs)
        if changed & ours or any(r.footprint is None or r.footprint.writes & changed for r in live):
            return True
        return bool(_directories(changed) & ours or _directories(ours) & changed)

    def _take_theirs(self, theirs: list[str]) -> AbstractSet[Hashable]:
        """No file of ours changed on the remote (`_overlaps`): the competitor's files go into the
        tree and Git's index as the new head holds them (gone where it has none), ours stay. The
        index is then the rebased commit's tree. Returns the keys their files answer(ed)."""
        for chunk in _chunks(sorted(theirs)):
            self._run_git(
                "--literal-pathspecs", "restore", "--quiet", f"--source={self._tracking}",
                "--staged", "--worktree", "--", *chunk,
            )  # fmt: skip
        self._tree_pristine = False
        return self._rewritten(theirs)

    def _commit_rebased(self, refused: _Pushed, ours: frozenset[str], competitor_files: int) -> str:
        """Git's index (our commit's tree with the competitor's files, `_take_theirs`) committed on
        the new head with our commit's message and author; HEAD (the local branch) moves to it."""
        tree = self._run_git("write-tree")
        commit = self._commit_tree(tree, self._head, like=refused.commit)
        self._run_git("update-ref", "-m", "btp-gitops: rebased", "HEAD", commit, refused.commit)
        self._note_committed(commit, ours)
        log.info(
            "rebased %s on %s as %s (%d files of the competitor; no change applied again)",
            refused.commit[:12],
            self._head[:12],
            commit[:12],
            competitor_files,
        )
        return commit

    def _commit_tree(self, tree: str, parent: str, *, like: str) -> str:
        """A commit of `tree` on `parent`, with the message and the author (date included) of
        the commit `like`."""
        try:  # from gitpython's `git cat-file --batch`, kept running: no process to start
            raw = bytes(self._require_started().odb.stream(bytes.fromhex(like)).read())
        except (ValueError, OSError, git.GitError) as error:
            raise GitError(
                f"cannot read commit {like[:12]} of {self._remote}: {type(error).__name__}"
            ) from error
        header, _, message = raw.partition(b"\n\n")
        author = next((line[7:] for line in header.split(b"\n") if line.startswith(b"author ")), b"")
        ident, _, date = author.rpartition(b"> ")
        name, _, email = ident.partition(b" <")
        if not (name and email and date):
            raise GitError(f"commit {like[:12]} of {self._remote} has no readable author")
        author_env = {
            "GIT_AUTHOR_NAME": name.decode("utf-8", "replace"),
            "GIT_AUTHOR_EMAIL": email.decode("utf-8", "replace"),
            "GIT_AUTHOR_DATE": date.decode("ascii", "replace"),
        }
        made = self._git_bytes("commit-tree", tree, "-p", parent, stdin=message, env=author_env)
        return made.decode("ascii").strip()

    def _git_bytes(self, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> bytes:
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
            raise GitError(f"git {args[0]} failed for {self._remote}: {_detail(reason)}")
        return done.stdout

    def _note_committed(self, commit: str, paths: Iterable[str]) -> None:
        """Keep the files `commit` changed, for a rebase of it (the last few commits only)."""
        self._committed[commit] = frozenset(paths)
        while len(self._committed) > 4:
            del self._committed[next(iter(self._committed))]

    def _rebase_slowly(
        self,
        live: list[_Request],
        refused: _Pushed,
        theirs: list[str],
        taken: AbstractSet[Hashable] | None,
    ) -> str | None:
        """Apply again the changes the competitor touched, on a tree with our files and theirs
        (`taken`: their files are in it already, and these are the keys they answer(ed))."""
        tracker = self._tracker
        assert tracker is not None  # _can_rebase
        if self._is_ancestor(refused.commit, self._head):
            return self._prepare_commit(live)  # landed after all
        # HEAD and Git's index to the new head; the working tree keeps our files, then takes theirs.
        self._run_git("reset", "--quiet", "--mixed", self._tracking)
        self._tree_pristine = False
        if taken is None:
            self._take_from_head(theirs)
            dirty_keys = set(self._rewritten(theirs))
        else:
            dirty_keys = set(taken)
        dirty_paths = set(theirs)
        again: list[_Request] = []
        while True:
            more = [
                r
                for r in live
                if r not in again
                and r.footprint is not None
                and (r.footprint.reads & dirty_keys or r.footprint.writes & dirty_paths)
            ]
            if not more:
                break
            paths = sorted({path for r in more if r.footprint is not None for path in r.footprint.writes})
            self._take_from_head(paths)
            dirty_keys |= self._rewritten(paths)
            dirty_paths |= set(paths)
            again += more
        kept = [r for r in live if r not in again]
        again.sort(key=live.index)
        log.info(
            "rebasing %s on %s: %d of %d changes applied again (%d files of the competitor)",
            refused.commit[:12],
            self._head[:12],
            len(again),
            len(live),
            len(theirs),
        )
        done: list[_Request] = []
        for request in again:
            failure = self._apply_one(request)
            if failure is not None:
                # It leaves the batch, as on any tree; what it wrote before failing is undone,
                # unless another change wrote there too: then the whole batch is applied again.
                live.remove(request)
                request.future.set_exception(failure)
                written = request.footprint.writes if request.footprint is not None else None
                if written is None or any(
                    r.footprint is None or r.footprint.writes & written for r in (*kept, *done)
                ):
                    self._reset_to_remote()
                    return self._prepare_commit(live)
                self._take_from_head(written)
                self._rewritten(written)
                continue
            if not self._fits(request, kept, tracker):
                self._reset_to_remote()
                return self._prepare_commit(live)
            done.append(request)
        return self._commit_batch(live)

    @staticmethod
    def _fits(request: _Request, kept: list[_Request], tracker: TreeTracker) -> bool:
        """Whether a change applied again leaves every change that was not applied again as it
        was: it writes none of their files and nothing they looked up."""
        footprint = request.footprint
        if footprint is None:
            return False
        keys = tracker.keys(footprint.writes)
        for other in kept:
            if other.footprint is None or other.footprint.writes & footprint.writes:
                return False
            if other.footprint.reads & keys:
                return False
        return True

    def _take_from_head(self, paths: Iterable[str]) -> None:
        """The working tree's `paths` as the remote's head holds them (gone when it does not)."""
        wanted = sorted(set(paths))
        if not wanted:
            return
        present = set(self._tree_paths(self._tracking, wanted))
        for chunk in _chunks([p for p in wanted if p in present]):
            self._run_git("checkout", "--quiet", self._tracking, "--", *chunk)
        for path in wanted:
            if path not in present:
                discard_beneath(self._tree, path)  # nothing beyond a link in the clone is touched

    def _tree_paths(self, commit: str, paths: list[str]) -> list[str]:
        found: list[str] = []
        for chunk in _chunks(paths):
            out = self._run_git("ls-tree", "-z", "--name-only", "--full-tree", commit, "--", *chunk)
            found += [p for p in out.split("\0") if p]
        return found

    def _changed_paths(self, old: str, new: str) -> list[str]:
        out = self._run_git("diff", "--name-only", "--no-renames", "-z", old, new, "--")
        return [p for p in out.split("\0") if p]

    def _status_paths(self) -> list[str]:
        """Files of the working tree that differ from HEAD (untracked ones included)."""
        out = self._run_git("status", "--porcelain", "-z", "--untracked-files=all", "--no-renames")
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    def _settle_unanswered_push(
        self, live: list[_Request], commit: str, base: str, pushes: int, failure: GitError
    ) -> bool:
        """The push of `commit` (made on the remote's `base`) got no answer: it may have landed, or
        may still (the remote may finish a push whose client is gone). Ask the remote before
        answering. True when the batch is settled; False when the push can no longer land and the
        batch is to be applied again like a rejected one."""
        try:
            self._fetch()
            landed = self._is_ancestor(commit, self._tracking)
        except GitError as error:
            log.warning(
                "push of %s to %s got no answer and the remote cannot be asked (%s): outcome unknown",
                commit[:12],
                self._remote,
                error.message,
            )
            self._unknown(live, f"the push to {self._remote} got no answer ({failure.message})")
            return True
        if landed:
            log.info("push of %s to %s got no answer but landed", commit[:12], self._remote)
            # The tree holds our commit; the remote's branch may have moved past it since.
            self._tree_pristine = self._local_head() == self._head
            if not self._tree_pristine:
                self._restore_quietly()
            self._resolve(live, commit, pushes)
            self._announce_head()
            return True
        if self._head == base:
            # The remote still holds the commit our push would replace: a push the remote has not
            # finished yet can still land, so "not there" is not "failed" yet.
            log.warning("push of %s to %s got no answer and has not landed yet", commit[:12], self._remote)
            self._unknown(live, f"the push to {self._remote} got no answer and has not landed yet")
            return True
        # A ref update replaces only the commit it was made on: the remote moved on without ours,
        # so this push can never land. Applied again on the new head, like a rejection.
        log.info("push of %s to %s got no answer and cannot land any more", commit[:12], self._remote)
        return False

    def _unknown(self, live: list[_Request], why: str) -> None:
        self._restore_quietly()
        self._fail(live, OutcomeUnknown(f"{why}; it may still land", delay=self._settings.network_timeout))

    def _is_ancestor(self, commit: str, ref: str) -> bool:
        status, out, err = self._execute("merge-base", "--is-ancestor", commit, ref)
        if status not in (0, 1):
            raise GitError(f"git merge-base failed for {self._remote}: {_detail(err or out)}")
        return status == 0

    def _prepare_commit(self, live: list[_Request]) -> str | None:
        """Bring the tree to the remote's newest commit, apply the batch, commit; None if unchanged."""
        self._fetch()
        self._reset_to_remote()
        self._apply_all(live)
        status = self._status_paths()
        if self._tracker is not None and not self._tracked_everything(live, status):
            # A change wrote a file the tracker was not told of: its index may have been stale for
            # the changes after it. Applied again, each on an index walked anew.
            self._reset_to_remote()
            self._close_tracker()
            self._tracker.forget()
            try:
                self._apply_all(live)
            finally:
                self._open_tracker()
            status = self._status_paths()
        return self._commit_batch(live, None, status)

    def _tracked_everything(self, live: list[_Request], status: list[str]) -> bool:
        """Whether the tracker was told of every file the batch changed (`status`)."""
        told = {path for r in live if r.footprint is not None for path in r.footprint.writes}
        untold = [path for path in status if path not in told]
        if untold:
            log.warning(
                "changes wrote %d files of %s outside the editor (%s...): applying them again",
                len(untold),
                self._remote,
                untold[0],
            )
            for request in live:
                request.footprint = None
        return not untold

    def _commit_batch(
        self, live: list[_Request], base: str | None = None, status: list[str] | None = None
    ) -> str | None:
        """Commit the tree as the batch left it on the remote's head (or on `base`, our commit in
        flight); None when nothing changed (`status`: the changed files, when just asked)."""
        self._tree_pristine = False
        changed = [r for r in live if r.summary is not None]
        if status is None:
            status = self._status_paths()
        if not changed or not status:
            for request in live:
                request.summary = None
            self._reset_back(base)
            return None
        self._run_git("add", "--all")
        message = commit_message([(r.message, r.summary or "") for r in changed])
        self._run_git("commit", "--quiet", "--no-verify", "--cleanup=whitespace", "--message", message)
        commit = self._local_head()
        self._note_committed(commit, status)
        return commit

    def _apply_all(self, live: list[_Request], base: str | None = None) -> None:
        """Apply every change in order; one that raises leaves `live` with its error, and the others
        are applied again on a clean tree (the remote's commit, or `base`), so no half-applied
        edit of it is committed."""
        while True:
            failed = self._first_failure(live)
            if failed is None:
                return
            request, error = failed
            live.remove(request)
            request.future.set_exception(error)
            self._reset_back(base)

    def _reset_back(self, base: str | None) -> None:
        if base is None:
            self._reset_to_remote()
        else:
            self._reset_to(base)

    def _first_failure(self, live: list[_Request]) -> tuple[_Request, Exception] | None:
        for request in live:
            error = self._apply_one(request)
            if error is not None:
                return request, error
        return None

    def _apply_one(self, request: _Request) -> Exception | None:
        """Apply one change to the tree (its footprint recorded when a tracker is open)."""
        tracker = self._tracker
        self._tree_pristine = False
        if tracker is not None:
            tracker.change_started()
        try:
            request.summary = request.change(self._tree)
        except Exception as error:
            reason = error.message if isinstance(error, BtpGitopsError) else type(error).__name__
            log.warning("change %r cannot be applied: %s", _one_line(request.message), reason)
            return error
        finally:
            if tracker is not None:
                request.footprint = tracker.change_ended()
        return None

    def _resolve(self, live: list[_Request], commit: str | None, pushes: int) -> None:
        for request in live:
            carried = commit if request.summary is not None else None
            request.future.set_result(CommitOutcome(carried, request.summary, pushes))

    @staticmethod
    def _fail(live: list[_Request], error: BtpGitopsError) -> None:
        for request in live:
            request.future.set_exception(error)

    def _fail_waiting(self) -> bool:
        """Fail every queued change with the remote's problem; True when the stop marker was seen."""
        health = self.remote_health()
        error = GitError(f"the remote {self._remote} does not answer: {health.problem}")
        stopping = False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return stopping
            if item is None:
                stopping = True
            elif item.future.set_running_or_notify_cancel():
                item.future.set_exception(error)

    def _fail_queued(self, error: GitError) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None and item.future.set_running_or_notify_cancel():
                item.future.set_exception(error)

    # --- Git --------------------------------------------------------------------------------------

    @property
    def _tracking(self) -> str:
        return f"refs/remotes/{REMOTE}/{self._settings.branch}"

    def _git_environment(self) -> dict[str, str]:
        """Identity, no prompts, no hooks, no signing: the commit depends on the settings alone."""
        settings = self._settings
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

    def _require_started(self) -> git.Repo:
        if self._repo is None:
            raise GitError(f"the source repository {self._remote} is not open (start() first)")
        return self._repo

    def _run_git(self, *args: str) -> str:
        """Run one Git command in the clone; GitError (masked) when it fails."""
        status, out, err = self._execute(*args)
        if status != 0:
            raise GitError(f"git {args[0]} failed for {self._remote}: {_detail(err or out)}")
        return out

    def _execute(self, *args: str) -> tuple[int, str, str]:
        repo = self._require_started()
        try:
            status, out, err = repo.git.execute(
                ["git", *args], with_extended_output=True, with_exceptions=False, env=self._env
            )
        except git.GitCommandNotFound as error:
            raise GitError("the git executable was not found") from error
        return int(status), str(out), str(err)

    def _network(self, operation: str, *args: str) -> tuple[int, str, str]:
        """Run a Git command that talks to the remote, within `network_timeout`.

        Not through gitpython: the command gets a process group of its own, so a timeout kills Git
        and its remote helper (git-remote-https, ssh) together; a helper left behind would keep the
        connection, and its pipes, open. The outcome updates `remote_health`."""
        env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **self._env}
        timeout = self._settings.network_timeout
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
            _kill_group(process)
            self._contacted(f"git {operation} did not answer within {timeout:g}s")
            raise GitTimeout(operation, self._remote, timeout) from None
        status = process.returncode
        output = f"{err}\n{out}"
        answered = status == 0 or any(
            marker in output for marker in (*_REJECTION_MARKERS, *_MISSING_BRANCH_MARKERS)
        )
        self._contacted("" if answered else f"git {operation} failed: {_detail(err or out)}")
        return status, out.rstrip("\n"), err.rstrip("\n")

    def _contacted(self, problem: str) -> None:
        now = time.monotonic()
        self._last_network = now
        with self._health_lock:
            if problem:
                if self._health.reachable:
                    log.warning("the remote %s is unreachable: %s", self._remote, problem)
                self._health = RemoteHealth(False, problem, self._health.last_contact)
            else:
                if not self._health.reachable and self._health.last_contact is not None:
                    log.info("the remote %s answers again", self._remote)
                self._health = RemoteHealth(True, "", now)

    def _probe(self) -> None:
        """One `git ls-remote` of the branch (no lock: it does not touch the tree)."""
        if self._repo is None:
            return
        try:
            self._network("ls-remote", "ls-remote", "--heads", REMOTE, f"refs/heads/{self._settings.branch}")
        except GitError as error:
            log.debug("probing %s: %s", self._remote, error.message)

    def _open_clone(self) -> git.Repo:
        """The clone in `workdir`, created when missing, with `origin` pointing at the remote.

        The URL goes into the clone's configuration through gitpython's config writer rather than a
        `git remote` command line, which gitpython would log with any credentials in it."""
        workdir = self._tree
        try:
            if (workdir / ".git").is_dir():
                _remove_stale_locks(workdir / ".git")
                repo = git.Repo(workdir)
            elif workdir.exists() and any(workdir.iterdir()):
                raise GitError(f"{workdir} is neither empty nor a clone of {self._remote}")
            else:
                workdir.mkdir(parents=True, exist_ok=True)
                repo = git.Repo.init(workdir, initial_branch=self._settings.branch)
            with repo.config_writer() as config:
                section = f'remote "{REMOTE}"'
                config.set_value(section, "url", self._settings.url)
                config.set_value(section, "fetch", f"+refs/heads/*:refs/remotes/{REMOTE}/*")
        except (git.GitError, OSError) as error:
            raise GitError(
                f"cannot open a clone of {self._remote} in {workdir}: {type(error).__name__}"
            ) from error
        return repo

    def _fetch(self) -> None:
        started = time.monotonic()
        branch = self._settings.branch
        # The one branch, nothing else: no tags, no FETCH_HEAD, no check for forced updates (the
        # refspec forces), no housekeeping afterwards (`git commit` runs it): a rebase pushes
        # right after this fetch, and every command in between is time for a competitor.
        status, out, err = self._network(
            "fetch", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-show-forced-updates",
            "--no-auto-maintenance", REMOTE, f"+refs/heads/{branch}:{self._tracking}",
        )  # fmt: skip
        if status != 0:
            if any(marker in err for marker in _MISSING_BRANCH_MARKERS):
                raise GitError(f"branch {branch} does not exist on {self._remote}")
            raise GitError(f"cannot fetch branch {branch} from {self._remote}: {_detail(err or out)}")
        self._head = self._tracked_head()
        self._last_fetch_started = started

    def _tracked_head(self) -> str:
        """The sha `origin/<branch>` names, read by gitpython from the ref files (no Git process);
        `git rev-parse` when they cannot be read so."""
        try:
            sha = git.SymbolicReference.dereference_recursive(self._require_started(), self._tracking)
        except (ValueError, OSError, git.GitError):
            sha = ""
        if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha or ""):
            return sha
        return self._run_git("rev-parse", "--verify", self._tracking)

    def _push(self, commit: str) -> None:
        status, out, err = self._network(
            "push", "push", "--quiet", REMOTE, f"{commit}:refs/heads/{self._settings.branch}"
        )
        if status == 0:
            return
        output = f"{err}\n{out}"
        if any(marker in output for marker in _REJECTION_MARKERS):
            raise _PushRejected(_detail(output))
        if any(marker in output.lower() for marker in _LOST_CONNECTION_MARKERS):
            raise _PushUnanswered(
                f"the connection to {self._remote} was lost during a push: {_detail(output)}"
            )
        raise GitError(f"cannot push branch {self._settings.branch} to {self._remote}: {_detail(output)}")

    def _local_head(self) -> str:
        return self._run_git("rev-parse", "--verify", "HEAD")

    def _reset_to_remote(self) -> None:
        """The tree exactly at the remote's commit; the tracker learns which files that rewrote."""
        if self._tree_pristine and self._local_head() == self._head:
            return  # nothing to rewrite: the files (and what the tracker knows of them) stay
        self._reset_to(self._tracking)
        self._tree_pristine = True

    def _reset_to(self, target: str) -> None:
        """The tree (and the local branch) exactly at `target`, nothing else in it; the tracker
        learns which files that rewrote."""
        changed: list[str] | None = None
        if self._tracker is not None:
            try:
                changed = sorted({*self._status_paths(), *self._changed_paths("HEAD", target)})
            except GitError:
                changed = None  # the tracker reads the whole tree again
        self._tree_pristine = False
        self._tree_moves += 1
        self._run_git("reset", "--quiet", "--hard", target)
        self._run_git("clean", "-ffdxq")
        self._rewritten(changed)

    def _restore_quietly(self) -> None:
        """After a failed cycle: back to the remote's commit, or marked for a reset before any read."""
        try:
            self._reset_to_remote()
        except GitError as error:
            self._tree_pristine = False
            log.warning("cannot reset the clone of %s: %s", self._remote, error.message)


def _directories(paths: Iterable[str]) -> set[str]:
    """Every directory that holds one of `paths` (relative, `/`-separated), at any depth."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        found.update("/".join(parts[: n + 1]) for n in range(len(parts)))
    return found


def _chunks(paths: list[str], size: int = 200) -> Iterable[list[str]]:
    for start in range(0, len(paths), size):
        yield paths[start : start + size]


def _kill_group(process: subprocess.Popen[str]) -> None:
    """Kill the process and everything it started (its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError):  # it ended just now
        os.killpg(process.pid, signal.SIGKILL)
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a helper that left the group still holds the pipes
        log.warning("git process %d left a helper holding its output open", process.pid)
