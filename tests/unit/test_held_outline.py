"""What `diff --against REF` knows of the apps it leaves out (pipeline.reused_output): which are
held (their tree id at the commit is the pack's), and where their files are, for the layout
check that reads the compared tree after the render (pipeline.diff). Against real Git trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.core.ownership import MANIFEST_FILE
from btp_gitops.generator.io.commit_tree import CommitBlobs, read_tree_at
from btp_gitops.generator.io.git_blobs import blob_id
from btp_gitops.generator.io.packed_app import AppFiles, PackedApp
from btp_gitops.generator.pipeline.cached_sources import ReusedApp
from btp_gitops.generator.pipeline.reused_output import held_directories, held_paths
from btp_gitops.generator.wiring.layout import detect_layout
from tests.unit.test_git_blobs import git

GROUP = "bookshop.bookshop"
FLAT = {
    "captenant-acme.yaml": "kind: CAPTenant\nmetadata: {name: acme}\n",
    "kustomization.yaml": "resources: []\n",
}
STAGED = {
    "01-tenant/captenant-globex.yaml": "kind: CAPTenant\nmetadata: {name: globex}\n",
    "01-tenant/kustomization.yaml": "resources: [captenant-globex.yaml]\n",
    "02-routes/virtualservice-globex.yaml": "kind: VirtualService\n",
    "02-routes/kustomization.yaml": "resources: [virtualservice-globex.yaml]\n",
}


def reused(app: str, files: dict[str, str]) -> ReusedApp:
    content = AppFiles.rendered(
        [], dict(files), {name: blob_id(text.encode()) for name, text in files.items()}
    )
    assert content is not None
    stages = sorted({name.partition("/")[0] for name in files if "/" in name}) or None
    return ReusedApp(PackedApp(app, GROUP, [], content, stages, ""), [])


def commit(tmp_path: Path, apps: dict[str, dict[str, str]], loose: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    cluster = repo / "clusters" / "demo"
    for app, files in apps.items():
        for name, text in files.items():
            path = cluster / app_directory(app, GROUP) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for name, text in loose.items():
        (cluster / name).parent.mkdir(parents=True, exist_ok=True)
        (cluster / name).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rendered")
    return repo


def at_head(repo: Path) -> CommitBlobs:
    files = read_tree_at(repo, "HEAD", "clusters/demo").files
    assert isinstance(files, CommitBlobs)
    return files


def test_an_app_is_held_by_its_tree_id_unless_it_names_a_manifest(tmp_path: Path) -> None:
    planted = {**FLAT, MANIFEST_FILE: "# planted in the app\n"}
    apps = {
        "cap-tenant.bookshop.acme": FLAT,
        "cap-tenant.bookshop.globex": STAGED,
        "cap-tenant.bookshop.x": planted,
    }
    files = at_head(commit(tmp_path, apps, {"cap.bookshop.bookshop/deployment.yaml": "kind: Deployment\n"}))
    rendered = [reused(app, app_files) for app, app_files in apps.items()]
    held = held_directories(rendered, files.known_tree_ids())
    # The app naming a manifest is not held though its tree is the pack's: the compared tree
    # leaves manifests out (by name), so its directory is not what the pack gives.
    assert held == {
        app_directory(app, GROUP) for app in ("cap-tenant.bookshop.acme", "cap-tenant.bookshop.globex")
    }
    edited = [reused("cap-tenant.bookshop.acme", {**FLAT, "kustomization.yaml": "resources: [x]\n"})]
    assert held_directories(edited, files.known_tree_ids()) == frozenset()


@pytest.mark.parametrize("staged", [True, False])
def test_the_held_apps_places_tell_the_layout_as_their_files_do(tmp_path: Path, staged: bool) -> None:
    """Whatever the apps set aside hold, the layout read from the rest and their places is the one
    read from every file: Flux's stage directories are seen even when only held apps have them."""
    tenant = STAGED if staged else FLAT
    apps = {"cap-tenant.bookshop.globex": tenant}
    repo = commit(
        tmp_path, apps, {MANIFEST_FILE: "# the cluster's\n", "cap.bookshop.bookshop/a.yaml": "kind: A\n"}
    )
    everything, files = dict(at_head(repo).items()), at_head(repo)
    rendered = [reused(app, app_files) for app, app_files in apps.items()]
    held = held_directories(rendered, files.known_tree_ids())
    assert held == {app_directory("cap-tenant.bookshop.globex", GROUP)}
    places = held_paths(rendered, held)
    assert len(places) == (2 if staged else 1)
    files.set_aside(held)
    rest = dict(files.items())
    assert not any(path.startswith("tenants/") for path in rest)
    layout, full = detect_layout({**rest, **dict.fromkeys(places, b"")}), detect_layout(everything)
    assert layout == full and full is not None
    assert full.target == ("flux" if staged else "argocd")
