"""controller.gitstore against real Git: a bare remote on disk seeded with one commit, the
controller's clone beside it, and other writers pushing to the same branch from clones of their own.

Covers: a change pushed and visible in a fresh clone; no empty commits; batching of concurrent
submissions; a competing writer pushing in the middle of every batch, in turns (nothing lost,
nothing applied twice, every future's commit on the remote); a failing change failing only itself; rejected pushes exhausted
(a pre-receive hook declines) and the writer recovering; restarting on the same workdir; reads at
the remote's newest commit; credentials masked in errors and logs; an empty remote; and the load
the subscription server puts on it (1,000 changes from 50 clients). Nothing is faked.
"""

from __future__ import annotations

import concurrent.futures
import logging
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

from btp_gitops.controller.errors import GitPushRejected, PermanentError
from btp_gitops.controller.gitstore import (
    COMMITTED_BY_TRAILER,
    CommitOutcome,
    RepoSettings,
    SourceRepo,
    commit_message,
    mask_credentials,
)
from btp_gitops.generator.core.errors import GitError

IDENTITY = {
    "GIT_AUTHOR_NAME": "someone else",
    "GIT_AUTHOR_EMAIL": "someone@example.com",
    "GIT_COMMITTER_NAME": "someone else",
    "GIT_COMMITTER_EMAIL": "someone@example.com",
}


def run_git(directory: Path, *args: str) -> str:
    """Git as another writer runs it: its own identity, no dependence on the local config."""
    return str(git.Git(directory).execute(["git", *args], env=IDENTITY))


@dataclass(frozen=True)
class WriteFile:
    relative: str
    content: str

    def __call__(self, tree: Path) -> str | None:
        target = tree / self.relative
        if target.exists() and target.read_text() == self.content:
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.content)
        return f"write {self.relative}"


@dataclass(frozen=True)
class AppendLine:
    """Adds a line to a shared file unless it is there: applied twice, it would show twice."""

    relative: str
    line: str

    def __call__(self, tree: Path) -> str | None:
        target = tree / self.relative
        lines = target.read_text().splitlines() if target.exists() else []
        if self.line in lines:
            return None
        target.write_text("\n".join([*lines, self.line]) + "\n")
        return f"append {self.line}"


