"""A batch applied to the tree and committed: one commit for the batch, never an empty one.

    fetch, hard-reset to origin/<branch>, apply every change        (a change that raises leaves
                                                                      the batch; the rest are applied
                                                                      again on a clean tree)
    one commit for the batch, if anything changed                   (never an empty commit)

The batch prepared while a push is in flight is applied the same way on top of the commit being
pushed. With a `TreeTracker`, each change's footprint (what it looked up, which files it wrote) is
recorded for a rebase; a change that wrote a file the tracker was not told of sends the batch
through once more, each change on an index walked anew."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from btp_gitops.controller.gitstore.batches import Request
from btp_gitops.controller.gitstore.clone import Clone
from btp_gitops.controller.gitstore.messages import commit_message, one_line
from btp_gitops.generator.core import BtpGitopsError

log = logging.getLogger(__name__)


class BatchApplier:
    """Applies batches to `clone`'s tree and commits them; remembers which files our last few
    commits changed (`committed`), for a rebase of them."""

    def __init__(self, clone: Clone, remote: str) -> None:
        self._clone = clone
        self._remote = remote
        self.committed: dict[str, frozenset[str]] = {}  # our last commits: the files each changed

    def prepare_commit(self, live: list[Request]) -> str | None:
        """Bring the tree to the remote's newest commit, apply the batch, commit; None if unchanged."""
        clone = self._clone
        clone.fetch()
        clone.reset_to_remote()
        self.apply_all(live)
        status = clone.status_paths()
        if clone.tracker is not None and not self.tracked_everything(live, status):
            # A change wrote a file the tracker was not told of: its index may have been stale for
            # the changes after it. Applied again, each on an index walked anew.
            clone.reset_to_remote()
            clone.close_tracker()
            clone.tracker.forget()
            try:
                self.apply_all(live)
            finally:
                clone.open_tracker()
            status = clone.status_paths()
        return self.commit_batch(live, None, status)

    def tracked_everything(self, live: list[Request], status: list[str]) -> bool:
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

    def commit_batch(
        self, live: list[Request], base: str | None = None, status: list[str] | None = None
    ) -> str | None:
        """Commit the tree as the batch left it on the remote's head (or on `base`, our commit in
        flight); None when nothing changed (`status`: the changed files, when just asked)."""
        clone = self._clone
        clone.pristine = False
        changed = [r for r in live if r.summary is not None]
        if status is None:
            status = clone.status_paths()
        if not changed or not status:
            for request in live:
                request.summary = None
            self._reset_back(base)
            return None
        clone.runner.run("add", "--all")
        message = commit_message([(r.message, r.summary or "") for r in changed])
        clone.runner.run("commit", "--quiet", "--no-verify", "--cleanup=whitespace", "--message", message)
        commit = clone.local_head()
        self.note_committed(commit, status)
        return commit

    def note_committed(self, commit: str, paths: Iterable[str]) -> None:
        """Keep the files `commit` changed, for a rebase of it (the last few commits only)."""
        self.committed[commit] = frozenset(paths)
        while len(self.committed) > 4:
            del self.committed[next(iter(self.committed))]

    def apply_all(self, live: list[Request], base: str | None = None) -> None:
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
            self._clone.reset_to_remote()
        else:
            self._clone.reset_to(base)

    def _first_failure(self, live: list[Request]) -> tuple[Request, Exception] | None:
        for request in live:
            error = self.apply_one(request)
            if error is not None:
                return request, error
        return None

    def apply_one(self, request: Request) -> Exception | None:
        """Apply one change to the tree (its footprint recorded when a tracker is open); the error
        it raised, if any."""
        tracker = self._clone.tracker
        self._clone.pristine = False
        if tracker is not None:
            tracker.change_started()
        try:
            request.summary = request.change(self._clone.tree)
        except Exception as error:
            reason = error.message if isinstance(error, BtpGitopsError) else type(error).__name__
            log.warning("change %r cannot be applied: %s", one_line(request.message), reason)
            return error
        finally:
            if tracker is not None:
                request.footprint = tracker.change_ended()
        return None
