"""The source writer's batches with its index of the tree (controller.gitstore + records'
`WorkingIndex`), against real Git: a bare remote seeded with examples/cap-app and 200 more tenant
records, the writer's clone beside it, another writer pushing from a clone of its own.

Covers: one index per batch, updated in place (a batch walks no directory and reads back no file,
whatever the tree's size: what it wrote is indexed from the bytes it wrote; the files it wrote
are never read again, not even inside Git's racy window; the index after a batch is the index of
the tree the batch left); and
a lost push race rebased: only the refused commit is re-applied on the competitor's commit, the
changes the competitor did not touch are not run again, the ones it touched are (a subdomain it
took now fails, a record it edited gets both edits), and the competitor's commit is kept.

File operations are counted with Python's audit hooks (`sys.addaudithook`: every `open` and
`os.scandir` the interpreter makes), nothing in the product is patched. The controller reaches
the clone's files relative to their directory's descriptor (controller.clone_files: no link is
followed), so a file is counted by its name and a directory listed by its descriptor.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git
import pytest

from btp_gitops.controller.errors import PermanentError
from btp_gitops.controller.gitstore import CommitOutcome, RepoSettings, SourceRepo, TreeChange
from btp_gitops.controller.records import (
    OperationOutcome,
    SourceIndex,
    SubdomainTaken,
    Subscription,
    WorkingIndex,
    consumer_tenant_name,
    record_operation_outcome,
    subscribe_tenant,
    unsubscribe_tenant,
)
from btp_gitops.generator.domains.cap import TenantOperation
from tests.controller.test_tenant_records import EXAMPLE, run_git

NAMESPACE = "bookshop"
APP = "bookshop"
EXISTING = 200  # tenant records besides the example's three
ACME_ID = "2b7c9d1e-3f4a-4b5c-8d6e-7f8091a2b3c4"


# --- counting file operations -------------------------------------------------------------------


class _FileOperations:
    """`open` (for reading) and `os.scandir` calls under one directory (its `.git` aside), while
    switched on; a file opened relative to a directory's descriptor counts under its name, and a
    listing of a descriptor as a listing of the tree (nothing else here lists one)."""

    def __init__(self) -> None:
        self.root: str | None = None
        self.reads: Counter[str] = Counter()
        self.scans = 0

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        root = self.root
        if root is None or not args:
            return
        path = args[0]
        if event == "os.scandir" and isinstance(path, int):
            self.scans += 1
            return
        if event == "open" and int(args[2] or 0) & os.O_DIRECTORY:
            return  # a directory opened on the way to a file, not a file read
        if isinstance(path, str) and event == "open" and not os.path.isabs(path):
            if not int(args[2] or 0) & 0o3:
                self.reads[path] += 1  # a file of the tree, opened by its name in its directory
            return
        if not isinstance(path, str) or not path.startswith(root) or path.startswith(f"{root}/.git/"):
            return  # Git's own files (the writer reads a ref there) are not the tree's
        if event == "open" and (args[1] in (None, "r", "rb") and not (int(args[2] or 0) & 0o3)):
            self.reads[path[len(root) + 1 :]] += 1
        elif event == "os.scandir":
            self.scans += 1


_OPERATIONS = _FileOperations()
sys.addaudithook(_OPERATIONS.hook)  # audit hooks cannot be removed; it counts only when switched on


@pytest.fixture
def file_operations() -> Iterator[_FileOperations]:
    yield _OPERATIONS
    _OPERATIONS.root = None


def counting(root: Path) -> _FileOperations:
    _OPERATIONS.root = str(root.resolve())
    _OPERATIONS.reads.clear()
    _OPERATIONS.scans = 0
    return _OPERATIONS


# --- the remote ---------------------------------------------------------------------------------


def tenant_id(number: int) -> str:
    return f"00000000-0000-4000-8000-{number:012d}"


def record_text(name: str, tenant: str, sub_domain: str) -> str:
    return (
        "apiVersion: sme.sap.com/v1alpha1\nkind: CAPTenant\n"
        f"metadata:\n  name: {name}\n  namespace: {NAMESPACE}\n"
        f"spec:\n  capApplicationInstance: {APP}\n  subDomain: {sub_domain}\n  tenantId: {tenant}\n"
    )


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """examples/cap-app with EXISTING more tenant records, in a bare remote."""
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = tmp_path / "seed"
    shutil.copytree(EXAMPLE, seed)
    for number in range(EXISTING):
        name = consumer_tenant_name(APP, tenant_id(number))
        (seed / "tenants" / f"{name}.yaml").write_text(record_text(name, tenant_id(number), f"old{number}"))
    run_git(seed, "init", "--quiet", "--initial-branch=main")
    run_git(seed, "add", "--all")
    run_git(seed, "commit", "--quiet", "-m", "cap-app example")
    run_git(seed, "push", "--quiet", str(bare), "HEAD:refs/heads/main")
    return bare


@pytest.fixture
def writer(remote: Path, tmp_path: Path) -> Iterator[SourceRepo]:
    """The writer with its index, batching everything submitted within a second."""
    settings = RepoSettings(
        url=str(remote), workdir=tmp_path / "work", batch_window=1.0, max_batch=1000, backoff_initial=0.01
    )
    repo = SourceRepo(settings, tracker=WorkingIndex())
    repo.start()
    yield repo
    repo.stop()


def subscription(number: int, sub_domain: str | None = None) -> TreeChange:
    return subscribe_tenant(
        Subscription(
            namespace=NAMESPACE,
            application=APP,
            tenant_id=tenant_id(1000 + number),
            sub_domain=sub_domain or f"new{number}",
            subscription_guid="",
            global_account_id="",
            subscription_context_secret="",
        )
    )


def new_record(number: int) -> str:
    return f"tenants/{consumer_tenant_name(APP, tenant_id(1000 + number))}.yaml"


def one_batch(repo: SourceRepo, changes: list[TreeChange]) -> list[CommitOutcome | BaseException]:
    """Submit every change at once (one batch: the window is a second) and wait for each."""
    futures = [repo.submit(change, f"change {n}") for n, change in enumerate(changes)]
    outcomes: list[CommitOutcome | BaseException] = []
    for future in futures:
        error = future.exception(120)
        outcomes.append(error if error is not None else future.result())
    return outcomes


def the_index(index: SourceIndex) -> dict[str, Any]:
    """Everything an index answers, comparable across trees (documents by body)."""
    return {
        "applications": index.applications,
        "tenants": index.tenants,
        "versions": index.versions,
        "documents": [(path, document.body) for path, document in index.documents],
    }


# --- one index per batch ------------------------------------------------------------------------


def test_a_batch_walks_the_tree_at_most_once_and_reads_back_only_what_it_wrote(
    writer: SourceRepo, file_operations: _FileOperations, tmp_path: Path
) -> None:
    """100 subscribes in one batch on a tree of 203 records: no directory is listed (the index
    comes from the batch before, which left the tree where it is), and no file is opened: each new
    record is indexed from the bytes written. Re-indexing the tree for every change, as before,
    listed every directory 100 times and read each new file again at every later change of the
    batch (written within Git's racy window, it had to be hashed anew)."""
    warm_up = one_batch(writer, [subscription(0)])
    assert isinstance(warm_up[0], CommitOutcome) and warm_up[0].commit

    operations = counting(tmp_path / "work")
    outcomes = one_batch(writer, [subscription(n) for n in range(1, 101)])
    assert all(isinstance(o, CommitOutcome) and o.commit and o.attempts == 1 for o in outcomes)
    assert len({o.commit for o in outcomes if isinstance(o, CommitOutcome)}) == 1  # one batch

    assert operations.scans == 0
    assert dict(operations.reads) == {}

    # Another reader indexing the tree now (the subscription server publishes the new head so)
    # lists the tree but opens none of the 101 files the writer wrote, all within the racy window
    # (files Git checked out that recently are read to be sure; those the writer wrote, it knows).
    operations = counting(tmp_path / "work")
    index = writer.read(SourceIndex.of_tree, refresh=False)
    assert operations.scans > 0
    assert not set(operations.reads) & {Path(new_record(n)).name for n in range(101)}
    assert len(index.tenants) == 3 + EXISTING + 101


def test_the_index_after_a_batch_is_the_index_of_the_tree_it_left(writer: SourceRepo, tmp_path: Path) -> None:
    """Subscribes, a re-subscribe, an unsubscribe, an operation outcome and a refused change in
    one batch: the writer's index, updated file by file, equals a fresh index of a copy of the
    tree the batch committed."""
    changes = [
        subscription(1),
        subscription(2),
        subscription(1, sub_domain="renamed1"),  # the same tenant again, in the same batch
        unsubscribe_tenant(NAMESPACE, APP, tenant_id(7)),
        record_operation_outcome(
            NAMESPACE,
            consumer_tenant_name(APP, tenant_id(8)),
            OperationOutcome(TenantOperation.PROVISIONING, "bookshop-1-1-0", True),
        ),
        subscription(3, sub_domain="acme"),  # acme's subdomain: refused
    ]
    outcomes = one_batch(writer, changes)
    assert isinstance(outcomes[-1], SubdomainTaken)
    assert all(isinstance(o, CommitOutcome) and o.commit for o in outcomes[:-1])

    tracker = writer.tracker
    assert isinstance(tracker, WorkingIndex) and tracker.index is not None
    copy = tmp_path / "copy"
    writer.read(
        lambda tree: shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".git")), refresh=False
    )
    fresh = SourceIndex.of_tree(copy)
    assert the_index(tracker.index) == the_index(fresh)
    record = fresh.tenant(NAMESPACE, APP, tenant_id(1001))
    assert record is not None and record.sub_domain == "renamed1"
    assert tracker.index.tenant(NAMESPACE, APP, tenant_id(1001)) == record
    assert fresh.tenant(NAMESPACE, APP, tenant_id(1003)) is None
    unsubscribed = fresh.tenant(NAMESPACE, APP, tenant_id(7))
    assert unsubscribed is not None and unsubscribed.marked_for_deprovisioning
    assert [t.name for t in tracker.index.tenants_with_subdomain(NAMESPACE, APP, "new2")] == [
        consumer_tenant_name(APP, tenant_id(1002))
    ]


