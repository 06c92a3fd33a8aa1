"""Unit tests of `generator.io.repo`, the writer of `clusters/<cluster>/`, called in-process.

tests/render/test_write_safety.py proves the same guarantees through the CLI (kills, two
processes, planted links); these cases reach every branch quickly, so that a mutation run of
the module (docs/mutation-testing.md) can afford them for every mutant. Real directories, real
renameat2 and flock; a filesystem that fails on purpose only where a disk would.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from btp_gitops.generator.core.errors import OutputLocked, OutputNotWritable, UnsafeOutput
from btp_gitops.generator.io import output_tree as output_tree_module
from btp_gitops.generator.io.repo import (
    LocalFilesystem,
    TreeChanges,
    check_no_links,
    diff_trees,
    directory_lock,
    prepared_parent,
    read_tree,
    recover_leftovers,
    scan_tree,
    write_subtree,
)
from tests.unit.tree_helpers import files_of, hidden, written_repo

OLD = {"app/a.yaml": "a: 1\n", "app/b.yaml": "b: 1\n", "kustomization.yaml": "resources: []\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return written_repo(tmp_path, OLD)


@pytest.mark.parametrize(
    "changes",
    [TreeChanges(added=("a",)), TreeChanges(changed=("a",)), TreeChanges(removed=("a",))],
    ids=["added", "changed", "removed"],
)
def test_any_change_is_not_empty(changes: TreeChanges) -> None:
    assert not changes.empty
    assert TreeChanges().empty


def test_diff_trees_names_each_change_and_keeps_the_previous_bytes() -> None:
    old = {"same": b"1", "changed": b"old", "removed": b"gone"}
    new = {"same": b"1", "changed": b"new", "added": b"+"}
    assert diff_trees(old, new) == TreeChanges(
        ("added",), ("changed",), ("removed",), {"changed": b"old", "removed": b"gone"}
    )


def test_a_first_write_creates_the_tree_with_the_umask(tmp_path: Path) -> None:
    mask = os.umask(0o027)
    try:
        changes = write_subtree(tmp_path / "repo", "clusters/c1", OLD)
    finally:
        os.umask(mask)
    cluster = tmp_path / "repo" / "clusters" / "c1"
    assert changes == TreeChanges(added=tuple(sorted(OLD)))
    assert files_of(cluster) == OLD
    for directory in (cluster, cluster / "app"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o750, directory
    assert hidden(cluster.parent) == []


def test_an_unchanged_tree_is_not_rewritten(repo: Path) -> None:
    cluster = repo / "clusters" / "c1"
    inode = cluster.stat().st_ino
    assert write_subtree(repo, "clusters/c1", OLD).empty
    assert cluster.stat().st_ino == inode


def test_a_write_that_only_removes_files_removes_them_and_leaves_nothing_beside(repo: Path) -> None:
    new = {k: v for k, v in OLD.items() if k != "app/b.yaml"}
    changes = write_subtree(repo, "clusters/c1", new)
    assert changes == TreeChanges(removed=("app/b.yaml",), previous={"app/b.yaml": b"b: 1\n"})
    assert files_of(repo / "clusters" / "c1") == new
    assert hidden(repo / "clusters") == []  # neither the staging nor the old tree stays


def test_a_changed_tree_replaces_the_old_one_and_leaves_nothing_beside(repo: Path) -> None:
    new = {**OLD, "app/a.yaml": "a: 2\n", "app/c.yaml": "c: 1\n"}
    changes = write_subtree(repo, "clusters/c1", new)
    assert (changes.added, changes.changed, changes.removed) == (("app/c.yaml",), ("app/a.yaml",), ())
    assert files_of(repo / "clusters" / "c1") == new
    assert hidden(repo / "clusters") == []


def test_a_failing_mkdtemp_is_an_output_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(**_: object) -> str:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkdtemp", full_disk)
    with pytest.raises(OutputNotWritable) as caught:
        write_subtree(repo, "clusters/c1", {"x.yaml": "x: 1\n"})
    assert str(caught.value) == f"cannot write output directory {repo / 'clusters'}: No space left on device"
    assert files_of(repo / "clusters" / "c1") == OLD


def test_a_failing_chmod_of_a_new_trees_staging_directory_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "clusters").mkdir()

    def refused(path: Path, mode: int) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "chmod", refused)
    with pytest.raises(OutputNotWritable, match="Operation not permitted"):
        write_subtree(tmp_path, "clusters/c1", {"x.yaml": "x: 1\n"})
    assert hidden(tmp_path / "clusters") == []
    assert list((tmp_path / "clusters").iterdir()) == []


def test_a_failing_rename_of_a_new_tree_leaves_nothing(tmp_path: Path) -> None:
    class NoRename(LocalFilesystem):
        def rename(self, source: Path, target: Path) -> None:
            raise OSError(errno.EIO, "Input/output error")

    (tmp_path / "clusters").mkdir()
    with pytest.raises(OutputNotWritable, match="Input/output error"):
        write_subtree(tmp_path, "clusters/c1", {"x.yaml": "x: 1\n"}, NoRename())
    assert list((tmp_path / "clusters").iterdir()) == []


def test_a_file_where_the_cluster_directory_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "c1").write_text("not a directory\n")
    with pytest.raises(OutputNotWritable, match="it exists and is not a directory"):
        write_subtree(tmp_path, "clusters/c1", OLD)
    assert (tmp_path / "clusters" / "c1").read_text() == "not a directory\n"


def test_leftovers_are_recovered_newest_old_tree_first(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    older, newer = clusters / ".c1.old-aaa", clusters / ".c1.old-bbb"
    for directory, text in ((older, "older"), (newer, "newer")):
        directory.mkdir(parents=True)
        (directory / "f").write_text(text)
    os.utime(older, ns=(1_000_000_000, 1_000_000_000))
    (clusters / ".c1.staging-ccc").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (clusters / ".c1.staging-link").symlink_to(outside)
    (clusters / ".c2.old-ddd").mkdir()  # another cluster's leftovers are its own writer's

    recover_leftovers(clusters, "c1")

    assert (clusters / "c1" / "f").read_text() == "newer"
    assert hidden(clusters) == [".c2.old-ddd"]
    assert (outside / "keep").read_text() == "keep"


def test_an_old_tree_is_not_restored_over_an_existing_cluster(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    (clusters / "c1").mkdir(parents=True)
    (clusters / "c1" / "f").write_text("current")
    (clusters / ".c1.old-aaa").mkdir()
    (clusters / ".c1.old-aaa" / "f").write_text("old")
    recover_leftovers(clusters, "c1")
    assert (clusters / "c1" / "f").read_text() == "current"
    assert hidden(clusters) == []


def test_an_old_tree_that_cannot_be_restored_is_an_output_error(tmp_path: Path) -> None:
    class NoRename(LocalFilesystem):
        def rename(self, source: Path, target: Path) -> None:
            raise OSError(errno.EROFS, "Read-only file system")

    (tmp_path / ".c1.old-aaa").mkdir()
    with pytest.raises(OutputNotWritable) as caught:
        recover_leftovers(tmp_path, "c1", NoRename())
    assert str(caught.value) == (
        f"cannot restore {tmp_path / 'c1'} from {tmp_path / '.c1.old-aaa'}: Read-only file system"
    )


@pytest.mark.parametrize("subtree", ["/abs", "a/../b", "..", ""])
def test_only_plain_relative_subtrees_are_written(tmp_path: Path, subtree: str) -> None:
    with pytest.raises(UnsafeOutput, match="not a plain relative path"):
        check_no_links(tmp_path, subtree)


def test_a_link_on_the_way_is_refused_a_missing_directory_is_not(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "clusters").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeOutput) as caught:
        check_no_links(tmp_path, "clusters/c1")
    assert str(caught.value).startswith(
        f"refusing to use {tmp_path / 'clusters'}: it is a symbolic link (to {tmp_path / 'elsewhere'})"
    )
    check_no_links(tmp_path, "missing/c1")
    (tmp_path / "file").write_text("")
    check_no_links(tmp_path, "file/c1")  # no directory on the way: nothing to follow


def test_links_inside_a_tree_are_listed_not_read(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("f")
    for index in range(7):
        (tmp_path / f"link{index}").symlink_to(tmp_path / "d" / "f")
    scanned = scan_tree(tmp_path)
    assert scanned.files == {"d/f": b"f"}
    assert scanned.others == tuple(f"link{i}" for i in range(7))
    with pytest.raises(UnsafeOutput) as caught:
        read_tree(tmp_path)
    shown = ", ".join(str(tmp_path / f"link{i}") for i in range(5))
    assert str(caught.value).startswith(f"refusing to read {shown}: not a regular file")


def test_a_root_that_is_a_link_or_missing_reads_as_empty(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("f")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert scan_tree(tmp_path / "link").files == {}
    assert scan_tree(tmp_path / "missing").files == {}
    assert scan_tree(tmp_path / "real" / "f").files == {}


def test_an_unreadable_file_is_an_output_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # not a regular file: listed, never opened
    (tmp_path / "d").mkdir()
    assert scan_tree(tmp_path).others == ("fifo",)
    (tmp_path / "d" / "f").write_text("f")
    (tmp_path / "d" / "f").chmod(0)
    if os.geteuid() != 0:  # root reads any file: the branch is reached only as another user
        with pytest.raises(OutputNotWritable, match="cannot read"):
            scan_tree(tmp_path)


def test_prepared_parent_removes_only_the_directories_it_created(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    with pytest.raises(RuntimeError), prepared_parent(tmp_path / "repo", "a/b/c") as parent:
        assert parent == tmp_path / "repo" / "a" / "b"
        assert parent.is_dir()
        raise RuntimeError("the block failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]
    assert list((tmp_path / "repo").iterdir()) == []


def test_prepared_parent_keeps_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), prepared_parent(tmp_path, "a/b/c") as parent:
        (parent.parent / "kept").write_text("")
        raise RuntimeError("the block failed")
    assert not (tmp_path / "a" / "b").exists()
    assert (tmp_path / "a" / "kept").exists()


def test_prepared_parent_that_cannot_be_created_is_an_output_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputNotWritable) as caught, prepared_parent(tmp_path, "file/sub/c1"):
        pass
    assert str(caught.value).startswith(f"cannot write output directory {tmp_path / 'file' / 'sub'}: ")


@pytest.fixture
def foreign_lock(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """An exclusive flock another open file description holds, as another process would."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield tmp_path, fd
    finally:
        os.close(fd)


