"""The docs cannot drift from the CLI: every command example runs, output included, from the wheel
installed outside the checkout into an empty directory (tests/support/doc_examples.py has the
conventions), and the README's two commands are the ones the docs run and CI runs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.doc_examples import (
    blocks,
    line_matches,
    matches,
    name,
    pages,
    run_page,
    runnable,
    unchecked_commands,
    with_placeholders,
)
from tests.support.wheel import InstalledProduct, install

PAGES_WITH_EXAMPLES = [page for page in pages() if runnable(page)]


@pytest.fixture(scope="module")
def product(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledProduct:
    return install(built_wheel, tmp_path_factory.mktemp("installed"))


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=name)
def test_the_examples_of_a_page_print_what_it_shows(
    page: Path, tmp_path: Path, product: InstalledProduct
) -> None:
    failures = [
        outcome.report() for outcome in run_page(page, tmp_path, product.cli.parent) if not outcome.ok
    ]
    assert not failures, "\n\n".join(failures)


def test_every_btp_gitops_command_in_the_docs_is_run_or_says_why_not() -> None:
    problems = [problem for page in pages() for problem in unchecked_commands(page)]
    assert not problems, "\n".join(problems)


def test_the_docs_use_one_convention_for_the_cli() -> None:
    """`btp-gitops` on PATH (an activated venv or pipx), never the venv's path: the tests run it so."""
    found = [
        f"{name(page)}:{number}"
        for page in pages()
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if ".venv/bin/btp-gitops" in line
    ]
    assert not found


def test_the_examples_write_into_their_own_directories() -> None:
    """Following every page in one checkout must not make one example wipe another's render."""
    outputs: dict[tuple[str, str], str] = {}
    clashes = []
    for page in PAGES_WITH_EXAMPLES:
        for example in runnable(page):
            command = " ".join(example.command.replace("\\\n", " ").split())
            out = re.search(r"--out (\S+)", command)
            cluster = re.search(r"--cluster (\S+)", command)
            if not command.startswith("btp-gitops render") or out is None:
                continue
            key = (out[1], cluster[1] if cluster else "default")
            where = f"{name(page)}:{example.line}"
            source = command.split()[2]
            first = outputs.setdefault(key, f"{source} {where}")
            if first.split()[0] != source:
                clashes.append(f"{where} renders {source} into {key} like {first}")
    assert not clashes, "\n".join(clashes)


def test_the_readme_commands_are_the_ones_run_by_the_docs_and_by_ci() -> None:
    readme = ROOT / "README.md"
    first = blocks(readme)[0]
    assert first.not_run, "the README's first block is the setup and test commands"
    setup, test = first.lines
    assert test == "bash scripts/test.sh"
    # .ci/run runs exactly the README's test command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == test
    # the render of the setup command is an example of the docs' first page, so it is run
    render = setup.split(" && ")[-1]
    assert render.startswith("btp-gitops render ")
    assert render in [example.command for example in runnable(ROOT / "docs" / "index.md")]


# The runner itself: it must be able to fail.


def test_matching_takes_ellipsis_for_any_lines_and_nothing_else() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "d"], ["a", "d"])
    assert not matches(["a", "...", "d"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "x"])


def test_a_page_whose_output_or_exit_code_is_wrong_fails_naming_page_and_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```console\n$ btp-gitops --version\nbtp-gitops 0.0.0-not-this\n$ false\n```\n",
        encoding="utf-8",
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    outcomes = list(run_page(page, scratch, Path(sys.executable).parent))
    assert [outcome.ok for outcome in outcomes] == [False, False]
    assert outcomes[0].report().startswith(f"{page}:4: $ btp-gitops --version\noutput differs:\n")
    assert "exited 1" in outcomes[1].report()


def test_an_unmarked_shell_block_with_a_command_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\nhelm template x | btp-gitops post-render\n```\n\n"
        "<!-- not run: needs a cluster -->\n```bash\nbtp-gitops controller\n```\n",
        encoding="utf-8",
    )
    problems = unchecked_commands(page)
    assert [problem.split(": ")[0] for problem in problems] == [f"{page}:1"]
    assert [block.not_run for block in blocks(page)] == [None, "needs a cluster"]


def test_the_examples_run_in_an_empty_directory_seeded_with_the_examples_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```console\n$ ls\nexamples\n$ ls examples\nbtp-operator\ncap-app\ncap-services-only\nkyma-beta.yaml\nkyma-modules\n"
        '$ test -e pyproject.toml || test -e charts; echo "exit $?"\nexit 1\n```\n',
        encoding="utf-8",
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    outcomes = list(run_page(page, scratch, Path(sys.executable).parent))
    assert [outcome.report() for outcome in outcomes if not outcome.ok] == []


def test_a_placeholder_stands_for_its_kind_of_value_only() -> None:
    commit = "94aa3d00519d4fcac9ea0f12e89e081cd60c8b2a"
    assert line_matches("committed <commit>", f"committed {commit}")
    assert not line_matches("committed <commit>", "committed 94aa3d0")
    assert not line_matches("committed <commit>", f"committed {commit} and more")
    assert line_matches("image@<digest>", "image@sha256:" + "ab" * 32)
    assert not line_matches("image@<digest>", "image@sha256:abc")
    assert line_matches("at <time>", "at 2026-11-28T23:20:45Z")
    assert line_matches(
        "CRDs in <path>/crds match", "CRDs in /venv/lib/btp_gitops/data/charts/btp-gitops/crds match"
    )
    assert not line_matches("CRDs in <path>/crds match", "CRDs in charts/btp-gitops/crds match")
    assert line_matches("a <kind>-<name>.yaml file", "a <kind>-<name>.yaml file")  # not placeholders
    assert matches(["...", "committed <commit>"], ["x", f"committed {commit}"])


def test_update_writes_placeholders_for_values_that_vary() -> None:
    commit = "de4237f0261bafaa4e1d4d5b898d15e592e87cd6"
    assert with_placeholders(f"committed {commit}") == "committed <commit>"
    assert with_placeholders("pushed at 2026-01-02T03:04:05Z") == "pushed at <time>"
    assert with_placeholders("24 objects in 1 app(s)") == "24 objects in 1 app(s)"