@dataclass(frozen=True)
class FailAfterWriting:
    """Writes a file, then gives up: nothing of it may reach the remote."""

    relative: str
    error: Exception

    def __call__(self, tree: Path) -> str | None:
        (tree / self.relative).write_text("half-done\n")
        raise self.error


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare repository with branch main holding one commit (README.md)."""
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = tmp_path / "seed"
    run_git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    (seed / "README.md").write_text("source repository\n")
    run_git(seed, "add", "README.md")
    run_git(seed, "commit", "--quiet", "-m", "seed")
    run_git(seed, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    return bare


def settings_for(remote: Path | str, workdir: Path, **overrides: object) -> RepoSettings:
    values: dict[str, object] = {"url": str(remote), "workdir": workdir, "batch_window": 0.02}
    values.update(overrides)
    return RepoSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
def repo(remote: Path, tmp_path: Path) -> Iterator[SourceRepo]:
    source = SourceRepo(settings_for(remote, tmp_path / "work"))
    source.start()
    yield source
    source.stop()


def remote_head(remote: Path) -> str:
    return run_git(remote, "rev-parse", "refs/heads/main")


def fresh_clone(remote: Path, target: Path) -> Path:
    run_git(target.parent, "clone", "--quiet", "--branch", "main", str(remote), str(target))
    return target


def is_ancestor(remote: Path, commit: str, head: str) -> bool:
    status, _, _ = git.Git(remote).execute(
        ["git", "merge-base", "--is-ancestor", commit, head], with_extended_output=True, with_exceptions=False
    )
    return int(status) == 0


def commits_since_seed(remote: Path) -> list[str]:
    return run_git(remote, "rev-list", "refs/heads/main").splitlines()[:-1]


def test_a_change_is_pushed_with_the_settings_identity_and_a_trailer(
    repo: SourceRepo, remote: Path, tmp_path: Path
) -> None:
    outcome = repo.apply(WriteFile("tenants/acme.yaml", "kind: CAPTenant\n"), "Subscribe acme", timeout=30)

    assert outcome == CommitOutcome(commit=remote_head(remote), summary="write tenants/acme.yaml", attempts=1)
    assert repo.head == outcome.commit
    clone = fresh_clone(remote, tmp_path / "check")
    assert (clone / "tenants" / "acme.yaml").read_text() == "kind: CAPTenant\n"
    author = run_git(clone, "log", "-1", "--format=%an <%ae>|%cn <%ce>")
    assert author == (
        "btp-gitops controller <btp-gitops-controller@users.noreply.local>|"
        "btp-gitops controller <btp-gitops-controller@users.noreply.local>"
    )
    assert run_git(clone, "log", "-1", "--format=%B").strip() == f"Subscribe acme\n\n{COMMITTED_BY_TRAILER}"


def test_a_change_that_changes_nothing_makes_no_commit(repo: SourceRepo, remote: Path) -> None:
    before = remote_head(remote)

    untouched = repo.apply(WriteFile("README.md", "source repository\n"), "Nothing to do", timeout=30)

    assert untouched == CommitOutcome(commit=None, summary=None, attempts=0)
    assert remote_head(remote) == before


def test_a_change_claiming_a_summary_without_editing_anything_makes_no_commit(
    repo: SourceRepo, remote: Path
) -> None:
    before = remote_head(remote)

    outcome = repo.apply(lambda tree: "claims a change", "Claims", timeout=30)

    assert outcome.commit is None
    assert remote_head(remote) == before


def test_concurrent_submissions_share_commits_and_each_lands_once(remote: Path, tmp_path: Path) -> None:
    source = SourceRepo(settings_for(remote, tmp_path / "work", batch_window=0.3))
    source.start()
    start = threading.Barrier(50)

    def client(number: int) -> CommitOutcome:
        start.wait()
        return source.apply(AppendLine("ledger.txt", f"change-{number}"), f"Change {number}", timeout=60)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
            outcomes = list(pool.map(client, range(50)))
    finally:
        source.stop()

    commits = commits_since_seed(remote)
    assert 1 <= len(commits) <= 10
    assert {o.commit for o in outcomes} <= set(commits)
    ledger = fresh_clone(remote, tmp_path / "check") / "ledger.txt"
    assert sorted(ledger.read_text().splitlines()) == sorted(f"change-{n}" for n in range(50))
    batch_commit = max(commits, key=lambda c: sum(o.commit == c for o in outcomes))
    message = run_git(remote, "log", "-1", "--format=%B", batch_commit)
    shared = sum(o.commit == batch_commit for o in outcomes)
    assert message.startswith(f"Record {shared} changes\n\n- append change-")
    summaries = [line[2:] for line in message.splitlines() if line.startswith("- ")]
    assert summaries == sorted(summaries)
    assert message.rstrip().endswith(COMMITTED_BY_TRAILER)


class TurnTakingWriter:
    """Another writer with a clone of its own that pushes exactly `pushes` commits to main, each in
    a turn the controller hands it between fetching the remote and pushing to it.

    The two take turns through a barrier: the controller's change, applied on the tree it has just
    fetched, waits until the other writer's commit is on the remote, so every turn makes the
    controller's next push a non-fast-forward, however slow or loaded the machine is. (A writer
    pushing after random pauses of a few dozen milliseconds raced the controller only when the
    timing lined up, and under load lost every race or won them all.)"""

    def __init__(self, remote: Path, workdir: Path, pushes: int) -> None:
        self.clone = fresh_clone(remote, workdir)
        self.pushes = pushes
        self.pushed: list[str] = []
        self._turn = threading.Barrier(2, timeout=120)  # bounds a broken hand-over, not the speed
        self._raced: set[str] = set()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="competing-writer")

    def __enter__(self) -> TurnTakingWriter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._turn.abort()  # a test that failed early leaves the writer waiting for a turn
        self._thread.join()
        if self._error is not None:
            raise AssertionError("the competing writer failed") from self._error

    def race(self, key: str) -> None:
        """Hand the other writer a turn and wait until its push is through: once per key (a change
        is applied again after the rejected push, and that attempt must get through), and only
        while turns remain. Called from the controller's one writer thread."""
        if key in self._raced or len(self._raced) == self.pushes:
            return
        self._raced.add(key)
        self._turn.wait()  # its turn begins
        self._turn.wait()  # its commit is on the remote

    def _loop(self) -> None:
        try:
            for number in range(self.pushes):
                self._turn.wait()
                self._push(f"other-{number}")
                self._turn.wait()
        except threading.BrokenBarrierError:
            pass  # aborted on exit: the assertions on `pushed` tell whether turns were missed
        except BaseException as error:
            self._error = error
            self._turn.abort()

    def _push(self, line: str) -> None:
        run_git(self.clone, "fetch", "--quiet", "origin")
        run_git(self.clone, "reset", "--quiet", "--hard", "origin/main")
        with (self.clone / "competitor.txt").open("a") as file:
            file.write(line + "\n")
        run_git(self.clone, "add", "competitor.txt")
        run_git(self.clone, "commit", "--quiet", "--message", line)
        # Its turn is between the controller's fetch and push, so nothing can get in first.
        run_git(self.clone, "push", "--quiet", "origin", "HEAD:refs/heads/main")
        self.pushed.append(line)