def test_a_held_lock_times_out_clearly(foreign_lock: tuple[Path, int]) -> None:
    directory, fd = foreign_lock
    fcntl.flock(fd, fcntl.LOCK_EX)
    with pytest.raises(OutputLocked) as caught, directory_lock(directory, 0.05):
        pass
    assert str(caught.value) == (
        f"another btp-gitops run is writing {directory}: gave up waiting for its lock after 0.05 s "
        "(--lock-timeout)"
    )


def test_shared_locks_do_not_exclude_each_other(foreign_lock: tuple[Path, int]) -> None:
    directory, fd = foreign_lock
    fcntl.flock(fd, fcntl.LOCK_SH)
    with directory_lock(directory, 0.05, shared=True):
        pass
    with pytest.raises(OutputLocked), directory_lock(directory, 0.05):
        pass


def test_the_lock_is_released_and_reentrant(foreign_lock: tuple[Path, int]) -> None:
    directory, fd = foreign_lock
    with directory_lock(directory, 0.05), directory_lock(directory, 0.05), pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with directory_lock(directory, 0.05):  # the inner release kept the outer hold until its end
        pass
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released


def test_a_lock_waits_for_its_holder(foreign_lock: tuple[Path, int]) -> None:
    directory, fd = foreign_lock
    fcntl.flock(fd, fcntl.LOCK_EX)
    releaser = threading.Timer(0.2, fcntl.flock, (fd, fcntl.LOCK_UN))
    releaser.start()
    try:
        # Once held, the previous holder cannot take it back.
        with directory_lock(directory, 10.0), pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        releaser.join()


