"""A render into a Git work tree takes Git's word for the tracked files it vouches for, and for
nothing else (io.git_blobs); `diff --against REF` compares blob ids and reads only what differs.

Real Git, the installed CLI, a fresh `git clone` of a rendered and committed repository (new
inodes, as in CI). What must hold, whatever Git's index says: the tree written is byte for byte
the one a render into a plain directory writes, and a file whose bytes are not the rendered ones
is rewritten: edited in the work tree (dirty), edited and committed (Git vouches for other
bytes), hidden from Git's comparison (assume-unchanged, skip-worktree), given a blob id that is
not its bytes', or converted on checkout by a committed `.gitattributes`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.io.output_tree import MAX_TREE_FILE_BYTES
from tests.conftest import CLI, EXAMPLES, ROOT, RunCli, read_tree

CLUSTER = "demo"
SOURCES = (EXAMPLES / "cap-app", EXAMPLES / "kyma-modules")
IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@localhost")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def render(run_cli: RunCli, out: Path, *sources: Path) -> None:
    done = run_cli(
        "render", *(sources or SOURCES), "--out", out, "--cluster", CLUSTER, "--no-cache", "-q", cwd=ROOT
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository rendered and committed once (its first render writes every file)."""
    repo = tmp_path_factory.mktemp("committed") / "repo"
    done = subprocess.run(
        [
            str(CLI),
            "render",
            *map(str, SOURCES),
            "--out",
            str(repo),
            "--cluster",
            CLUSTER,
            "--no-cache",
            "--commit",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return repo


@pytest.fixture
def clone(committed: Path, tmp_path: Path) -> Path:
    """A fresh clone: every file has a new inode, Git's index is the checkout's."""
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(committed), str(target)], check=True, timeout=60)
    return target


def cluster(repo: Path) -> Path:
    return repo / "clusters" / CLUSTER


def a_tenant_file(repo: Path) -> str:
    """A rendered object file of a tenant app, relative to the cluster directory."""
    return next(
        path
        for path in sorted(read_tree(cluster(repo)))
        if app_path(path).app.startswith("cap-tenant.") and not path.endswith("kustomization.yaml")
    )


