"""Fixtures for the Kyma tests: writable copies of examples/kyma-modules and a way to edit its Kyma."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import CLI, EXAMPLES, ROOT, RunCli

EXAMPLE = EXAMPLES / "kyma-modules"
CATALOG = EXAMPLE / "catalog"
# The catalog's templates name their content in ../.modules, outside the catalog: a render with
# --catalog CATALOG alone may not read it.
MODULE_CONTENT = EXAMPLE / ".modules"
POLICY = EXAMPLE / "maintenance-policy.json"
BETA_KYMA = EXAMPLE.parent / "kyma-beta.yaml"


def run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The installed `btp-gitops` as a user runs it (like the run_cli fixture, usable at any scope)."""
    return subprocess.run(
        [str(CLI), *map(str, args)], capture_output=True, text=True, cwd=cwd, check=False, timeout=300
    )


@pytest.fixture
def kyma_source(tmp_path: Path) -> Path:
    """A copy of examples/kyma-modules (module content included) whose kyma.yaml tests may edit."""
    target = tmp_path / "source"
    shutil.copytree(EXAMPLE, target)
    return target


def edit_kyma(source: Path, spec: dict[str, Any] | None = None, labels: dict[str, str] | None = None) -> None:
    """Update the spec and labels of the Kyma in `source`/kyma.yaml (None values remove keys)."""
    path = source / "kyma.yaml"
    body = yaml.safe_load(path.read_text())
    for target, changes in (
        (body["spec"], spec or {}),
        (body["metadata"].setdefault("labels", {}), labels or {}),
    ):
        for key, value in changes.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    path.write_text(yaml.safe_dump(body, sort_keys=False))


Render = Callable[..., dict[str, Any]]


@pytest.fixture
def render_json(run_cli: RunCli) -> Render:
    """Run `btp-gitops render ... --output json`; return the report (the render must succeed)."""

    def render(*args: str | Path) -> dict[str, Any]:
        result = run_cli("render", *args, "--output", "json")
        assert result.returncode == 0, result.stderr
        report: dict[str, Any] = json.loads(result.stdout)
        return report

    return render


def modules_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The module statuses of the report's only Kyma, by name."""
    (kyma,) = report["kymas"]
    return {module["name"]: module for module in kyma["modules"]}
