"""controller.gitstore's clone (`clone.Clone`) and batch applier (`apply.BatchApplier`) on their own,
against a real bare remote: the clone opened and checked out, its tree reset with the tracker told
which files Git rewrote, files taken from the remote's head, a push refused for a lost race told
from one a hook declined; a batch applied and committed once, a failing change leaving it without
a trace, an unchanged batch making no commit, and a change that wrote behind the tracker's back
sending the batch through again on a fresh index."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from btp_gitops.controller.errors import PermanentError
from btp_gitops.controller.gitstore import COMMITTED_BY_TRAILER, commit_message
from btp_gitops.controller.gitstore.apply import BatchApplier
from btp_gitops.controller.gitstore.batches import Request
from btp_gitops.controller.gitstore.clone import Clone, PushRejected
from btp_gitops.controller.gitstore.probe import RemoteWatch
from btp_gitops.controller.gitstore.runner import GitRunner
from btp_gitops.generator.core.errors import GitError
from tests.controller.test_gitstore import WriteFile, remote, remote_head, run_git, settings_for

__all__ = ["remote"]  # the fixture, shared with test_gitstore


@dataclass(frozen=True)
class Touched:
    reads: frozenset[Hashable]
    writes: frozenset[str]


@dataclass
class PathTracker:
    """A tree tracker whose keys are the files' paths: each change tells it what it read and wrote."""

    rewrites: list[list[str] | None] = field(default_factory=list)
    forgotten: int = 0
    _reads: set[Hashable] = field(default_factory=set)
    _writes: set[str] = field(default_factory=set)

    def open(self, tree: Path) -> None:
        pass

    def close(self) -> None:
        pass

    def forget(self) -> None:
        self.forgotten += 1

    def change_started(self) -> None:
        self._reads, self._writes = set(), set()

    def change_ended(self) -> Touched:
        return Touched(frozenset(self._reads), frozenset(self._writes))

    def read(self, path: str) -> None:
        self._reads.add(path)

    def wrote(self, path: str) -> None:
        self._writes.add(path)

    def rewritten(self, paths: Iterable[str] | None) -> AbstractSet[Hashable]:
        self.rewrites.append(None if paths is None else sorted(paths))
        return frozenset(paths or ())

    def keys(self, paths: Iterable[str]) -> AbstractSet[Hashable]:
        return frozenset(paths)


@dataclass
class TrackedWrite:
    """Writes `text` to `path` (after reading the files `reads`), telling the tracker; counts its runs."""

    tracker: PathTracker
    path: str
    text: str
    reads: tuple[str, ...] = ()
    told: bool = True
    runs: int = 0

    def __call__(self, tree: Path) -> str | None:
        self.runs += 1
        for read in self.reads:
            self.tracker.read(read)
        target = tree / self.path
        if target.exists() and target.read_text() == self.text:
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.text)
        if self.told:
            self.tracker.wrote(self.path)
        return f"write {self.path}"


def open_clone(remote: Path, workdir: Path, tracker: PathTracker | None = None) -> Clone:
    settings = settings_for(remote, workdir)
    watch = RemoteWatch("the remote", settings.probe_interval)
    clone = Clone(settings, GitRunner(settings, workdir, "the remote", watch.contacted), "the remote")
    clone.tracker = tracker
    clone.open()
    return clone


def request(change: object, message: str = "") -> Request:
    return Request(change, message or f"change {id(change)}", concurrent.futures.Future())  # type: ignore[arg-type]


def push_from(remote: Path, tmp_path: Path, files: dict[str, str | None], message: str = "theirs") -> str:
    """Another writer commits `files` (None: removed) on the remote's branch and pushes."""
    other = tmp_path / f"other-{remote_head(remote)[:8]}"
    run_git(tmp_path, "clone", "--quiet", str(remote), str(other))
    for path, text in files.items():
        if text is None:
            run_git(other, "rm", "--quiet", path)
        else:
            (other / path).parent.mkdir(parents=True, exist_ok=True)
            (other / path).write_text(text)
            run_git(other, "add", path)
    run_git(other, "commit", "--quiet", "-m", message)
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    return remote_head(remote)


def test_the_clone_opens_at_the_remotes_head_and_refuses_a_foreign_directory(
    remote: Path, tmp_path: Path
) -> None:
    clone = open_clone(remote, tmp_path / "work")
    assert clone.head == remote_head(remote) == clone.local_head()
    assert clone.pristine and (tmp_path / "work" / "README.md").is_file()
    clone.close()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not a clone\n")
    with pytest.raises(GitError, match="is neither empty nor a clone of the remote"):
        open_clone(remote, foreign)


def test_a_reset_tells_the_tracker_which_files_git_rewrote(remote: Path, tmp_path: Path) -> None:
    tracker = PathTracker()
    clone = open_clone(remote, tmp_path / "work", tracker)
    moves = clone.moves
    clone.reset_to_remote()  # at the remote's commit already: nothing to rewrite
    assert (clone.moves, tracker.rewrites) == (moves, [])
    (clone.tree / "scratch.txt").write_text("left over\n")
    (clone.tree / "README.md").write_text("edited\n")
    theirs = push_from(remote, tmp_path, {"theirs.txt": "theirs\n"})
    clone.fetch()
    assert clone.head == theirs
    clone.pristine = False
    clone.reset_to_remote()
    assert tracker.rewrites == [["README.md", "scratch.txt", "theirs.txt"]]
    assert clone.moves == moves + 1 and clone.pristine
    assert sorted(p.name for p in clone.tree.iterdir() if p.name != ".git") == ["README.md", "theirs.txt"]
    assert (clone.tree / "README.md").read_text() == "source repository\n"


