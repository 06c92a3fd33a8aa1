"""Helm streams exactly as Helm 3 and Helm 4 hand them to a post-renderer, and the CLI run on them.

The streams are captured from the real helm CLIs (built by scripts/build-tools.sh): a capture
post-renderer (Helm 3 executable, Helm 4 plugin) writes its stdin to a file and echoes it back.
The chart's random cluster id is fixed through values so that the streams are reproducible.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.conftest import CHART, CLI, ROOT
from tests.support.tools import tool_path

HELM_PLUGIN = ROOT / "helm-plugin"
CHART_VALUES = ("--set", "cluster.id=0c5a3f7e-1d2b-4c6a-9e8f-7a6b5c4d3e2f")


@dataclass(frozen=True)
class HelmHome:
    """Isolated HELM_*_HOME directories, so tests never touch the user's plugins or config."""

    root: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_")}
        env.update(
            HELM_CONFIG_HOME=str(self.root / "config"),
            HELM_DATA_HOME=str(self.root / "data"),
            HELM_CACHE_HOME=str(self.root / "cache"),
            BTP_GITOPS=str(CLI),
        )
        env.update(extra)
        return env


def run_helm(helm: str, home: HelmHome, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool_path(helm)), *map(str, args)],
        capture_output=True,
        text=True,
        env=home.env(**env),
        check=False,
        timeout=300,
    )


def _capture_script(directory: Path) -> Path:
    script = directory / "capture"
    script.write_text('#!/bin/sh\ntee "$CAPTURE_TO"\n')
    script.chmod(0o755)
    return script


def _capture_plugin(directory: Path, script: Path) -> Path:
    plugin = directory / "capture-plugin"
    plugin.mkdir()
    (plugin / "plugin.yaml").write_text(
        "apiVersion: v1\ntype: postrenderer/v1\nname: capture\nversion: 0.1.0\nruntime: subprocess\n"
        f"runtimeConfig:\n  platformCommand:\n    - command: {script}\n"
    )
    return plugin


def _template_args(post_renderer: str, *extra: str) -> list[str]:
    return [
        "template",
        "sap-btp-operator",
        str(CHART),
        "-n",
        "kyma-system",
        *CHART_VALUES,
        "--post-renderer",
        post_renderer,
        *extra,
    ]


@pytest.fixture(scope="session")
def helm_home(tmp_path_factory: pytest.TempPathFactory) -> HelmHome:
    """A Helm home with the capture plugin and our own plugin (helm-plugin/) installed in Helm 4."""
    home = HelmHome(tmp_path_factory.mktemp("helm-home"))
    script = _capture_script(home.root)
    for plugin in (_capture_plugin(home.root, script), HELM_PLUGIN):
        installed = run_helm("helm4", home, "plugin", "install", plugin)
        assert installed.returncode == 0, installed.stderr
    return home


@pytest.fixture(scope="session")
def helm3_stream(helm_home: HelmHome) -> str:
    """What Helm 3 writes to a post-renderer's stdin for charts/sap-btp-operator."""
    captured = helm_home.root / "helm3-stream.yaml"
    script = helm_home.root / "capture"
    result = run_helm("helm3", helm_home, *_template_args(str(script)), CAPTURE_TO=str(captured))
    assert result.returncode == 0, result.stderr
    return captured.read_text()


@pytest.fixture(scope="session")
def helm4_stream(helm_home: HelmHome) -> str:
    """What Helm 4 writes to a postrenderer/v1 plugin's stdin for charts/sap-btp-operator."""
    captured = helm_home.root / "helm4-stream.yaml"
    result = run_helm("helm4", helm_home, *_template_args("capture"), CAPTURE_TO=str(captured))
    assert result.returncode == 0, result.stderr
    return captured.read_text()


PostRender = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def post_render_cli() -> PostRender:
    """`btp-gitops post-render ARGS` as Helm runs it: the stream on stdin, a subprocess."""

    def run(
        stream: str | bytes, *args: str | Path, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        data = stream.encode() if isinstance(stream, str) else stream
        completed = subprocess.run(
            [str(CLI), "post-render", *map(str, args)],
            input=data,
            capture_output=True,
            env=env,
            check=False,
            timeout=120,
        )
        return subprocess.CompletedProcess(
            completed.args, completed.returncode, completed.stdout.decode(), completed.stderr.decode()
        )

    return run


def ensure_namespace(core: k8s.CoreV1Api, name: str) -> None:
    """Create a namespace unless it exists (tests of this session share kyma-system)."""
    try:
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    except ApiException as error:
        if error.status != 409:
            raise
