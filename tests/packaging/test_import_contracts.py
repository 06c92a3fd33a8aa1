"""The import rules themselves: each planted import is refused, and the untouched tree passes.

The rules are import-linter contracts in pyproject.toml (the purity contract an allow-list, of
tests/support/import_contracts.py) and ruff's banned-api for the folders' short names. Each case
copies the package's modules (under their import names) and the lint configuration into a temporary
folder, adds one import to one module, and runs `lint-imports` and `ruff` there as the test command
runs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.wheel import source_files

BIN = Path(sys.executable).parent
# The lint configuration, kept where it is; the package's modules go under their import names.
CONFIGURATION = ("pyproject.toml", "tests/__init__.py", "tests/support/")
PACKAGE_FOLDERS = {
    "src/btp_gitops/": "btp_gitops/",
    "generator/": "btp_gitops/generator/",
    "controller/": "btp_gitops/controller/",
}  # pyproject.toml's package-dir


def copy_of_the_tree(target: Path) -> Path:
    """The modules laid out as the editable install and the wheel lay them out (`generator/x.py` as
    `btp_gitops/generator/x.py`), plain copies, with the lint configuration at the top: lint-imports
    run there finds the package by folder in its working directory."""
    for name in source_files(ROOT):
        if not name.endswith((".py", ".toml")):
            continue
        folder = next((f for f in PACKAGE_FOLDERS if name.startswith(f)), None)
        if folder is not None:
            copy = target / PACKAGE_FOLDERS[folder] / name.removeprefix(folder)
        elif name.startswith(CONFIGURATION):
            copy = target / name
        else:
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy)
    return target


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"],
        check=False,
        cwd=tree,
        env={**os.environ, "COLUMNS": "1000"},  # one line per finding, as the assertions read them
        capture_output=True,
        text=True,
        timeout=300,
    )


def plant(tree: Path, module: str, line: str) -> Path:
    path = tree / module
    text = path.read_text(encoding="utf-8")
    # After the module's docstring and `from __future__`, where an import may stand.
    head, future, rest = text.partition("from __future__ import annotations\n")
    assert future, f"{module} has no `from __future__ import annotations` to plant after"
    path.write_text(f"{head}{future}{line}\n{rest}", encoding="utf-8")
    return path


def test_the_untouched_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = lint_imports(copy_of_the_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    declared = len(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
            "contracts"
        ]
    )
    assert f"Contracts: {declared} kept, 0 broken." in result.stdout


PURE_MODULE = "btp_gitops/generator/transforms/metadata.py"
CONTROLLER_MODULE = "btp_gitops/controller/events.py"
DOMAIN_MODULE = "btp_gitops/generator/domains/cap/validation.py"


@pytest.mark.parametrize(
    ("module", "line", "contract", "refusal"),
    [
        (
            CONTROLLER_MODULE,
            "from generator.pipeline import render",
            "One name per module",
            "btp_gitops.controller.events -> generator",
        ),
        (
            CONTROLLER_MODULE,
            "from btp_gitops.generator.pipeline import render",
            "The controller never imports the generator's commands, pipelines or writers",
            "btp_gitops.controller.events -> btp_gitops.generator.pipeline",
        ),
        (
            DOMAIN_MODULE,
            "from generator.io import repo",
            "One name per module",
            "btp_gitops.generator.domains.cap.validation -> generator",
        ),
        (
            DOMAIN_MODULE,
            "from btp_gitops.generator.io import repo",
            "Rendering is pure",
            "btp_gitops.generator.domains.cap.validation imports btp_gitops.generator.io",
        ),
        (
            PURE_MODULE,
            "import os",
            "Rendering is pure",
            "btp_gitops.generator.transforms.metadata imports os",
        ),
        (
            PURE_MODULE,
            "import pathlib",
            "Rendering is pure",
            "btp_gitops.generator.transforms.metadata imports pathlib",
        ),
        (
            PURE_MODULE,
            "import aiohttp",
            "Rendering is pure",
            "btp_gitops.generator.transforms.metadata imports aiohttp",
        ),
        (
            PURE_MODULE,
            "from urllib import request",
            "Rendering is pure",
            "btp_gitops.generator.transforms.metadata imports urllib",
        ),
    ],
)
def test_a_planted_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str, refusal: str
) -> None:
    tree = copy_of_the_tree(tmp_path)
    plant(tree, module, line)
    result = lint_imports(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    _, _, broken = result.stdout.partition("Broken contracts")
    assert contract in broken, result.stdout
    assert refusal in broken, result.stdout


def test_an_exception_that_excuses_no_import_is_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    source = tree / "btp_gitops/generator/core/sources.py"
    source.write_text(source.read_text(encoding="utf-8").replace("import os\n", "", 1), encoding="utf-8")
    result = lint_imports(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ignore_imports btp_gitops.generator.core.sources -> os matches no import" in result.stdout


@pytest.mark.parametrize(
    ("module", "line"),
    [
        (CONTROLLER_MODULE, "from generator.pipeline import render"),
        (DOMAIN_MODULE, "from generator.io import repo"),
        (PURE_MODULE, "import controller"),
    ],
)
def test_ruff_refuses_the_short_names(tmp_path: Path, module: str, line: str) -> None:
    tree = copy_of_the_tree(tmp_path)
    path = plant(tree, module, line)
    result = subprocess.run(
        [
            str(BIN / "ruff"),
            "check",
            "--no-cache",
            "--select",
            "TID",
            "--output-format",
            "concise",
            str(path),
        ],
        check=False,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TID251" in result.stdout and "is banned: import btp_gitops." in result.stdout
