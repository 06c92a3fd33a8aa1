"""The render action's action.yml holds together: what actionlint does not check in a composite
action's own steps (it reads only the inputs and outputs of a local action).

Every `inputs.x` used is declared; every `steps.<id>.outputs.<name>` names an earlier step and
an output that step's script writes (`output <name> ...`) or that the action it uses documents;
every run step's script exists and starts with a bash shebang; every input reaches some step.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.conftest import ROOT

ACTION_DIR = ROOT / ".github" / "actions" / "render"
INPUT_REF = re.compile(r"\binputs\.([A-Za-z0-9_-]+)")
STEP_OUTPUT_REF = re.compile(r"\bsteps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)")
SCRIPT_OUTPUT = re.compile(r"^\s*output ([a-z-]+) ", re.MULTILINE)
# Outputs of the third-party actions the steps use, from their documentation.
THIRD_PARTY_OUTPUTS = {"peter-evans/create-pull-request": {"pull-request-number", "pull-request-url"}}


def metadata() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ACTION_DIR / "action.yml").read_text())
    return loaded


def texts(node: Any) -> list[str]:
    """Every string value under `node`."""
    if isinstance(node, dict):
        return [text for value in node.values() for text in texts(value)]
    if isinstance(node, list):
        return [text for value in node for text in texts(value)]
    return [node] if isinstance(node, str) else []


def step_outputs(step: dict[str, Any]) -> set[str]:
    if "uses" in step:
        return THIRD_PARTY_OUTPUTS.get(step["uses"].split("@")[0], set())
    script = (ACTION_DIR / f"{step['id']}.sh").read_text()
    return set(SCRIPT_OUTPUT.findall(script))


def test_every_input_used_is_declared_and_every_input_is_used() -> None:
    action = metadata()
    declared = set(action["inputs"])
    used = {
        name for text in texts(action["runs"]) + texts(action["outputs"]) for name in INPUT_REF.findall(text)
    }
    assert declared, "the action declares no inputs"
    assert used <= declared, sorted(used - declared)
    assert declared <= used, f"inputs no step reads: {sorted(declared - used)}"


def test_step_outputs_refer_to_earlier_steps_that_write_them() -> None:
    action = metadata()
    steps = action["runs"]["steps"]
    written: dict[str, set[str]] = {}
    referred: set[str] = set()  # the steps whose outputs something reads: the loops below ran
    for step in steps:
        for text in texts({k: v for k, v in step.items() if k != "id"}):
            for step_id, name in STEP_OUTPUT_REF.findall(text):
                assert step_id in written, f"{step.get('id')}: steps.{step_id} is not an earlier step"
                assert name in written[step_id], f"{step.get('id')}: steps.{step_id} has no output {name}"
                referred.add(step_id)
        if "id" in step:
            written[step["id"]] = step_outputs(step)
    for text in texts(action["outputs"]):
        for step_id, name in STEP_OUTPUT_REF.findall(text):
            assert name in written.get(step_id, set()), (
                f"action output refers to steps.{step_id}.outputs.{name}"
            )
            referred.add(step_id)
    assert referred == {"install", "diff", "render", "pull-request"}


def test_run_steps_are_bash_scripts_kept_beside_the_action() -> None:
    steps = metadata()["runs"]["steps"]
    # The others are third-party actions: tests/actions/test_pinned_actions.py checks their pins.
    run_steps = [step for step in steps if "run" in step]
    assert [step.get("id") for step in run_steps] == ["install", "diff", "render", "push", "module-problems"]
    for step in run_steps:
        assert step["shell"] == "bash"
        script = ACTION_DIR / f"{step['id']}.sh"
        assert script.read_text().startswith("#!/usr/bin/env bash\n"), script
        assert "${{" not in step["run"].replace("${{ github.action_path }}", ""), "inputs go through env"
