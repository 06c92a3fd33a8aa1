"""A refused commit put on the remote's new head: the quick way and the long way.

With a `TreeTracker` (controller.records' `WorkingIndex`), the writer keeps one index of its tree
across batches and tells it which files Git rewrote; the tracker records per change what it
looked up and which files it wrote. A refused commit is then rebased, not rebuilt: HEAD and Git's
index move to the new head, the competitor's files come from it, ours stay, and only the changes
whose files or lookups the competitor touched (and those depending on them) are applied again
(`Rebaser.rebase_slowly`). When none is, the rebased commit is made from Git's index with
plumbing (`Rebaser.rebase`), so the next push follows the fetch after a handful of local commands
rather than a dozen. Without a tracker every attempt applies the whole batch to the new head
(`BatchApplier.prepare_commit`)."""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from btp_gitops.controller.gitstore.apply import BatchApplier
from btp_gitops.controller.gitstore.batches import Request
from btp_gitops.controller.gitstore.clone import Clone, chunks
from btp_gitops.controller.gitstore.interface import TreeTracker
from btp_gitops.generator.core import GitError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Pushed:
    """A batch's commit that the remote refused: what a rebase starts from."""

    commit: str
    base: str  # the remote's commit it was made on
    moves: int = -1  # the clone's count of tree resets when it was refused (-1: unknown)


