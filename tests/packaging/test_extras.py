"""Without the `controller` extra the generator works and the commands that need the extra say so.

Each case runs the CLI in a fresh interpreter in which one module of the extra cannot be imported
(`sys.modules[name] = None` makes every import of it fail as if it were not installed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

EXTRA = "pip install 'btp-gitops[controller]'"


def run_without(missing: str, *args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    program = (
        "import sys\n"
        f"sys.modules[{missing!r}] = None\n"
        "from btp_gitops.generator.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("missing", ["kubernetes", "urllib3"])
def test_post_render_from_cluster_names_the_extra(missing: str, tmp_path: Path) -> None:
    result = run_without(missing, "post-render", "--from-cluster", cwd=tmp_path, stdin="")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "--from-cluster" in result.stderr
    assert EXTRA in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("missing", ["kubernetes", "urllib3"])
def test_diff_against_cluster_names_the_extra(missing: str, tmp_path: Path) -> None:
    result = run_without(missing, "diff", str(EXAMPLES / "cap-app"), "--against-cluster", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == (
        "error: --against-cluster needs the kubernetes client: pip install 'btp-gitops[controller]'"
    )
    assert result.stdout == ""


@pytest.mark.parametrize("missing", ["kubernetes", "jwt", "prometheus_client", "urllib3"])
@pytest.mark.parametrize("command", ["controller", "subscription-server"])
def test_controller_commands_name_the_extra(command: str, missing: str, tmp_path: Path) -> None:
    result = run_without(missing, command, "--kubeconfig", str(tmp_path / "absent"), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"btp-gitops {command} needs the controller extra" in result.stderr
    assert missing in result.stderr
    assert EXTRA in result.stderr


def test_controller_help_needs_no_extra(tmp_path: Path) -> None:
    result = run_without("kubernetes", "controller", "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--leader-elect" in result.stdout


def test_render_and_validate_run_without_the_extra(tmp_path: Path) -> None:
    """Rendering and offline validation import nothing of the extra."""
    out = tmp_path / "out"
    rendered = run_without(
        "kubernetes", "render", str(EXAMPLES / "btp-operator"), "--out", str(out), cwd=tmp_path
    )
    assert rendered.returncode == 0, rendered.stderr
    for missing in ("jwt", "prometheus_client", "urllib3"):
        validated = run_without(missing, "validate", str(out), "--ignore-missing-schemas", cwd=tmp_path)
        assert validated.returncode == 0, validated.stderr
