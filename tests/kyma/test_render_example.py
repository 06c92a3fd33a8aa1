"""`btp-gitops render` of examples/kyma-modules for two Kymas, end to end through the installed CLI.

The example catalog has three modules (greeter: classic, two channels, raw manifest directories;
relay: ModuleReleaseMeta, beta, a Helm chart; auditlog: mandatory, one raw manifest file). The
example's Kyma (regular channel) renders into cluster `default`, examples/kyma-beta.yaml
(beta, fast channel, greeter without its default CR) into cluster `beta` of the same repo, its
catalog given with `--catalog`.

Covered: the rendered repo (snapshot), the module labels, namespaces and sync waves of every
object, the report (table and JSON), byte-identical re-renders with no second commit, the commit
message, and `--stdout` (no record on stdout).
Real components: the embedded Helm engine, a real Git repository (gitpython). Nothing is faked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from tests.conftest import ROOT, RunCli, read_tree, tree_as_yaml
from tests.kyma.conftest import BETA_KYMA, CATALOG, EXAMPLE, MODULE_CONTENT, modules_of, run

CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace"}


def render_both(run_cli: RunCli, repo: Path, *extra: str) -> list[str]:
    """Render the example's Kyma and the beta Kyma into `repo`; return both stdouts."""
    first = run_cli("render", EXAMPLE, "--out", repo, "--cluster", "default", "--commit", *extra, cwd=ROOT)
    assert first.returncode == 0, first.stderr
    second = run_cli(
        "render",
        BETA_KYMA,
        "--catalog",
        CATALOG,
        "--allow-path",
        MODULE_CONTENT,
        "--out",
        repo,
        "--cluster",
        "beta",
        "--commit",
        *extra,
        cwd=ROOT,
    )
    assert second.returncode == 0, second.stderr
    return [first.stdout, second.stdout]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    repo = tmp_path_factory.mktemp("kyma") / "repo"
    return repo, render_both(run, repo)


def test_two_kymas_render_as_snapshotted(rendered: tuple[Path, list[str]], yaml_snapshot: object) -> None:
    repo, _ = rendered
    tree = read_tree(repo)
    assert sorted({path.split("/")[2] for path in tree}) == [
        ".btp-gitops-files",
        ".kyma-modules.json",
        "kyma-auditlog",
        "kyma-greeter",
        "kyma-relay",
    ]
    assert not any(path.startswith("clusters/default/kyma-relay/") for path in tree)
    assert tree_as_yaml(tree) == yaml_snapshot


def _objects(repo: Path) -> list[tuple[str, dict[str, Any]]]:
    return [
        (path, yaml.safe_load(data))
        for path, data in read_tree(repo).items()
        if path.endswith(".yaml") and not path.endswith("/kustomization.yaml")
    ]


def test_every_object_carries_the_module_labels_namespace_and_stage(rendered: tuple[Path, list[str]]) -> None:
    repo, _ = rendered
    objects = _objects(repo)
    assert len(objects) == 30
    for path, obj in objects:
        module = path.split("/")[2].removeprefix("kyma-")
        assert (
            obj["metadata"]["labels"]
            | {
                "operator.kyma-project.io/managed-by": "kyma",
                "app.kubernetes.io/part-of": "Kyma",
                "app.kubernetes.io/component": module,
            }
            == obj["metadata"]["labels"]
        ), path
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in obj["metadata"], path
        else:
            assert obj["metadata"]["namespace"] in {"kyma-system", "kyma-audit"}, path
        wave = obj["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave")
        expected = {"CustomResourceDefinition": "-1", "Namespace": "-1", "Greeter": "1", "Relay": "1"}
        assert wave == expected.get(obj["kind"]), path


def test_default_crs_follow_the_custom_resource_policy(rendered: tuple[Path, list[str]]) -> None:
    repo, _ = rendered
    crs = sorted(path for path, obj in _objects(repo) if obj["kind"] in {"Greeter", "Relay"})
    # The beta Kyma asks for greeter with customResourcePolicy: Ignore.
    assert crs == [
        "clusters/beta/kyma-relay/relay-default.yaml",
        "clusters/default/kyma-greeter/greeter-default.yaml",
    ]