def test_files_are_taken_from_the_remotes_head_or_removed_when_it_has_none(
    remote: Path, tmp_path: Path
) -> None:
    clone = open_clone(remote, tmp_path / "work")
    push_from(remote, tmp_path, {"README.md": "theirs\n", "apps/a.yaml": "a\n"})
    clone.fetch()
    (clone.tree / "mine.txt").write_text("mine\n")
    clone.take_from_head(["README.md", "apps/a.yaml", "mine.txt", "never.txt"])
    assert (clone.tree / "README.md").read_text() == "theirs\n"
    assert (clone.tree / "apps" / "a.yaml").read_text() == "a\n"
    assert not (clone.tree / "mine.txt").exists()
    assert clone.tree_paths(clone.tracking, ["README.md", "mine.txt", "apps/a.yaml"]) == [
        "README.md",
        "apps/a.yaml",
    ]


def test_a_push_that_lost_a_race_is_told_from_one_a_hook_declined(remote: Path, tmp_path: Path) -> None:
    clone = open_clone(remote, tmp_path / "work")
    (clone.tree / "ours.txt").write_text("ours\n")
    clone.runner.run("add", "ours.txt")
    clone.runner.run("commit", "--quiet", "-m", "ours")
    ours = clone.local_head()
    base = clone.head
    push_from(remote, tmp_path, {"theirs.txt": "theirs\n"})
    with pytest.raises(PushRejected) as lost:
        clone.push(ours)
    assert lost.value.lost_race
    assert not clone.is_ancestor(ours, clone.tracking) and clone.is_ancestor(base, ours)
    clone.fetch()
    clone.reset_to_remote()
    (clone.tree / "ours.txt").write_text("ours again\n")
    clone.runner.run("add", "ours.txt")
    clone.runner.run("commit", "--quiet", "-m", "ours again")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(PushRejected) as declined:
        clone.push(clone.local_head())
    assert not declined.value.lost_race and "pre-receive hook declined" in declined.value.detail
    hook.unlink()
    clone.push(clone.local_head())
    assert remote_head(remote) == clone.local_head()


def test_a_batch_is_applied_once_and_committed_with_one_message(remote: Path, tmp_path: Path) -> None:
    clone = open_clone(remote, tmp_path / "work")
    applier = BatchApplier(clone, "the remote")
    live = [request(WriteFile("a.txt", "a\n"), "first"), request(WriteFile("b.txt", "b\n"), "second")]
    commit = applier.prepare_commit(live)
    assert commit is not None and commit == clone.local_head() != clone.head
    assert run_git(clone.tree, "show", "--name-only", "--format=", commit).splitlines() == ["a.txt", "b.txt"]
    message = run_git(clone.tree, "cat-file", "commit", commit).partition("\n\n")[2]
    assert message + "\n" == commit_message([("first", "write a.txt"), ("second", "write b.txt")])
    assert message.endswith(COMMITTED_BY_TRAILER)
    assert applier.committed[commit] == frozenset({"a.txt", "b.txt"})
    assert [r.summary for r in live] == ["write a.txt", "write b.txt"]


def test_a_change_that_fails_leaves_the_batch_without_a_trace(remote: Path, tmp_path: Path) -> None:
    clone = open_clone(remote, tmp_path / "work")
    applier = BatchApplier(clone, "the remote")

    def half_done(tree: Path) -> str | None:
        (tree / "half.txt").write_text("half-done\n")
        raise PermanentError("cannot be applied")

    failing = request(half_done, "fails")
    live = [request(WriteFile("a.txt", "a\n")), failing, request(WriteFile("b.txt", "b\n"))]
    commit = applier.prepare_commit(live)
    assert failing not in live and len(live) == 2
    assert isinstance(failing.future.exception(0), PermanentError)
    assert commit is not None
    assert run_git(clone.tree, "show", "--name-only", "--format=", commit).splitlines() == ["a.txt", "b.txt"]
    assert not (clone.tree / "half.txt").exists()


def test_a_batch_that_changes_nothing_makes_no_commit(remote: Path, tmp_path: Path) -> None:
    clone = open_clone(remote, tmp_path / "work")
    applier = BatchApplier(clone, "the remote")
    live = [request(WriteFile("README.md", "source repository\n"))]
    assert applier.prepare_commit(live) is None
    assert clone.local_head() == clone.head == remote_head(remote)
    assert live[0].summary is None
    assert not live[0].future.done()  # answered by whoever pushes: the pipeline


def test_a_change_that_wrote_behind_the_trackers_back_sends_the_batch_through_again(
    remote: Path, tmp_path: Path
) -> None:
    tracker = PathTracker()
    clone = open_clone(remote, tmp_path / "work", tracker)
    applier = BatchApplier(clone, "the remote")
    told = TrackedWrite(tracker, "a.txt", "a\n")
    untold = TrackedWrite(tracker, "b.txt", "b\n", told=False)
    live = [request(told), request(untold)]
    commit = applier.prepare_commit(live)
    assert commit is not None
    assert (told.runs, untold.runs, tracker.forgotten) == (2, 2, 1)
    assert run_git(clone.tree, "show", "--name-only", "--format=", commit).splitlines() == ["a.txt", "b.txt"]


def test_only_the_last_four_commits_are_remembered_for_a_rebase(remote: Path, tmp_path: Path) -> None:
    applier = BatchApplier(open_clone(remote, tmp_path / "work"), "the remote")
    for n in range(6):
        applier.note_committed(f"commit-{n}", [f"file-{n}"])
    assert list(applier.committed) == ["commit-2", "commit-3", "commit-4", "commit-5"]
