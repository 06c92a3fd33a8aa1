"""Messages never act on a terminal or CI log: a file name or value someone else wrote may hold
escape sequences (clear the screen, set the window title, hide the lines before it), and every
error and note the CLI prints shows them as text."""

from __future__ import annotations

from pathlib import Path

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import RunCli

ESCAPES = ("\x1b", "\x07", "\x9b", "\u202e")


def test_an_error_naming_a_source_file_shows_its_escape_sequences(tmp_path: Path, run_cli: RunCli) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    name = "cap\x1b[2J\x1b]0;pwned\x07\u202eapp.yaml"
    (sources / name).write_text("apiVersion: sme.sap.com/v1alpha1\nkind: CAPApplication\nmetadata: [\n")
    result = run_cli("render", sources, "--stdout")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert not any(c in result.stderr for c in ESCAPES), repr(result.stderr)
    assert "cap\\x1b[2J\\x1b]0;pwned\\x07\\u202eapp.yaml" in result.stderr


def test_a_refused_file_in_the_output_tree_is_named_without_acting_on_the_terminal(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """A file pushed into the rendered cluster directory is never removed: the render stops and
    names it, escaped."""
    out = tmp_path / "repo"
    first = run_cli("render", "examples/btp-operator", "--out", out, "--cluster", "demo")
    assert first.returncode == ExitCode.OK, first.stderr
    app = next(p for p in (out / "clusters" / "demo").iterdir() if p.is_dir() and not p.name.startswith("."))
    pushed = app / "x\x1b[2Jpushed.yaml"
    pushed.write_text("kind: ConfigMap\n")
    result = run_cli("render", "examples/btp-operator", "--out", out, "--cluster", "demo")
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert not any(c in result.stderr for c in ESCAPES), repr(result.stderr)
    assert "x\\x1b[2Jpushed.yaml" in result.stderr
    assert pushed.exists()
