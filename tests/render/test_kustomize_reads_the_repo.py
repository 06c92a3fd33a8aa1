"""Argo CD and Flux read an app directory through kustomize: `kustomize build` of each rendered
app must yield exactly the objects in its files.

Real components: kustomize built from its Go module by scripts/build-tools.sh, the embedded Helm
engine for the render. Nothing is faked.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, ROOT, RunCli
from tests.support.tools import tool_path

pytestmark = pytest.mark.tools


def test_kustomize_build_yields_the_rendered_objects(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("render", EXAMPLES / "btp-operator", "--out", tmp_path, "--cluster", "demo", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    app = tmp_path / "clusters/demo/btp-operator"
    built = subprocess.run(
        [str(tool_path("kustomize")), "build", str(app)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    from_kustomize = sorted(
        (yaml.safe_load_all(built.stdout)),
        key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]),
    )
    from_files = sorted(
        (yaml.safe_load(p.read_text()) for p in app.glob("*.yaml") if p.name != "kustomization.yaml"),
        key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]),
    )
    assert len(from_files) == 24
    assert from_kustomize == from_files
