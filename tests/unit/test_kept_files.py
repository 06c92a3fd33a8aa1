"""The writer's kept files (`write_subtree(kept=...)`, io.repo.KeptFiles): files a render leaves out
of what it writes because Git vouched, when the tree was scanned, that they hold what they should.
They are neither compared nor removed, their directories are not pruned (nor even tried), and one
Git no longer vouches for when the writer asks again under the lock is written from its text.

Real Git work trees and real directories; a filesystem that records what the writer asks of it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from btp_gitops.generator.io.repo import LocalFilesystem, git_scan, write_subtree
from tests.unit.tree_helpers import files_of

IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@localhost")
TREE = {
    "kept-a/one.yaml": "one: 1\n",
    "kept-a/two.yaml": "two: 2\n",
    "kept-b/stage/three.yaml": "three: 3\n",
    "written/four.yaml": "four: 4\n",
    "emptied/five.yaml": "five: 5\n",
}
KEPT = frozenset({"kept-a/one.yaml", "kept-a/two.yaml", "kept-b/stage/three.yaml"})


@dataclass
class Kept:
    paths: frozenset[str]
    asked: list[str] = field(default_factory=list)

    def text(self, path: str) -> str:
        self.asked.append(path)
        return TREE[path]


class Recording(LocalFilesystem):
    def __init__(self) -> None:
        self.pruned: list[str] = []

    def remove_directory_at(self, parent: int, name: str) -> None:
        self.pruned.append(name)
        super().remove_directory_at(parent, name)


def committed(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for relative, text in TREE.items():
        (root / "clusters/c1" / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / "clusters/c1" / relative).write_text(text)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "rendered")):
        subprocess.run(["git", "-C", str(root), *IDENTITY, *args], check=True, capture_output=True)
    return root


def the_rest() -> dict[str, str]:
    """What the render writes beside the kept files: one changed, one directory emptied."""
    return {"written/four.yaml": "four: 4, changed\n"}


def test_kept_files_are_neither_compared_removed_nor_pruned(tmp_path: Path) -> None:
    root = committed(tmp_path)
    cluster = root / "clusters/c1"
    fs, kept = Recording(), Kept(KEPT)
    changes = write_subtree(root, "clusters/c1", the_rest(), fs, scanned=git_scan(cluster), kept=kept)
    assert (changes.added, changes.changed, changes.removed) == (
        (),
        ("written/four.yaml",),
        ("emptied/five.yaml",),
    )
    assert files_of(cluster) == {**{path: TREE[path] for path in KEPT}, **the_rest()}
    assert fs.pruned == ["emptied"]  # the kept files' directories are not even tried
    assert kept.asked == []  # Git vouched for each: no text was needed


def test_a_kept_file_changed_after_the_scan_is_written_from_its_text(tmp_path: Path) -> None:
    root = committed(tmp_path)
    cluster = root / "clusters/c1"
    scanned = git_scan(cluster)
    (cluster / "kept-a/one.yaml").write_text("one: by hand\n")  # after the scan, before the write
    (cluster / "kept-b/stage/three.yaml").unlink()
    kept = Kept(KEPT)
    changes = write_subtree(root, "clusters/c1", the_rest(), scanned=scanned, kept=kept)
    assert sorted(kept.asked) == ["kept-a/one.yaml", "kept-b/stage/three.yaml"]
    assert changes.added == ("kept-b/stage/three.yaml",)
    assert changes.changed == ("kept-a/one.yaml", "written/four.yaml")
    assert files_of(cluster) == {**{path: TREE[path] for path in KEPT}, **the_rest()}


def test_outside_git_every_kept_file_is_compared_by_its_text(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    cluster = root / "clusters/c1"
    for relative, text in TREE.items():
        (cluster / relative).parent.mkdir(parents=True, exist_ok=True)
        (cluster / relative).write_text(text)
    (cluster / "kept-a/two.yaml").write_text("two: by hand\n")
    kept = Kept(KEPT)
    changes = write_subtree(root, "clusters/c1", the_rest(), scanned=git_scan(cluster), kept=kept)
    assert sorted(kept.asked) == sorted(KEPT)  # no word from Git: each one's text
    assert changes.changed == ("kept-a/two.yaml", "written/four.yaml")
    assert files_of(cluster) == {**{path: TREE[path] for path in KEPT}, **the_rest()}


def test_a_kept_path_the_caller_writes_after_all_is_compared(tmp_path: Path) -> None:
    root = committed(tmp_path)
    cluster = root / "clusters/c1"
    files = {**the_rest(), "kept-a/one.yaml": "one: written\n"}
    kept = Kept(KEPT)
    changes = write_subtree(root, "clusters/c1", files, scanned=git_scan(cluster), kept=kept)
    assert changes.changed == ("kept-a/one.yaml", "written/four.yaml")
    assert (cluster / "kept-a/one.yaml").read_text() == "one: written\n"
    assert kept.asked == []