def identities(root: Path) -> dict[str, tuple[int, int]]:
    return {
        path.relative_to(root).as_posix(): (path.lstat().st_ino, path.lstat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    }


def test_a_fresh_clone_keeps_every_unchanged_file_and_gets_the_plain_directory_bytes(
    run_cli: RunCli, committed: Path, clone: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(committed, plain, ignore=shutil.ignore_patterns(".git"))  # no Git: every file read
    before = identities(cluster(clone))
    render(run_cli, clone)
    render(run_cli, plain)
    assert read_tree(cluster(clone)) == read_tree(cluster(plain)) == read_tree(cluster(committed))
    assert identities(cluster(clone)) == before  # nothing rewritten, nothing touched
    assert git(clone, "status", "--porcelain") == ""


@pytest.mark.parametrize("where", ["git", "plain"])
def test_a_tracked_file_edited_in_the_work_tree_is_rewritten(
    run_cli: RunCli, committed: Path, clone: Path, tmp_path: Path, where: str
) -> None:
    repo = clone
    if where == "plain":
        repo = tmp_path / "plain"
        shutil.copytree(committed, repo, ignore=shutil.ignore_patterns(".git"))
    path = a_tenant_file(repo)
    expected = (cluster(repo) / path).read_bytes()
    (cluster(repo) / path).write_bytes(expected.replace(b"kind:", b"kind: ") + b"# edited\n")
    render(run_cli, repo)
    assert (cluster(repo) / path).read_bytes() == expected
    assert read_tree(cluster(repo)) == read_tree(cluster(committed))


def test_an_edit_committed_to_a_rendered_file_is_rewritten(
    run_cli: RunCli, committed: Path, clone: Path
) -> None:
    """Git vouches for the committed bytes: their blob id is not the rendered bytes', so the file
    is read and rewritten."""
    path = a_tenant_file(clone)
    expected = (cluster(clone) / path).read_bytes()
    (cluster(clone) / path).write_bytes(expected + b"# committed by hand\n")
    git(clone, "commit", "-qam", "an edit by hand")
    render(run_cli, clone)
    assert (cluster(clone) / path).read_bytes() == expected
    assert git(clone, "status", "--porcelain").split() == ["M", f"clusters/{CLUSTER}/{path}"]


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_file_git_is_told_not_to_compare_is_not_trusted(
    run_cli: RunCli, committed: Path, clone: Path, flag: str
) -> None:
    """With either flag Git reports the edited file clean, with the blob id of the rendered bytes:
    exactly the id the writer would take to leave the file as it is."""
    path = a_tenant_file(clone)
    expected = (cluster(clone) / path).read_bytes()
    git(clone, "update-index", flag, f"clusters/{CLUSTER}/{path}")
    (cluster(clone) / path).write_bytes(b"kind: Edited\n")
    assert git(clone, "diff-files", "--name-only") == ""  # Git does not see the edit
    render(run_cli, clone)
    assert (cluster(clone) / path).read_bytes() == expected


def test_an_index_entry_claiming_the_rendered_blob_for_other_bytes_is_not_trusted(
    run_cli: RunCli, committed: Path, clone: Path
) -> None:
    """The index says the file holds the rendered bytes' blob (its id set by hand, as a tool
    could); its stat data cannot match the file, so Git reports it and the writer reads it."""
    path = a_tenant_file(clone)
    expected = (cluster(clone) / path).read_bytes()
    (cluster(clone) / path).write_bytes(b"kind: Edited\n")
    rendered_id = (
        subprocess.run(
            ["git", "-C", str(clone), "hash-object", "-w", "--stdin"],
            input=expected,
            capture_output=True,
            check=True,
            timeout=60,
        )
        .stdout.decode()
        .strip()
    )
    git(clone, "update-index", "--cacheinfo", f"100644,{rendered_id},clusters/{CLUSTER}/{path}")
    render(run_cli, clone)
    assert (cluster(clone) / path).read_bytes() == expected


def test_files_converted_on_checkout_by_a_committed_gitattributes_are_rewritten(
    run_cli: RunCli, committed: Path, tmp_path: Path
) -> None:
    """A fork commits `* text eol=crlf`: the clone's files hold CRLF line ends, Git calls them
    clean with the LF blob's id (the rendered bytes'). The render writes LF, as into a plain
    directory."""
    source = tmp_path / "source"
    subprocess.run(["git", "clone", "-q", str(committed), str(source)], check=True, timeout=60)
    (source / ".gitattributes").write_text("* text eol=crlf\n")
    git(source, "add", ".gitattributes")
    git(source, "commit", "-qm", "line ends")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True, timeout=60)
    path = a_tenant_file(clone)
    assert b"\r\n" in (cluster(clone) / path).read_bytes()
    assert git(clone, "status", "--porcelain") == ""
    render(run_cli, clone)
    assert read_tree(cluster(clone)) == read_tree(cluster(committed))


def test_diff_against_head_shows_exactly_what_differs(run_cli: RunCli, committed: Path, clone: Path) -> None:
    """One tenant added and one committed by hand: the diff against HEAD reads and shows both
    (the apps where no file differs are left out, as they hold no change), the same report as
    against the work tree as a directory, which reads every file."""
    path = a_tenant_file(clone)
    (cluster(clone) / path).write_bytes((cluster(clone) / path).read_bytes() + b"# by hand\n")
    git(clone, "commit", "-qam", "an edit by hand")
    sources = Path(str(clone) + "-sources")
    shutil.copytree(EXAMPLES / "cap-app", sources / "cap-app")
    acme = (sources / "cap-app" / "tenants" / "acme.yaml").read_text()
    (sources / "cap-app" / "tenants" / "initech.yaml").write_text(
        acme.replace("acme", "initech").replace("2b7c9d1e", "9e0c9d1e").replace("7e1f0a4c", "7e1f0a5d")
    )
    arguments = ("--cluster", CLUSTER, "--no-cache", "-o", "json")
    srcs = (sources / "cap-app", EXAMPLES / "kyma-modules")
    at_head = run_cli("diff", *srcs, "--against", "HEAD", "--repo", clone, *arguments, cwd=ROOT)
    assert at_head.returncode == 0, at_head.stderr
    as_directory = run_cli("diff", *srcs, "--against", clone, *arguments, cwd=ROOT)
    assert as_directory.returncode == 0, as_directory.stderr
    head, directory = json.loads(at_head.stdout), json.loads(as_directory.stdout)
    assert head["changes"] == directory["changes"]
    changed = {(change["app"], change["change"]) for change in head["changes"]}
    assert (app_path(path).app, "changed") in changed
    assert any(
        app.startswith("cap-tenant.") and "initech" in app and kind == "added" for app, kind in changed
    )


def test_diff_against_head_refuses_a_blob_over_the_limit_before_reading_it(
    run_cli: RunCli, committed: Path, clone: Path
) -> None:
    """A committed file of the cluster directory too large to be a rendered one: its id is no
    rendered file's, so it is to be read, and its size (from the object's header) refuses it."""
    path = a_tenant_file(clone)
    with (cluster(clone) / path).open("ab") as file:
        file.truncate(MAX_TREE_FILE_BYTES + 1)
    git(clone, "commit", "-qam", "a large file")
    done = run_cli(
        "diff", *SOURCES, "--against", "HEAD", "--repo", clone, "--cluster", CLUSTER, "--no-cache", cwd=ROOT
    )
    assert done.returncode != 0
    assert "too large" in done.stderr and path in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert os.path.getsize(cluster(clone) / path) == MAX_TREE_FILE_BYTES + 1


def test_a_render_filling_the_cache_decides_each_file_as_one_without_a_cache(
    run_cli: RunCli, committed: Path, clone: Path, tmp_path: Path
) -> None:
    """A render with an empty cache packs every tenant app it renders, and takes the blob ids it
    made for packing as the ids of the rendered bytes (reused_output.ClusterLayout.add_rendered).
    They are the ids the writer would hash: the same files are rewritten (edited in the work tree,
    edited and committed, hidden from Git's comparison) and every other one is left as it is."""
    tenant_files = [
        path
        for path in sorted(read_tree(cluster(clone)))
        if app_path(path).app.startswith("cap-tenant.") and not path.endswith("kustomization.yaml")
    ]
    edited, committed_edit, hidden = tenant_files[:3]
    (cluster(clone) / edited).write_bytes(b"kind: Edited\n")
    (cluster(clone) / committed_edit).write_bytes(b"kind: Committed\n")
    git(clone, "commit", "-qam", "an edit by hand")
    git(clone, "update-index", "--assume-unchanged", f"clusters/{CLUSTER}/{hidden}")
    (cluster(clone) / hidden).write_bytes(b"kind: Hidden\n")
    before = identities(cluster(clone))
    done = run_cli(
        "render",
        *SOURCES,
        "--out",
        clone,
        "--cluster",
        CLUSTER,
        "--cache-dir",
        tmp_path / "cache",
        "-o",
        "json",
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "cache").rglob("*.pack"))  # the render filled the cache
    assert read_tree(cluster(clone)) == read_tree(cluster(committed))
    after = identities(cluster(clone))
    assert {path for path in before if after.get(path) != before[path]} == {edited, committed_edit, hidden}
    assert sorted(json.loads(done.stdout)["changes"]["changed"]) == sorted([edited, committed_edit, hidden])


