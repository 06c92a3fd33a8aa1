"""io.commit_tree: a cluster directory at a commit read as an outline first, the app directories'
files listed when first asked for, or never when they are set aside. Against real Git: whatever
is asked, the files, blob ids and trees are the ones `git ls-tree -r` lists (`commit_blobs`),
in every way of reading them, for both object formats."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from btp_gitops.generator.core.errors import GitError
from btp_gitops.generator.io import commit_tree
from btp_gitops.generator.io.commit_tree import CommitBlobs, commit_blobs, read_tree_at
from tests.unit.test_git_blobs import git

MANIFEST = ".btp-gitops-files"
FILES = {
    MANIFEST: b"# the cluster directory's\n",
    "kustomization.yaml": b"resources: []\n",
    "cap.bookshop.bookshop/deployment-srv.yaml": b"kind: Deployment\n",
    "cap.bookshop.bookshop/01-crds/crd.yaml": b"kind: CustomResourceDefinition\n",  # a stage directory
    "cap.bookshop.bookshop/01-crds/deeper/more.yaml": b"kind: ConfigMap\n",
    ".wiring/applicationset.yaml": b"kind: ApplicationSet\n",
    f"tenants/bookshop.bookshop/{MANIFEST}": b"# the group's\n",
    f"tenants/bookshop.bookshop/3a/{MANIFEST}": b"# a shard's\n",
    "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme/captenant-acme.yaml": b"kind: CAPTenant\nname: acme\n",
    "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme/kustomization.yaml": b"resources: [acme]\n",
    "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme0/captenant-acme0.yaml": b"kind: CAPTenant\nname: a0\n",
    "tenants/bookshop.bookshop/5c/cap-tenant.bookshop.globex/captenant-globex.yaml": b"kind: CAPTenant\n",
    "tenants/bookshop.bookshop/not-a-shard/hand-made.yaml": b"kind: ConfigMap\n",  # read with the outline
}


def committed(tmp_path: Path, files: dict[str, bytes], object_format: str = "sha1") -> Path:
    """A repository whose HEAD holds `files` in clusters/demo/, with a link and a submodule entry."""
    repo = tmp_path / f"repo-{object_format}"
    repo.mkdir()
    git(repo, "init", "-q", f"--object-format={object_format}")
    cluster = repo / "clusters" / "demo"
    for path, data in files.items():
        (cluster / path).parent.mkdir(parents=True, exist_ok=True)
        (cluster / path).write_bytes(data)
    os.symlink("deployment-srv.yaml", cluster / "cap.bookshop.bookshop" / "link.yaml")
    executable = cluster / "tenants/bookshop.bookshop/5c/cap-tenant.bookshop.globex/run.sh"
    executable.write_bytes(b"#!/bin/sh\n")
    executable.chmod(0o755)
    git(repo, "add", "-A")
    # A submodule's commit in an app directory: no file of this repository, listed by neither.
    zeros = "1" * (40 if object_format == "sha1" else 64)
    git(
        repo,
        "update-index",
        "--add",
        "--cacheinfo",
        f"160000,{zeros},clusters/demo/cap.bookshop.bookshop/sub",
    )
    git(repo, "commit", "-qm", "rendered")
    return repo


def eager(repo: Path) -> CommitBlobs:
    tree = git(repo, "rev-parse", "HEAD:clusters/demo").strip()
    object_format = git(repo, "rev-parse", "--show-object-format").strip()
    return commit_blobs(repo, tree, object_format, ("clusters/demo/", "HEAD"))


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_outline_lists_what_git_lists_when_asked(tmp_path: Path, object_format: str) -> None:
    repo = committed(tmp_path, FILES, object_format)
    whole = eager(repo)
    files = read_tree_at(repo, "HEAD", "clusters/demo").files
    assert isinstance(files, CommitBlobs)
    # The outline: the app directories' trees are known, their files not listed yet.
    assert "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme" in files.trees
    outline = files.outline()
    assert "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme/" in outline
    assert "cap.bookshop.bookshop/" in outline and ".wiring/" in outline
    assert f"tenants/bookshop.bookshop/3a/{MANIFEST}" in outline
    assert "tenants/bookshop.bookshop/not-a-shard/hand-made.yaml" in outline
    assert not any(path.startswith("cap.bookshop.bookshop/0") for path in outline)
    assert files[MANIFEST] == FILES[MANIFEST]  # a file of the outline, read without listing more
    assert files.outline() == outline
    # Asked for one file of an app directory: every app directory is listed, as Git lists them.
    assert files["cap.bookshop.bookshop/01-crds/deeper/more.yaml"] == b"kind: ConfigMap\n"
    assert list(files) == list(whole) and dict(files.blobs) == dict(whole.blobs)
    assert files.trees == whole.trees
    assert "cap.bookshop.bookshop/sub" not in files and "cap.bookshop.bookshop/link.yaml" in files


def test_directories_set_aside_are_never_listed(tmp_path: Path) -> None:
    repo = committed(tmp_path, FILES)
    whole = eager(repo)
    files = read_tree_at(repo, "HEAD", "clusters/demo").files
    assert isinstance(files, CommitBlobs)
    aside = "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme"
    files.set_aside([aside])
    assert f"{aside}/captenant-acme.yaml" not in files
    # The rest is what Git lists, those files left out (not `acme0/`, a name that begins alike).
    assert dict(files.blobs) == {
        path: oid for path, oid in whole.blobs.items() if not path.startswith(f"{aside}/")
    }
    assert files.known_tree_ids()[aside] == whole.trees[aside]  # its tree is still known
    left = files.without_directories([aside])
    assert aside not in left.known_tree_ids() and "tenants/bookshop.bookshop/3a" not in left.known_tree_ids()
    assert "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme0" in left.known_tree_ids()


def test_the_manifests_left_out_by_name_wherever_they_are_listed(tmp_path: Path) -> None:
    files = {**FILES, f"tenants/bookshop.bookshop/5c/cap-tenant.bookshop.globex/{MANIFEST}": b"# planted\n"}
    repo = committed(tmp_path, files)
    whole = eager(repo)
    compared = read_tree_at(repo, "HEAD", "clusters/demo").files
    assert isinstance(compared, CommitBlobs)
    named = compared.without_named(MANIFEST)
    manifests = [path for path in whole if path.rpartition("/")[2] == MANIFEST]
    expected = whole.without(manifests)
    assert len(manifests) == 4
    # Its trees are known before the app directories are listed (the held apps' rule in
    # pipeline.reused_output stands for that); once listed, they are what Git lists.
    assert "tenants/bookshop.bookshop/5c/cap-tenant.bookshop.globex" in named.trees
    assert dict(named.blobs) == dict(expected.blobs)
    assert named.trees == expected.trees  # the directories that held one are no longer the trees


@pytest.mark.parametrize("how", ["many apps", "deep"])
def test_a_large_or_deep_outline_is_listed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Many app directories to list are listed with one `git ls-tree -r`, and a tree deeper than
    a render writes is listed whole from the start: the same files and trees either way."""
    files = {**FILES, "tenants/bookshop.bookshop/not-a-shard/a/b/c/d/e.yaml": b"deep\n"}
    repo = committed(tmp_path, files)
    whole = eager(repo)
    if how == "many apps":
        monkeypatch.setattr(commit_tree, "_MANY_APPS", 1)
    else:
        monkeypatch.setattr(commit_tree, "_MAX_LEVELS", 3)
    read = read_tree_at(repo, "HEAD", "clusters/demo").files
    assert isinstance(read, CommitBlobs)
    read.set_aside(["tenants/bookshop.bookshop/5c/cap-tenant.bookshop.globex"])
    expected = (
        whole
        if how == "deep"
        else whole.without_directories(["tenants/bookshop.bookshop/5c/cap-tenant.bookshop.globex"])
    )
    assert dict(read.blobs) == dict(expected.blobs)


