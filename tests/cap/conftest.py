"""Fixtures for the CAP application tests: renders of sources, in process and through the CLI.

`render_files` runs the real render pipeline in process (schema validation, the CAP domain, layout
and the credential guard), with nothing written; `render_repo` runs the installed CLI into a repo.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import RenderResult, render_cluster
from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree

CAP_APP = EXAMPLES / "cap-app"
SERVICES_ONLY = EXAMPLES / "cap-services-only"
DATA = Path(__file__).parent / "data"
CLUSTER = "demo"


def render_result(*sources: Path) -> RenderResult:
    return render_cluster(tuple(sources), CLUSTER, EmbeddedHelm(), load_schema_registry())


def render_files(*sources: Path) -> dict[str, str]:
    """path under clusters/<cluster>/ -> text, for every rendered file."""
    return render_result(*sources).files


def objects_of(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """path -> object of every rendered object file (kustomization.yaml files left out)."""
    return {
        path: yaml.safe_load(text) for path, text in files.items() if not path.endswith("/kustomization.yaml")
    }


def write_documents(directory: Path, name: str, documents: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return directory


@pytest.fixture
def cap_source(tmp_path: Path) -> Path:
    """A writable copy of examples/cap-app."""
    target = tmp_path / "source"
    shutil.copytree(CAP_APP, target)
    return target


RenderRepo = Callable[[Path, Path], dict[str, bytes]]


@pytest.fixture
def render_repo(run_cli: RunCli) -> RenderRepo:
    """`btp-gitops render SOURCE --out REPO` as a user runs it; the repo's files afterwards."""

    def render(source: Path, repo: Path) -> dict[str, bytes]:
        result = run_cli("render", source, "--out", repo, "--cluster", CLUSTER, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        return read_tree(repo)

    return render
