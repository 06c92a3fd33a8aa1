"""The beta Kyma's render (chart-rendered relay, greeter 1.1.0, auditlog) is valid for Kubernetes.

tests/kube/test_rendered_repos_dry_run.py dry-runs every example directory, which covers the
example's own Kyma; this adds the second Kyma of the example catalog, whose modules only a beta
Kyma on the fast channel gets: `btp-gitops validate` offline (strict schemas, the render's own
CRDs for its custom resources), and a server-side dry run against the real kube-apiserver (kube
tier) through `tests.support.dry_run.refusals`, so both checks apply the same rules to both Kymas.

Nothing is faked: the installed CLI renders and validates; kube-apiserver + etcd are real.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, RunCli
from tests.kyma.conftest import BETA_KYMA, CATALOG, MODULE_CONTENT
from tests.support.kubeapi import KubeAPI


@pytest.fixture
def beta_repo(tmp_path: Path, run_cli: RunCli) -> Path:
    result = run_cli(
        "render",
        BETA_KYMA,
        "--catalog",
        CATALOG,
        "--allow-path",
        MODULE_CONTENT,
        "--out",
        tmp_path,
        "--cluster",
        "beta",
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return tmp_path / "clusters" / "beta"


def test_validate_accepts_every_object(beta_repo: Path, run_cli: RunCli) -> None:
    result = run_cli("validate", beta_repo)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("18 objects valid (Kubernetes ")


@pytest.mark.kube
def test_the_api_server_accepts_every_object(beta_repo: Path, kube_api: KubeAPI) -> None:
    from tests.support.dry_run import refusals  # noqa: PLC0415 - kube tier only

    with kube_api.api_client() as client:
        refused = refusals(client, beta_repo)
    assert not refused, "refused by the API server:\n" + "\n".join(refused)
