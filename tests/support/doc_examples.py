"""The command examples of the docs, as a test runs them and as `--update` rewrites them.

The conventions (docs/index.md "Reading the examples" says the same to readers):

- A ```console block is run: each `$ ` line is a command (a line ending in `\\` continues on the
  next), the lines after it up to the next `$ ` line are its expected output, stdout and stderr
  together as a terminal shows them. Every command must exit 0; an example that shows a failure
  says so in the command (`...; echo "exit $?"`).
- The commands of one page run in order, as someone who installed the wheel runs them: in an empty
  directory that `btp-gitops examples examples` seeded (a page starting with that command runs it
  itself), with the `btp-gitops` of a venv the wheel
  built from this checkout was installed into first on PATH, and nothing of the checkout on PATH
  or in the working directory. A page needing a file of the checkout fails here.
- Any other fenced block holding a `btp-gitops` command (a cluster, a registry or `helm` would be
  needed to run it) must follow a `<!-- not run: reason -->` comment, so none is left out silently.

Output is compared after a small normalisation: the working directory reads `.` and its parent
`..`, trailing blanks are dropped, and a line `...` stands for any number of lines. A value that
differs from reader to reader is written as a placeholder (PLACEHOLDERS): `<commit>` for a Git
commit id (a reader's commits have their own author and date), `<digest>` for a sha256 digest,
`<time>` for a UTC timestamp and `<path>` for a path outside the working directory (where the
package is installed). `--update` writes them back in place of such values.

    .venv/bin/python -m tests.support.doc_examples --update [PAGE...]   # rewrite outputs that differ
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_RUN = re.compile(r"^<!-- not run: (?P<reason>\S.*?) -->$")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<lang>[\w-]*)")
SHELL_LANGS = {"", "console", "bash", "sh", "shell"}
# A btp-gitops command: at the start of a (prompted) line, or after a pipe, `&&` or `$(`.
COMMAND = re.compile(r"(?:^(?:\$ )?|[|;&(]\s*)btp-gitops(?:\s|$)")
ELLIPSIS = "..."
SEED = "btp-gitops examples examples"  # how a reader gets the example sources the pages use
# What each placeholder of an expected line stands for in the printed one.
PLACEHOLDERS = {
    "<commit>": r"[0-9a-f]{40}",
    "<digest>": r"sha256:[0-9a-f]{64}",
    "<time>": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z",
    "<path>": r"/\S*",
}
# The values `--update` turns back into placeholders (a path is left as printed: most are ours).
VARYING = {name: PLACEHOLDERS[name] for name in ("<commit>", "<digest>", "<time>")}
PLACEHOLDER = re.compile("|".join(re.escape(name) for name in PLACEHOLDERS))
# Commits made by the examples get the same ids on every run and machine.
GIT_DATE = "2025-01-01T00:00:00+00:00"


def pages() -> list[Path]:
    """Every page a reader follows: the README, DEVELOPMENT.md and the site's pages."""
    return [ROOT / "README.md", ROOT / "DEVELOPMENT.md", *sorted((ROOT / "docs").rglob("*.md"))]


