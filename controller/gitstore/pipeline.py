"""One batch pushed, the next prepared meanwhile, a refused push tried again.

    one commit for the batch (controller.gitstore.apply)
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

A push that got no answer (timed out, connection lost) may have landed, or may still: the remote
can finish a push whose client is gone. The writer fetches and looks for its commit. Landed: the
futures succeed as for any push. Not there and the remote's branch moved on: the push can never
land (a ref update replaces only the commit it was made on), so the batch is applied again like a
rejected one. Not there and the branch still where the push started, or the remote cannot be asked:
the futures fail with `OutcomeUnknown`, and the caller must leave in place whatever exists for the
change's sake; a repeated change finds the landed record (or writes it) and nothing is applied
twice."""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass

from btp_gitops.controller.errors import GitPushRejected, GitTimeout, OutcomeUnknown
from btp_gitops.controller.gitstore.apply import BatchApplier
from btp_gitops.controller.gitstore.batches import ChangeQueue, Request, fail, resolve
from btp_gitops.controller.gitstore.clone import Clone, PushRejected, PushUnanswered
from btp_gitops.controller.gitstore.interface import RepoSettings
from btp_gitops.controller.gitstore.listeners import Listeners
from btp_gitops.controller.gitstore.rebase import Pushed, Rebaser
from btp_gitops.generator.core import GitError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Follower:
    """The batch behind one whose push is in flight, applied on top of that push's commit."""

    requests: list[Request]
    commit: str | None  # its commit (None: it changed nothing, or it was dropped)
    prepared: bool  # applied on top of the commit in flight (False: to be applied anew)
    stopping: bool  # the stop marker was met while collecting it
    base: str = ""  # the commit in flight it was applied on
    moves: int = -1  # the clone's count of tree resets when it was committed