# --- a lost race, rebased -----------------------------------------------------------------------


@dataclass
class Competitor:
    """Another writer with a clone of its own: pushes `files` (path -> text, None deletes) in one
    commit, the first time it is asked."""

    remote: Path
    clone: Path
    files: dict[str, str | None]
    commits: list[str] = field(default_factory=list)

    def push(self) -> None:
        if not self.clone.exists():
            run_git(self.remote.parent, "clone", "--quiet", str(self.remote), str(self.clone))
        run_git(self.clone, "pull", "--quiet", "--ff-only")
        for relative, text in self.files.items():
            target = self.clone / relative
            if text is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        run_git(self.clone, "add", "--all")
        run_git(self.clone, "commit", "--quiet", "-m", "the competitor's commit")
        run_git(self.clone, "push", "--quiet", "origin", "HEAD:refs/heads/main")
        self.commits.append(run_git(self.clone, "rev-parse", "HEAD"))


@dataclass(frozen=True)
class PushesFirst:
    """Lets the competitor push while the batch is being applied, the first time only: the batch's
    push is then refused. It reads and writes nothing itself."""

    competitor: Competitor
    once: threading.Event = field(default_factory=threading.Event)

    def __call__(self, tree: Path) -> str | None:
        if not self.once.is_set():
            self.once.set()
            self.competitor.push()
        return None


