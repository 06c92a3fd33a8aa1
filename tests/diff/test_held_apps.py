"""`diff --against REF` with a warm render pack leaves out the tenant apps the commit holds as the
pack gives them (the same Git tree id, pipeline.reused_output.held_directories), and shows
exactly what a diff without the cache shows.

Real Git and the installed CLI: a repository rendered and committed with a cache, cloned afresh,
one tenant added to the sources and the commit changed by hand in the ways that must stop an
app from being left out: a file of it edited, a copy of it in a second directory (its objects
are then in two places, and compared across both), a file added to its directory. For both
targets: Flux lays an app out in stage directories, so its tree holds trees.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from btp_gitops.generator.core.layout import app_path
from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree

CLUSTER = "demo"
IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@localhost")
# examples/cap-app: the provider's app and three tenant records' (acme, globex, initech); the
# provider's is rendered anew on every render, the records' are taken from the pack.
TENANT_APPS = 4
RECORDS = 3


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def held_count(stderr: str) -> int:
    found = re.search(r"^diff: (\d+) app\(s\) at .* hold the files the render pack gives them", stderr, re.M)
    return int(found.group(1)) if found else 0


def tenant_directories(cluster: Path) -> list[str]:
    return sorted(
        {
            app_path(path).directory
            for path in read_tree(cluster)
            if app_path(path).app.startswith("cap-tenant.")
        }
    )


def by_hand(clone: Path, how: str) -> int:
    """Change the committed cluster directory; how many tenant apps stay as the pack has them."""
    cluster = clone / "clusters" / CLUSTER
    directories = tenant_directories(cluster)
    assert len(directories) == TENANT_APPS
    first = cluster / next(directory for directory in directories if directory.endswith(".globex"))
    if how == "as rendered":
        return RECORDS
    if how == "a file edited":
        edited = next(path for path in sorted(first.rglob("*.yaml")) if path.name != "kustomization.yaml")
        edited.write_text(edited.read_text() + "# by hand\n")
    elif how == "a second copy":  # the app flat as well as sharded: objects in two places
        shutil.copytree(first, cluster / first.name)
    elif how == "a file added":
        (first / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", f"{how} by hand")
    return RECORDS - 1


@pytest.mark.parametrize("target", ["argocd", "flux"])
@pytest.mark.parametrize("how", ["as rendered", "a file edited", "a second copy", "a file added"])
def test_held_apps_are_left_out_and_the_report_is_the_one_without_cache(
    run_cli: RunCli, tmp_path: Path, target: str, how: str
) -> None:
    sources = tmp_path / "sources"
    shutil.copytree(EXAMPLES / "cap-app", sources / "cap-app")
    srcs = (sources / "cap-app", EXAMPLES / "kyma-modules")
    common = ("--cluster", CLUSTER, "--target", target)
    cache = tmp_path / "cache"
    repo = tmp_path / "repo"
    done = run_cli("render", *srcs, "--out", repo, *common, "--cache-dir", cache, "--commit", "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    held = by_hand(clone, how)
    acme = (sources / "cap-app" / "tenants" / "acme.yaml").read_text()
    (sources / "cap-app" / "tenants" / "hooli.yaml").write_text(
        acme.replace("acme", "hooli").replace("2b7c9d1e", "4d7c9d1e").replace("7e1f0a4c", "7e1f0b6e")
    )

    against = ("--against", "HEAD", "--repo", clone, "-o", "json")
    warm = run_cli("diff", *srcs, *against, *common, "--cache-dir", cache, "-v", cwd=ROOT)
    assert warm.returncode == 0, warm.stderr
    cold = run_cli("diff", *srcs, *against, *common, "--no-cache", cwd=ROOT)
    assert cold.returncode == 0, cold.stderr

    assert json.loads(warm.stdout)["changes"] == json.loads(cold.stdout)["changes"]
    assert held_count(warm.stderr) == held, warm.stderr
    assert held_count(cold.stderr) == 0
    changed = {(change["app"], change["change"]) for change in json.loads(warm.stdout)["changes"]}
    assert any("hooli" in app and kind == "added" for app, kind in changed)
    if how != "as rendered":  # the change by hand is shown: the app was compared
        assert any(app.endswith(".globex") for app, _ in changed), changed


def _change_the_texts(cache: Path) -> None:
    """One bit of the pack's blob (its apps' texts) flipped: the signed header and index hold, the
    blob's SHA-256 in the header no longer does. Whoever can write the cache directory can do it."""
    (pack,) = (cache / "packs").glob("*.pack")
    header, body = pack.read_bytes().split(b"\n", 1)
    index = json.loads(header)["index"]
    data = bytearray(body)
    data[index + (len(data) - index) // 2] ^= 0x01
    pack.write_bytes(header + b"\n" + bytes(data))


@pytest.mark.parametrize("how", ["as rendered", "a file edited"])
def test_a_pack_whose_texts_changed_is_set_aside_once_a_text_is_needed(
    run_cli: RunCli, tmp_path: Path, how: str
) -> None:
    sources = tmp_path / "sources"
    shutil.copytree(EXAMPLES / "cap-app", sources / "cap-app")
    srcs = (sources / "cap-app", EXAMPLES / "kyma-modules")
    common = ("--cluster", CLUSTER)
    cache, repo, clone = tmp_path / "cache", tmp_path / "repo", tmp_path / "clone"
    done = run_cli("render", *srcs, "--out", repo, *common, "--cache-dir", cache, "--commit", "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    held = by_hand(clone, how)
    _change_the_texts(cache)

    against = ("--against", "HEAD", "--repo", clone, "-o", "json")
    warm = run_cli("diff", *srcs, *against, *common, "--cache-dir", cache, "-v", cwd=ROOT)
    cold = run_cli("diff", *srcs, *against, *common, "--no-cache", cwd=ROOT)
    assert (warm.returncode, cold.returncode) == (0, 0), warm.stderr + cold.stderr
    assert json.loads(warm.stdout)["changes"] == json.loads(cold.stdout)["changes"]
    if how == "as rendered":
        # Every app from the pack is left out: the diff reads none of its texts.
        assert held_count(warm.stderr) == held and "set aside" not in warm.stderr
    else:
        # The edited app is laid out from the pack: its texts are checked first, do not hold, and
        # the diff starts again without the pack.
        assert held_count(warm.stderr) == 0 and "set aside: its texts changed" in warm.stderr, warm.stderr

    # A render needs every text: it sets the pack aside, writes what it would without a cache,
    # and a new pack, which the next diff uses again.
    out, plain = tmp_path / "out", tmp_path / "plain"
    rendered = run_cli("render", *srcs, "--out", out, *common, "--cache-dir", cache, "-v", cwd=ROOT)
    uncached = run_cli("render", *srcs, "--out", plain, *common, "--no-cache", cwd=ROOT)
    assert (rendered.returncode, uncached.returncode) == (0, 0), rendered.stderr + uncached.stderr
    assert read_tree(out) == read_tree(plain)
    assert ("set aside: its texts changed" in rendered.stderr) == (how == "as rendered"), rendered.stderr
    again = run_cli("diff", *srcs, *against, *common, "--cache-dir", cache, "-v", cwd=ROOT)
    assert again.returncode == 0 and "set aside" not in again.stderr, again.stderr
    assert json.loads(again.stdout)["changes"] == json.loads(cold.stdout)["changes"]
