"""`btp-gitops diff --against-cluster` as users run it, where no cluster answers: the options it
refuses, and a cluster that cannot be read (a clear error naming the cluster, exit 3, never a
traceback). What it plans against a real API server: tests/kube/test_cutover_plan.py."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, ROOT, RunCli


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def kubeconfig_to_nowhere(path: Path) -> Path:
    """A kubeconfig whose server refuses every connection (a port nobody listens on)."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gone", "cluster": {"server": f"https://127.0.0.1:{closed_port()}"}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
        "current-context": "gone",
    }
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ("--against", "main"),
            "error: --against and --against-cluster exclude each other: compare with a tree or a cluster",
        ),
        (
            ("--new-cluster",),
            "error: --new-cluster applies to a diff against a tree (--against), not --against-cluster",
        ),
    ],
)
def test_tree_options_are_refused_with_against_cluster(
    run_cli: RunCli, extra: tuple[str, ...], message: str
) -> None:
    result = run_cli("diff", EXAMPLES / "cap-app", "--against-cluster", *extra, cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == message


def test_diff_needs_a_tree_or_a_cluster(run_cli: RunCli) -> None:
    result = run_cli("diff", EXAMPLES / "cap-app", cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "error: diff compares with --against REF|DIR, or with a running cluster: --against-cluster"
    )


def test_an_unreachable_cluster_is_a_clear_error(run_cli: RunCli, tmp_path: Path) -> None:
    kubeconfig = kubeconfig_to_nowhere(tmp_path / "kubeconfig")
    result = run_cli("diff", EXAMPLES / "cap-app", "--against-cluster", "--kubeconfig", kubeconfig, cwd=ROOT)
    assert result.returncode == 3, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: cannot read the discovery document of "), lines
    assert lines[1].startswith(f"  cluster (kubeconfig {kubeconfig}): "), lines
    assert "Traceback" not in result.stderr and "not-a-real-token" not in result.stderr
    assert result.stdout == ""


def test_an_unreachable_cluster_is_an_error_document_in_json(run_cli: RunCli, tmp_path: Path) -> None:
    kubeconfig = kubeconfig_to_nowhere(tmp_path / "kubeconfig")
    result = run_cli(
        "diff", EXAMPLES / "cap-app", "--against-cluster", "--kubeconfig", kubeconfig, "-o", "json", cwd=ROOT
    )
    assert result.returncode == 3
    document = json.loads(result.stdout)
    assert document["error"]["message"].startswith("cannot read the discovery document of ")


def test_a_missing_kubeconfig_names_the_file(run_cli: RunCli, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    result = run_cli("diff", EXAMPLES / "cap-app", "--against-cluster", "--kubeconfig", missing, cwd=ROOT)
    assert result.returncode == 3
    assert result.stderr.splitlines()[0] == "error: cannot load the kubeconfig for --against-cluster"
    assert str(missing) in result.stderr and "Traceback" not in result.stderr
