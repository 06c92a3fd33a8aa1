"""The render action as users get it: every step of action.yml that runs on the runner, the
install step included, with btp-gitops coming only from the wheel.

The wheel is built from this checkout (tests/actions/conftest.py). The action's install.sh puts
it into a fresh virtual environment under the runner's temp directory, an empty directory
outside the checkout, from a Python that has no btp-gitops: the checkout's .venv is off PATH,
nothing of the checkout is on PYTHONPATH, and the workspace holds only the sources (a copy of
examples/cap-app) and the GitOps clone. Dependencies come from PyPI, as on a runner. What the
action commits must be byte for byte what the checkout's own CLI renders from the same sources.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

import btp_gitops
from tests.actions.composite import CompositeAction, StepRun
from tests.conftest import CLI, EXAMPLES, ROOT, read_tree

ACTION = CompositeAction(ROOT / ".github" / "actions" / "render" / "action.yml")
CLUSTER = "demo"
IDENTITY = {
    "GIT_AUTHOR_NAME": "dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
}


def outside_the_checkout(entry: str) -> bool:
    path = Path(entry).resolve()
    return path != Path(sys.executable).parent.resolve() and not path.is_relative_to(ROOT)


def bare_runner_env() -> dict[str, str]:
    """PATH without the checkout's .venv (or anything else of the checkout), no PYTHON* variables."""
    path = os.pathsep.join(
        entry for entry in os.environ["PATH"].split(os.pathsep) if entry and outside_the_checkout(entry)
    )
    return {"PATH": path, "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}


@pytest.fixture
def workflow(tmp_path: Path) -> dict[str, Path]:
    """A runner's directories: a workspace with the committed sources and a clone of the (empty)
    GitOps remote, an empty RUNNER_TEMP, all outside the checkout."""
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLES / "cap-app", workspace / "sources")
    with git.Repo.init(workspace, initial_branch="main") as repo:
        repo.git.add("--all")
        repo.git.commit("-m", "sources", env=IDENTITY)
    remote = tmp_path / "gitops.git"
    git.Repo.init(remote, bare=True, initial_branch="main").close()
    git.Repo.clone_from(remote, workspace / "gitops").close()
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    assert not workspace.is_relative_to(ROOT) and not temp.is_relative_to(ROOT)
    return {"workspace": workspace, "remote": remote, "temp": temp}


def run_action(workflow: dict[str, Path], env: dict[str, str], **inputs: str) -> dict[str, StepRun]:
    runs = ACTION.run(
        {"sources": "sources", "cluster": CLUSTER, **inputs},
        workspace=workflow["workspace"],
        temp=workflow["temp"],
        github={"token": "test-token", "event_name": "push"},
        base_env=env,
    )
    return {run.id: run for run in runs}


def test_the_runner_environment_has_no_btp_gitops_before_the_install_step(tmp_path: Path) -> None:
    env = bare_runner_env()
    assert shutil.which("btp-gitops", path=env["PATH"]) is None
    python = shutil.which("python3", path=env["PATH"])
    assert python is not None
    probe = subprocess.run(
        [python, "-I", "-c", "import btp_gitops"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 1
    assert "No module named 'btp_gitops'" in probe.stderr


def test_the_action_installs_the_wheel_and_renders_cap_app_from_it_alone(
    built_wheel: Path, workflow: dict[str, Path], tmp_path: Path
) -> None:
    runs = run_action(workflow, bare_runner_env(), mode="commit", wheel=str(built_wheel))

    install = runs["install"]
    venv = workflow["temp"] / "btp-gitops-venv"
    assert install.ran
    assert install.outputs == {
        "btp-gitops": str(venv / "bin" / "btp-gitops"),
        "version": btp_gitops.__version__,
    }
    # The package, its schemas and its charts are the venv's: nothing is read from the checkout.
    located = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-I",
            "-c",
            "import btp_gitops, btp_gitops.generator.io.bundled as b; "
            'print(btp_gitops.__file__); print(b.schema_dir()); print(b.chart_dir("sap-btp-operator"))',
        ],
        env=bare_runner_env(),
        cwd=workflow["workspace"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    site_packages = next((venv / "lib").glob("python3.*/site-packages"))
    assert [Path(line).is_relative_to(site_packages) for line in located] == [True, True, True], located

    assert runs["diff"].outputs["changed"] == "true"
    assert runs["render"].outputs["committed"] == "true" and runs["push"].ran
    with git.Repo(workflow["remote"]) as remote:
        assert remote.head.commit.hexsha == runs["render"].outputs["commit"]
    pushed = read_tree(workflow["workspace"] / "gitops")
    assert any(path.startswith(f"clusters/{CLUSTER}/") for path in pushed)

    expected = tmp_path / "expected"
    subprocess.run(
        [
            str(CLI),
            "render",
            str(workflow["workspace"] / "sources"),
            *("--out", str(expected), "--cluster", CLUSTER, "--target", "argocd", "--revision", "main"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert pushed == read_tree(expected)


def test_without_inputs_it_installs_the_release_of_its_own_version(
    built_wheel: Path, workflow: dict[str, Path]
) -> None:
    """No `wheel`, no `version`: `btp-gitops==<the action's __version__>` from the package index.
    Not yet on PyPI, so pip finds that release among the links given (PIP_FIND_LINKS), as pip
    would find it on PyPI."""
    env = {**bare_runner_env(), "PIP_FIND_LINKS": str(built_wheel.parent)}

    runs = run_action(workflow, env, mode="diff")

    assert runs["install"].outputs["version"] == btp_gitops.__version__
    assert runs["diff"].outputs["changed"] == "true"
    assert not runs["render"].ran


def test_a_wheel_that_is_not_there_fails_the_install_step(workflow: dict[str, Path]) -> None:
    with pytest.raises(
        AssertionError, match=r"step install failed \(1\)[\s\S]*install: no wheel at missing\.whl"
    ):
        run_action(workflow, bare_runner_env(), wheel="missing.whl")
