"""The writer's second look at a Git work tree (io.repo.rescanned, io.output_tree.refreshed_scan):
under the lock, right before writing, Git is asked again and the files read at the start are
checked again, without walking the tree. Real Git, a committed tree, changes made between the
scan a render hands the writer and the write."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from btp_gitops.generator.core.errors import UnsafeOutput
from btp_gitops.generator.core.ownership import manifest_files
from btp_gitops.generator.io.repo import git_scan, write_subtree
from tests.unit.tree_helpers import files_of

IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@localhost")
RENDERED = {
    "app/a.yaml": "a: 1\n",
    "app/b.yaml": "b: 1\n",
    "app/kustomization.yaml": "resources:\n- a.yaml\n- b.yaml\n",
    "other/c.yaml": "c: 1\n",
}
TREE = {**RENDERED, **manifest_files(RENDERED)}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args], capture_output=True, check=True, timeout=60
    )
    return done.stdout.decode()


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A fresh clone of a repository whose clusters/c1 holds TREE, committed."""
    origin = tmp_path / "origin"
    write_subtree(origin, "clusters/c1", TREE)
    git(origin, "init", "-q")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "rendered")
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(target)], check=True, timeout=60)
    return target


def test_the_scan_takes_gits_word_for_every_committed_file(clone: Path) -> None:
    scanned = git_scan(clone / "clusters" / "c1")
    assert scanned.by_git is not None
    assert sorted(scanned.by_git.blobs) == sorted(TREE)


def test_a_tracked_file_edited_after_the_scan_is_read_and_rewritten(clone: Path) -> None:
    cluster = clone / "clusters" / "c1"
    scanned = git_scan(cluster)
    (cluster / "app" / "a.yaml").write_text("a: edited while the render ran\n")
    changes = write_subtree(clone, "clusters/c1", TREE, scanned=scanned)
    assert changes.changed == ("app/a.yaml",)
    assert changes.previous == {"app/a.yaml": b"a: edited while the render ran\n"}
    assert files_of(cluster) == TREE
    assert git(clone, "status", "--porcelain") == ""


def test_an_index_changed_after_the_scan_is_listed_again(clone: Path) -> None:
    """A commit made meanwhile replaces Git's index: the same file no longer, so the whole
    listing is read again, and the committed edit is rewritten to the rendered bytes."""
    cluster = clone / "clusters" / "c1"
    scanned = git_scan(cluster)
    (cluster / "other" / "c.yaml").write_text("c: committed meanwhile\n")
    git(clone, "commit", "-qam", "meanwhile")
    changes = write_subtree(clone, "clusters/c1", TREE, scanned=scanned)
    assert changes.changed == ("other/c.yaml",)
    assert files_of(cluster) == TREE


def test_a_tracked_file_turned_into_a_link_after_the_scan_is_refused(clone: Path, tmp_path: Path) -> None:
    cluster = clone / "clusters" / "c1"
    scanned = git_scan(cluster)
    outside = tmp_path / "outside.yaml"
    outside.write_text("outside\n")
    (cluster / "app" / "b.yaml").unlink()
    (cluster / "app" / "b.yaml").symlink_to(outside)
    new = {**RENDERED, "app/b.yaml": "b: 2\n"}
    with pytest.raises(UnsafeOutput, match="not a regular file"):
        write_subtree(clone, "clusters/c1", {**new, **manifest_files(new)}, scanned=scanned)
    assert outside.read_text() == "outside\n"


def test_a_file_put_beside_the_rendered_ones_after_the_scan_is_left_alone(clone: Path) -> None:
    """Not seen by this write (no walk), never removed nor read by it; the next scan finds it."""
    cluster = clone / "clusters" / "c1"
    scanned = git_scan(cluster)
    (cluster / "app" / "notes.md").write_text("a person's\n")
    kept = {path: text for path, text in RENDERED.items() if path != "other/c.yaml"}
    changes = write_subtree(clone, "clusters/c1", {**kept, **manifest_files(kept)}, scanned=scanned)
    assert changes.removed == ("other/c.yaml",)
    assert (cluster / "app" / "notes.md").read_text() == "a person's\n"
    assert "app/notes.md" in git_scan(cluster).files
