"""The render action (.github/actions/render) run end to end, as a runner would run its steps.

The steps come from action.yml itself (tests/actions/composite.py evaluates their `if:`, `env:`
and `with:`), and run the action's scripts with the installed btp-gitops CLI against real Git
repositories: a sources repo, a bare "GitHub" remote of the GitOps repo and fresh clones of it
per workflow run. Only what needs GitHub is left out: setup-python and the install step (the CLI
under test is the checkout's; test_render_action_installed.py runs the install step with the
built wheel), create-pull-request and the PR comment, whose evaluated inputs are checked instead.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from btp_gitops.generator.cli import build_parser
from btp_gitops.generator.core.exit_codes import ExitCode
from tests.actions.composite import CompositeAction, Context, StepRun, runner_env, substitute
from tests.conftest import CHART, CLI, EXAMPLES, ROOT
from tests.kyma.conftest import edit_kyma

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


# --- the wiring options ------------------------------------------------------------------------

# Options of the wiring that an input does not carry: the plugin's (it needs --stdout).
NOT_INPUTS = {"--argocd-parameters"}
WIRING_STEPS = ("diff", "render")  # both take the target options, and must get the same


def _render_options() -> dict[str, argparse.Action]:
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    render = commands.choices["render"]
    return {
        option: action
        for action in render._actions
        for option in action.option_strings
        if option.startswith(("--argocd-", "--flux-")) and option not in NOT_INPUTS
    }


def _step(step_id: str) -> dict[str, Any]:
    [step] = [s for s in ACTION.metadata["runs"]["steps"] if s.get("id") == step_id]
    return dict(step)


def test_every_argocd_and_flux_option_of_render_is_an_input_passed_to_diff_and_render() -> None:
    """A new --argocd-*/--flux-* option of `render` without an input here fails this test."""
    options = _render_options()
    assert "--flux-secret-ref" in options and "--argocd-retry-limit" in options
    inputs = ACTION.metadata["inputs"]
    for option, action in options.items():
        name = option.removeprefix("--")
        assert name in inputs, f"render's {option} has no input {name!r}"
        # Set or not, btp-gitops' own default applies when the input is empty (a flag: false).
        flag = isinstance(action, argparse._StoreTrueAction)
        assert inputs[name].get("default") == ("false" if flag else ""), name
        variable = name.upper().replace("-", "_")
        for step_id in WIRING_STEPS:
            assert _step(step_id)["env"].get(variable) == f"${{{{ inputs.{name} }}}}", (step_id, name)
    common = (ACTION.path.parent / "common.sh").read_text()
    for option in options:
        assert option.removeprefix("--") in common, f"common.sh does not pass {option}"


def _wiring_file(remote: Path, name: str) -> dict[str, Any]:
    with git.Repo(remote) as repo:
        blob = repo.head.commit.tree / f"clusters/{CLUSTER}/.wiring/{name}"
        loaded: dict[str, Any] = yaml.safe_load(blob.data_stream.read())
    return loaded


FLUX_INPUTS = {
    "target": "flux",
    "emit-wiring": "true",
    "repo-url": "https://git.example.com/platform/gitops.git",
    "flux-namespace": "gitops-system",
    "flux-interval": "2m",
    "flux-source-interval": "30s",
    "flux-timeout": "5m",
    "flux-secret-ref": "gitops-auth",
    "flux-service-account": "gitops-deployer",
    "flux-no-wait": "true",
}


def test_flux_inputs_shape_the_wiring_and_the_diff_renders_with_them(
    workspace: Path, remote: Path, tmp_path: Path
) -> None:
    first = run_workflow(workspace, remote, tmp_path, mode="commit", **FLUX_INPUTS)

    assert first["push"].ran
    source = _wiring_file(remote, f"gitrepository-btp-gitops-{CLUSTER}.yaml")
    assert source["metadata"]["namespace"] == "gitops-system"
    assert source["spec"] == {
        "interval": "30s",
        "url": "https://git.example.com/platform/gitops.git",
        "ref": {"branch": "main"},
        "secretRef": {"name": "gitops-auth"},
    }
    stage = _wiring_file(remote, "kustomization-btp-operator-10-resources.yaml")
    assert stage["metadata"]["namespace"] == "gitops-system"
    assert {k: stage["spec"][k] for k in ("interval", "timeout", "serviceAccountName", "wait")} == {
        "interval": "2m",
        "timeout": "5m",
        "serviceAccountName": "gitops-deployer",
        "wait": False,
    }

    # The diff step renders with the same options: nothing changed.
    second = run_workflow(workspace, remote, tmp_path, mode="commit", **FLUX_INPUTS)
    assert second["diff"].outputs["changed"] == "false"
    assert not second["render"].ran

    # An input left empty again: btp-gitops' default, and the diff shows the change.
    third = run_workflow(workspace, remote, tmp_path, mode="commit", **{**FLUX_INPUTS, "flux-interval": ""})
    assert third["diff"].outputs["changed"] == "true"
    assert _wiring_file(remote, "kustomization-btp-operator-10-resources.yaml")["spec"]["interval"] == "10m"


def test_argocd_inputs_shape_the_application_set(workspace: Path, remote: Path, tmp_path: Path) -> None:
    inputs = {
        "target": "argocd",
        "emit-wiring": "true",
        "repo-url": "https://git.example.com/platform/gitops.git",
        "argocd-project": "platform",
        "argocd-namespace": "gitops-argocd",
        "argocd-destination-name": "prod-eu",
        "argocd-retry-limit": "3",
        "argocd-retry-duration": "10s",
        "argocd-retry-factor": "3",
        "argocd-retry-max-duration": "5m",
    }
    run_workflow(workspace, remote, tmp_path, mode="commit", **inputs)

    app_set = _wiring_file(remote, f"applicationset-btp-gitops-{CLUSTER}.yaml")
    assert app_set["metadata"]["namespace"] == "gitops-argocd"
    template = app_set["spec"]["template"]["spec"]
    assert template["project"] == "platform"
    assert template["destination"] == {"name": "prod-eu"}
    assert template["syncPolicy"]["retry"] == {
        "limit": 3,
        "backoff": {"duration": "10s", "factor": 3, "maxDuration": "5m"},
    }
    again = run_workflow(workspace, remote, tmp_path, mode="commit", **inputs)
    assert again["diff"].outputs["changed"] == "false"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"flux-no-wait": "yes"}, "the flux-no-wait input is true or false, not 'yes'"),
        ({"emit-wiring": "True "}, "the emit-wiring input is true or false, not 'True '"),
        (
            {"target": "argocd", "flux-interval": "5m"},
            "--flux-interval shapes the Flux wiring: it needs --target flux",
        ),
        (
            {"target": "flux", "argocd-retry-limit": "many"},
            "--argocd-retry-limit: not a whole number: 'many'",
        ),
    ],
    ids=["flag-not-boolean", "emit-wiring-not-boolean", "flux-option-for-argocd", "invalid-value"],
)
def test_a_wiring_input_btp_gitops_refuses_fails_the_first_step(
    workspace: Path, remote: Path, tmp_path: Path, inputs: dict[str, str], message: str
) -> None:
    with pytest.raises(AssertionError, match=r"step diff failed \(2\)") as failed:
        run_workflow(workspace, remote, tmp_path, mode="commit", **inputs)
    assert message in str(failed.value)
    assert remote_log(remote) == []


# --- Kyma module problems (render exit 9) ------------------------------------------------------


@pytest.fixture
def kyma_workspace(tmp_path: Path) -> Path:
    """A workspace whose sources are examples/kyma-modules (its catalog included), with greeter and
    the beta module relay, rendered and pushed once without problems."""
    root = tmp_path / "workspace"
    shutil.copytree(EXAMPLES / "kyma-modules", root / "sources")
    edit_kyma(
        root / "sources",
        spec={"modules": [{"name": "greeter"}, {"name": "relay"}]},
        labels={"operator.kyma-project.io/beta": "true"},
    )
    _commit_all(git.Repo.init(root, initial_branch="main"), "sources")
    return root


def _break_greeter(workspace: Path) -> None:
    """greeter asks for a channel without templates (a module problem) while relay moves on."""
    edit_kyma(
        workspace / "sources",
        spec={"modules": [{"name": "greeter", "channel": "edge"}, {"name": "relay", "channel": "fast"}]},
    )
    _commit_all(git.Repo(workspace), "greeter edge, relay fast")


PROBLEM = (
    "sources/kyma.yaml: document 1 (Kyma kyma-system/default): spec.modules[0].channel: module greeter: "
    "no templates were found: for module greeter in channel edge (channels with templates: fast, regular)"
)


def _module_problems_output(runs: dict[str, StepRun]) -> str:
    """The action's module-problems output, as the runner evaluates it after the steps."""
    context = Context(inputs={}, github={}, runner={}, steps={k: r.outputs for k, r in runs.items()})
    return substitute(ACTION.metadata["outputs"]["module-problems"]["value"], context)


