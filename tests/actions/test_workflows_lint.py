"""actionlint over the project's workflows, the render action and the example workflows
of docs/gitops/github-actions.md.

actionlint (built from its Go module by scripts/build-tools.sh) checks workflow syntax, `${{ }}`
expressions and their contexts, the inputs of known actions, and the inputs of local actions
against their action.yml. It lints action.yml only through a workflow that uses it, so the
docs' example workflows are linted in a scratch project holding a copy of `.github/`, with
their `uses:` pointed at the local copy of the action. Its shellcheck and pyflakes integrations
are turned off: whether those tools are installed must not change the result (the action's
scripts are plain files, and `bash` runs them in tests/actions/test_render_action.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import git
import pytest

from tests.conftest import ROOT
from tests.support.tools import tool_path

pytestmark = pytest.mark.tools

ACTION_REF = re.compile(r"uses: \S+/\.github/actions/render@\S+")
EXAMPLE_WORKFLOW = re.compile(r"```yaml\n(# \.github/workflows/(\S+)\n.*?)```", re.DOTALL)


def actionlint(project: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool_path("actionlint")), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def scratch_project(tmp_path: Path, workflows: dict[str, str]) -> Path:
    """A Git work tree with this project's `.github/` and the given extra workflows."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / ".github", project / ".github")
    for name, text in workflows.items():
        (project / ".github" / "workflows" / name).write_text(text)
    git.Repo.init(project).close()
    return project


def docs_workflows() -> dict[str, str]:
    """The example workflows of docs/gitops/github-actions.md (yaml blocks starting `# .github/workflows/<name>`),
    calling the local copy of the action."""
    found = EXAMPLE_WORKFLOW.findall((ROOT / "docs" / "gitops" / "github-actions.md").read_text())
    return {name: ACTION_REF.sub("uses: ./.github/actions/render", text) for text, name in found}


def test_the_projects_workflows_pass_actionlint() -> None:
    result = actionlint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_docs_workflows_and_the_action_they_call_pass_actionlint(tmp_path: Path) -> None:
    workflows = docs_workflows()
    assert len(workflows) >= 2, "the GitHub Actions page shows a pull-request and a push workflow"
    assert all("uses: ./.github/actions/render" in text for text in workflows.values())
    project = scratch_project(tmp_path, workflows)

    result = actionlint(project)

    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_reports_a_wrong_action_input_and_a_broken_expression(tmp_path: Path) -> None:
    """The checks above can fail: a misspelled input of the local action and an unknown context."""
    name, text = next(iter(docs_workflows().items()))
    broken = text.replace("sources:", "source:", 1).replace("${{ secrets.", "${{ secret.", 1)
    project = scratch_project(tmp_path, {name: broken})

    result = actionlint(project)

    assert result.returncode == 1
    assert 'input "source" is not defined in action "btp-gitops render"' in result.stdout
    assert 'missing input "sources"' in result.stdout
    assert 'undefined variable "secret"' in result.stdout