def test_a_file_cannot_be_locked_as_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with (
        pytest.raises(OutputNotWritable, match=r"cannot lock output directory .*: Not a directory"),
        directory_lock(tmp_path / "file", 0.05),
    ):
        pass


def test_a_missing_directory_cannot_be_locked(tmp_path: Path) -> None:
    with (
        pytest.raises(OutputNotWritable, match="cannot lock output directory"),
        directory_lock(tmp_path / "missing", 0.05),
    ):
        pass


def test_the_umask_is_read_without_changing_it() -> None:
    mask = os.umask(0o037)
    try:
        assert output_tree_module.current_umask() == 0o037
        assert os.umask(0o037) == 0o037
    finally:
        os.umask(mask)


def test_a_link_to_a_directory_is_listed_and_not_descended(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("f")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "dirlink").symlink_to(tmp_path / "real")
    scanned = scan_tree(tmp_path / "tree")
    assert (scanned.files, scanned.others) == ({}, ("dirlink",))


def test_a_file_that_cannot_be_read_is_an_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f").write_text("f")

    def unreadable(path: str) -> tuple[bytes, output_tree_module.Identity]:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(output_tree_module, "_read_regular_with_identity", unreadable)
    with pytest.raises(OutputNotWritable) as caught:
        scan_tree(tmp_path)
    assert str(caught.value) == f"cannot read {tmp_path / 'f'}: Permission denied"