@dataclass(frozen=True)
class Counted:
    """A change, and how often the writer applied it."""

    inner: TreeChange
    name: str
    applied: Counter[str]

    def __call__(self, tree: Path) -> str | None:
        self.applied[self.name] += 1
        return self.inner(tree)


def remote_file(remote: Path, commit: str, relative: str) -> str:
    return run_git(remote, "show", f"{commit}:{relative}")


def test_a_lost_race_re_applies_only_the_refused_commit(
    remote: Path, writer: SourceRepo, tmp_path: Path
) -> None:
    """The competitor records a tenant of the same application and edits a file of its own while
    the batch's 50 subscribes are applied: the push is refused, the commit is put on the
    competitor's, and not one change is run again. The competitor's commit is kept."""
    competitor = Competitor(
        remote,
        tmp_path / "competitor",
        {
            "tenants/theirs.yaml": record_text("theirs", tenant_id(5000), "theirs"),
            "NOTES.md": "the competitor was here\n",
        },
    )
    applied: Counter[str] = Counter()
    changes: list[TreeChange] = [PushesFirst(competitor)]
    changes += [Counted(subscription(n), f"s{n}", applied) for n in range(50)]
    outcomes = one_batch(writer, changes)

    assert all(isinstance(o, CommitOutcome) and o.attempts == 2 for o in outcomes)
    assert applied == Counter({f"s{n}": 1 for n in range(50)})
    head = run_git(remote, "rev-parse", "main")
    assert [o.commit for o in outcomes[1:]] == [head] * 50
    assert run_git(remote, "rev-parse", f"{head}^") == competitor.commits[0]  # on top of theirs
    assert remote_file(remote, head, "NOTES.md") == "the competitor was here"
    assert "tenantId: " + tenant_id(5000) in remote_file(remote, head, "tenants/theirs.yaml")
    for n in range(50):
        assert f"subDomain: new{n}" in remote_file(remote, head, new_record(n))
    # The writer's index is the index of what it pushed.
    tracker = writer.tracker
    assert isinstance(tracker, WorkingIndex) and tracker.index is not None
    copy = tmp_path / "copy"
    writer.read(
        lambda tree: shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".git")), refresh=False
    )
    assert the_index(tracker.index) == the_index(SourceIndex.of_tree(copy))


