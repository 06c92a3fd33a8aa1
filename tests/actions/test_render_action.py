"""The render action (.github/actions/render) run end to end, as a runner would run its steps.

The steps come from action.yml itself (tests/actions/composite.py evaluates their `if:`, `env:`
and `with:`), and run the action's scripts with the installed btp-gitops CLI against real Git
repositories: a sources repo, a bare "GitHub" remote of the GitOps repo and fresh clones of it
per workflow run. Only what needs GitHub is left out: setup-python and the install step (the CLI
under test is the checkout's; test_render_action_installed.py runs the install step with the
built wheel), create-pull-request and the PR comment, whose evaluated inputs are checked instead.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import git
import pytest
import yaml

from tests.actions.composite import CompositeAction, StepRun, runner_env
from tests.conftest import CHART, CLI, EXAMPLES, ROOT

ACTION = CompositeAction(ROOT / ".github" / "actions" / "render" / "action.yml")
CLUSTER = "demo"
NEEDS_GITHUB = {"install"}  # run steps the test stands in for (see the module docstring)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workflow's workspace holding the sources repo, committed."""
    root = tmp_path / "workspace"
    shutil.copytree(EXAMPLES / "btp-operator", root / "sources")
    _use_absolute_chart(root / "sources" / "btpoperatorconfig.yaml")
    repo = git.Repo.init(root, initial_branch="main")
    _commit_all(repo, "sources")
    return root


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """The GitOps repo as GitHub holds it: bare, empty, default branch main."""
    path = tmp_path / "gitops.git"
    git.Repo.init(path, bare=True, initial_branch="main")
    return path


def _use_absolute_chart(config_path: Path) -> None:
    config = yaml.safe_load(config_path.read_text())
    config["spec"].setdefault("chart", {})["path"] = str(CHART)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def _commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("--all")
    repo.git.commit(
        "-m",
        message,
        env={
            "GIT_AUTHOR_NAME": "dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
        },
    )
    return str(repo.head.commit.hexsha)


def run_workflow(
    workspace: Path, remote: Path, tmp_path: Path, *, event: str = "push", **inputs: str
) -> dict[str, StepRun]:
    """One workflow run: a fresh checkout of the GitOps repo (as actions/checkout makes it),
    then the action's steps."""
    checkout = workspace / "gitops"
    if checkout.exists():
        shutil.rmtree(checkout)
    git.Repo.clone_from(remote, checkout).close()
    temp = tmp_path / f"runner-temp-{len(list(tmp_path.glob('runner-temp-*')))}"
    temp.mkdir()
    runs = ACTION.run(
        {"sources": "sources", "cluster": CLUSTER, **inputs},
        workspace=workspace,
        temp=temp,
        github={"token": "test-token", "event_name": event},
        base_env=runner_env(CLI.parent),
        skip=NEEDS_GITHUB.__contains__,
    )
    return {run.id: run for run in runs}


def remote_log(remote: Path) -> list[git.Commit]:
    with git.Repo(remote) as repo:
        return list(repo.iter_commits("main")) if repo.heads else []


def test_the_action_runs_only_our_scripts_through_bash(tmp_path: Path) -> None:
    """Every run step is `bash <script beside action.yml>`: the scripts are what this file runs."""
    for step in ACTION.metadata["runs"]["steps"]:
        if "run" in step:
            assert step["run"] == f'bash "${{{{ github.action_path }}}}/{step["id"]}.sh"', step["id"]
            assert (ACTION.path.parent / f"{step['id']}.sh").is_file()


def test_commit_mode_renders_commits_and_pushes_then_nothing_when_unchanged(
    workspace: Path, remote: Path, tmp_path: Path
) -> None:
    sources_commit = git.Repo(workspace).head.commit.hexsha

    first = run_workflow(workspace, remote, tmp_path, mode="commit")

    assert first["diff"].outputs["changed"] == "true"
    body = Path(first["diff"].outputs["body-file"]).read_text()
    assert body.startswith(f"### btp-gitops diff: `clusters/{CLUSTER}` against `directory gitops`")
    assert "| `btp-operator` |" in body
    assert first["render"].ran and first["render"].outputs["committed"] == "true"
    assert first["push"].ran
    commits = remote_log(remote)
    assert [c.hexsha for c in commits] == [first["render"].outputs["commit"]]
    assert commits[0].message.startswith(f"Render cluster {CLUSTER}: ")
    assert f"Source-Commit: {sources_commit}" in commits[0].message
    assert not first["pull-request"].ran and not first["comment"].ran  # a push, not a pull request

    second = run_workflow(workspace, remote, tmp_path, mode="commit")

    assert second["diff"].outputs["changed"] == "false"
    assert Path(second["diff"].outputs["body-file"]).read_text().endswith("No changes.\n")
    assert not second["render"].ran and not second["push"].ran
    assert len(remote_log(remote)) == 1


