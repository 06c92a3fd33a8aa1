"""The shipped Argo CD Config Management Plugin, run the way the CMP server runs it.

Argo CD itself cannot run here; the sidecar's contract is small enough to exercise directly: the
discover command runs in the app's source directory and matches on non-empty stdout, the
generate command runs there with ARGOCD_* variables and must print only manifests on stdout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import CLI, EXAMPLES, ROOT, RunCli

PLUGIN = ROOT / "argocd-cmp" / "plugin.yaml"


def plugin_spec() -> dict[str, Any]:
    plugin = yaml.safe_load(PLUGIN.read_text())
    assert (plugin["apiVersion"], plugin["kind"]) == ("argoproj.io/v1alpha1", "ConfigManagementPlugin")
    return plugin["spec"]  # type: ignore[no-any-return]


def run_like_argocd(command: list[str], app_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        "PATH": f"{CLI.parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(app_dir),
        "ARGOCD_APP_NAME": "btp-operator",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_SOURCE_PATH": "btp-operator",
        **env,
    }
    return subprocess.run(
        command, check=False, cwd=app_dir, env=environment, capture_output=True, text=True, timeout=120
    )


def copied_example(tmp_path: Path) -> Path:
    """The example app as the repo-server checks it out (the chart path is relative to it)."""
    shutil.copytree(EXAMPLES / "btp-operator", tmp_path / "examples" / "btp-operator")
    shutil.copytree(ROOT / "charts" / "sap-btp-operator", tmp_path / "charts" / "sap-btp-operator")
    return tmp_path / "examples" / "btp-operator"


def test_discover_matches_only_btp_gitops_sources(tmp_path: Path) -> None:
    discover = plugin_spec()["discover"]["find"]["command"]
    app = copied_example(tmp_path)
    assert run_like_argocd(discover, app).stdout.strip()
    assert not run_like_argocd(discover, tmp_path / "charts" / "sap-btp-operator").stdout.strip()


def test_generate_prints_the_rendered_objects_only(tmp_path: Path, run_cli: RunCli) -> None:
    app = copied_example(tmp_path)
    generated = run_like_argocd(plugin_spec()["generate"]["command"], app)
    assert generated.returncode == 0, generated.stderr
    documents = list(yaml.safe_load_all(generated.stdout))
    assert all(isinstance(d, dict) and d.get("kind") and d.get("metadata") for d in documents)
    assert "Kustomization" not in {d["kind"] for d in documents}
    rendered = run_cli("render", app, "--out", tmp_path / "repo", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    files = sorted((tmp_path / "repo" / "clusters" / "default").rglob("*.yaml"))
    in_repo = [yaml.safe_load(f.read_text()) for f in files if f.name != "kustomization.yaml"]
    assert documents == in_repo


def test_generate_passes_extra_arguments_from_the_application(tmp_path: Path) -> None:
    app = copied_example(tmp_path)
    generated = run_like_argocd(
        plugin_spec()["generate"]["command"], app, ARGOCD_ENV_BTP_GITOPS_ARGS="--no-such-option"
    )
    assert generated.returncode == 2
    assert "--no-such-option" in generated.stderr
    assert generated.stdout == ""
