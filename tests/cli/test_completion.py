"""`btp-gitops completion bash|zsh|fish`: scripts that really complete, checked in the real shells.

bash is always there: the script is sourced in a real bash and its function called as bash calls
it (COMP_WORDS, COMP_CWORD). zsh and fish are checked where installed (`zsh -n`, `fish -n`, and
fish's own `complete -C`); without them those tests are skipped, saying so.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CLI

COMMANDS = ("render", "diff", "validate", "crds", "module-resources", "post-render", "completion", "examples")
COMMANDS += ("chart-path", "import")
COMMANDS += ("controller", "subscription-server")  # contributed by the controller, installed with it

# What a user types before TAB, and what must (and must not) be offered.
CASES = [
    (["btp-gitops", "re"], {"render"}),
    (["btp-gitops", ""], {*COMMANDS}),
    (["btp-gitops", "--"], {"--help", "--version"}),
    (["btp-gitops", "render", "--tar"], {"--target"}),
    (["btp-gitops", "render", "--target", ""], {"argocd", "flux"}),
    (["btp-gitops", "render", "src", "--out", "repo", "-o", ""], {"text", "json", "yaml"}),
    (["btp-gitops", "diff", "--output", ""], {"text", "markdown", "json", "yaml"}),
    (["btp-gitops", "diff", "--exit"], {"--exit-code"}),
    (["btp-gitops", "validate", "--kubernetes-v"], {"--kubernetes-version"}),
    (["btp-gitops", "completion", ""], {"bash", "zsh", "fish"}),
    (["btp-gitops", "post-render", "--domain", ""], {"btp-operator", "cap", "kyma"}),
    (["btp-gitops", "controller", "--log-l"], {"--log-level"}),
]


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each shell's script as `btp-gitops completion SHELL` prints it, written to a file."""
    folder = tmp_path_factory.mktemp("completion")
    written = {}
    for shell in ("bash", "zsh", "fish"):
        result = subprocess.run(
            [str(CLI), "completion", shell], capture_output=True, text=True, check=False, timeout=300
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout and not result.stderr
        written[shell] = folder / f"btp-gitops.{shell}"
        written[shell].write_text(result.stdout)
    return written


def _bash_complete(script: Path, words: list[str], cwd: Path) -> set[str]:
    program = (
        'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); '
        'complete -p btp-gitops >/dev/null && _btp_gitops && printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program, "bash", str(script), *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=True,
        timeout=60,
    )
    return {line for line in done.stdout.splitlines() if line}


@pytest.mark.parametrize(("words", "expected"), CASES, ids=[" ".join(w) for w, _ in CASES])
def test_bash_completes_commands_options_and_their_choices(
    scripts: dict[str, Path], tmp_path: Path, words: list[str], expected: set[str]
) -> None:
    offered = _bash_complete(scripts["bash"], words, tmp_path)
    assert offered == expected


def test_bash_completes_file_names_where_a_path_goes_and_nothing_for_a_name(
    scripts: dict[str, Path], tmp_path: Path
) -> None:
    script = scripts["bash"]
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources.yaml").write_text("")
    assert _bash_complete(script, ["btp-gitops", "render", "sour"], tmp_path) == {"sources", "sources.yaml"}
    assert _bash_complete(script, ["btp-gitops", "render", "x", "--out", "sour"], tmp_path) == {
        "sources",
        "sources.yaml",
    }
    assert _bash_complete(script, ["btp-gitops", "render", "x", "--cluster", "sour"], tmp_path) == set()


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed: the zsh script is not checked")
def test_the_zsh_script_parses_in_zsh(scripts: dict[str, Path]) -> None:
    script = scripts["zsh"]
    assert script.read_text().startswith("#compdef btp-gitops\n")
    done = subprocess.run(["zsh", "-n", str(script)], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(
    shutil.which("fish") is None, reason="fish is not installed: the fish script is not checked"
)
@pytest.mark.parametrize(("words", "expected"), CASES, ids=[" ".join(w) for w, _ in CASES])
def test_fish_completes_with_the_fish_script(
    scripts: dict[str, Path], tmp_path: Path, words: list[str], expected: set[str]
) -> None:
    script = scripts["fish"]
    parsed = subprocess.run(
        ["fish", "-n", str(script)], capture_output=True, text=True, check=False, timeout=60
    )
    assert parsed.returncode == 0, parsed.stderr
    line = " ".join(words)
    done = subprocess.run(
        ["fish", "--no-config", "-c", 'source $argv[1]; complete -C"$argv[2]"', str(script), line],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
        timeout=60,
    )
    offered = {entry.split("\t")[0] for entry in done.stdout.splitlines() if entry}
    if words[-1] == "":
        assert offered == expected
    else:  # fish also offers the other commands or options that contain what was typed
        assert expected <= offered