def test_the_report_is_a_table(rendered: tuple[Path, list[str]]) -> None:
    _, (first, second) = rendered
    assert first.splitlines()[1:] == [
        "Kyma kyma-system/default (examples/kyma-modules/kyma.yaml: document 1): Ready",
        "  MODULE    CHANNEL  VERSION  STATE  TEMPLATE                     MESSAGE",
        "  auditlog  -        1.2.0    Ready  kyma-system/auditlog-1.2.0   mandatory: ModuleReleaseMeta "
        "kyma-system/auditlog has version 1.2.0",
        "  greeter   regular  1.0.0    Ready  kyma-system/greeter-regular  template kyma-system/greeter-regular: "
        "spec.moduleName=greeter, channel regular",
        f"committed {git.Repo(rendered[0]).commit('HEAD~1').hexsha}",
    ]
    assert second.splitlines()[1:5] == [
        "Kyma kyma-system/beta-cluster (examples/kyma-beta.yaml: document 1): Ready",
        "  MODULE    CHANNEL  VERSION  STATE  TEMPLATE                    MESSAGE",
        "  auditlog  -        1.2.0    Ready  kyma-system/auditlog-1.2.0  mandatory: ModuleReleaseMeta "
        "kyma-system/auditlog has version 1.2.0",
        "  greeter   fast     1.1.0    Ready  kyma-system/greeter-fast    template kyma-system/greeter-fast: "
        "spec.moduleName=greeter, channel fast",
    ]


def test_the_json_report_has_the_status_shape(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli(
        "render",
        BETA_KYMA,
        "--catalog",
        CATALOG,
        "--allow-path",
        MODULE_CONTENT,
        "--out",
        tmp_path,
        "--output",
        "json",
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (kyma,) = report["kymas"]
    assert {k: v for k, v in kyma.items() if k != "modules"} == {
        "kyma": "kyma-system/beta-cluster",
        "source": "examples/kyma-beta.yaml: document 1",
        "channel": "fast",
        "state": "Ready",
        "skipReconciliation": False,
        "messages": [],
    }
    assert [m["name"] for m in kyma["modules"]] == ["auditlog", "greeter", "relay"]
    assert modules_of(report)["relay"] == {
        "name": "relay",
        "fqdn": "example.com/kyma-modules/relay",
        "channel": "fast",
        "version": "0.3.0",
        "state": "Ready",
        "message": "ModuleReleaseMeta kyma-system/relay: channel fast has version 0.3.0",
        "template": {
            "apiVersion": "operator.kyma-project.io/v1beta2",
            "kind": "ModuleTemplate",
            "metadata": {"name": "relay-0.3.0", "namespace": "kyma-system"},
        },
        "app": "kyma-relay",
        "maintenance": False,
        "mandatory": False,
        "resource": {
            "apiVersion": "modules.example.com/v1alpha1",
            "kind": "Relay",
            "metadata": {"name": "default", "namespace": "kyma-system"},
        },
    }
    assert "resource" not in modules_of(report)["greeter"]  # customResourcePolicy: Ignore
    assert report["moduleProblems"] == []
    assert report["changes"]["added"][0] == ".kyma-modules.json"


def test_rendering_again_changes_nothing_and_commits_nothing(
    rendered: tuple[Path, list[str]], run_cli: RunCli
) -> None:
    repo, _ = rendered
    before = read_tree(repo)
    head = git.Repo(repo).head.commit.hexsha
    outputs = render_both(run_cli, repo)
    assert read_tree(repo) == before
    assert git.Repo(repo).head.commit.hexsha == head
    assert all(out.splitlines()[-1] == "nothing to commit" for out in outputs)


def test_the_commit_lists_the_module_objects_and_the_record(rendered: tuple[Path, list[str]]) -> None:
    repo, _ = rendered
    message = git.Repo(repo).head.commit.message
    assert message.startswith("Render cluster beta: 22 added, 0 changed, 0 removed\n\n")
    assert "+ .kyma-modules.json\n" in message
    assert "+ kyma-relay: Relay kyma-system/default\n" in message
    assert "+ kyma-greeter: CustomResourceDefinition greeters.modules.example.com\n" in message


def test_stdout_holds_only_objects(run_cli: RunCli) -> None:
    result = run_cli("render", EXAMPLE, "--stdout", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    documents = [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]
    assert len(documents) == 12
    assert all(doc["apiVersion"] and doc["kind"] for doc in documents)
