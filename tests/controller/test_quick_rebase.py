"""A lost push race rebased the quick way (controller.gitstore's `_rebase`), against real Git: the
remote of tests/controller/test_writer_batches.py (examples/cap-app and 200 more tenant records,
bare, on disk), the writer with its `WorkingIndex`, and another writer that pushes to the branch
right after each fetch of ours is served, so the push made on what that fetch brought is refused.

When none of the competitor's files is one the batch wrote and none answers a lookup the batch
made, the refused commit is put on the new head from Git's index (the competitor's files taken,
ours kept), committed with its message and author and pushed: no change runs again. When the
competitor's files answer a lookup (it took a subdomain the batch asked for), the batch goes the
long way and the change gets the answer it would get on the new tree (a 409). Either way every
competitor commit is kept, our changes are on top, and the clone's HEAD, Git's index, the working
tree and the writer's index agree with the commit that was pushed."""

from __future__ import annotations

import logging
import shlex
import shutil
from collections import Counter
from collections.abc import Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import pytest

from btp_gitops.controller.gitstore import (
    CommitOutcome,
    SourceRepo,
    TreeChange,
    _directories,
    _Request,
    commit_message,
)
from btp_gitops.controller.records import SourceIndex, SubdomainTaken, WorkingIndex
from tests.controller.test_push_races import install_racing_upload_pack
from tests.controller.test_tenant_records import run_git
from tests.controller.test_writer_batches import (
    APP,
    NAMESPACE,
    Counted,
    new_record,
    one_batch,
    record_text,
    remote,
    remote_file,
    subscription,
    the_index,
    writer,
)

__all__ = ["remote", "writer"]  # the fixtures, shared with test_writer_batches

QUICK = "no change applied again"


def install_racing_competitor(remote: Path, clone: Path, tmp_path: Path, races: int, sub_domain: str) -> Path:
    """After each fetch from `clone` is served, another writer pushes a commit to main (until it
    pushed `races` times): a line of competitor.txt and a tenant record of its own,
    tenants/theirs-N.yaml, whose subdomain is `sub_domain`N. Returns that writer's clone."""
    record = record_text("theirs-COUNT", "00000000-0000-4000-8000-00000000500COUNT", f"{sub_domain}COUNT")
    also = f'printf \'%s\' {shlex.quote(record)} | sed "s/COUNT/$count/g" > "tenants/theirs-$count.yaml"'
    return install_racing_upload_pack(remote, clone, tmp_path, races, also=also)


def assert_clone_is_at(writer: SourceRepo, remote: Path, tmp_path: Path) -> None:
    """The clone's HEAD is the remote's branch, Git's index and the working tree hold exactly its
    tree, and the writer's index is the index of that tree."""
    work = tmp_path / "work"
    head = run_git(remote, "rev-parse", "main")
    assert run_git(work, "rev-parse", "HEAD") == head
    assert run_git(work, "write-tree") == run_git(work, "rev-parse", "HEAD^{tree}")  # the index
    assert run_git(work, "status", "--porcelain", "--untracked-files=all") == ""  # the tree
    tracker = writer.tracker
    assert isinstance(tracker, WorkingIndex) and tracker.index is not None
    copy = tmp_path / f"copy-{head}"
    shutil.copytree(work, copy, ignore=shutil.ignore_patterns(".git"))
    assert the_index(tracker.index) == the_index(SourceIndex.of_tree(copy))


