"""scripts/release.py: the gate of the release workflow and its image-tag rule, run as the
workflow runs it (`python scripts/release.py check TAG` in a Git checkout with its tags)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import git
import pytest

import btp_gitops
from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "release.py"
IDENTITY = {
    "GIT_AUTHOR_NAME": "dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
}


def checkout(root: Path, version: str, *, chart: str | None = None, plugin: str | None = None) -> Path:
    """A repository holding the three files the script reads, committed."""
    (root / "src" / "btp_gitops").mkdir(parents=True)
    (root / "src" / "btp_gitops" / "__init__.py").write_text(
        f'"""btp-gitops."""\n\n__version__ = "{version}"\n'
    )
    (root / "charts" / "btp-gitops").mkdir(parents=True)
    (root / "charts" / "btp-gitops" / "Chart.yaml").write_text(
        f'apiVersion: v2\nname: btp-gitops\nversion: {chart or version}\nappVersion: "{chart or version}"\n'
    )
    (root / "helm-plugin").mkdir()
    (root / "helm-plugin" / "plugin.yaml").write_text(
        f"# comment: version: 9.9.9\napiVersion: v1\nname: btp-gitops\nversion: {plugin or version}\n"
    )
    with git.Repo.init(root, initial_branch="main") as repo:
        repo.git.add("--all")
        repo.git.commit("-m", "release", env=IDENTITY)
    return root


def tag(root: Path, *names: str) -> None:
    with git.Repo(root) as repo:
        for name in names:
            repo.create_tag(name)


def check(root: Path, tag_name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "check", tag_name, "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def outputs(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert result.returncode == 0, result.stderr
    return dict(line.split("=", 1) for line in result.stdout.splitlines())


def test_the_first_final_release_is_latest(tmp_path: Path) -> None:
    root = checkout(tmp_path / "repo", "0.1.0")
    tag(root, "v0.1.0")

    assert outputs(check(root, "v0.1.0")) == {
        "version": "0.1.0",
        "prerelease": "false",
        "latest": "true",
        "image-tags": "0.1.0 latest",
    }


def test_a_patch_of_an_older_line_leaves_latest_where_it_is(tmp_path: Path) -> None:
    root = checkout(tmp_path / "repo", "0.1.5")
    tag(root, "v0.1.4", "v0.2.0", "v0.1.5", "v0.3.0rc1")

    result = outputs(check(root, "v0.1.5"))

    assert result["latest"] == "false"
    assert result["image-tags"] == "0.1.5"


def test_numbers_compare_as_numbers_and_pre_releases_do_not_count(tmp_path: Path) -> None:
    root = checkout(tmp_path / "repo", "0.10.0")
    tag(root, "v0.9.0", "v0.10.0", "v0.11.0rc1", "v0.11.0.dev3", "vnext")

    assert outputs(check(root, "v0.10.0"))["image-tags"] == "0.10.0 latest"


def test_a_pre_release_is_never_latest(tmp_path: Path) -> None:
    root = checkout(tmp_path / "repo", "0.2.0rc1")
    tag(root, "v0.1.0", "v0.2.0rc1")

    assert outputs(check(root, "v0.2.0rc1")) == {
        "version": "0.2.0rc1",
        "prerelease": "true",
        "latest": "false",
        "image-tags": "0.2.0rc1",
    }


@pytest.mark.parametrize(
    ("versions", "tag_name", "message"),
    [
        ({}, "v0.1.1", "tag v0.1.1 does not match btp_gitops.__version__ 0.1.0 (expected v0.1.0)"),
        ({}, "0.1.0", "tag 0.1.0 does not match btp_gitops.__version__ 0.1.0 (expected v0.1.0)"),
        (
            {"chart": "0.0.9"},
            "v0.1.0",
            "charts/btp-gitops/Chart.yaml: version is 0.0.9, the release is 0.1.0",
        ),
        ({"plugin": "0.2.0"}, "v0.1.0", "helm-plugin/plugin.yaml: version is 0.2.0, the release is 0.1.0"),
    ],
)
def test_a_tag_that_disagrees_with_the_sources_stops_the_release(
    tmp_path: Path, versions: dict[str, str], tag_name: str, message: str
) -> None:
    root = checkout(tmp_path / "repo", "0.1.0", **versions)

    result = check(root, tag_name)

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"release: {message}\n"


def test_this_checkout_is_releasable_as_its_own_version() -> None:
    """The real files agree: tagging v<__version__> now would pass the gate."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "check", f"v{btp_gitops.__version__}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert outputs(result)["version"] == btp_gitops.__version__
