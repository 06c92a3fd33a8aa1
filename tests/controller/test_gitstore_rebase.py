"""controller.gitstore's two rebase modes (`rebase.Rebaser`) on their own, against a real bare remote:
a batch is committed on the remote's head, another writer pushes first, and the refused commit is
put on the new head. The quick way (no file or lookup of the batch touched by the competitor)
takes the competitor's files into Git's index and commits that with our commit's message and
author, applying no change again; the long way applies again exactly the changes whose files or
lookups the competitor touched; a change that fails on the new tree leaves the batch without a
trace. Either way the result pushes as a fast-forward of the competitor's commit."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pytest

from btp_gitops.controller.errors import PermanentError
from btp_gitops.controller.gitstore.apply import BatchApplier
from btp_gitops.controller.gitstore.batches import Request
from btp_gitops.controller.gitstore.clone import Clone
from btp_gitops.controller.gitstore.rebase import Pushed, Rebaser, directories, overlaps
from tests.controller.test_gitstore import remote, remote_head, run_git
from tests.controller.test_gitstore_clone import (
    PathTracker,
    Touched,
    TrackedWrite,
    open_clone,
    push_from,
    request,
)

__all__ = ["remote"]  # the fixture, shared with test_gitstore

QUICK = "no change applied again"


@dataclass
class TrackedAppend:
    """Appends `line` to the shared file `path` (reading it first), telling the tracker; counts its
    runs. With `flag`, it also writes that file when another writer's line is in `path`."""

    tracker: PathTracker
    path: str
    line: str
    flag: str = ""
    runs: int = 0

    def __call__(self, tree: Path) -> str | None:
        self.runs += 1
        self.tracker.read(self.path)
        target = tree / self.path
        lines = target.read_text().splitlines() if target.exists() else []
        if self.flag and "theirs" in lines:
            (tree / self.flag).write_text("theirs were there\n")
            self.tracker.wrote(self.flag)
        target.write_text("\n".join([*lines, self.line]) + "\n")
        self.tracker.wrote(self.path)
        return f"append {self.line}"


@dataclass
class UniqueName:
    """Records `name` in names/`name`, refused when the file `taken` exists (a lookup of it)."""

    tracker: PathTracker
    name: str
    taken: str
    runs: int = 0

    def __call__(self, tree: Path) -> str | None:
        self.runs += 1
        self.tracker.read(self.taken)
        if (tree / self.taken).exists():
            raise PermanentError(f"{self.name} is taken")
        (tree / "names").mkdir(exist_ok=True)
        (tree / "names" / self.name).write_text(f"{self.name}\n")
        self.tracker.wrote(f"names/{self.name}")
        return f"record {self.name}"


@dataclass
class Refused:
    clone: Clone
    applier: BatchApplier
    rebaser: Rebaser
    tracker: PathTracker
    commit: str
    base: str


def committed_batch(remote: Path, tmp_path: Path, tracker: PathTracker, live: list[Request]) -> Refused:
    """`live` applied and committed on the remote's head by a writer with `tracker` (not pushed)."""
    clone = open_clone(remote, tmp_path / "work", tracker)
    applier = BatchApplier(clone, "the remote")
    commit = applier.prepare_commit(live)
    assert commit is not None
    return Refused(clone, applier, Rebaser(clone, applier, "the remote"), tracker, commit, clone.head)


def rebase(refused: Refused, live: list[Request]) -> str:
    commit = refused.rebaser.rebase(live, Pushed(refused.commit, refused.base, refused.clone.moves))
    assert commit is not None
    return commit


def files_of(clone: Clone, commit: str) -> list[str]:
    return run_git(clone.tree, "ls-tree", "-r", "--name-only", commit).splitlines()


def assert_pushes_on(clone: Clone, commit: str, theirs: str, remote: Path) -> None:
    """`commit` sits right on the competitor's `theirs`, the clone agrees, and the push lands."""
    assert run_git(clone.tree, "rev-parse", f"{commit}^") == theirs
    assert clone.local_head() == commit
    assert run_git(clone.tree, "write-tree") == run_git(clone.tree, "rev-parse", f"{commit}^{{tree}}")
    assert run_git(clone.tree, "status", "--porcelain", "--untracked-files=all") == ""
    clone.push(commit)
    assert remote_head(remote) == commit


