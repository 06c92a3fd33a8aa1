"""Shared fixtures: paths of the checkout, the CLI as users run it, and YAML snapshots.

Snapshots are one plain YAML file per test under `__snapshots__/`, reviewed like code; CI runs
without `--snapshot-update`, so any drift in rendered output fails.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from tests.support.wheel import build_wheel

pytest_plugins = [
    "tests.support.tiers",
    "tests.support.parallel",
    "tests.support.kubeapi",
    "tests.support.prometheus",
]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CHART = ROOT / "charts" / "sap-btp-operator"
CLI = Path(sys.executable).parent / "btp-gitops"


def _register_package(name: str) -> None:
    """Make the checkout's folder `name` importable as the package `name`, and nothing beside it."""
    folder = ROOT / name
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


# `python -m pytest` puts the working directory first on sys.path; from the checkout that would make
# its top-level `generator/` and `controller/` importable under a second name beside `btp_gitops.*`.
# The tests see btp-gitops as it is installed. Of the checkout's own folders they import `tests`
# (which pytest's importlib mode registered from its folder before importing this file) and the
# benchmarks' fixtures in `bench`, registered here the same way.
sys.path[:] = [entry for entry in sys.path if Path(entry or os.curdir).resolve() != ROOT]
if "bench" not in sys.modules:
    _register_package("bench")

# The fuzzers explore new random inputs on every developer run, but CI must give the same verdict
# for the same commit: there Hypothesis derandomizes (its examples follow from each test's name),
# and a failure prints the reproduction blob. Set HYPOTHESIS_PROFILE to choose either anywhere.
# Neither has Hypothesis's per-example deadline (200 ms of wall time): on two cores shared by two
# test workers and the tools they start, a slow example says nothing about the code, and a
# property that failed for it once, alone among its runs, was a verdict on the machine. Time is
# measured in bench/; a hang is bounded by the per-test timeout (pyproject.toml).
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True, database=None, deadline=None)
hypothesis_settings.register_profile("explore", print_blob=True, deadline=None)
hypothesis_settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "explore")
)


def pytest_configure(config: pytest.Config) -> None:
    # A collect-only run executes no test, so syrupy would count every single-file snapshot as
    # unused and exit 1; a collection check (used before every commit) must only fail on import
    # or collection errors.
    if config.option.collectonly:
        config.option.warn_unused_snapshots = True


@pytest.fixture(autouse=True, scope="session")
def _private_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The state directory (the write journal's key, io.journal_seal) of this test session, for the
    tests and every btp-gitops they start: never the user's own."""
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state-home"))
    yield
    if saved is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = saved


class YamlSnapshotExtension(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "yaml"

    def serialize(self, data: Any, **_: Any) -> str:
        if not isinstance(data, str):
            raise TypeError("YAML snapshots take the rendered text")
        return data


@pytest.fixture
def yaml_snapshot(snapshot: Any) -> Any:
    return snapshot.use_extension(YamlSnapshotExtension)


def tree_as_yaml(files: dict[str, str | bytes]) -> str:
    """A rendered tree as one YAML stream: each file a document headed by its path."""
    parts = []
    for path in sorted(files):
        text = files[path]
        text = text.decode("utf-8") if isinstance(text, bytes) else text
        parts.append(f"# File: {path}\n---\n{text}" if text else f"# File: {path} (empty)\n")
    return "".join(parts)


def read_tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel users install, built once per test session from this checkout's sources."""
    return build_wheel(tmp_path_factory.mktemp("wheel-build"))


RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli() -> RunCli:
    """Run the installed `btp-gitops` console script as a user would."""

    def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI), *map(str, args)], capture_output=True, text=True, cwd=cwd, check=False, timeout=300
        )

    return run
