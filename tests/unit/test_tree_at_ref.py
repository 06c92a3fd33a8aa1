"""io.git_blobs.read_tree_at: a rendered tree at a ref, read with `git` itself (no GitPython, no
checkout), against real repositories: work trees, a folder inside one, a bare clone, tags, and
refs that are not what they seem."""

from __future__ import annotations

from pathlib import Path

import pytest

from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.io.commit_tree import CommitBlobs, TreeAtRef, read_tree_at
from btp_gitops.generator.io.git_blobs import blob_id
from tests.unit.test_git_blobs import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """clusters/demo and clusters/other committed (`v1`, an annotated tag), then demo changed."""
    path = tmp_path / "gitops"
    path.mkdir()
    git(path, "init", "-q")
    for cluster in ("demo", "other"):
        (path / "clusters" / cluster / "app").mkdir(parents=True)
        (path / "clusters" / cluster / "app" / "cm.yaml").write_text(f"name: {cluster}\n")
    (path / "clusters" / "README.md").write_text("not a directory\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "first")
    git(path, "tag", "-a", "v1", "-m", "the first")
    (path / "clusters" / "demo" / "app" / "cm.yaml").write_text("name: demo, changed\n")
    git(path, "commit", "-qam", "second")
    return path


def text(tree: TreeAtRef, path: str) -> bytes:
    return tree.files[path]


def test_a_subtree_at_head_and_at_an_annotated_tag(repo: Path) -> None:
    head = read_tree_at(repo, "HEAD", "clusters/demo")
    assert head.found and head.commit == git(repo, "rev-parse", "HEAD").strip()
    assert text(head, "app/cm.yaml") == b"name: demo, changed\n"
    assert head.siblings == ("demo", "other")  # directories only: README.md is not one
    tagged = read_tree_at(repo, "v1", "clusters/demo")  # the tag object peeled to its commit
    assert tagged.commit == git(repo, "rev-parse", "v1^{commit}").strip()
    assert text(tagged, "app/cm.yaml") == b"name: demo\n"
    assert dict(tagged.files.items()) == {"app/cm.yaml": b"name: demo\n"}
    assert isinstance(tagged.files, CommitBlobs)  # blob ids listed, bytes read when asked for
    assert tagged.files.blob_of("app/cm.yaml") == blob_id(b"name: demo\n")


def test_from_a_folder_inside_the_work_tree_and_from_a_bare_clone(repo: Path, tmp_path: Path) -> None:
    inside = read_tree_at(repo / "clusters", "HEAD", "demo")
    assert inside.found and text(inside, "app/cm.yaml") == b"name: demo, changed\n"
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    from_bare = read_tree_at(bare, "HEAD~1", "clusters/demo")
    assert from_bare.found and text(from_bare, "app/cm.yaml") == b"name: demo\n"


def test_a_missing_subtree_or_parent_is_not_found(repo: Path) -> None:
    missing = read_tree_at(repo, "HEAD", "clusters/prod")
    assert (missing.found, dict(missing.files), missing.siblings) == (False, {}, ("demo", "other"))
    not_a_tree = read_tree_at(repo, "HEAD", "clusters/README.md")
    assert (not_a_tree.found, not_a_tree.siblings) == (False, ("demo", "other"))
    no_parent = read_tree_at(repo, "HEAD", "elsewhere/demo")
    assert (no_parent.found, no_parent.siblings) == (False, None)
    outside = read_tree_at(repo, "HEAD", "../demo")
    assert (outside.found, outside.siblings) == (False, None)


@pytest.mark.parametrize("ref", ["no-such-branch", "", "HEAD:clusters", "--output=planted"])
def test_a_ref_that_names_no_commit_is_a_usage_error(repo: Path, ref: str) -> None:
    """An option-shaped ref is a revision to Git (never an option: nothing is written), a tree or
    an empty ref names no commit."""
    with pytest.raises(UsageError, match="not a commit of the Git repository at"):
        read_tree_at(repo, ref, "clusters/demo")
    assert not (repo / "planted").exists()


def test_outside_any_repository_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not in a Git repository"):
        read_tree_at(tmp_path, "HEAD", "clusters/demo")
    with pytest.raises(UsageError, match="is not in a Git repository"):
        read_tree_at(tmp_path / "missing", "HEAD", "clusters/demo")