def test_lost_races_are_rebased_from_the_index_without_applying_any_change_again(
    remote: Path, writer: SourceRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The competitor wins three races in a row (after the batch's fetch and after the fetch of
    each rebase), each time recording a tenant of the same application: each refused commit is
    put on the competitor's newest commit as it is, not one of the 30 changes is run again, and
    the pushed commit carries the competitor's three commits below it and our 30 records."""
    work = tmp_path / "work"
    install_racing_competitor(remote, work, tmp_path, races=3, sub_domain="theirs")
    applied: Counter[str] = Counter()
    changes: list[TreeChange] = [Counted(subscription(n), f"s{n}", applied) for n in range(30)]
    with caplog.at_level(logging.INFO, logger="btp_gitops.controller.gitstore"):
        outcomes = one_batch(writer, changes)

    assert all(isinstance(o, CommitOutcome) and o.attempts == 4 for o in outcomes)
    assert applied == Counter({f"s{n}": 1 for n in range(30)})
    assert sum(QUICK in record.getMessage() for record in caplog.records) == 3

    head = run_git(remote, "rev-parse", "main")
    assert [o.commit for o in outcomes if isinstance(o, CommitOutcome)] == [head] * 30
    # Every competitor commit kept, in order, right below ours.
    assert run_git(remote, "log", "--format=%s", f"{head}^", "-3").splitlines() == [
        "other 2",
        "other 1",
        "other 0",
    ]
    assert remote_file(remote, head, "competitor.txt").splitlines() == ["other-0", "other-1", "other-2"]
    for n in range(3):
        assert f"subDomain: theirs{n}" in remote_file(remote, head, f"tenants/theirs-{n}.yaml")
    for n in range(30):
        assert f"subDomain: new{n}" in remote_file(remote, head, new_record(n))
    # Our commit as the batch made it: its author, its message (one line per change, the trailer).
    assert run_git(remote, "log", "-1", "--format=%an <%ae>", head) == (
        f"{writer.settings.author_name} <{writer.settings.author_email}>"
    )
    message = run_git(remote, "cat-file", "commit", head).partition("\n\n")[2]
    summaries = [
        (f"change {n}", o.summary or "") for n, o in enumerate(outcomes) if isinstance(o, CommitOutcome)
    ]
    assert message + "\n" == commit_message(summaries)
    assert message.startswith("Record 30 changes\n\n- ")
    assert run_git(remote, "diff", "--name-only", f"{head}^", head).splitlines() == sorted(
        new_record(n) for n in range(30)
    )
    assert_clone_is_at(writer, remote, tmp_path)

    # The writer goes on from there: the next batch lands on top, on its first push.
    [after] = one_batch(writer, [subscription(99)])
    assert isinstance(after, CommitOutcome) and after.attempts == 1
    assert run_git(remote, "rev-parse", "main^") == head
    assert_clone_is_at(writer, remote, tmp_path)


def test_a_competitor_record_that_answers_a_lookup_of_the_batch_takes_the_long_way(
    remote: Path, writer: SourceRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The competitor records a tenant of its own with subdomain `new3` (in a file of its own)
    right after the batch's fetch, while the batch subscribes 10 tenants, one of them with `new3`.
    No file overlaps, but the competitor's record answers that subscribe's subdomain lookup: it is
    applied again and refused with SubdomainTaken (a 409); the 9 others are not run again and land
    on top of the competitor's commit."""
    work = tmp_path / "work"
    install_racing_competitor(remote, work, tmp_path, races=1, sub_domain="new")
    # Its first record is tenants/theirs-0.yaml with subdomain new0 (race 0): that is ours 0.
    applied: Counter[str] = Counter()
    changes: list[TreeChange] = [Counted(subscription(n), f"s{n}", applied) for n in range(10)]
    with caplog.at_level(logging.INFO, logger="btp_gitops.controller.gitstore"):
        outcomes = one_batch(writer, changes)

    assert isinstance(outcomes[0], SubdomainTaken) and "new0" in str(outcomes[0])
    assert all(isinstance(o, CommitOutcome) and o.attempts == 2 for o in outcomes[1:])
    assert applied == Counter({**{f"s{n}": 1 for n in range(1, 10)}, "s0": 2})
    assert not any(QUICK in record.getMessage() for record in caplog.records)
    assert any("1 of 10 changes applied again" in record.getMessage() for record in caplog.records)

    head = run_git(remote, "rev-parse", "main")
    assert run_git(remote, "log", "-1", "--format=%s", f"{head}^") == "other 0"
    assert "subDomain: new0" in remote_file(remote, head, "tenants/theirs-0.yaml")
    files = run_git(remote, "ls-tree", "--name-only", head, "tenants/").splitlines()
    assert new_record(0) not in files
    assert all(new_record(n) in files for n in range(1, 10))
    assert [t.name for t in SourceIndex.of_tree(work).tenants_with_subdomain(NAMESPACE, APP, "new0")] == [
        "theirs-0"
    ]
    assert_clone_is_at(writer, remote, tmp_path)


@dataclass(frozen=True)
class Wrote:
    """A footprint: what a change wrote (it looked nothing up)."""

    writes: frozenset[str]
    reads: frozenset[Hashable] = frozenset()


def wrote(*paths: str) -> _Request:
    return _Request(lambda tree: None, "", Future(), footprint=Wrote(frozenset(paths)))


def test_which_competitor_files_overlap_the_batch() -> None:
    """The quick rebase is for batches none of whose files the competitor changed: a file ours
    and theirs, a file a change wrote (even when the commit holds none of its writes), a change
    without a footprint, or a file on one side where the other has a directory (`tenants` against
    `tenants/a.yaml`) sends the batch the long way, where Git itself sorts such a tree out."""
    live = [wrote("tenants/a.yaml"), wrote("tenants/b.yaml")]
    ours = frozenset({"tenants/a.yaml", "tenants/b.yaml"})
    assert not SourceRepo._overlaps(live, ours, ["competitor.txt", "tenants/theirs.yaml"])
    assert SourceRepo._overlaps(live, ours, ["tenants/a.yaml"])
    assert SourceRepo._overlaps(live, frozenset({"tenants/a.yaml"}), ["tenants/b.yaml"])
    assert SourceRepo._overlaps([*live, _Request(lambda tree: None, "", Future())], ours, ["x.yaml"])
    assert SourceRepo._overlaps(live, ours, ["tenants"])
    assert SourceRepo._overlaps(live, ours | {"notes"}, ["notes/today.md"])
    assert _directories(["tenants/a.yaml", "apps/bookshop/b.yaml", "top.yaml"]) == {
        "tenants",
        "apps",
        "apps/bookshop",
    }