def test_module_problems_are_committed_pushed_and_annotated_and_may_pass(
    kyma_workspace: Path, remote: Path, tmp_path: Path
) -> None:
    clean = run_workflow(kyma_workspace, remote, tmp_path, mode="commit")
    assert clean["render"].outputs["module-problems"] == "false"
    assert _module_problems_output(clean) == "false"
    assert "::warning" not in clean["render"].result.stdout  # type: ignore[union-attr]
    _break_greeter(kyma_workspace)

    runs = run_workflow(
        kyma_workspace, remote, tmp_path, mode="commit", **{"fail-on-module-problems": "false"}
    )

    render = runs["render"]
    assert render.result is not None
    assert render.outputs == {
        "committed": "true",
        "commit": render.outputs["commit"],
        "module-problems": "true",
    }
    assert _module_problems_output(runs) == "true"
    warnings = [line for line in render.result.stdout.splitlines() if line.startswith("::warning")]
    assert warnings == [
        f"::warning title=Kyma module not resolved::{PROBLEM}",
        "::warning title=btp-gitops render::rendered with Kyma module problems; those modules keep their "
        "previous files, the rest is committed; fail-on-module-problems is false: the job goes on",
    ]
    assert "warning: rendered with 1 Kyma module problem(s)" in render.result.stderr
    assert runs["push"].ran and not runs["module-problems"].ran
    [pushed, _] = remote_log(remote)
    assert pushed.hexsha == render.outputs["commit"]
    with git.Repo(remote) as repo:
        files = {item.path for item in (repo.head.commit.tree / f"clusters/{CLUSTER}").traverse()}
    assert any("kyma-greeter" in path for path in files)  # greeter keeps its previous files


