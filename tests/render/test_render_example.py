"""`btp-gitops render` of the bundled example, end to end through the installed CLI.

Covers: the rendered tree (snapshot), byte-identical re-renders and no second commit, the commit
message and its Source-Commit trailer, and that no credential or private key reaches the repo.
Real components: the embedded Helm engine, a real Git repository (gitpython). Nothing is faked.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import git
import yaml

from btp_gitops.controller.btp_operator import FINALIZER
from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree, tree_as_yaml
from tests.render.conftest import MakeSource


def test_example_render_matches_snapshot(tmp_path: Path, run_cli: RunCli, yaml_snapshot: object) -> None:
    result = run_cli(
        "render", EXAMPLES / "btp-operator", "--out", tmp_path / "repo", "--cluster", "demo", cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    tree = read_tree(tmp_path / "repo")
    assert all(
        path.startswith("clusters/demo/btp-operator/") or path == "clusters/demo/.btp-gitops-files"
        for path in tree
    )
    assert tree_as_yaml(tree) == yaml_snapshot


def test_module_objects_carry_btp_manager_labels_and_namespace(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("render", EXAMPLES / "btp-operator", "--out", tmp_path, "--cluster", "c1", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    cluster_scoped = {
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
    for path, data in read_tree(tmp_path / "clusters/c1/btp-operator").items():
        if path == "kustomization.yaml":
            continue
        obj = yaml.safe_load(data)
        labels = obj["metadata"].get("labels", {})
        if obj["kind"] == "BtpOperator":
            assert "app.kubernetes.io/managed-by" not in labels  # the request is not a module object
            continue
        assert labels["app.kubernetes.io/managed-by"] == "btp-manager", path
        assert labels["chart-version"] == "0.1.0", path
        assert labels["kyma-project.io/module"] == "btp-operator", path
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in obj["metadata"], path
        else:
            assert obj["metadata"]["namespace"] == "kyma-system", path
        if obj["kind"] == "Deployment":
            pod_labels = obj["spec"]["template"]["metadata"]["labels"]
            assert pod_labels["kyma-project.io/module"] == "btp-operator"


def test_only_the_btpoperator_carries_the_controllers_finalizer(tmp_path: Path, run_cli: RunCli) -> None:
    """Applied with it, the BtpOperator is held from its creation: a prune while the controller is
    down waits for the controller's deprovisioning."""
    result = run_cli("render", EXAMPLES / "btp-operator", "--out", tmp_path, "--cluster", "c1", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert FINALIZER == "operator.kyma-project.io/btp-manager"  # BTP Manager's name for it
    finalized = {}
    for path, data in read_tree(tmp_path / "clusters/c1/btp-operator").items():
        obj = yaml.safe_load(data)
        if path != "kustomization.yaml" and "finalizers" in obj["metadata"]:
            finalized[obj["kind"]] = obj["metadata"]["finalizers"]
    assert finalized == {"BtpOperator": [FINALIZER]}


def test_operator_configmap_and_webhooks_follow_the_config(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    source = make_source(clusterId="cluster-42", credentialsNamespace="btp-creds", enableLimitedCache=False)
    assert run_cli("render", source, "--out", tmp_path / "repo").returncode == 0
    app = tmp_path / "repo/clusters/default/btp-operator"
    config = yaml.safe_load((app / "configmap-sap-btp-operator-config.yaml").read_text())
    assert config["data"]["CLUSTER_ID"] == "cluster-42"
    assert config["data"]["RELEASE_NAMESPACE"] == "btp-creds"
    assert config["data"]["MANAGEMENT_NAMESPACE"] == "btp-creds"
    assert config["data"]["ENABLE_LIMITED_CACHE"] == "false"
    external = yaml.safe_load((app / "externalsecret-sap-btp-service-operator.yaml").read_text())
    assert external["metadata"]["namespace"] == "btp-creds"
    assert external["spec"]["dataFrom"] == [{"extract": {"key": "sap-btp-manager"}}]
    for name in (
        "mutatingwebhookconfiguration-sap-btp-operator-mutating-webhook-configuration.yaml",
        "validatingwebhookconfiguration-sap-btp-operator-validating-webhook-configuration.yaml",
    ):
        webhook = yaml.safe_load((app / name).read_text())
        assert webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
            "kyma-system/sap-btp-operator-webhook-cert"
        )
        assert all("caBundle" not in w["clientConfig"] for w in webhook["webhooks"])


def test_changing_the_cluster_id_rolls_the_operator(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    checksums = []
    for cluster_id in ("first", "second", "first"):
        source = make_source(name=f"src-{cluster_id}-{len(checksums)}", clusterId=cluster_id)
        assert run_cli("render", source, "--out", tmp_path / "repo").returncode == 0
        deployment = yaml.safe_load(
            (
                tmp_path
                / "repo/clusters/default/btp-operator/deployment-sap-btp-operator-controller-manager.yaml"
            ).read_text()
        )
        checksums.append(
            deployment["spec"]["template"]["metadata"]["annotations"]["btp-gitops.io/config-checksum"]
        )
    assert checksums[0] != checksums[1]
    assert checksums[0] == checksums[2]


def test_render_twice_is_byte_identical_and_commits_once(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "gitops"
    first = run_cli(
        "render", EXAMPLES / "btp-operator", "--out", out, "--cluster", "demo", "--commit", cwd=ROOT
    )
    assert first.returncode == 0, first.stderr
    before = read_tree(out)
    second = run_cli(
        "render", EXAMPLES / "btp-operator", "--out", out, "--cluster", "demo", "--commit", cwd=ROOT
    )
    assert second.returncode == 0, second.stderr
    assert "nothing to commit" in second.stdout
    assert read_tree(out) == before
    repo = git.Repo(out)
    assert len(list(repo.iter_commits())) == 1
    assert not repo.is_dirty(untracked_files=True)


def test_commit_message_lists_objects_and_names_the_source_commit(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    source = make_source()
    source_repo = git.Repo.init(source, initial_branch="main")
    source_repo.git.add("--all")
    source_repo.git.commit(
        "-m",
        "source",
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )
    out = tmp_path / "gitops"
    assert run_cli("render", source, "--out", out, "--commit").returncode == 0
    message = git.Repo(out).head.commit.message
    assert message.startswith("Render cluster default: 25 added, 0 changed, 0 removed\n")
    assert "+ btp-operator: Deployment kyma-system/sap-btp-operator-controller-manager\n" in message
    assert message.rstrip().endswith(f"Source-Commit: {source_repo.head.commit.hexsha}")

    # One change in the source: the next commit says exactly what changed.
    config = source / "btpoperatorconfig.yaml"
    config.write_text(config.read_text().replace("enableLimitedCache: true", "enableLimitedCache: false"))
    assert run_cli("render", source, "--out", out, "--commit").returncode == 0
    message = git.Repo(out).head.commit.message
    assert message.startswith("Render cluster default: 0 added, 2 changed, 0 removed\n")
    assert "~ btp-operator: ConfigMap kyma-system/sap-btp-operator-config" in message
    assert "(with uncommitted changes)" in message


def test_objects_no_longer_rendered_are_removed(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    out = tmp_path / "gitops"
    assert run_cli("render", make_source(name="own-store"), "--out", out, "--commit").returncode == 0
    with_store = make_source(
        name="given-store",
        credentials={"secretStoreRef": {"kind": "ClusterSecretStore", "name": "cluster-secrets"}},
    )
    result = run_cli("render", with_store, "--out", out, "--commit", "--output", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["changes"]["removed"] == [
        "btp-operator/role-btp-gitops-credentials-reader.yaml",
        "btp-operator/rolebinding-btp-gitops-credentials-reader.yaml",
        "btp-operator/secretstore-btp-gitops-credentials-reader.yaml",
        "btp-operator/serviceaccount-btp-gitops-credentials-reader.yaml",
    ]
    app = out / "clusters/default/btp-operator"
    assert not (app / "secretstore-btp-gitops-credentials-reader.yaml").exists()
    kustomization = yaml.safe_load((app / "kustomization.yaml").read_text())
    assert kustomization["resources"] == sorted(
        p.name for p in app.iterdir() if p.name != "kustomization.yaml"
    )
    assert (
        "- btp-operator: SecretStore kyma-system/btp-gitops-credentials-reader"
        in git.Repo(out).head.commit.message
    )


def test_no_credential_or_private_key_reaches_the_repo(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    """The chart is given real-looking credentials and generates certificates in certManager mode;
    nothing of them may appear in any rendered file, in any encoding."""
    secrets = {
        "clientid": "sb-client-7f3a9",
        "clientsecret": "s3cr3t-Value-that-must-not-leak",
        "sm_url": "https://service-manager.cfapps.example.com",
        "tokenurl": "https://subaccount.authentication.example.com",
        "tokenurlsuffix": "/oauth/token",
    }
    source = make_source(
        chart={"path": str(ROOT / "charts/sap-btp-operator"), "values": {"manager": {"secret": secrets}}}
    )
    result = run_cli("render", source, "--out", tmp_path / "repo", "--output", "json")
    assert result.returncode == 0, result.stderr
    forbidden = [v for v in secrets.values() if len(v) > 12]
    forbidden += [base64.b64encode(v.encode()).decode() for v in secrets.values()]
    files = read_tree(tmp_path / "repo")
    assert files
    for path, data in files.items():
        text = data.decode()
        assert "PRIVATE KEY" not in text, path
        for value in forbidden:
            assert value not in text, f"{path} leaks {value[:4]}..."
        if not path.endswith(".yaml"):
            continue  # the ownership manifest: a list of paths
        obj = yaml.safe_load(text)
        if obj.get("kind") == "Secret":
            assert not obj.get("data") and not obj.get("stringData"), path
    assert all(v not in result.stdout + result.stderr for v in forbidden)


def test_only_kyma_system_btpoperator_is_rendered(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    source = make_source()
    (source / "extra.yaml").write_text(
        "apiVersion: operator.kyma-project.io/v1alpha1\nkind: BtpOperator\n"
        "metadata:\n  name: btpoperator\n  namespace: default\n"
        "---\n"
        "apiVersion: operator.kyma-project.io/v1alpha1\nkind: BtpOperator\n"
        "metadata:\n  name: second\n  namespace: kyma-system\n"
    )
    result = run_cli("render", source, "--out", tmp_path / "repo", "--output", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    wrong = [n for app in report["apps"] for n in app["notes"] if n["reason"] == "WrongNamespaceOrName"]
    assert [(n["level"], n["subject"].split(": ")[-1]) for n in wrong] == [
        ("warning", "document 1 (BtpOperator default/btpoperator)"),
        ("warning", "document 2 (BtpOperator kyma-system/second)"),
    ]
    excluded = [n for app in report["apps"] for n in app["notes"] if n["reason"] == "ExcludedHook"]
    assert [n["subject"] for n in excluded] == [
        "sap-btp-operator/templates/pre_delete_job.yaml (Job kyma-system/sap-btp-operator-pre-delete-cleanup)"
    ]
    rendered = [p.name for p in (tmp_path / "repo/clusters/default/btp-operator").glob("btpoperator-*.yaml")]
    assert rendered == ["btpoperator-btpoperator.yaml"]
    text = (tmp_path / "repo/clusters/default/btp-operator/btpoperator-btpoperator.yaml").read_text()
    assert "namespace: kyma-system" in text


def test_without_a_btpoperator_nothing_is_rendered(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    source = make_source()
    (source / "btpoperator.yaml").unlink()
    result = run_cli("render", source, "--out", tmp_path / "repo", "--output", "json")
    assert result.returncode == 0, result.stderr
    notes = [n["reason"] for app in json.loads(result.stdout)["apps"] for n in app["notes"]]
    assert notes == ["NoBtpOperator"]
    assert not (tmp_path / "repo/clusters/default/btp-operator").exists()


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return git.Repo(repo).git.execute(["git", *args], env=env)  # type: ignore[no-any-return]


def test_output_folder_of_an_existing_gitops_repo_commits_there_and_only_there(
    tmp_path: Path, run_cli: RunCli
) -> None:
    repo = tmp_path / "gitops"
    git.Repo.init(repo, initial_branch="main")
    (repo / "README.md").write_text("platform repo\n")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-m", "init")
    (repo / "notes.txt").write_text("uncommitted work of the user\n")
    result = run_cli("render", EXAMPLES / "btp-operator", "--out", repo / "rendered", "--commit", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert not (repo / "rendered" / ".git").exists()
    files = _git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert "rendered/clusters/default/.btp-gitops-files" in files
    assert all(f.startswith("rendered/clusters/default/") for f in files)
    assert _git(repo, "status", "--porcelain") == "?? notes.txt"


def test_output_ignored_by_the_enclosing_repo_becomes_its_own_repo(tmp_path: Path, run_cli: RunCli) -> None:
    checkout = tmp_path / "checkout"
    git.Repo.init(checkout, initial_branch="main")
    (checkout / ".gitignore").write_text("out/\n")
    _git(checkout, "add", ".gitignore")
    _git(checkout, "commit", "-m", "init")
    result = run_cli(
        "render", EXAMPLES / "btp-operator", "--out", checkout / "out/gitops", "--commit", cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    own = git.Repo(checkout / "out/gitops")
    assert len(list(own.iter_commits())) == 1
    assert len(list(git.Repo(checkout).iter_commits())) == 1
