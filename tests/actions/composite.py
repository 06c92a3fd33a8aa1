"""Run the steps of a composite action as GitHub's runner would, minus GitHub.

The runner reads action.yml, evaluates each step's `if:`, `env:` and `with:` with the inputs,
earlier steps' outputs and a few `github`/`runner` values, and runs `run:` steps with bash and
the step's environment (GITHUB_OUTPUT, RUNNER_TEMP as on a runner). `uses:` steps need GitHub
(setup-python, create-pull-request, the PR comment); they are not run but recorded with their
evaluated `with:` so a test can check what they would have been given.

The expression language is the part of GitHub's that action.yml uses: context lookups
(`inputs.x`, `steps.id.outputs.x`, `github.x`, `runner.x`), string literals, `==`, `!=`, `&&`
and `||`. Anything else fails loudly rather than being guessed.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EMBEDDED = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|&&|\|\|)|'(?P<str>(?:[^']|'')*)'|(?P<ref>[A-Za-z_][\w.-]*))")


@dataclass
class StepRun:
    id: str
    kind: str  # "run" or "uses"
    ran: bool
    with_: dict[str, str] = field(default_factory=dict)  # uses steps: their evaluated inputs
    outputs: dict[str, str] = field(default_factory=dict)
    result: subprocess.CompletedProcess[str] | None = None


class ExpressionError(ValueError):
    pass


@dataclass
class Context:
    inputs: dict[str, str]
    github: dict[str, str]
    runner: dict[str, str]
    steps: dict[str, dict[str, str]] = field(default_factory=dict)

    def lookup(self, ref: str) -> str:
        parts = ref.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.inputs.get(parts[1], "")
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return self.steps.get(parts[1], {}).get(parts[3], "")
        if parts[0] in ("github", "runner") and len(parts) == 2:
            values = self.github if parts[0] == "github" else self.runner
            if parts[1] not in values:
                raise ExpressionError(f"the test gives no value for {ref}")
            return values[parts[1]]
        raise ExpressionError(f"unsupported context reference {ref!r}")


def evaluate(expression: str, context: Context) -> str | bool:
    """Value of one expression; comparisons and logic give booleans."""
    tokens = _tokens(expression)
    return _or(tokens, context)


def _tokens(expression: str) -> list[tuple[str, str]]:
    tokens = []
    position = 0
    while position < len(expression.rstrip()):
        match = _TOKEN.match(expression, position)
        if match is None or match.end() == position:
            raise ExpressionError(f"cannot read {expression!r} at {position}")
        kind = match.lastgroup or ""
        value = match.group(kind)
        tokens.append((kind, value.replace("''", "'") if kind == "str" else value))
        position = match.end()
    return tokens


def _or(tokens: list[tuple[str, str]], context: Context) -> str | bool:
    value = _and(tokens, context)
    while tokens and tokens[0] == ("op", "||"):
        tokens.pop(0)
        right = _and(tokens, context)
        value = value if _truthy(value) else right
    if tokens:
        raise ExpressionError(f"unexpected {tokens[0][1]!r}")
    return value


def _and(tokens: list[tuple[str, str]], context: Context) -> str | bool:
    value = _comparison(tokens, context)
    while tokens and tokens[0] == ("op", "&&"):
        tokens.pop(0)
        right = _comparison(tokens, context)
        value = right if _truthy(value) else value
    return value


def _comparison(tokens: list[tuple[str, str]], context: Context) -> str | bool:
    left = _operand(tokens, context)
    if tokens and tokens[0][1] in ("==", "!="):
        operator = tokens.pop(0)[1]
        right = _operand(tokens, context)
        # GitHub compares strings case-insensitively.
        equal = str(left).lower() == str(right).lower()
        return equal if operator == "==" else not equal
    return left


def _operand(tokens: list[tuple[str, str]], context: Context) -> str:
    if not tokens:
        raise ExpressionError("expression ends early")
    kind, value = tokens.pop(0)
    if kind == "str":
        return value
    if kind == "ref":
        return context.lookup(value)
    raise ExpressionError(f"unexpected operator {value!r}")


def _truthy(value: str | bool) -> bool:
    return bool(value)


def substitute(text: str, context: Context) -> str:
    """A value with `${{ ... }}` parts replaced by their values."""
    return _EMBEDDED.sub(lambda match: _as_text(evaluate(match.group(1), context)), text)


def _as_text(value: str | bool) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else value


def _condition(step: Mapping[str, Any], context: Context) -> bool:
    condition = step.get("if")
    if condition is None:
        return True
    inner = _EMBEDDED.fullmatch(condition.strip())
    return _truthy(evaluate(inner.group(1) if inner else condition, context))


def read_outputs(path: Path) -> dict[str, str]:
    """`name=value` lines as a step writes them to GITHUB_OUTPUT (no multi-line values here)."""
    outputs = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition("=")
        outputs[name] = value
    return outputs


@dataclass
class CompositeAction:
    path: Path  # action.yml

    @property
    def metadata(self) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load(self.path.read_text())
        return loaded

    def input_defaults(self) -> dict[str, str]:
        return {name: str(spec.get("default", "")) for name, spec in self.metadata["inputs"].items()}

    def run(
        self,
        inputs: Mapping[str, str],
        *,
        workspace: Path,
        temp: Path,
        github: Mapping[str, str],
        base_env: Mapping[str, str],
        skip: Callable[[str], bool] = lambda _: False,
    ) -> list[StepRun]:
        """Run every step in order; `skip(step_id)` leaves out a run step the test stands in for."""
        unknown = set(inputs) - set(self.metadata["inputs"])
        assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
        context = Context(
            inputs={},
            github={**github, "action_path": str(self.path.parent), "workspace": str(workspace)},
            runner={"temp": str(temp)},
        )
        defaults = {name: substitute(value, context) for name, value in self.input_defaults().items()}
        context.inputs = {**defaults, **inputs}
        runs = []
        for index, step in enumerate(self.metadata["runs"]["steps"]):
            step_id = step.get("id", f"step-{index}")
            runs.append(self._step(step_id, step, context, workspace, temp, base_env, skip))
            context.steps[step_id] = runs[-1].outputs
        return runs

    def _step(
        self,
        step_id: str,
        step: Mapping[str, Any],
        context: Context,
        workspace: Path,
        temp: Path,
        base_env: Mapping[str, str],
        skip: Callable[[str], bool],
    ) -> StepRun:
        ran = _condition(step, context)
        if "uses" in step:
            with_ = {key: substitute(str(value), context) for key, value in (step.get("with") or {}).items()}
            return StepRun(step_id, "uses", ran, with_=with_)
        if not ran or skip(step_id):
            return StepRun(step_id, "run", ran=False)
        assert step.get("shell") == "bash", f"{step_id}: run steps are bash"
        output_file = temp / f"output-{step_id}"
        output_file.write_text("")
        env = {
            **base_env,
            **{key: substitute(str(value), context) for key, value in (step.get("env") or {}).items()},
            "GITHUB_OUTPUT": str(output_file),
            "RUNNER_TEMP": str(temp),
            "GITHUB_WORKSPACE": str(workspace),
        }
        result = subprocess.run(
            ["bash", "-c", substitute(step["run"], context)],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert result.returncode == 0, (
            f"step {step_id} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
        )
        return StepRun(step_id, "run", True, outputs=read_outputs(output_file), result=result)


def runner_env(path_prefix: Path) -> dict[str, str]:
    """A clean environment: PATH with the CLI first, HOME kept for Git, no inherited Git identity."""
    return {
        "PATH": f"{path_prefix}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
    }