@dataclass(frozen=True)
class AppendAfterARace:
    """Appends its line, the first time after the other writer has pushed to the fetched branch."""

    inner: AppendLine
    writer: TurnTakingWriter

    def __call__(self, tree: Path) -> str | None:
        self.writer.race(self.inner.line)
        return self.inner(tree)


@pytest.mark.slow
def test_a_competing_writer_loses_nothing_and_nothing_is_applied_twice(remote: Path, tmp_path: Path) -> None:
    """Ten clients submit five changes each while another writer pushes to the same branch in the
    middle of every batch: each batch's first push is rejected and the batch applied again on the
    other writer's commit. Nothing of either writer is lost, and nothing is applied twice."""
    clients, per_client = 10, 5
    # Without pipelining: the other writer's turn must fall between the controller's fetch and its
    # push, and a change applied while the batch before is being pushed would hand it a turn then.
    settings = settings_for(remote, tmp_path / "work", backoff_initial=0.01, max_attempts=5, pipeline=False)
    source = SourceRepo(settings)
    source.start()
    try:
        with TurnTakingWriter(remote, tmp_path / "other", pushes=clients * per_client) as competitor:

            def client(number: int) -> list[CommitOutcome]:
                return [
                    source.apply(
                        AppendAfterARace(AppendLine("ledger.txt", f"change-{number}-{n}"), competitor),
                        f"Change {number}-{n}",
                        timeout=120,
                    )
                    for n in range(per_client)
                ]

            with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
                outcomes = [o for batch in pool.map(client, range(clients)) for o in batch]
    finally:
        source.stop()

    # Every change raced once, in its batch's first attempt: one rejection, then through.
    assert [o.attempts for o in outcomes] == [2] * len(outcomes)
    head = remote_head(remote)
    assert all(o.commit is not None and is_ancestor(remote, o.commit, head) for o in outcomes)
    clone = fresh_clone(remote, tmp_path / "check")
    ledger = (clone / "ledger.txt").read_text().splitlines()
    assert sorted(ledger) == sorted(f"change-{c}-{n}" for c in range(clients) for n in range(per_client))
    assert competitor.pushed == [f"other-{n}" for n in range(clients * per_client)]
    assert (clone / "competitor.txt").read_text().splitlines() == competitor.pushed


