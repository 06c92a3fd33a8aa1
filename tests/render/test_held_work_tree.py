"""`render --out` into a Git work tree with a warm render pack leaves the tenant apps whose
directory already holds what the pack gives them as they are (pipeline.reused_output
.held_in_work_tree): Git vouches, from its index and a clean `diff-files`, that each file the
pack names there is on disk with the blob id the pack gives it, so the render neither lays those
apps out nor compares nor writes their files. What it writes, and what it reports, is what a
render without the cache writes and reports.

Real Git and the installed CLI on a repository rendered and committed with a cache, cloned afresh
(every file a new inode, as CI checks out), one tenant added to the sources, and the clone changed
by hand in the ways that must stop an app from being held (a file edited, committed or not; a
file removed), or must not (a file beside its files, listed in the ownership manifest: removed by
the writer as ever). Both targets: Flux lays an app out in stage directories. Then, in process, a
held file edited and another removed while the render runs (after the scan): the writer, which
asks Git again under the lock, writes them back from the pack.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.ownership import MANIFEST_FILE
from btp_gitops.generator.io import repo as repo_module
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.render_cache import RenderCache
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline import render as render_module
from btp_gitops.generator.pipeline.render import RenderRequest, RenderResult, render_into_repo
from btp_gitops.generator.pipeline.reused_output import HeldFiles
from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree

CLUSTER = "demo"
IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@localhost")
RECORDS = 3  # examples/cap-app's tenant records (acme, globex, initech): their apps come from the pack


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def held_count(stderr: str) -> int:
    found = re.search(
        r"^render: (\d+) app\(s\) in .* hold the files the render pack gives them", stderr, re.M
    )
    return int(found.group(1)) if found else 0


def sources_with_a_new_tenant(tmp_path: Path) -> Path:
    sources = tmp_path / "sources" / "cap-app"
    if not sources.exists():
        shutil.copytree(EXAMPLES / "cap-app", sources)
    return sources


def add_tenant(sources: Path) -> None:
    acme = (sources / "tenants" / "acme.yaml").read_text()
    (sources / "tenants" / "hooli.yaml").write_text(
        acme.replace("acme", "hooli").replace("2b7c9d1e", "4d7c9d1e").replace("7e1f0a4c", "7e1f0b6e")
    )


def globex_directory(cluster: Path) -> Path:
    (directory,) = {
        app_path(path).directory for path in read_tree(cluster) if app_path(path).app.endswith(".globex")
    }
    return cluster / directory


def by_hand(clone: Path, how: str) -> int:
    """Change the clone's cluster directory; how many tenant apps still hold the pack's files."""
    cluster = clone / "clusters" / CLUSTER
    app = globex_directory(cluster)
    an_object = next(path for path in sorted(app.rglob("*.yaml")) if path.name != "kustomization.yaml")
    if how == "as rendered":
        return RECORDS
    if how in ("a file edited", "a file edited and committed"):
        an_object.write_text(an_object.read_text() + "# by hand\n")
        if how.endswith("committed"):
            git(clone, "commit", "-qam", "by hand")
    elif how == "a file removed":
        an_object.unlink()
    elif how == "a file beside, owned":
        # Listed in the manifest of the directory the app is in, as a render that wrote it would:
        # the app's own files still hold the pack's, and the writer removes the one beside them.
        (app / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n")
        manifest = app.parent / MANIFEST_FILE
        manifest.write_text(manifest.read_text() + f"{app.name}/extra.yaml\n")
        return RECORDS
    return RECORDS - 1


@pytest.mark.parametrize("target", ["argocd", "flux"])
@pytest.mark.parametrize(
    "how",
    ["as rendered", "a file edited", "a file edited and committed", "a file removed", "a file beside, owned"],
)
def test_held_apps_are_left_as_they_are_and_the_tree_is_the_one_without_cache(
    run_cli: RunCli, tmp_path: Path, target: str, how: str
) -> None:
    sources = sources_with_a_new_tenant(tmp_path)
    srcs = (sources, EXAMPLES / "kyma-modules")
    common = ("--cluster", CLUSTER, "--target", target)
    cache, repo = tmp_path / "cache", tmp_path / "repo"
    done = run_cli("render", *srcs, "--out", repo, *common, "--cache-dir", cache, "--commit", "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    warm_clone, cold_clone = tmp_path / "warm", tmp_path / "cold"
    for clone in (warm_clone, cold_clone):
        git(tmp_path, "clone", "-q", str(repo), str(clone))
        held = by_hand(clone, how)
    add_tenant(sources)

    warm = run_cli(
        "render", *srcs, "--out", warm_clone, *common, "--cache-dir", cache, "-v", "-o", "json", cwd=ROOT
    )
    cold = run_cli("render", *srcs, "--out", cold_clone, *common, "--no-cache", "-v", "-o", "json", cwd=ROOT)
    assert (warm.returncode, cold.returncode) == (0, 0), warm.stderr + cold.stderr

    assert held_count(warm.stderr) == held, warm.stderr
    assert held_count(cold.stderr) == 0
    assert read_tree(warm_clone / "clusters") == read_tree(cold_clone / "clusters")
    changes = json.loads(warm.stdout)["changes"]
    assert changes == json.loads(cold.stdout)["changes"]
    assert any("hooli" in path for path in changes["added"])
    globex = [path for kind in changes.values() for path in kind if ".globex/" in path]
    if how == "as rendered":
        assert not globex
    else:  # the change by hand is undone
        assert globex, changes
    assert git(warm_clone, "status", "--porcelain", "--", f"clusters/{CLUSTER}") == git(
        cold_clone, "status", "--porcelain", "--", f"clusters/{CLUSTER}"
    )


def _request(sources: Path, out: Path, cache: Path | None, *, commit: bool = False) -> RenderRequest:
    return RenderRequest(
        sources=(sources,),
        out=out,
        cluster=CLUSTER,
        commit=commit,
        cache=RenderCache(cache) if cache is not None else None,
    )


ENGINE, SCHEMAS = EmbeddedHelm(), load_schema_registry()


def rendered_and_cloned(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """The example rendered into a repository with a cache and committed, cloned twice (for the
    render with the cache and the one without), one tenant added to the sources: the sources,
    the cache and the two clones."""
    sources = sources_with_a_new_tenant(tmp_path)
    cache, repo, warm_clone, cold_clone = (tmp_path / name for name in ("cache", "repo", "warm", "cold"))
    render_into_repo(_request(sources, repo, cache, commit=True), ENGINE, SCHEMAS)
    for clone in (warm_clone, cold_clone):
        git(tmp_path, "clone", "-q", str(repo), str(clone))
    add_tenant(sources)
    return sources, cache, warm_clone, cold_clone


def test_held_files_changed_while_the_render_runs_are_written_back_from_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources, cache, warm_clone, cold_clone = rendered_and_cloned(tmp_path)
    engine, schemas = ENGINE, SCHEMAS

    original = render_module.render_cluster
    touched: list[str] = []

    def then_edited_by_hand(*args: Any, **kwargs: Any) -> RenderResult:
        # After the scan and the render, before the writer takes the tree again under the lock.
        result = original(*args, **kwargs)
        assert len(result.held) == RECORDS, result.held
        held = sorted(result.held_files.paths)
        edited = next(path for path in held if ".acme/" in path and not path.endswith("kustomization.yaml"))
        removed = next(path for path in held if ".initech/" in path)
        cluster = warm_clone / "clusters" / CLUSTER
        (cluster / edited).write_text((cluster / edited).read_text() + "# by hand\n")
        (cluster / removed).unlink()
        touched.extend([edited, removed])
        return result

    monkeypatch.setattr(render_module, "render_cluster", then_edited_by_hand)
    warm = render_into_repo(_request(sources, warm_clone, cache), engine, schemas)
    monkeypatch.setattr(render_module, "render_cluster", original)
    cold = render_into_repo(_request(sources, cold_clone, None), engine, schemas)

    assert read_tree(warm_clone / "clusters") == read_tree(cold_clone / "clusters")
    edited, removed = touched
    assert edited in warm.changes.changed and removed in warm.changes.added, warm.changes
    assert set(cold.changes.added) < set(warm.changes.added)


def test_without_git_s_word_under_the_lock_every_held_file_is_written_from_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git cannot be asked again before the write (here: it answers nothing): no held file is
    vouched for any longer, so each is compared by the pack's text, and the tree is the same."""
    sources, cache, warm_clone, cold_clone = rendered_and_cloned(tmp_path)
    engine, schemas = ENGINE, SCHEMAS
    asked: list[str] = []
    original_text = HeldFiles.text

    def counted(self: HeldFiles, path: str) -> str:
        asked.append(path)
        return original_text(self, path)

    monkeypatch.setattr(HeldFiles, "text", counted)
    monkeypatch.setattr(repo_module, "work_tree_blobs", lambda *args, **kwargs: None)
    warm = render_into_repo(_request(sources, warm_clone, cache), engine, schemas)
    cold = render_into_repo(_request(sources, cold_clone, None), engine, schemas)

    assert len(warm.held) == RECORDS
    assert sorted(asked) == sorted(warm.held_files.paths)
    assert read_tree(warm_clone / "clusters") == read_tree(cold_clone / "clusters")
    assert (warm.changes.added, warm.changes.changed) == (cold.changes.added, cold.changes.changed)