def test_a_pull_request_of_the_sources_gets_the_diff_as_comment_and_nothing_is_pushed(
    workspace: Path, remote: Path, tmp_path: Path
) -> None:
    run_workflow(workspace, remote, tmp_path, mode="commit")
    config = workspace / "sources" / "btpoperatorconfig.yaml"
    config.write_text(
        config.read_text().replace("clusterId: 3f9d2c1e-7a4b-4e2f-9c8d-1b2a3c4d5e6f", "clusterId: cluster-b")
    )
    _commit_all(git.Repo(workspace), "another cluster id")

    runs = run_workflow(workspace, remote, tmp_path, event="pull_request", mode="diff")

    assert runs["diff"].outputs["changed"] == "true"
    assert not runs["render"].ran and not runs["push"].ran and not runs["pull-request"].ran
    comment = runs["comment"]
    assert comment.ran
    assert comment.with_["header"] == f"btp-gitops-{CLUSTER}"
    assert comment.with_["GITHUB_TOKEN"] == "test-token"
    body = Path(comment.with_["path"]).read_text()
    assert "~ ConfigMap kyma-system/sap-btp-operator-config" in body
    assert "+  CLUSTER_ID: cluster-b" in body
    assert len(remote_log(remote)) == 1


def test_pull_request_mode_leaves_one_unpushed_commit_for_create_pull_request(
    workspace: Path, remote: Path, tmp_path: Path
) -> None:
    run_workflow(workspace, remote, tmp_path, mode="commit")
    config = workspace / "sources" / "btpoperatorconfig.yaml"
    config.write_text(config.read_text().replace("enableLimitedCache: true", "enableLimitedCache: false"))
    _commit_all(git.Repo(workspace), "no limited cache")

    runs = run_workflow(workspace, remote, tmp_path, mode="pull-request", branch="main")

    assert runs["render"].outputs["committed"] == "true"
    assert not runs["push"].ran
    with git.Repo(workspace / "gitops") as checkout:
        ahead = list(checkout.iter_commits("origin/main..HEAD"))
    assert [c.hexsha for c in ahead] == [runs["render"].outputs["commit"]]
    opened = runs["pull-request"]
    assert opened.ran
    assert opened.with_ == {
        "path": "gitops",
        "token": "test-token",
        "base": "main",
        "branch": f"btp-gitops/{CLUSTER}",
        "title": f"btp-gitops: render cluster {CLUSTER}",
        "body-path": runs["diff"].outputs["body-file"],
    }
    assert "ENABLE_LIMITED_CACHE" in Path(opened.with_["body-path"]).read_text()
    assert len(remote_log(remote)) == 1  # create-pull-request pushes its own branch, not main


def test_flux_wiring_inputs_reach_the_render(workspace: Path, remote: Path, tmp_path: Path) -> None:
    runs = run_workflow(
        workspace,
        remote,
        tmp_path,
        mode="commit",
        target="flux",
        **{
            "emit-wiring": "true",
            "repo-url": "https://git.example.com/platform/gitops.git",
            "branch": "main",
        },
    )

    assert runs["push"].ran
    with git.Repo(remote) as repo:
        tree = repo.head.commit.tree / f"clusters/{CLUSTER}"
        files = {item.path for item in tree.traverse() if item.type == "blob"}
        source = yaml.safe_load(
            (tree / ".wiring" / f"gitrepository-btp-gitops-{CLUSTER}.yaml").data_stream.read()
        )
    assert f"clusters/{CLUSTER}/btp-operator/00-crds/kustomization.yaml" in files
    assert source["spec"] == {
        "interval": "1m",
        "url": "https://git.example.com/platform/gitops.git",
        "ref": {"branch": "main"},
    }


def test_a_failing_render_fails_the_step(workspace: Path, remote: Path, tmp_path: Path) -> None:
    """Exit 1 of `diff --exit-code` means "changed"; any other status stops the action."""
    (workspace / "sources" / "broken.yaml").write_text("kind: [unclosed\n")
    with pytest.raises(AssertionError, match=r"step diff failed \(3\)"):
        run_workflow(workspace, remote, tmp_path, mode="commit")
    assert remote_log(remote) == []


def test_the_scripts_need_their_inputs(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(ACTION.path.parent / "diff.sh")],
        env={**runner_env(CLI.parent), "GITOPS_PATH": "gitops"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode != 0
    assert "the sources input is required" in result.stderr
