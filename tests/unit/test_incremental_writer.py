"""The in-place writer of `generator.io.repo`: only what changed is written, a kill is finished by
the next write, an error is rolled back, nothing is followed through a link.

Real directories and real processes: the kill cases run the writer in a child process that sends
itself SIGKILL at the n-th filesystem operation, for every n the write has, and then look at what
the child left on disk.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from btp_gitops.generator.core.errors import OutputNotWritable, UnsafeOutput
from btp_gitops.generator.io import output_tree as output_tree_module
from btp_gitops.generator.io.journal import digest_of
from btp_gitops.generator.io.journal_seal import journal_key, seal_text
from btp_gitops.generator.io.repo import (
    LocalFilesystem,
    TreeChanges,
    WritePlan,
    diff_trees,
    read_finished_tree,
    read_tree,
    recover_leftovers,
    scan_tree,
    write_subtree,
)
from tests.unit.tree_helpers import files_of, hidden, written_repo

OLD = {
    "kustomization.yaml": "resources: []\n",
    "app/a.yaml": "a: 1\n",
    "app/b.yaml": "b: 1\n",
    "gone/only.yaml": "only: 1\n",
    "deep/er/x.yaml": "x: 1\n",
    **{f"many/f{i:02d}.yaml": f"n: {i}\n" for i in range(20)},
}
NEW = {
    **{k: v for k, v in OLD.items() if not k.startswith(("gone/", "deep/"))},
    "app/a.yaml": "a: 2, longer\n",
    "app/c.yaml": "c: 1\n",
    "fresh/dir/y.yaml": "y: 1\n",
    "deep": "deep is a file now\n",
}


def stats_of(root: Path) -> dict[str, tuple[int, int]]:
    return {
        path.relative_to(root).as_posix(): (path.lstat().st_ino, path.lstat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return written_repo(tmp_path, OLD)


def test_only_the_changed_files_are_written_and_the_rest_keeps_inode_and_mtime(repo: Path) -> None:
    cluster = repo / "clusters" / "c1"
    before = stats_of(cluster)
    mask = os.umask(0o027)
    try:
        changes = write_subtree(repo, "clusters/c1", NEW)
    finally:
        os.umask(mask)
    assert changes == TreeChanges(
        added=("app/c.yaml", "deep", "fresh/dir/y.yaml"),
        changed=("app/a.yaml",),
        removed=("deep/er/x.yaml", "gone/only.yaml"),
        previous={"app/a.yaml": b"a: 1\n", "deep/er/x.yaml": b"x: 1\n", "gone/only.yaml": b"only: 1\n"},
    )
    assert files_of(cluster) == NEW
    after = stats_of(cluster)
    untouched = set(OLD) & set(NEW) - {"app/a.yaml"}
    assert len(untouched) == 22
    assert {p: after[p] for p in untouched} == {p: before[p] for p in untouched}
    assert after["app/a.yaml"][0] != before["app/a.yaml"][0]  # replaced by a rename, not rewritten
    assert not (cluster / "gone").exists()  # emptied directories go with their files
    for directory in (cluster / "fresh", cluster / "fresh" / "dir"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o750
    assert stat.S_IMODE((cluster / "app" / "c.yaml").stat().st_mode) == 0o640
    assert hidden(repo / "clusters") == []


def test_a_second_identical_write_touches_nothing(repo: Path) -> None:
    cluster = repo / "clusters" / "c1"
    write_subtree(repo, "clusters/c1", NEW)
    before = stats_of(cluster), cluster.stat().st_mtime_ns
    assert write_subtree(repo, "clusters/c1", NEW).empty
    assert (stats_of(cluster), cluster.stat().st_mtime_ns) == before
    assert hidden(repo / "clusters") == []


def test_a_path_that_is_not_plain_is_refused_before_anything_is_written(repo: Path) -> None:
    before = stats_of(repo)
    for bad in ("../escape.yaml", "/abs.yaml", "app/../../x.yaml", "app//x.yaml", "./x.yaml"):
        with pytest.raises(UnsafeOutput, match="not a plain relative path"):
            write_subtree(repo, "clusters/c1", {**OLD, bad: "x: 1\n"})
    assert stats_of(repo) == before
    assert not (repo / "clusters" / "escape.yaml").exists()


class FailAt(LocalFilesystem):
    """Fails the `count`-th call of `operation` as a disk would."""

    def __init__(self, operation: str, count: int, code: int = errno.EIO) -> None:
        self.operation, self.count, self.code = operation, count, code

    def _tick(self, operation: str) -> None:
        if operation == self.operation:
            self.count -= 1
            if self.count == 0:
                raise OSError(self.code, os.strerror(self.code))

    def move_in_at(self, source_dir: int, source_name: str, parent: int, name: str) -> None:
        self._tick("move_in_at")
        super().move_in_at(source_dir, source_name, parent, name)

    def make_directory_at(self, parent: int, name: str) -> None:
        self._tick("make_directory_at")
        super().make_directory_at(parent, name)

    def unlink_at(self, parent: int, name: str) -> None:
        self._tick("unlink_at")
        super().unlink_at(parent, name)

    def remove_directory_at(self, parent: int, name: str) -> None:
        self._tick("remove_directory_at")
        super().remove_directory_at(parent, name)


@pytest.mark.parametrize(
    ("operation", "count"),
    [("unlink_at", 2), ("remove_directory_at", 2), ("make_directory_at", 2), ("move_in_at", 3)],
)
def test_an_error_while_applying_puts_the_previous_tree_back(repo: Path, operation: str, count: int) -> None:
    with pytest.raises(OutputNotWritable, match="Input/output error"):
        write_subtree(repo, "clusters/c1", NEW, FailAt(operation, count))
    assert files_of(repo / "clusters" / "c1") == OLD
    assert hidden(repo / "clusters") == []
    assert write_subtree(repo, "clusters/c1", NEW).added == ("app/c.yaml", "deep", "fresh/dir/y.yaml")


def test_an_error_while_staging_leaves_the_tree_untouched(repo: Path) -> None:
    class FullDisk(LocalFilesystem):
        def write_bytes(self, path: Path, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    before = stats_of(repo / "clusters" / "c1")
    with pytest.raises(OutputNotWritable, match="No space left on device"):
        write_subtree(repo, "clusters/c1", NEW, FullDisk())
    assert stats_of(repo / "clusters" / "c1") == before
    assert hidden(repo / "clusters") == []


def test_a_link_planted_after_the_scan_is_refused_not_written_through(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.yaml").write_text("precious\n")
    cluster = repo / "clusters" / "c1"

    class Attacker(LocalFilesystem):
        def write_bytes(self, path: Path, data: bytes) -> None:  # while the journal is staged
            if not (cluster / "app").is_symlink():
                shutil.rmtree(cluster / "app")
                (cluster / "app").symlink_to(outside)
            super().write_bytes(path, data)

    with pytest.raises(UnsafeOutput, match="never writes through a symbolic link"):
        write_subtree(repo, "clusters/c1", NEW, Attacker())
    assert sorted(p.name for p in outside.iterdir()) == ["a.yaml"]
    assert (outside / "a.yaml").read_text() == "precious\n"
    assert hidden(repo / "clusters") == []


def _plant_journal(
    repo: Path,
    plan: dict[str, object],
    staged: dict[str, str],
    *,
    moved: dict[str, str] | None = None,
    sealed: bool = True,
) -> Path:
    """A journal as a killed write leaves it: `staged` files still in it, `moved` ones in the tree
    already; sealed with this user's key (io.journal_seal) unless `sealed` is False."""
    journal = repo / "clusters" / ".c1.journal-planted"
    for path, text in staged.items():
        (journal / "new" / path).parent.mkdir(parents=True, exist_ok=True)
        (journal / "new" / path).write_text(text)
    journal.mkdir(exist_ok=True)
    contents = {**staged, **(moved or {})}
    writes = plan.get("write", [])
    digests = (
        [digest_of(contents.get(str(path), "").encode()) for path in writes]
        if isinstance(writes, list)
        else []
    )
    body = json.dumps({"format": 2, "digests": digests, **plan}).encode()
    (journal / "plan.json").write_bytes(body)
    if sealed:
        key = journal_key(create=True)
        assert key is not None
        (journal / "seal").write_text(seal_text(key, repo / "clusters" / "c1", journal.name, body))
    return journal