@dataclass(frozen=True)
class RaceAnotherWriter:
    """Appends its line, but the first time it is applied another writer pushes in between, exactly
    when the controller's push would otherwise have gone through."""

    inner: AppendLine
    other_clone: Path
    raced: threading.Event

    def __call__(self, tree: Path) -> str | None:
        if not self.raced.is_set():
            self.raced.set()
            (self.other_clone / "theirs.txt").write_text("theirs\n")
            run_git(self.other_clone, "add", "theirs.txt")
            run_git(self.other_clone, "commit", "--quiet", "-m", "theirs")
            run_git(self.other_clone, "push", "--quiet", "origin", "HEAD:refs/heads/main")
        return self.inner(tree)


def test_a_rejected_push_is_applied_again_on_the_new_remote_commit(
    repo: SourceRepo, remote: Path, tmp_path: Path
) -> None:
    other = fresh_clone(remote, tmp_path / "other")
    change = RaceAnotherWriter(AppendLine("ledger.txt", "mine"), other, threading.Event())

    outcome = repo.apply(change, "Mine", timeout=30)

    assert outcome.attempts == 2
    assert outcome.commit == remote_head(remote)
    parents = run_git(remote, "log", "-1", "--format=%P", outcome.commit).split()
    assert parents == [run_git(other, "rev-parse", "HEAD")]
    clone = fresh_clone(remote, tmp_path / "check")
    assert (clone / "theirs.txt").read_text() == "theirs\n"
    assert (clone / "ledger.txt").read_text() == "mine\n"


def test_a_change_that_raises_fails_alone_and_leaves_nothing_behind(remote: Path, tmp_path: Path) -> None:
    source = SourceRepo(settings_for(remote, tmp_path / "work", batch_window=0.5))
    source.start()
    try:
        futures = [
            source.submit(WriteFile("a.txt", "a\n"), "Write a"),
            source.submit(FailAfterWriting("broken.txt", PermanentError("record is unreadable")), "Broken"),
            source.submit(WriteFile("b.txt", "b\n"), "Write b"),
            source.submit(FailAfterWriting("bug.txt", ValueError("a bug")), "Bug"),
            source.submit(WriteFile("c.txt", "c\n"), "Write c"),
        ]
        concurrent.futures.wait(futures, timeout=30)
    finally:
        source.stop()

    with pytest.raises(PermanentError, match="record is unreadable"):
        futures[1].result()
    with pytest.raises(ValueError, match="a bug"):
        futures[3].result()
    landed = [futures[i].result() for i in (0, 2, 4)]
    assert len({o.commit for o in landed}) == 1
    assert landed[0].commit == remote_head(remote)
    clone = fresh_clone(remote, tmp_path / "check")
    assert sorted(p.name for p in clone.iterdir() if p.is_file()) == ["README.md", "a.txt", "b.txt", "c.txt"]


def install_rejecting_hook(remote: Path) -> Path:
    """A pre-receive hook that declines every push and counts them."""
    counter = remote / "rejected-pushes"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho push >> '{counter}'\necho 'branch is frozen' >&2\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    return counter


def test_rejected_pushes_are_retried_then_fail_with_git_push_rejected(remote: Path, tmp_path: Path) -> None:
    source = SourceRepo(settings_for(remote, tmp_path / "work", max_attempts=3, backoff_initial=0.01))
    source.start()
    try:
        counter = install_rejecting_hook(remote)
        before = remote_head(remote)
        with pytest.raises(GitPushRejected, match=r"rejected 3 pushes.*pre-receive hook declined") as raised:
            source.apply(WriteFile("x.txt", "x\n"), "Write x", timeout=30)
        assert counter.read_text().splitlines() == ["push"] * 3
        assert remote_head(remote) == before
        assert raised.value.delay == 2.0

        (remote / "hooks" / "pre-receive").unlink()
        assert source.read(lambda tree: (tree / "x.txt").exists(), refresh=False) is False
        outcome = source.apply(WriteFile("y.txt", "y\n"), "Write y", timeout=30)
    finally:
        source.stop()
    assert outcome.commit == remote_head(remote)
    assert sorted(p.name for p in fresh_clone(remote, tmp_path / "check").iterdir() if p.is_file()) == [
        "README.md",
        "y.txt",
    ]