def name(page: Path) -> str:
    """The page as failures name it: relative to the checkout when it is one of its pages."""
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else str(page)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: tuple[str, ...]  # the content, indentation of the fence removed
    not_run: str | None  # the reason given before it, if any

    @property
    def has_command(self) -> bool:
        return any(COMMAND.search(line.strip()) for line in self.lines)


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # 1-based line of the `$ ` line
    command: str
    expected: tuple[str, ...]
    output_lines: tuple[int, int]  # [start, end) of the expected output in the page, 0-based


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(text):
        opening = FENCE.match(text[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        start = index
        index += 1
        content: list[str] = []
        while index < len(text) and not text[index].strip().startswith(fence):
            content.append(text[index].removeprefix(indent))
            index += 1
        previous = next((line.strip() for line in reversed(text[:start]) if line.strip()), "")
        marker = NOT_RUN.match(previous)
        found.append(
            Block(page, start + 1, opening["lang"], tuple(content), marker["reason"] if marker else None)
        )
        index += 1
    return found


def examples(block: Block) -> list[Example]:
    """The commands of a console block with the output each must print."""
    result: list[Example] = []
    index = 0
    lines = block.lines
    while index < len(lines):
        if not lines[index].startswith("$ "):
            raise ValueError(f"{name(block.page)}:{block.line + 1 + index}: console output before any `$ `")
        first = index
        command = [lines[index][2:]]
        while command[-1].endswith("\\") and index + 1 < len(lines):
            index += 1
            command.append(lines[index])
        index += 1
        output_start = index
        while index < len(lines) and not lines[index].startswith("$ "):
            index += 1
        result.append(
            Example(
                page=block.page,
                line=block.line + 1 + first,
                command="\n".join(command),
                expected=tuple(lines[output_start:index]),
                # the block's content starts one line after the fence (0-based: block.line)
                output_lines=(block.line + output_start, block.line + index),
            )
        )
    return result


def runnable(page: Path) -> list[Example]:
    return [
        example
        for block in blocks(page)
        if block.lang == "console" and block.not_run is None
        for example in examples(block)
    ]


def unchecked_commands(page: Path) -> list[str]:
    """Blocks with a btp-gitops command that no test runs and that do not say why."""
    return [
        f"{name(page)}:{block.line}: a btp-gitops command in a {block.lang or 'plain'} block: make it a "
        "console block (run by tests/docs) or say why it cannot run with <!-- not run: ... -->"
        for block in blocks(page)
        if block.lang in SHELL_LANGS and block.lang != "console" and block.has_command and not block.not_run
    ]


def workspace(into: Path, bin_dir: Path, env: dict[str, str], *, seed: bool) -> Path:
    """An empty directory, seeded as the docs tell a reader (SEED) unless the page does it."""
    work = into / "work"
    work.mkdir()
    if not seed:
        return work
    seeded = subprocess.run(
        [str(bin_dir / "btp-gitops"), *SEED.split()[1:]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if seeded.returncode != 0:
        raise RuntimeError(f"{SEED} failed:\n{seeded.stderr}")
    return work


def environment(home: Path, bin_dir: Path) -> dict[str, str]:
    """The installed CLI first on PATH, as an activated venv or pipx puts it; nothing of the checkout
    or of the venv running the tests."""
    own_bin = str(Path(sys.executable).parent)
    system_path = [
        entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry and entry != own_bin
    ]
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        PATH=os.pathsep.join([str(bin_dir), *system_path]),
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_DATE=GIT_DATE,
        GIT_COMMITTER_DATE=GIT_DATE,
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as on a terminal
        COLUMNS="100",
        LC_ALL="C.UTF-8",
    )
    for name in ("CI", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(name, None)
    return env


def run(example: Example, cwd: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    result = subprocess.run(
        ["bash", "-c", "set -o pipefail\n" + example.command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=300,
    )
    text = result.stdout.replace(str(cwd), ".").replace(str(cwd.parent), "..")
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return result.returncode, lines


def line_matches(expected: str, actual: str) -> bool:
    """Equal, a placeholder standing for the value it names."""
    if PLACEHOLDER.search(expected) is None:
        return expected == actual
    pattern = "".join(
        PLACEHOLDERS[part] if part in PLACEHOLDERS else re.escape(part)
        for part in re.split(f"({PLACEHOLDER.pattern})", expected)
    )
    return re.fullmatch(pattern, actual) is not None


def with_placeholders(line: str) -> str:
    for name, pattern in VARYING.items():
        line = re.sub(rf"(?<![0-9a-zA-Z]){pattern}(?![0-9a-zA-Z])", name, line)
    return line


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Line by line, `...` standing for any number of lines."""
    if not expected:
        return not actual
    head, rest = expected[0].rstrip(), expected[1:]
    if head == ELLIPSIS:
        return any(matches(rest, actual[skip:]) for skip in range(len(actual) + 1))
    return bool(actual) and line_matches(head, actual[0]) and matches(rest, actual[1:])


@dataclass(frozen=True)
class Outcome:
    example: Example
    returncode: int
    actual: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and matches(self.example.expected, self.actual)

    def report(self) -> str:
        where = f"{name(self.example.page)}:{self.example.line}: $ {self.example.command}"
        if self.returncode != 0:
            return f"{where}\nexited {self.returncode}:\n" + "\n".join(self.actual)
        diff = difflib.unified_diff(
            list(self.example.expected), list(self.actual), "documented", "printed", lineterm=""
        )
        return f"{where}\noutput differs:\n" + "\n".join(diff)


def run_page(page: Path, scratch: Path, bin_dir: Path) -> Iterator[Outcome]:
    """Run a page's examples in order in a new directory under `scratch`, with the `btp-gitops` of
    `bin_dir` (an installed wheel's venv)."""
    home = scratch / "home"
    home.mkdir()
    env = environment(home, bin_dir)
    page_examples = runnable(page)
    seeds_itself = bool(page_examples) and page_examples[0].command == SEED
    cwd = workspace(scratch, bin_dir, env, seed=not seeds_itself)
    for example in page_examples:
        returncode, actual = run(example, cwd, env)
        yield Outcome(example, returncode, tuple(actual))


def installed_bin(scratch: Path) -> Path:
    """The bin directory of a venv holding the wheel built from this checkout."""
    from tests.support.wheel import build_wheel, install  # noqa: PLC0415

    return install(build_wheel(scratch / "build"), scratch / "installed").venv / "bin"


def update(page: Path, bin_dir: Path) -> int:
    """Rewrite the outputs of `page` that differ from what the commands print; the count."""
    with tempfile.TemporaryDirectory() as scratch:
        outcomes = list(run_page(page, Path(scratch), bin_dir))
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    changed = 0
    for outcome in reversed(outcomes):  # from the end, so earlier line numbers stay valid
        if outcome.returncode != 0:
            print(outcome.report(), file=sys.stderr)
        elif not outcome.ok:
            start, end = outcome.example.output_lines
            indent = re.match(r" *", lines[outcome.example.line - 1])
            prefix = indent[0] if indent else ""
            lines[start:end] = [(prefix + with_placeholders(line)).rstrip() + "\n" for line in outcome.actual]
            changed += 1
    page.write_text("".join(lines), encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--update", action="store_true", help="rewrite the outputs that differ")
    parser.add_argument("pages", nargs="*", type=Path, help="default: every page")
    args = parser.parse_args(argv)
    selected = [path.resolve() for path in args.pages] or [page for page in pages() if runnable(page)]
    failed = 0
    with tempfile.TemporaryDirectory() as installation:
        bin_dir = installed_bin(Path(installation))
        for page in selected:
            if args.update:
                print(f"{name(page)}: {update(page, bin_dir)} output(s) rewritten")
                continue
            with tempfile.TemporaryDirectory() as scratch:
                for outcome in run_page(page, Path(scratch), bin_dir):
                    if not outcome.ok:
                        failed += 1
                        print(outcome.report(), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
