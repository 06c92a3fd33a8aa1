"""A repository rendered once by the installed CLI, for the tests that copy it and then tamper with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import CLI, ROOT


def rendered_repository(parent: Path, cluster: str, *sources: Path) -> Path:
    """`parent/repo`, rendered from `sources` for `cluster` by the installed CLI, as users run it."""
    out = parent / "repo"
    done = subprocess.run(
        [str(CLI), "render", *sources, "--out", out, "--cluster", cluster],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return out