@pytest.mark.parametrize(
    "plan",
    [
        {"write": [], "remove": ["../../outside/a.yaml"], "prune": []},
        {"write": ["../x.yaml"], "remove": [], "prune": []},
        {"write": [], "remove": [], "prune": ["/tmp"]},
        {"write": [], "remove": []},
    ],
    ids=["remove-outside", "write-outside", "prune-absolute", "incomplete"],
)
def test_a_planted_journal_cannot_reach_outside(repo: Path, tmp_path: Path, plan: dict[str, object]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.yaml").write_text("precious\n")
    journal = _plant_journal(repo, plan, {"x.yaml": "x\n"})
    with pytest.raises(OutputNotWritable, match="not one this version of btp-gitops reads"):
        write_subtree(repo, "clusters/c1", OLD)
    assert (outside / "a.yaml").read_text() == "precious\n"
    assert files_of(repo / "clusters" / "c1") == OLD
    assert journal.is_dir()  # left for a person to look at


def test_a_journal_without_its_tree_is_discarded(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    _plant_journal(tmp_path, {"write": ["x.yaml"], "remove": [], "prune": []}, {"x.yaml": "x\n"})
    recover_leftovers(tmp_path / "clusters", "c1")
    assert list((tmp_path / "clusters").iterdir()) == []


def test_a_journal_is_finished_by_the_next_write(repo: Path) -> None:
    plan = {"write": ["app/a.yaml", "app/c.yaml"], "remove": ["app/b.yaml"], "prune": ["gone"]}
    (repo / "clusters" / "c1" / "gone" / "only.yaml").unlink()  # as a cut run left it
    _plant_journal(repo, plan, {"app/a.yaml": "a: 9\n"})  # app/c.yaml: moved in already
    (repo / "clusters" / "c1" / "app" / "c.yaml").write_text("c: 9\n")
    recover_leftovers(repo / "clusters", "c1")
    expected = {k: v for k, v in OLD.items() if k not in ("app/b.yaml", "gone/only.yaml")}
    assert files_of(repo / "clusters" / "c1") == {**expected, "app/a.yaml": "a: 9\n", "app/c.yaml": "c: 9\n"}
    assert not (repo / "clusters" / "c1" / "gone").exists()
    assert hidden(repo / "clusters") == []


def test_the_plan_reads_back_what_it_wrote() -> None:
    plan = WritePlan(("a/b.yaml", "c"), ("d/e.yaml",), ("d",), (digest_of(b"b"), digest_of(b"c")))
    assert WritePlan.from_json(plan.to_json()) == plan


# --- kill -9 at every step --------------------------------------------------------------------

_CHILD = """
import json, os, signal, sys
from pathlib import Path
from btp_gitops.generator.io.repo import LocalFilesystem, write_subtree

root, files, kill_at = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
calls = 0

def step():
    global calls
    calls += 1
    if calls == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

class Hooked(LocalFilesystem):
    def write_bytes(self, path, data):
        step(); super().write_bytes(path, data)
    def rename(self, source, target):
        step(); super().rename(source, target)
    def unlink_at(self, parent, name):
        step(); super().unlink_at(parent, name)
    def remove_directory_at(self, parent, name):
        step(); super().remove_directory_at(parent, name)
    def make_directory_at(self, parent, name):
        step(); super().make_directory_at(parent, name)
    def move_in_at(self, *args):
        step(); super().move_in_at(*args)

write_subtree(root, "clusters/c1", files, Hooked())
print(calls)
"""


def _child(root: Path, files: dict[str, str], kill_at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), json.dumps(files), str(kill_at)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_kill_at_any_step_is_finished_by_the_next_write(repo: Path, tmp_path: Path) -> None:
    """SIGKILL at each filesystem operation of the write in turn: no path ever holds a part of a
    file, the tree is the old one unless the journal was committed, and recovery (or the next
    write) always ends with exactly the new tree."""
    counting = tmp_path / "counting"
    shutil.copytree(repo, counting)
    done = _child(counting, NEW, 0)
    assert done.returncode == 0, done.stderr
    steps = int(done.stdout)
    assert files_of(counting / "clusters" / "c1") == NEW
    outcomes = {"old": 0, "journal": 0}
    for kill_at in range(1, steps + 1):
        out = tmp_path / f"kill-{kill_at}"
        shutil.copytree(repo, out)
        killed = _child(out, NEW, kill_at)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        now = files_of(out / "clusters" / "c1")
        assert all(now[p] in (OLD.get(p), NEW.get(p)) for p in now), kill_at  # whole files only
        journaled = any(name.startswith(".c1.journal-") for name in hidden(out / "clusters"))
        if not journaled:
            assert now == OLD, kill_at
        outcomes["journal" if journaled else "old"] += 1
        recover_leftovers(out / "clusters", "c1")
        assert files_of(out / "clusters" / "c1") == (NEW if journaled else OLD), kill_at
        assert hidden(out / "clusters") == []
        assert write_subtree(out, "clusters/c1", NEW).empty == journaled
        assert files_of(out / "clusters" / "c1") == NEW
        assert not (out / "clusters" / "c1" / "gone").exists()
        shutil.rmtree(out)
    assert outcomes["old"] >= 5 and outcomes["journal"] >= 8, outcomes


# --- git -----------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout


def test_git_status_after_an_incremental_write_shows_only_the_changed_paths(repo: Path) -> None:
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "old")
    write_subtree(repo, "clusters/c1", NEW)
    # Before anything refreshes Git's index: its stat data still matches every untouched file, so
    # Git lists (and would hash) only the paths the write changed.
    listed = _git(repo, "diff-files", "--name-only").split()
    assert sorted(listed) == [
        "clusters/c1/app/a.yaml",
        "clusters/c1/deep/er/x.yaml",
        "clusters/c1/gone/only.yaml",
    ]
    assert sorted(_git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()) == [
        " D clusters/c1/deep/er/x.yaml",
        " D clusters/c1/gone/only.yaml",
        " M clusters/c1/app/a.yaml",
        "?? clusters/c1/app/c.yaml",
        "?? clusters/c1/deep",
        "?? clusters/c1/fresh/dir/y.yaml",
    ]


def test_a_reader_sees_the_tree_a_cut_write_will_leave_and_changes_nothing(repo: Path) -> None:
    plan = {"write": ["app/a.yaml", "app/c.yaml"], "remove": ["app/b.yaml"], "prune": []}
    journal = _plant_journal(repo, plan, {"app/a.yaml": "a: 9\n"})  # app/c.yaml: moved in already
    (repo / "clusters" / "c1" / "app" / "c.yaml").write_text("c: 9\n")
    before = stats_of(repo)
    seen = read_finished_tree(repo / "clusters", "c1")
    assert stats_of(repo) == before and journal.is_dir()
    recover_leftovers(repo / "clusters", "c1")
    assert seen == read_tree(repo / "clusters" / "c1")
    assert seen["app/a.yaml"] == b"a: 9\n" and "app/b.yaml" not in seen


def test_a_reader_refuses_a_journal_it_cannot_read(repo: Path) -> None:
    _plant_journal(repo, {"write": ["missing.yaml"], "remove": [], "prune": []}, {})
    with pytest.raises(OutputNotWritable, match="render again to finish that write"):
        read_finished_tree(repo / "clusters", "c1")


def test_a_file_swapped_for_a_link_or_a_fifo_after_the_listing_is_not_read(tmp_path: Path) -> None:
    """What scan_tree does when the entry it listed as a file is something else when opened."""
    from btp_gitops.generator.io.output_tree import read_regular  # noqa: PLC0415

    (tmp_path / "secret").write_text("not yours\n")
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    os.mkfifo(tmp_path / "fifo")  # opened without blocking, and refused
    assert read_regular(str(tmp_path / "link")) is None
    assert read_regular(str(tmp_path / "fifo")) is None
    assert read_regular(str(tmp_path / "secret")) == b"not yours\n"


def test_the_scan_lists_directories_links_and_files_apart(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_bytes(b"x" * 200_000)  # more than one read
    (tmp_path / "empty").mkdir()
    (tmp_path / "dirlink").symlink_to(tmp_path / "a")
    scanned = scan_tree(tmp_path)
    assert scanned.files == {"a/b/f": b"x" * 200_000}
    assert scanned.directories == ("a", "a/b", "empty")
    assert scanned.others == ("dirlink",)


def test_a_file_no_manifest_lists_is_never_removed(tmp_path: Path) -> None:
    """A render checks for foreign files when it reads the tree; one that appears while it renders
    is caught by the writer: with ownership manifests in the tree, it removes only what they list."""
    from btp_gitops.generator.core.ownership import manifest_files  # noqa: PLC0415

    owned = {"app/a.yaml": "a: 1\n", "app/kustomization.yaml": "resources: []\n"}
    write_subtree(tmp_path, "clusters/c1", {**owned, **manifest_files(owned)})
    cluster = tmp_path / "clusters" / "c1"
    (cluster / "app" / "notes.md").write_text("a person's\n")  # during the render
    before = stats_of(cluster)
    kept = {"app/kustomization.yaml": "resources: []\n"}
    with pytest.raises(UnsafeOutput, match="did not write") as caught:
        write_subtree(tmp_path, "clusters/c1", {**kept, **manifest_files(kept)})
    assert [problem.file for problem in caught.value.problems] == [str(cluster / "app" / "notes.md")]
    assert stats_of(cluster) == before
    assert hidden(tmp_path / "clusters") == []


# --- a scan handed to the writer: read once, yet every change since is seen ---------------------

SHORT_MARGIN_NS = 50_000_000  # 50 ms instead of 2 s: files written 0.1 s before a scan are settled


@pytest.fixture
def settled(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`repo` with OLD written longer ago than the (shortened) racy margin."""
    monkeypatch.setattr(output_tree_module, "RACY_MARGIN_NS", SHORT_MARGIN_NS)
    time.sleep(2 * SHORT_MARGIN_NS / 1e9)
    return repo


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths (relative to the cluster directory) the scans read from then on."""
    seen: list[str] = []
    real = output_tree_module._read_regular_with_identity

    def counted(path: str) -> tuple[bytes, output_tree_module.Identity] | None:
        seen.append(path.split("/clusters/c1/", 1)[1])
        return real(path)

    monkeypatch.setattr(output_tree_module, "_read_regular_with_identity", counted)
    return seen


def test_a_scan_handed_to_the_writer_is_not_read_again(settled: Path, reads: list[str]) -> None:
    cluster = settled / "clusters" / "c1"
    scanned = scan_tree(cluster)
    assert sorted(reads) == sorted(OLD)
    reads.clear()
    changes = write_subtree(settled, "clusters/c1", NEW, scanned=scanned)
    assert reads == []  # listed and lstat'ed, not one file opened again
    assert changes == write_subtree_changes(OLD, NEW)
    assert files_of(cluster) == NEW


def write_subtree_changes(old: dict[str, str], new: dict[str, str]) -> TreeChanges:
    return diff_trees({k: v.encode() for k, v in old.items()}, {k: v.encode() for k, v in new.items()})


def test_a_file_changed_after_the_scan_with_its_size_and_mtime_kept_is_read_again(
    settled: Path, reads: list[str]
) -> None:
    """ctime moves on with every write, and nothing sets it back: the identity no longer matches."""
    cluster = settled / "clusters" / "c1"
    scanned = scan_tree(cluster)
    reads.clear()
    target = cluster / "many" / "f03.yaml"
    before = target.stat()
    target.write_text("n: X\n")  # as long as "n: 3\n"
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (target.stat().st_size, target.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    changes = write_subtree(settled, "clusters/c1", OLD, scanned=scanned)
    assert reads == ["many/f03.yaml"]
    assert changes.changed == ("many/f03.yaml",)
    assert changes.previous == {"many/f03.yaml": b"n: X\n"}
    assert files_of(cluster) == OLD  # the tree holds exactly what the writer was given


def test_a_file_replaced_by_a_rename_is_read_again(settled: Path, reads: list[str]) -> None:
    cluster = settled / "clusters" / "c1"
    scanned = scan_tree(cluster)
    reads.clear()
    target = cluster / "app" / "b.yaml"
    before = target.stat()
    (cluster / "app" / "other").write_text("b: 9\n")
    os.utime(cluster / "app" / "other", ns=(before.st_atime_ns, before.st_mtime_ns))
    os.rename(cluster / "app" / "other", target)  # another inode, same size and mtime
    changes = write_subtree(settled, "clusters/c1", OLD, scanned=scanned)
    assert reads == ["app/b.yaml"]
    assert changes.changed == ("app/b.yaml",)
    assert files_of(cluster) == OLD


def test_a_racy_file_is_read_again_though_its_identity_matches(repo: Path, reads: list[str]) -> None:
    """Written within the margin before the scan: a change right after the read may keep every
    timestamp (they move by the clock tick), so the identity cannot vouch for it."""
    cluster = repo / "clusters" / "c1"
    scanned = scan_tree(cluster)  # OLD was written just now: all of it racy with the 2 s margin
    reads.clear()
    write_subtree(repo, "clusters/c1", OLD, scanned=scanned)
    assert sorted(reads) == sorted(OLD)


def test_only_the_racy_files_are_read_again(settled: Path, reads: list[str]) -> None:
    cluster = settled / "clusters" / "c1"
    (cluster / "app" / "a.yaml").write_text("a: 3\n")  # just before the scan
    scanned = scan_tree(cluster)
    reads.clear()
    expected = {**OLD, "app/a.yaml": "a: 3\n"}
    changes = write_subtree(settled, "clusters/c1", expected, scanned=scanned)
    assert reads == ["app/a.yaml"]
    assert changes.empty


def test_a_link_planted_after_a_handed_scan_is_refused(settled: Path, tmp_path: Path) -> None:
    cluster = settled / "clusters" / "c1"
    scanned = scan_tree(cluster)
    (tmp_path / "secret").write_text("b: 1\n")
    (cluster / "app" / "b.yaml").unlink()
    (cluster / "app" / "b.yaml").symlink_to(tmp_path / "secret")
    before = stats_of(cluster)
    with pytest.raises(UnsafeOutput, match="not a regular file"):
        write_subtree(settled, "clusters/c1", NEW, scanned=scanned)
    assert stats_of(cluster) == before
    assert (tmp_path / "secret").read_text() == "b: 1\n"


def test_a_directory_swapped_for_a_link_after_a_handed_scan_is_not_descended(
    settled: Path, tmp_path: Path
) -> None:
    cluster = settled / "clusters" / "c1"
    scanned = scan_tree(cluster)
    outside = tmp_path / "outside"
    shutil.copytree(cluster / "many", outside)
    shutil.rmtree(cluster / "many")
    (cluster / "many").symlink_to(outside)
    with pytest.raises(UnsafeOutput, match="not a regular file"):
        write_subtree(settled, "clusters/c1", OLD, scanned=scanned)
    assert sorted(p.name for p in outside.iterdir()) == sorted(
        p.rsplit("/", 1)[1] for p in OLD if p.startswith("many/")
    )


def test_a_foreign_file_added_after_a_handed_scan_is_never_removed(settled: Path) -> None:
    from btp_gitops.generator.core.ownership import manifest_files  # noqa: PLC0415

    owned = {"app/a.yaml": "a: 1\n", "app/kustomization.yaml": "resources: []\n"}
    write_subtree(settled, "clusters/c1", {**owned, **manifest_files(owned)})
    cluster = settled / "clusters" / "c1"
    scanned = scan_tree(cluster)
    (cluster / "app" / "notes.md").write_text("a person's\n")  # while the render runs
    before = stats_of(cluster)
    kept = {"app/kustomization.yaml": "resources: []\n"}
    with pytest.raises(UnsafeOutput, match="did not write"):
        write_subtree(settled, "clusters/c1", {**kept, **manifest_files(kept)}, scanned=scanned)
    assert stats_of(cluster) == before


def test_a_file_removed_after_a_handed_scan_is_written_again(settled: Path) -> None:
    cluster = settled / "clusters" / "c1"
    scanned = scan_tree(cluster)
    (cluster / "app" / "a.yaml").unlink()
    changes = write_subtree(settled, "clusters/c1", OLD, scanned=scanned)
    assert changes.added == ("app/a.yaml",)
    assert files_of(cluster) == OLD


def test_a_rescan_gives_what_a_full_scan_gives(settled: Path, tmp_path: Path) -> None:
    cluster = settled / "clusters" / "c1"
    earlier = scan_tree(cluster)
    (cluster / "app" / "a.yaml").write_text("a: changed\n")
    (cluster / "app" / "new.yaml").write_text("new\n")
    (cluster / "many" / "f00.yaml").unlink()
    (cluster / "many" / "link").symlink_to(tmp_path)
    (cluster / "empty").mkdir()
    again, fresh = scan_tree(cluster, earlier), scan_tree(cluster)
    assert (again.files, again.others, again.directories) == (fresh.files, fresh.others, fresh.directories)
    assert again.identities == fresh.identities
    assert again.started_ns == earlier.started_ns  # what it kept was read then
