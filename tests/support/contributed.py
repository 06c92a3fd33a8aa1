"""A command contributed to the `btp-gitops` CLI through the `btp_gitops.commands` entry-point
group, as the controller joins it: a probe module and its dist-info written into a folder that
goes first on the child's PYTHONPATH, so the real console script finds and runs it."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def contributed_command_env(
    folder: Path, module: str, command: str, source: str, environment: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment of a `btp-gitops` process that has `command`, registered by
    `module:register` (its code: `source`), written into `folder`."""
    (folder / f"{module}.py").write_text(source)
    distribution = module.replace("_", "-")
    dist_info = folder / f"{module}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(f"[btp_gitops.commands]\n{command} = {module}:register\n")
    base = dict(os.environ) if environment is None else environment
    return {**base, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