def test_module_problems_fail_the_job_by_default_after_the_push(
    kyma_workspace: Path, remote: Path, tmp_path: Path
) -> None:
    run_workflow(kyma_workspace, remote, tmp_path, mode="commit")
    _break_greeter(kyma_workspace)

    with pytest.raises(AssertionError, match=r"step module-problems failed \(1\)") as failed:
        run_workflow(kyma_workspace, remote, tmp_path, mode="commit")

    assert "::error title=btp-gitops render::some Kyma modules could not be resolved" in str(failed.value)
    # The render was pushed before the job failed: relay reached the GitOps repository.
    assert len(remote_log(remote)) == 2


def test_any_other_render_failure_fails_the_render_step(
    kyma_workspace: Path, remote: Path, tmp_path: Path
) -> None:
    """Only exit 9 lets the step pass: with --strict the same module problem is exit 3, which the
    step returns, with nothing committed and no outputs. (render.sh is run alone: --strict is an
    option of render only, and extra-args reach the diff too.)"""
    run_workflow(kyma_workspace, remote, tmp_path, mode="commit")
    _break_greeter(kyma_workspace)
    checkout = tmp_path / "checkout"
    git.Repo.clone_from(remote, checkout).close()
    outputs = tmp_path / "render-outputs"
    outputs.write_text("")

    result = subprocess.run(
        ["bash", str(ACTION.path.parent / "render.sh")],
        env={
            **runner_env(CLI.parent),
            "SOURCES": "sources",
            "GITOPS_PATH": str(checkout),
            "CLUSTER": CLUSTER,
            "EXTRA_ARGS": "--strict",
            "GITHUB_OUTPUT": str(outputs),
            "RUNNER_TEMP": str(tmp_path),
        },
        cwd=kyma_workspace,
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "Kyma modules that cannot be resolved (--strict)" in result.stderr
    assert "::warning" not in result.stdout
    assert outputs.read_text() == ""
    with git.Repo(checkout) as repo:
        assert not repo.is_dirty(untracked_files=True)
    assert len(remote_log(remote)) == 1


# --- A misspelt Kyma module name (render exit 3, issue 33) ----------------------------------------


def _misspell_relay(workspace: Path) -> None:
    """relay written rleay: read as Lifecycle Manager reads it, relay is to be removed."""
    edit_kyma(workspace / "sources", spec={"modules": [{"name": "greeter"}, {"name": "rleay"}]})
    _commit_all(git.Repo(workspace), "rleay")


MISSPELT = (
    "sources/kyma.yaml: document 1 (Kyma kyma-system/default): spec.modules[1].name: module rleay: no "
    'templates were found: for module rleay in channel regular (did you mean "relay"?)'
)


def test_a_misspelt_module_name_fails_the_job_before_anything_is_committed_or_pushed(
    kyma_workspace: Path, remote: Path, tmp_path: Path
) -> None:
    """Before, the render removed relay, exited 9 and the action pushed that commit before failing
    the job. Now the diff step already fails (exit 3) naming the entry and the module meant, the
    render step does not run, and the remote keeps its one commit. Run alone, render.sh returns the
    same exit 3 with no outputs and a clean checkout."""
    run_workflow(kyma_workspace, remote, tmp_path, mode="commit")
    [rendered] = remote_log(remote)
    _misspell_relay(kyma_workspace)

    with pytest.raises(AssertionError, match=r"step diff failed \(3\)") as failed:
        run_workflow(kyma_workspace, remote, tmp_path, mode="commit")

    assert f"  {MISSPELT}\n" in str(failed.value)
    assert [commit.hexsha for commit in remote_log(remote)] == [rendered.hexsha]

    checkout = tmp_path / "checkout"
    git.Repo.clone_from(remote, checkout).close()
    outputs = tmp_path / "render-outputs"
    outputs.write_text("")
    result = subprocess.run(
        ["bash", str(ACTION.path.parent / "render.sh")],
        env={
            **runner_env(CLI.parent),
            "SOURCES": "sources",
            "GITOPS_PATH": str(checkout),
            "CLUSTER": CLUSTER,
            "GITHUB_OUTPUT": str(outputs),
            "RUNNER_TEMP": str(tmp_path),
        },
        cwd=kyma_workspace,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert f"  {MISSPELT}\n" in result.stderr
    assert (outputs.read_text(), "::warning" in result.stdout) == ("", False)
    with git.Repo(checkout) as repo:
        assert repo.head.commit.hexsha == rendered.hexsha
        assert not repo.is_dirty(untracked_files=True)


def test_a_removal_asked_for_in_extra_args_is_pushed(
    kyma_workspace: Path, remote: Path, tmp_path: Path
) -> None:
    """The action needs no input of its own: extra-args reach diff and render alike."""
    run_workflow(kyma_workspace, remote, tmp_path, mode="commit")
    _misspell_relay(kyma_workspace)

    runs = run_workflow(
        kyma_workspace,
        remote,
        tmp_path,
        mode="commit",
        **{"extra-args": "--allow-module-removal", "fail-on-module-problems": "false"},
    )

    assert runs["render"].outputs["module-problems"] == "true"  # rleay itself is still unresolvable
    assert runs["push"].ran and len(remote_log(remote)) == 2
    with git.Repo(remote) as repo:
        relay = repo.head.commit.tree / f"clusters/{CLUSTER}/kyma-relay"
        assert "relay-default.yaml" not in {item.name for item in relay.traverse()}  # its default CR went