def test_changes_the_competitor_touched_are_applied_again_alone(
    remote: Path, writer: SourceRepo, tmp_path: Path
) -> None:
    """The competitor takes subdomain `new3` for a tenant of its own and edits acme's record (its
    status) while the batch subscribes 20 tenants (one of them with `new3`) and unsubscribes
    acme. Applied again: the subscribe of `new3` now fails with SubdomainTaken (a 409), acme's
    record carries both edits; the 19 others are not run again. The competitor's commit is kept."""
    acme = (EXAMPLE / "tenants" / "acme.yaml").read_text()
    assert "state: Ready" in acme
    competitor = Competitor(
        remote,
        tmp_path / "competitor",
        {
            "tenants/theirs.yaml": record_text("theirs", tenant_id(5000), "new3"),
            "tenants/acme.yaml": acme.replace("state: Ready", "state: UpgradeError"),
        },
    )
    applied: Counter[str] = Counter()
    changes: list[TreeChange] = [PushesFirst(competitor)]
    changes += [Counted(subscription(n), f"s{n}", applied) for n in range(20)]
    changes.append(Counted(unsubscribe_tenant(NAMESPACE, APP, ACME_ID), "acme", applied))
    outcomes = one_batch(writer, changes)

    assert isinstance(outcomes[4], SubdomainTaken)  # subscription(3)
    assert isinstance(outcomes[4], PermanentError) and "new3" in str(outcomes[4])
    others = [o for n, o in enumerate(outcomes) if n != 4]
    assert all(isinstance(o, CommitOutcome) and o.attempts == 2 for o in others)
    assert applied == Counter({**{f"s{n}": 1 for n in range(20)}, "s3": 2, "acme": 2})

    head = run_git(remote, "rev-parse", "main")
    assert run_git(remote, "rev-parse", f"{head}^") == competitor.commits[0]
    acme_now = remote_file(remote, head, "tenants/acme.yaml")
    assert "state: UpgradeError" in acme_now and "btp-gitops.io/deprovision: 'true'" in acme_now.replace(
        '"true"', "'true'"
    )
    assert "tenantId: " + tenant_id(5000) in remote_file(remote, head, "tenants/theirs.yaml")
    files = run_git(remote, "ls-tree", "--name-only", head, "tenants/").splitlines()
    assert new_record(3) not in files
    assert all(new_record(n) in files for n in range(20) if n != 3)


# --- the next batch prepared while a push is in flight ------------------------------------------