def hash_object(repo: Path, kind: str, data: bytes) -> str:
    return git(repo, "hash-object", "-t", kind, "--literally", "-w", "--stdin", stdin=data).strip()


@pytest.mark.parametrize("name", [b"a/b.yaml", b"..", b""])
def test_a_tree_object_naming_no_single_path_part_is_refused(tmp_path: Path, name: bytes) -> None:
    """A tree Git would not write (made with `hash-object --literally`) naming a file that is no
    single part of a path: refused with a GitError that names the directory, not listed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    blob = hash_object(repo, "blob", b"kind: ConfigMap\n")
    bad = hash_object(repo, "tree", b"100644 " + name + b"\0" + bytes.fromhex(blob))
    demo = hash_object(repo, "tree", b"40000 app\0" + bytes.fromhex(bad))
    clusters = hash_object(repo, "tree", b"40000 demo\0" + bytes.fromhex(demo))
    top = hash_object(repo, "tree", b"40000 clusters\0" + bytes.fromhex(clusters))
    commit = git(repo, "commit-tree", top, "-m", "by hand").strip()
    files = read_tree_at(repo, commit, "clusters/demo").files
    with pytest.raises(GitError, match="the directory app of clusters/demo/ at"):
        list(files)


def test_a_tree_object_cut_short_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    short = hash_object(repo, "tree", b"100644 a.yaml\0" + b"\x01" * 7)
    clusters = hash_object(repo, "tree", b"40000 demo\0" + bytes.fromhex(short))
    top = hash_object(repo, "tree", b"40000 clusters\0" + bytes.fromhex(clusters))
    commit = git(repo, "commit-tree", top, "-m", "by hand").strip()
    with pytest.raises(GitError, match="is no tree Git writes"):
        read_tree_at(repo, commit, "clusters/demo")
    assert subprocess.run(["git", "-C", str(repo), "fsck"], capture_output=True, check=False).returncode != 0


def test_a_directory_entry_naming_no_tree_is_refused(tmp_path: Path) -> None:
    """A tree made by hand whose directory entry (mode 40000) names a blob: Git's answer for that
    id is no tree, and the outline stops with a GitError naming the directory, not a listing."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    blob = hash_object(repo, "blob", b"kind: ConfigMap\n")
    demo = hash_object(repo, "tree", b"40000 tenants\0" + bytes.fromhex(blob))
    clusters = hash_object(repo, "tree", b"40000 demo\0" + bytes.fromhex(demo))
    top = hash_object(repo, "tree", b"40000 clusters\0" + bytes.fromhex(clusters))
    commit = git(repo, "commit-tree", top, "-m", "by hand").strip()
    with pytest.raises(GitError, match="cannot read the directory tenants of clusters/demo/ at"):
        read_tree_at(repo, commit, "clusters/demo")