def directories(paths: Iterable[str]) -> set[str]:
    """Every directory that holds one of `paths` (relative, `/`-separated), at any depth."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        found.update("/".join(parts[: n + 1]) for n in range(len(parts)))
    return found


def overlaps(live: list[Request], ours: AbstractSet[str], theirs: list[str]) -> bool:
    """Whether the competitor changed a file that our commit or one of its changes wrote, or
    put a file where our commit has a directory (or the other way round)."""
    changed = set(theirs)
    if changed & ours or any(r.footprint is None or r.footprint.writes & changed for r in live):
        return True
    return bool(directories(changed) & ours or directories(ours) & changed)


def fits(request: Request, kept: list[Request], tracker: TreeTracker) -> bool:
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


class Rebaser:
    """Rebases a refused commit of `clone` onto the remote's new head, `applier` applying again
    the changes that need it."""

    def __init__(self, clone: Clone, applier: BatchApplier, remote: str) -> None:
        self._clone = clone
        self._applier = applier
        self._remote = remote

    def can_rebase(self, live: list[Request]) -> bool:
        return self._clone.tracker is not None and all(r.footprint is not None for r in live)

    def rebase(self, live: list[Request], refused: Pushed) -> str | None:
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
        (`rebase_slowly`). The tree is at our commit unless a reader moved it (`refused.moves`)."""
        clone = self._clone
        assert clone.tracker is not None  # can_rebase
        if refused.moves != clone.moves:
            clone.reset_to(refused.commit)  # a reader moved the tree meanwhile: back to our commit
        clone.fetch()
        if clone.head == refused.base:
            return self._applier.prepare_commit(live)  # refused for another reason
        theirs = clone.changed_paths(refused.base, clone.head)
        ours = self._applier.committed.get(refused.commit)
        if ours is None or overlaps(live, ours, theirs):
            return self.rebase_slowly(live, refused, theirs, None)
        dirty_keys = self._take_theirs(theirs)
        if any(r.footprint is None or r.footprint.reads & dirty_keys for r in live):
            return self.rebase_slowly(live, refused, theirs, dirty_keys)
        return self._commit_rebased(refused, ours, len(theirs))

    def _take_theirs(self, theirs: list[str]) -> AbstractSet[Hashable]:
        """No file of ours changed on the remote (`overlaps`): the competitor's files go into the
        tree and Git's index as the new head holds them (gone where it has none), ours stay. The
        index is then the rebased commit's tree. Returns the keys their files answer(ed)."""
        clone = self._clone
        for chunk in chunks(sorted(theirs)):
            clone.runner.run(
                "--literal-pathspecs", "restore", "--quiet", f"--source={clone.tracking}",
                "--staged", "--worktree", "--", *chunk,
            )  # fmt: skip
        clone.pristine = False
        return clone.rewritten(theirs)

    def _commit_rebased(self, refused: Pushed, ours: frozenset[str], competitor_files: int) -> str:
        """Git's index (our commit's tree with the competitor's files, `_take_theirs`) committed on
        the new head with our commit's message and author; HEAD (the local branch) moves to it."""
        clone = self._clone
        tree = clone.runner.run("write-tree")
        commit = self._commit_tree(tree, clone.head, like=refused.commit)
        clone.runner.run("update-ref", "-m", "btp-gitops: rebased", "HEAD", commit, refused.commit)
        self._applier.note_committed(commit, ours)
        log.info(
            "rebased %s on %s as %s (%d files of the competitor; no change applied again)",
            refused.commit[:12],
            clone.head[:12],
            commit[:12],
            competitor_files,
        )
        return commit

    def _commit_tree(self, tree: str, parent: str, *, like: str) -> str:
        """A commit of `tree` on `parent`, with the message and the author (date included) of
        the commit `like`."""
        runner = self._clone.runner
        raw = runner.read_commit(like)
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
        made = runner.run_bytes("commit-tree", tree, "-p", parent, stdin=message, env=author_env)
        return made.decode("ascii").strip()

    def rebase_slowly(
        self,
        live: list[Request],
        refused: Pushed,
        theirs: list[str],
        taken: AbstractSet[Hashable] | None,
    ) -> str | None:
        """Apply again the changes the competitor touched, on a tree with our files and theirs
        (`taken`: their files are in it already, and these are the keys they answer(ed))."""
        clone, applier = self._clone, self._applier
        tracker = clone.tracker
        assert tracker is not None  # can_rebase
        if clone.is_ancestor(refused.commit, clone.head):
            return applier.prepare_commit(live)  # landed after all
        # HEAD and Git's index to the new head; the working tree keeps our files, then takes theirs.
        clone.runner.run("reset", "--quiet", "--mixed", clone.tracking)
        clone.pristine = False
        if taken is None:
            clone.take_from_head(theirs)
            dirty_keys = set(clone.rewritten(theirs))
        else:
            dirty_keys = set(taken)
        again = self._to_apply_again(live, dirty_keys, set(theirs))
        kept = [r for r in live if r not in again]
        log.info(
            "rebasing %s on %s: %d of %d changes applied again (%d files of the competitor)",
            refused.commit[:12],
            clone.head[:12],
            len(again),
            len(live),
            len(theirs),
        )
        done: list[Request] = []
        for request in again:
            failure = applier.apply_one(request)
            if failure is not None:
                # It leaves the batch, as on any tree; what it wrote before failing is undone,
                # unless another change wrote there too: then the whole batch is applied again.
                live.remove(request)
                request.future.set_exception(failure)
                written = request.footprint.writes if request.footprint is not None else None
                if written is None or any(
                    r.footprint is None or r.footprint.writes & written for r in (*kept, *done)
                ):
                    clone.reset_to_remote()
                    return applier.prepare_commit(live)
                clone.take_from_head(written)
                clone.rewritten(written)
                continue
            if not fits(request, kept, tracker):
                clone.reset_to_remote()
                return applier.prepare_commit(live)
            done.append(request)
        return applier.commit_batch(live)

    def _to_apply_again(
        self, live: list[Request], dirty_keys: set[Hashable], dirty_paths: set[str]
    ) -> list[Request]:
        """The changes that wrote a file or looked up a key the competitor changed, and those that
        depend on them, in the batch's order; their files are taken from the new head."""
        again: list[Request] = []
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
            self._clone.take_from_head(paths)
            dirty_keys |= self._clone.rewritten(paths)
            dirty_paths |= set(paths)
            again += more
        again.sort(key=live.index)
        return again
