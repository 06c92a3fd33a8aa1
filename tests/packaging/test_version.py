"""`btp_gitops.__version__` is the one source of the version; every copy agrees with it, and
scripts/set-version.py moves them all together."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from btp_gitops import __version__
from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "set-version.py"
FILES = (
    "src/btp_gitops/__init__.py",
    "charts/btp-gitops/Chart.yaml",
    "charts/btp-gitops/README.md",
    "helm-plugin/plugin.yaml",
    "argocd-cmp/repo-server-patch.yaml",
    "docs/gitops/github-actions.md",
)
ACTION_REF = re.compile(r"btp-gitops/\.github/actions/render@v(\S+)")
CHART_INSTALL = re.compile(
    r"helm install btp-gitops oci://ghcr\.io/btp-gitops/charts/btp-gitops --version (\S+)"
)


def versions_written(root: Path) -> dict[str, list[str]]:
    """Every copy of the version, read the way its users read it."""
    chart = yaml.safe_load((root / "charts/btp-gitops/Chart.yaml").read_text())
    plugin = yaml.safe_load((root / "helm-plugin/plugin.yaml").read_text())
    patch = yaml.safe_load((root / "argocd-cmp/repo-server-patch.yaml").read_text())
    (sidecar,) = [c for c in patch["spec"]["template"]["spec"]["containers"] if c["name"] == "btp-gitops"]
    source = (root / "src/btp_gitops/__init__.py").read_text()
    return {
        "__version__": re.findall(r'^__version__ = "([^"]+)"$', source, re.MULTILINE),
        "chart version": [str(chart["version"])],
        "chart appVersion": [str(chart["appVersion"])],
        "helm plugin": [str(plugin["version"])],
        "argocd sidecar image tag": [sidecar["image"].rpartition(":")[2]],
        "docs action refs": ACTION_REF.findall((root / "docs/gitops/github-actions.md").read_text()),
        "chart README installs": CHART_INSTALL.findall((root / "charts/btp-gitops/README.md").read_text()),
    }


def test_every_copy_agrees_with_version() -> None:
    written = versions_written(ROOT)
    assert written["docs action refs"], "docs/gitops/github-actions.md no longer shows the action's ref"
    assert written["chart README installs"], "the chart README no longer installs a published version"
    assert {name: sorted(set(found)) for name, found in written.items()} == {
        name: [__version__] for name in written
    }


def test_the_installed_metadata_has_the_version() -> None:
    assert importlib.metadata.version("btp-gitops") == __version__


def test_check_mode_agrees_on_the_checkout() -> None:
    result = subprocess.run(
        [sys.executable, SCRIPT, "--check"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (result.returncode, result.stderr) == (0, "")


@pytest.fixture
def copy_of_the_files(tmp_path: Path) -> Path:
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    return tmp_path


def set_version(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, SCRIPT, *args, "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


def test_set_version_rewrites_every_copy_and_nothing_else(copy_of_the_files: Path) -> None:
    root = copy_of_the_files
    before = {name: (root / name).read_text() for name in FILES}
    result = set_version(root, "12.34.5-rc.6")
    assert result.returncode == 0, result.stderr
    written = versions_written(root)
    assert {name: sorted(set(found)) for name, found in written.items()} == {
        name: ["12.34.5-rc.6"] for name in written
    }
    for name in FILES:
        for old, new in changed_lines(before[name], (root / name).read_text()):
            assert new == old.replace(__version__, "12.34.5-rc.6"), name
    assert set_version(root, "--check").returncode == 0


def test_check_mode_names_a_copy_that_disagrees(copy_of_the_files: Path) -> None:
    plugin = copy_of_the_files / "helm-plugin/plugin.yaml"
    plugin.write_text(plugin.read_text().replace(f"version: {__version__}", "version: 9.9.9"))
    result = set_version(copy_of_the_files, "--check")
    assert result.returncode == 1
    assert "helm-plugin/plugin.yaml" in result.stderr
    assert "9.9.9" in result.stderr
    assert "Chart.yaml" not in result.stderr


def test_a_copy_that_cannot_be_found_changes_nothing(copy_of_the_files: Path) -> None:
    chart = copy_of_the_files / "charts/btp-gitops/Chart.yaml"
    chart.write_text(chart.read_text().replace("appVersion:", "# appVersion removed:"))
    before = {name: (copy_of_the_files / name).read_text() for name in FILES}
    result = set_version(copy_of_the_files, "2.0.0")
    assert result.returncode != 0
    assert "Chart.yaml" in result.stderr
    assert {name: (copy_of_the_files / name).read_text() for name in FILES} == before


def test_a_version_that_is_not_semver_is_refused(copy_of_the_files: Path) -> None:
    result = set_version(copy_of_the_files, "v2")
    assert result.returncode == 2
    assert versions_written(copy_of_the_files)["__version__"] == [__version__]