def _of_a_record(path: str) -> bool:
    app = app_path(path).app
    return app.startswith("cap-tenant.") and not app.endswith("-provider")


def test_a_render_filling_the_cache_hashes_no_tenant_file_git_vouches_for(
    committed: Path, clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, to see what the writer asks Git's word about: with an empty cache, no file of
    an app the render packs (a tenant record's) is hashed to compare it: the ids packing made are
    used. The apps that are not packed still are: the application's, the domains', the wiring, and
    the provider tenant's (derived from its application, it has no record)."""
    from btp_gitops.generator.cli import main  # noqa: PLC0415
    from btp_gitops.generator.io.git_blobs import VouchedBlobs  # noqa: PLC0415

    asked: list[str] = []
    holds = VouchedBlobs.holds

    def recording(self: VouchedBlobs, path: str, data: bytes) -> bool:
        asked.append(path)
        return holds(self, path, data)

    monkeypatch.setattr(VouchedBlobs, "holds", recording)
    monkeypatch.chdir(ROOT)
    arguments = ["render", *map(str, SOURCES), "--out", str(clone), "--cluster", CLUSTER, "-q"]
    assert main([*arguments, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert asked and not [path for path in asked if _of_a_record(path)]
    asked.clear()
    assert main([*arguments, "--no-cache"]) == 0  # without a cache, every file is hashed
    assert [path for path in asked if _of_a_record(path)]
    assert read_tree(cluster(clone)) == read_tree(cluster(committed))