def test_a_batch_the_competitor_did_not_touch_is_rebased_from_the_index(
    remote: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tracker = PathTracker()
    changes = [TrackedWrite(tracker, "a.txt", "a\n"), TrackedWrite(tracker, "b.txt", "b\n")]
    live = [request(change, f"write {change.path}") for change in changes]
    refused = committed_batch(remote, tmp_path, tracker, live)
    theirs = push_from(remote, tmp_path, {"theirs.txt": "theirs\n"})
    with caplog.at_level(logging.INFO, logger="btp_gitops.controller.gitstore"):
        commit = rebase(refused, live)
    assert [change.runs for change in changes] == [1, 1]
    assert sum(QUICK in record.getMessage() for record in caplog.records) == 1
    assert files_of(refused.clone, commit) == ["README.md", "a.txt", "b.txt", "theirs.txt"]
    same = "--format=%an <%ae> %ad%n%B"
    work = refused.clone.tree
    assert run_git(work, "log", "-1", same, refused.commit) == run_git(work, "log", "-1", same, commit)
    assert refused.applier.committed[commit] == frozenset({"a.txt", "b.txt"})  # a rebase of it stays quick
    assert_pushes_on(refused.clone, commit, theirs, remote)


def test_a_change_that_looked_up_a_file_the_competitor_wrote_is_applied_again(
    remote: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The competitor takes `names/taken-by-them` while the batch records `mine` (which looked it
    up) and `other`: `mine` runs again on the new tree and is refused; `other` is not run again."""
    tracker = PathTracker()
    mine = UniqueName(tracker, "mine", "names/taken-by-them")
    other = TrackedWrite(tracker, "other.txt", "other\n")
    live = [request(mine, "record mine"), request(other, "write other")]
    refused = committed_batch(remote, tmp_path, tracker, live)
    first = live[0]
    theirs = push_from(remote, tmp_path, {"names/taken-by-them": "theirs\n"})
    with caplog.at_level(logging.INFO, logger="btp_gitops.controller.gitstore"):
        commit = rebase(refused, live)
    assert (mine.runs, other.runs) == (2, 1)
    assert any("1 of 2 changes applied again" in record.getMessage() for record in caplog.records)
    assert isinstance(first.future.exception(0), PermanentError) and first not in live
    assert files_of(refused.clone, commit) == ["README.md", "names/taken-by-them", "other.txt"]
    assert not (refused.clone.tree / "names" / "mine").exists()
    assert_pushes_on(refused.clone, commit, theirs, remote)


def test_a_file_both_writers_changed_is_written_again_on_top_of_theirs(remote: Path, tmp_path: Path) -> None:
    tracker = PathTracker()
    shared = TrackedAppend(tracker, "shared.txt", "ours")
    alone = TrackedWrite(tracker, "alone.txt", "alone\n")
    live = [request(shared, "append ours"), request(alone, "write alone")]
    refused = committed_batch(remote, tmp_path, tracker, live)
    theirs = push_from(remote, tmp_path, {"shared.txt": "theirs\n"})
    commit = rebase(refused, live)
    assert (shared.runs, alone.runs) == (2, 1)
    assert run_git(refused.clone.tree, "show", f"{commit}:shared.txt") == "theirs\nours"
    assert files_of(refused.clone, commit) == ["README.md", "alone.txt", "shared.txt"]
    assert_pushes_on(refused.clone, commit, theirs, remote)


def test_a_change_applied_again_that_writes_where_a_kept_one_looked_sends_the_whole_batch_again(
    remote: Path, tmp_path: Path
) -> None:
    """`shared` is applied again (the competitor changed its file) and on the new tree also writes
    `flag.txt`, which `reader` (not applied again: nothing it read changed) looked up: its answer
    may differ now, so every change runs again on the new head, as without a tracker."""
    tracker = PathTracker()
    shared = TrackedAppend(tracker, "shared.txt", "ours", flag="flag.txt")
    reader = TrackedWrite(tracker, "reader.txt", "read the flag\n", reads=("flag.txt",))
    live = [request(shared, "append ours"), request(reader, "write reader")]
    refused = committed_batch(remote, tmp_path, tracker, live)
    theirs = push_from(remote, tmp_path, {"shared.txt": "theirs\n"})
    commit = rebase(refused, live)
    assert (shared.runs, reader.runs) == (3, 2)
    assert run_git(refused.clone.tree, "show", f"{commit}:shared.txt") == "theirs\nours"
    assert files_of(refused.clone, commit) == ["README.md", "flag.txt", "reader.txt", "shared.txt"]
    assert_pushes_on(refused.clone, commit, theirs, remote)


def test_a_commit_refused_while_the_branch_stayed_is_made_again_on_it(remote: Path, tmp_path: Path) -> None:
    """Refused for another reason (a hook): nothing moved, so the batch is applied again as it is."""
    tracker = PathTracker()
    change = TrackedWrite(tracker, "a.txt", "a\n")
    live = [request(change, "write a")]
    refused = committed_batch(remote, tmp_path, tracker, live)
    commit = rebase(refused, live)
    assert change.runs == 2
    assert_pushes_on(refused.clone, commit, refused.base, remote)


def test_only_a_batch_whose_every_change_has_a_footprint_can_be_rebased(remote: Path, tmp_path: Path) -> None:
    tracker = PathTracker()
    clone = open_clone(remote, tmp_path / "work", tracker)
    rebaser = Rebaser(clone, BatchApplier(clone, "the remote"), "the remote")
    with_footprint = request(TrackedWrite(tracker, "a.txt", "a\n"))
    with_footprint.footprint = Touched(frozenset(), frozenset({"a.txt"}))
    assert rebaser.can_rebase([with_footprint])
    assert not rebaser.can_rebase([with_footprint, request(TrackedWrite(tracker, "b.txt", "b\n"))])
    clone.tracker = None
    assert not rebaser.can_rebase([with_footprint])


def test_what_counts_as_the_competitor_touching_the_batch() -> None:
    live = [request(lambda tree: None), request(lambda tree: None)]
    live[0].footprint = Touched(frozenset(), frozenset({"apps/a.yaml"}))
    live[1].footprint = Touched(frozenset({"apps/b.yaml"}), frozenset())  # a lookup: not an overlap
    ours = frozenset({"apps/a.yaml"})
    assert not overlaps(live, ours, ["apps/b.yaml", "theirs.txt"])
    assert overlaps(live, ours, ["apps/a.yaml"])
    assert overlaps(live, ours, ["apps"])  # a file where we have a directory
    assert overlaps(live, frozenset({"notes"}), ["notes/today.md"])  # and the other way round
    assert directories(["a/b/c.yaml", "d.yaml"]) == {"a", "a/b"}