def test_a_new_writer_on_the_same_workdir_picks_up_where_the_last_stopped(
    remote: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    first = SourceRepo(settings_for(remote, workdir))
    first.start()
    queued = [first.submit(WriteFile(f"queued-{n}.txt", f"{n}\n"), f"Queued {n}") for n in range(5)]
    first.stop()
    assert all(f.result(timeout=0).commit is not None for f in queued)
    with pytest.raises(GitError, match="has stopped"):
        first.apply(WriteFile("late.txt", "late\n"), "Too late", timeout=5)

    other = fresh_clone(remote, tmp_path / "other")
    (other / "theirs.txt").write_text("theirs\n")
    run_git(other, "add", "theirs.txt")
    run_git(other, "commit", "--quiet", "-m", "theirs")
    run_git(other, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    (workdir / "leftover.txt").write_text("not committed\n")

    second = SourceRepo(settings_for(remote, workdir))
    second.start()
    try:
        assert second.head == remote_head(remote)
        assert not (workdir / "leftover.txt").exists()
        outcome = second.apply(WriteFile("again.txt", "again\n"), "Again", timeout=30)
    finally:
        second.stop()
    assert outcome.commit == remote_head(remote)
    files = {p.name for p in fresh_clone(remote, tmp_path / "check").iterdir() if p.is_file()}
    assert files == {"README.md", "theirs.txt", "again.txt"} | {f"queued-{n}.txt" for n in range(5)}


def test_a_writer_starts_on_a_clone_whose_git_commands_were_killed_mid_way(
    remote: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A container killed with its Git children (OOM, kill -9) leaves lock files in the clone its
    restart reuses (an emptyDir outlives the container); with them every checkout fails."""
    workdir = tmp_path / "work"
    first = SourceRepo(settings_for(remote, workdir))
    first.start()
    first.apply(WriteFile("before.txt", "before\n"), "Before", timeout=30)
    first.stop()
    dot_git = workdir / ".git"
    locks = [dot_git / "index.lock", dot_git / "HEAD.lock", dot_git / "refs" / "heads" / "main.lock"]
    for lock in locks:
        lock.write_text("")
    with pytest.raises(git.GitCommandError, match=r"index\.lock"):
        git.Repo(workdir).git.checkout("--force", "HEAD")  # what Git itself makes of them

    second = SourceRepo(settings_for(remote, workdir))
    with caplog.at_level(logging.WARNING, logger="btp_gitops.controller.gitstore"):
        second.start()
    try:
        outcome = second.apply(WriteFile("after.txt", "after\n"), "After", timeout=30)
    finally:
        second.stop()
    assert outcome.commit == remote_head(remote)
    assert not any(lock.exists() for lock in locks)
    removed = sorted(r.getMessage() for r in caplog.records if "left behind" in r.getMessage())
    assert removed == sorted(
        f"removed {lock.relative_to(dot_git)}, left behind by a Git command that did not finish"
        for lock in locks
    )


def test_changes_queued_on_a_writer_that_never_started_fail_when_it_stops(
    remote: Path, tmp_path: Path
) -> None:
    source = SourceRepo(settings_for(remote, tmp_path / "work"))
    queued = source.submit(WriteFile("x.txt", "x\n"), "Never written")

    source.stop()

    with pytest.raises(GitError, match="has stopped"):
        queued.result(timeout=0)
    with pytest.raises(GitError, match="not open"):
        source.read(lambda tree: None)
    assert not (tmp_path / "work").exists()


def test_reads_see_the_remotes_newest_commit_unless_told_not_to_fetch(
    repo: SourceRepo, remote: Path, tmp_path: Path
) -> None:
    other = fresh_clone(remote, tmp_path / "other")
    (other / "README.md").write_text("changed elsewhere\n")
    run_git(other, "commit", "--quiet", "--all", "-m", "elsewhere")
    run_git(other, "push", "--quiet", "origin", "HEAD:refs/heads/main")

    def readme(tree: Path) -> str:
        return (tree / "README.md").read_text()

    assert repo.read(readme, refresh=False) == "source repository\n"
    assert repo.read(readme) == "changed elsewhere\n"
    assert repo.head == remote_head(remote)


def test_an_empty_remote_has_no_branch_to_start_from(tmp_path: Path) -> None:
    bare = tmp_path / "empty.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    source = SourceRepo(settings_for(bare, tmp_path / "work"))

    with pytest.raises(GitError, match=f"branch main does not exist on {bare}"):
        source.start()
    source.stop()


def test_credentials_in_the_url_never_reach_errors_or_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = "https://robot:s3cr3t-t0ken@127.0.0.1:1/org/source.git"
    source = SourceRepo(settings_for(url, tmp_path / "work"))

    with pytest.raises(GitError) as raised:
        source.start()
    source.stop()

    assert "https://***@127.0.0.1:1/org/source.git" in raised.value.message
    assert "s3cr3t" not in raised.value.message
    assert "s3cr3t" not in caplog.text
    assert mask_credentials("fatal: unable to access 'https://u:p@host/r.git/'") == (
        "fatal: unable to access 'https://***@host/r.git/'"
    )
    assert (
        mask_credentials("ssh://git@host/r.git and git@host:r.git")
        == "ssh://***@host/r.git and git@host:r.git"
    )


def test_commit_messages_name_one_change_or_list_several_sorted() -> None:
    assert commit_message([("Subscribe acme\n", "acme subscribed")]) == (
        f"Subscribe acme\n\n{COMMITTED_BY_TRAILER}\n"
    )
    assert commit_message([("B", "b changed"), ("A", "a\nchanged")]) == (
        f"Record 2 changes\n\n- a changed\n- b changed\n\n{COMMITTED_BY_TRAILER}\n"
    )


def test_a_thousand_changes_from_fifty_clients_are_pushed_in_time(remote: Path, tmp_path: Path) -> None:
    """The subscription server's load: every answer waits for its push (p99 under 2 s, all in 60 s)."""
    source = SourceRepo(settings_for(remote, tmp_path / "work"))
    source.start()
    latencies: list[float] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        for request in range(20):
            started = time.monotonic()
            outcome = source.apply(
                WriteFile(f"load/{number}-{request}.txt", "x\n"), f"Load {number}-{request}"
            )
            assert outcome.commit is not None
            with lock:
                latencies.append(time.monotonic() - started)

    began = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
            list(pool.map(client, range(50)))
    finally:
        source.stop()
    elapsed = time.monotonic() - began

    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    assert len(latencies) == 1000
    assert elapsed < 60, f"1,000 changes took {elapsed:.1f} s"
    assert p99 < 2.0, f"p99 latency {p99:.2f} s"
    files = list((fresh_clone(remote, tmp_path / "check") / "load").iterdir())
    assert len(files) == 1000


@pytest.mark.parametrize(
    ("message", "trailers"),
    [
        ("Subscribe tenant t", ["Committed-By: btp-gitops controller"]),
        (
            "Remove CAPApplicationVersion ns/v1\n\nwhy it was eligible\n\nCleanup-Mode: true",
            ["Cleanup-Mode: true", "Committed-By: btp-gitops controller"],
        ),
        ("Subject\n\nNot: a trailer block, prose follows\nreally", ["Committed-By: btp-gitops controller"]),
    ],
)
def test_commit_trailers_are_one_block_git_reads(message: str, trailers: list[str]) -> None:
    text = commit_message([(message, "summary")])
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=text, capture_output=True, text=True, check=True
    )
    assert parsed.stdout.splitlines() == trailers
