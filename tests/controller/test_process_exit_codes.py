"""The controller's processes exit with codes of the one table (core.exit_codes), never 1 (which
means "changes found"): a source repository that cannot be cloned is the one GitError, exit 5.
No API server is needed: the kubeconfig points at a closed port and the clone fails first."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import CLI

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: nowhere, cluster: {server: "https://127.0.0.1:9"}}]
contexts: [{name: nowhere, context: {cluster: nowhere, user: nobody}}]
current-context: nowhere
users: [{name: nobody, user: {token: not-a-token}}]
"""


@pytest.mark.parametrize(
    "command",
    [
        ["controller", "--no-leader-elect", "--probe-address", "127.0.0.1:0"],
        ["subscription-server", "--address", "127.0.0.1:0"],
    ],
)
def test_a_source_repository_that_cannot_be_cloned_exits_5(tmp_path: Path, command: list[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    missing = tmp_path / "no-such-remote.git"
    done = subprocess.run(
        [
            str(CLI), *command, "--kubeconfig", str(kubeconfig), "--source-repo", str(missing),
            "--workdir", str(tmp_path / "clone"), "--log-format", "text",
        ],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == ExitCode.OUTPUT, done.stderr
    assert f"error: cannot fetch branch main from {missing}" in done.stderr


def test_a_kubeconfig_that_cannot_be_loaded_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(CLI), "controller", "--kubeconfig", str(tmp_path / "missing"), "--log-format", "text"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.startswith("error: cannot load the kubeconfig")