class PushInFlight:
    """One push of a commit (by sha, so a commit made meanwhile cannot slip into it), in a thread
    of its own: the writer prepares the next batch meanwhile."""

    def __init__(self, clone: Clone, commit: str) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(clone, commit), daemon=True)
        self._thread.start()

    def _run(self, clone: Clone, commit: str) -> None:
        try:
            clone.push(commit)
        except BaseException as error:  # handed to the writer by result()
            self._error = error

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> None:
        """Wait for the push; raise what `Clone.push` raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error


def backoff(settings: RepoSettings, attempt: int, *, lost_race: bool = False) -> float:
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


class PushPipeline:
    """Commits and pushes batches of `clone`, in order, one push at a time."""

    def __init__(
        self,
        settings: RepoSettings,
        clone: Clone,
        changes: ChangeQueue,
        listeners: Listeners,
        remote: str,
    ) -> None:
        self._settings = settings
        self._clone = clone
        self._changes = changes
        self._listeners = listeners
        self._remote = remote
        self.applier = BatchApplier(clone, remote)
        self.rebaser = Rebaser(clone, self.applier, remote)

    def push_batch(self, live: list[Request], prepared: Follower | None) -> Follower | None:
        """Commit and push one batch (`prepared`: it was committed while the batch before was being
        pushed), rebasing it after a lost race. While its push is in flight the next batch is taken
        from the queue and applied on top of it (`Follower`): pushed next once this one landed,
        applied again from scratch otherwise. Returns that next batch, if any."""
        pushes = 0
        rejected: PushRejected | None = None  # the last refusal
        started = time.monotonic()
        refused: Pushed | None = None  # the last attempt's commit, when the remote refused it
        follower: Follower | None = None
        while True:
            with self._clone.lock:
                self._clone.open_tracker()
                commit: str | None = None
                try:
                    commit = self._make_commit(live, prepared, refused)
                    prepared = None
                    refused = None
                    if commit is None:
                        resolve(live, None, pushes)
                        return follower
                    pushes += 1
                    base = self._clone.head
                    pushing, follower = self._start_push(commit, follower)
                    try:
                        pushing.result()
                        self._clone.head = commit
                        self._clone.pristine = follower is None or follower.commit is None
                    except (GitTimeout, PushUnanswered) as failure:
                        follower = self._drop(follower, commit)
                        if self._settle_unanswered_push(live, commit, base, pushes, failure):
                            return follower
                        raise PushRejected(failure.message, lost_race=True) from None
                    except BaseException:
                        follower = self._drop(follower, commit)
                        raise
                    return self._landed(live, commit, pushes, follower)
                except PushRejected as rejection:
                    rejected = rejection
                    # The tree stays at our commit: the next attempt rebases it onto the new head.
                    refused = (
                        Pushed(commit, base, self._clone.moves)
                        if commit and self._clone.local_head() == commit
                        else None
                    )
                    if refused is None:
                        self._clone.restore_quietly()
                except GitError as error:
                    self._clone.restore_quietly()
                    fail(live, error)
                    return follower
                finally:
                    self._clone.close_tracker()
            detail = rejected.detail if rejected is not None else ""
            if self._give_up(pushes, rejected, started):
                if refused is not None:
                    self._restore_locked()
                fail(
                    live,
                    GitPushRejected(
                        f"{self._remote} rejected {pushes} pushes to {self._settings.branch}: {detail}",
                        delay=self._settings.backoff_max,
                    ),
                )
                return follower
            log.info("push to %s rejected (attempt %d): %s; trying again", self._remote, pushes, detail)
            time.sleep(backoff(self._settings, pushes, lost_race=rejected is not None and rejected.lost_race))

    def _restore_locked(self) -> None:
        with self._clone.lock:
            self._clone.restore_quietly()

    def _give_up(self, pushes: int, rejected: PushRejected | None, started: float) -> bool:
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

    def _start_push(self, commit: str, follower: Follower | None) -> tuple[PushInFlight, Follower | None]:
        """Start pushing `commit`; meanwhile the next batch is applied on top (unless a batch
        prepared before was dropped: it goes next, alone, in its order)."""
        pushing = PushInFlight(self._clone, commit)
        if follower is None and self._settings.pipeline:
            follower = self._prepare_follower(commit, pushing)
        return pushing, follower

    def _make_commit(
        self, live: list[Request], prepared: Follower | None, refused: Pushed | None
    ) -> str | None:
        """The batch's commit: the one prepared during the last push, its refused one rebased, or
        the batch applied to the remote's newest tree. None when nothing changed."""
        commit = self._resume(prepared) if prepared is not None else None
        if commit is not None:
            return commit
        if refused is not None and self.rebaser.can_rebase(live):
            return self.rebaser.rebase(live, refused)
        return self.applier.prepare_commit(live)

    def _landed(
        self, live: list[Request], commit: str, pushes: int, follower: Follower | None
    ) -> Follower | None:
        """The push of `commit` succeeded: answer its changes, publish it; the next batch."""
        resolve(live, commit, pushes)
        log.info("pushed %s to %s (%d changes, attempt %d)", commit[:12], self._remote, len(live), pushes)
        if follower is not None and follower.commit is None and follower.prepared:
            # The next batch changed nothing on top of this commit, now the remote's.
            resolve(follower.requests, None, 0)
            follower = None
        self._listeners.pushed()  # after the answers: they need not wait for readers
        return follower

    # --- pipelining: the next batch prepared while a push is in flight ------------------------------

    def _prepare_follower(self, commit: str, pushing: PushInFlight) -> Follower | None:
        """Take what is queued while the push of `commit` runs (for one batch window from the
        first, as `ChangeQueue.collect`) and apply it on top of `commit`, the push still in flight.
        None when nothing was queued before the push ended."""
        requests, stopping = self._changes.collect_while(lambda: not pushing.done())
        if not requests:
            return Follower([], None, prepared=False, stopping=True) if stopping else None
        # Readers index `commit` now, before the tree moves on (published once the push landed).
        self._listeners.commit(commit)
        applier = self.applier
        try:
            applier.apply_all(requests, commit)
            status = self._clone.status_paths()
            if self._clone.tracker is not None and not applier.tracked_everything(requests, status):
                return self._drop(Follower(requests, None, prepared=True, stopping=stopping), commit)
            follower_commit = applier.commit_batch(requests, commit, status)
        except GitError as error:
            log.warning("preparing the next batch on %s failed: %s", commit[:12], error.message)
            return self._drop(Follower(requests, None, prepared=True, stopping=stopping), commit)
        return Follower(requests, follower_commit, True, stopping, base=commit, moves=self._clone.moves)

    def _drop(self, follower: Follower | None, commit: str) -> Follower | None:
        """The prepared batch cannot go on top of `commit` (its push failed): the tree goes back
        to `commit` and the batch's changes will be applied anew, after this batch settled."""
        if follower is None:
            return None
        if follower.prepared:
            self._clone.reset_to(commit)
        for request in follower.requests:
            request.summary = None
            request.footprint = None
        return Follower(follower.requests, None, prepared=False, stopping=follower.stopping)

    def _resume(self, prepared: Follower) -> str | None:
        """The tree at the prepared batch's commit, made on the remote's head while the batch
        before was pushed (a reader may have moved the tree since); None when it is not on the
        head any more."""
        clone = self._clone
        if prepared.commit is None or prepared.base != clone.head:
            return None
        if prepared.moves != clone.moves:
            clone.reset_to(prepared.commit)
        clone.pristine = False
        return prepared.commit

    # --- a push that got no answer ------------------------------------------------------------------

    def _settle_unanswered_push(
        self, live: list[Request], commit: str, base: str, pushes: int, failure: GitError
    ) -> bool:
        """The push of `commit` (made on the remote's `base`) got no answer: it may have landed, or
        may still (the remote may finish a push whose client is gone). Ask the remote before
        answering. True when the batch is settled; False when the push can no longer land and the
        batch is to be applied again like a rejected one."""
        clone = self._clone
        try:
            clone.fetch()
            landed = clone.is_ancestor(commit, clone.tracking)
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
            clone.pristine = clone.local_head() == clone.head
            if not clone.pristine:
                clone.restore_quietly()
            resolve(live, commit, pushes)
            self._listeners.head()
            return True
        if clone.head == base:
            # The remote still holds the commit our push would replace: a push the remote has not
            # finished yet can still land, so "not there" is not "failed" yet.
            log.warning("push of %s to %s got no answer and has not landed yet", commit[:12], self._remote)
            self._unknown(live, f"the push to {self._remote} got no answer and has not landed yet")
            return True
        # A ref update replaces only the commit it was made on: the remote moved on without ours,
        # so this push can never land. Applied again on the new head, like a rejection.
        log.info("push of %s to %s got no answer and cannot land any more", commit[:12], self._remote)
        return False

    def _unknown(self, live: list[Request], why: str) -> None:
        self._clone.restore_quietly()
        fail(live, OutcomeUnknown(f"{why}; it may still land", delay=self._settings.network_timeout))