def install_slow_hook(remote: Path, seconds: float, *, decline_first: bool = False) -> Path:
    """A pre-receive hook that takes `seconds` and logs when each push ended (and, with
    `decline_first`, refuses the first push)."""
    ended = remote / "push-ended"
    decline = (
        f"[ \"$(wc -l < '{ended}')\" -eq 1 ] && {{ echo 'not yet' >&2; exit 1; }}\n" if decline_first else ""
    )
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nsleep {seconds}\ndate +%s.%N >> '{ended}'\n{decline}exit 0\n")
    hook.chmod(0o755)
    return ended


@dataclass(frozen=True)
class Timed:
    """A change, and when the writer applied it (time.time(), one entry per application)."""

    inner: TreeChange
    applied: list[float] = field(default_factory=list)

    def __call__(self, tree: Path) -> str | None:
        self.applied.append(time.time())
        return self.inner(tree)


def on_the_remote_when_answered(remote: Path, future: Future[CommitOutcome], seen: list[bool]) -> None:
    """Record, at the moment the future is answered, whether the remote holds its commit."""

    def check(done: Future[CommitOutcome]) -> None:
        commit = done.result().commit
        try:
            run_git(remote, "merge-base", "--is-ancestor", str(commit), "main")
            seen.append(True)
        except git.GitCommandError:
            seen.append(False)

    future.add_done_callback(check)


@pytest.fixture
def quick_writer(remote: Path, tmp_path: Path) -> Iterator[SourceRepo]:
    settings = RepoSettings(
        url=str(remote), workdir=tmp_path / "quick", batch_window=0.05, backoff_initial=0.01
    )
    repo = SourceRepo(settings, tracker=WorkingIndex())
    repo.start()
    yield repo
    repo.stop()


def test_the_next_batch_is_applied_while_a_push_is_in_flight_and_answered_after_its_push(
    remote: Path, quick_writer: SourceRepo
) -> None:
    """Two subscribes of the same tenant, the second sent while the first one's push takes a
    second: the second is applied (once) before that push ends, committed on top of it, and
    pushed next; neither is answered before its own commit is on the remote, and the record
    ends with the second's subdomain."""
    ended = install_slow_hook(remote, 1.0)
    first, second = Timed(subscription(1, sub_domain="one")), Timed(subscription(1, sub_domain="two"))
    seen: list[bool] = []
    a = quick_writer.submit(first, "first")
    on_the_remote_when_answered(remote, a, seen)
    while not first.applied:
        time.sleep(0.01)
    time.sleep(0.3)  # the first batch is committed and its push started
    b = quick_writer.submit(second, "second")
    on_the_remote_when_answered(remote, b, seen)
    one, two = a.result(60), b.result(60)

    pushes = [float(line) for line in ended.read_text().split()]
    assert len(second.applied) == 1 and second.applied[0] < pushes[0]  # prepared during the push
    assert one.commit and two.commit and one.attempts == 1 and two.attempts == 1
    assert run_git(remote, "rev-parse", f"{two.commit}^") == one.commit
    deadline = time.monotonic() + 30  # callbacks run just after a future's waiters wake up
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == [True, True]
    assert "subDomain: two" in remote_file(remote, "main", new_record(1))


def test_a_batch_prepared_behind_a_refused_push_goes_after_it(remote: Path, quick_writer: SourceRepo) -> None:
    """The first push is refused while the next batch (the same tenant again) is prepared on
    it: that batch is dropped, applied again once the first landed, and pushed after it."""
    install_slow_hook(remote, 1.0, decline_first=True)
    first, second = Timed(subscription(1, sub_domain="one")), Timed(subscription(1, sub_domain="two"))
    a = quick_writer.submit(first, "first")
    while not first.applied:
        time.sleep(0.01)
    time.sleep(0.3)
    b = quick_writer.submit(second, "second")
    one, two = a.result(60), b.result(60)

    assert one.attempts == 2 and two.attempts == 1
    assert len(second.applied) == 2  # prepared on the refused commit, then applied anew
    assert run_git(remote, "rev-parse", f"{two.commit}^") == one.commit
    assert "subDomain: two" in remote_file(remote, "main", new_record(1))
