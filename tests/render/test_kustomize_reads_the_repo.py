"""Argo CD and Flux read an app directory through kustomize: `kustomize build` of each rendered
app must yield exactly the objects in its files (issue #7, item 5).

Every directory under examples/ is rendered (found on the filesystem, so new examples are covered
without touching this file), and every app directory of each render is built.

Real components: kustomize built from its Go module by scripts/build-tools.sh, the `btp-gitops`
CLI with the embedded Helm engine for the render. Nothing is faked.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES, ROOT, RunCli
from tests.support.tools import tool_path

pytestmark = pytest.mark.tools

CLUSTER = "demo"


def example_dirs() -> list[Path]:
    return sorted(path for path in EXAMPLES.iterdir() if path.is_dir())


def identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    metadata = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], metadata.get("namespace", ""), metadata["name"])


def objects_from_files(app: Path) -> list[dict[str, Any]]:
    """What a plain-directory reader would apply: every object file except kustomize's own."""
    files = (path for path in app.glob("*.yaml") if path.name != "kustomization.yaml")
    return sorted((yaml.safe_load(path.read_text()) for path in files), key=identity)


def objects_from_kustomize(app: Path) -> list[dict[str, Any]]:
    built = subprocess.run(
        [str(tool_path("kustomize")), "build", str(app)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert built.returncode == 0, f"kustomize build {app} failed:\n{built.stderr}"
    return sorted((doc for doc in yaml.safe_load_all(built.stdout) if doc is not None), key=identity)


@pytest.mark.parametrize("example", example_dirs(), ids=lambda path: path.name)
def test_kustomize_build_of_every_app_yields_its_files(
    tmp_path: Path, run_cli: RunCli, example: Path
) -> None:
    result = run_cli("render", example, "--out", tmp_path, "--cluster", CLUSTER, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    cluster = tmp_path / "clusters" / CLUSTER
    # Every app directory: in the cluster directory, or a tenant's in its shard directory.
    apps = sorted(path.parent for path in cluster.rglob("kustomization.yaml") if path.parent != cluster)
    assert apps, f"{example.name}: the render wrote no app directory"
    assert {p.relative_to(cluster).parts[0] for p in apps} == {
        p.name for p in cluster.iterdir() if p.is_dir()
    }
    if example.name == "cap-app":
        assert sum(1 for p in apps if p.relative_to(cluster).parts[0] == "tenants") == 4

    for app in apps:
        from_files = objects_from_files(app)
        assert from_files, f"{app.name}: no object files"
        from_kustomize = objects_from_kustomize(app)
        assert [identity(o) for o in from_kustomize] == [identity(o) for o in from_files], app.name
        assert from_kustomize == from_files, app.name