def test_prepared_parent_uses_the_filesystem_given_and_checks_the_way(tmp_path: Path) -> None:
    class NoMkdir(LocalFilesystem):
        def make_dirs(self, path: Path) -> None:
            raise OSError(errno.EROFS, "Read-only file system")

    with pytest.raises(OutputNotWritable) as caught, prepared_parent(tmp_path, "clusters/c1", NoMkdir()):
        pass
    assert (
        str(caught.value) == f"cannot write output directory {tmp_path / 'clusters'}: Read-only file system"
    )
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "clusters").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeOutput), prepared_parent(tmp_path, "clusters/c1"):
        pass


def test_prepared_parent_refuses_a_directory_it_may_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "access", lambda *_: False)  # root may write anywhere: as another user
    with pytest.raises(OutputNotWritable) as caught, prepared_parent(tmp_path, "clusters/c1"):
        pass
    assert str(caught.value) == f"cannot write output directory {tmp_path / 'clusters'}: permission denied"


def test_a_lock_the_kernel_refuses_is_an_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(OutputNotWritable) as caught, directory_lock(tmp_path, 0.05):
        pass
    assert str(caught.value) == f"cannot lock output directory {tmp_path}: No locks available"


def test_only_a_real_directory_is_restored_as_the_old_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    clusters = tmp_path / "clusters"
    clusters.mkdir()
    (clusters / ".c1.old-link").symlink_to(outside)  # planted: restoring it would make c1 a link
    (clusters / ".c1.old-file").write_text("not a tree")  # not a directory: never ours
    recover_leftovers(clusters, "c1")
    assert not os.path.lexists(clusters / "c1")
    assert hidden(clusters) == [".c1.old-file"]
    assert (outside / "keep").read_text() == "keep"


def test_the_umask_is_found_without_proc_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_proc(self: Path, *_: object, **__: object) -> str:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    monkeypatch.setattr(Path, "read_text", no_proc)
    mask = os.umask(0o037)
    try:
        assert output_tree_module.current_umask() == 0o037
        assert os.umask(0o037) == 0o037  # and left as it was
    finally:
        os.umask(mask)


def test_a_write_recovers_what_a_killed_run_left_first(repo: Path) -> None:
    clusters = repo / "clusters"
    (clusters / "c1").rename(clusters / ".c1.old-k1ll3d")  # cut between the fallback's two renames
    (clusters / ".c1.staging-half").mkdir()
    changes = write_subtree(repo, "clusters/c1", OLD)
    assert changes.empty  # compared with the tree put back, not with nothing
    assert files_of(clusters / "c1") == OLD
    assert hidden(clusters) == []


def test_an_empty_tree_is_still_a_directory(tmp_path: Path) -> None:
    assert write_subtree(tmp_path, "clusters/c1", {}).empty
    assert (tmp_path / "clusters" / "c1").is_dir()


def test_a_write_waits_for_the_lock_by_default(repo: Path) -> None:
    fd = os.open(repo / "clusters", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        releaser = threading.Timer(0.3, fcntl.flock, (fd, fcntl.LOCK_UN))
        releaser.start()
        try:
            assert write_subtree(repo, "clusters/c1", {"x.yaml": "x: 1\n"}).added == ("x.yaml",)
        finally:
            releaser.join()
    finally:
        os.close(fd)
