"""What the fuzzers share: the CLI run in-process, random values, and the invariants checked.

Most examples run `main()` in this process with stdin, stdout and stderr replaced (a subprocess
per example costs half a second); `main` is where errors become exit codes and an unexpected
exception becomes "internal error" and exit 70, so the in-process run sees exactly what a user
would. A few examples per fuzzer run the installed console script as well.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from btp_gitops.generator.cli import main
from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import CLI

CANARY_SECRET = "canary-9f3b71c2-do-not-leak"
# A result (0; 9: rendered, some Kyma modules not resolved and named) or a typed error (2-5).
EXPECTED_EXIT_CODES = {
    ExitCode.OK,
    ExitCode.USAGE,
    ExitCode.INPUT,
    ExitCode.CHART,
    ExitCode.OUTPUT,
    ExitCode.MODULE_PROBLEMS,
}


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str


def run_in_process(args: list[str], stdin: bytes = b"") -> Run:
    out, err = io.StringIO(), io.StringIO()
    fake_stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    saved = sys.stdin
    sys.stdin = fake_stdin
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit_:  # argparse
                code = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        sys.stdin = saved
    return Run(code, out.getvalue(), err.getvalue())


def run_subprocess(args: list[str], stdin: bytes = b"") -> Run:
    done = subprocess.run([str(CLI), *args], input=stdin, capture_output=True, timeout=120, check=False)
    return Run(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def assert_clean_exit(run: Run) -> None:
    """No traceback, no internal error: every input ends in a result or a typed error."""
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code != ExitCode.INTERNAL, run.stderr
    assert run.code in EXPECTED_EXIT_CODES, (run.code, run.stderr)


def canary_forms(secret: str = CANARY_SECRET) -> list[str]:
    """The secret as written, and base64 of it at each of the three alignments."""
    forms = [secret]
    for pad in range(3):
        encoded = base64.b64encode(b"x" * pad + secret.encode()).decode()
        forms.append(encoded[4 if pad else 0 : -4])  # the part that does not depend on neighbours
    return forms


def assert_no_canary(texts: list[str]) -> None:
    for text in texts:
        for form in canary_forms():
            assert form not in text, f"the canary secret ({form}) reached an output"


def snapshot(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every file under `root` (except under `skip`) with the hash of its content."""
    found = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        if path.is_file() and not path.is_symlink():
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def files_under(root: Path) -> Iterator[str]:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield path.read_bytes().decode("utf-8", errors="replace")


INTERESTING_STRINGS = (
    "",
    " ",
    ".",
    "..",
    "../..",
    "/etc/passwd",
    "a/b",
    "-1",
    "0",
    "1e3",
    "yes",
    "null",
    "~",
    "*",
    "&a",
    "{{ .Values.x }}",
    "${HOME}",
    "\x00",
    "\t\n",
    "名前",
    "a" * 300,
    "kyma-system",
    "default",
    "-----BEGIN RSA PRIVATE KEY-----",
    "../outside/secret.yaml",  # the fuzzers keep a canary Secret there, outside the source roots
    "../../outside/secret.yaml",
    "../outside",
)
KNOWN_KEYS = (
    "name",
    "namespace",
    "labels",
    "annotations",
    "spec",
    "metadata",
    "env",
    "value",
    "image",
    "ports",
    "port",
    "chart",
    "path",
    "valuesFiles",
    "webhooks",
    "clientConfig",
    "service",
    "containers",
    "data",
    "items",
    "kind",
    "apiVersion",
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(INTERESTING_STRINGS),
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a node of a parsed document, the document itself first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_of(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths_of(item, (*prefix, index))


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


def _alike(value: Any) -> st.SearchStrategy[Any]:
    """Another value of the type of `value`: strings, numbers, booleans, lists, mappings."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(min_value=-(2**40), max_value=2**40) | st.sampled_from((0, -1, 65536, 2**31))
    if isinstance(value, float):
        return st.floats(allow_nan=True)
    if isinstance(value, str):
        return st.sampled_from(INTERESTING_STRINGS) | st.text(max_size=20) | st.just(value + value)
    if isinstance(value, list):
        return st.just([]) | st.just(value + value) | st.just(value[:1] * 2) | st.just(value[::-1])
    if isinstance(value, dict):
        return st.just({}) | st.just(dict(list(value.items())[:1]))
    return values


@st.composite
def mutated(draw: st.DrawFn, document: Any) -> Any:
    """`document` (a copy) with one to three random changes at random field paths."""
    import copy  # noqa: PLC0415 - local: only the strategy needs it

    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in paths_of(document) if p]
        if not paths:
            return draw(values)
        # Mostly the spec: a broken apiVersion, kind or name stops everything at the first check.
        in_spec = [p for p in paths if p[0] not in {"apiVersion", "kind", "metadata"}]
        if in_spec and draw(st.integers(min_value=0, max_value=9)) > 0:
            paths = in_spec
        path = draw(st.sampled_from(paths))
        parent = _parent(document, path)
        action = draw(st.sampled_from(("alike", "alike", "replace", "delete", "add")))
        if action == "alike":  # a value of the same type: gets past the schema, into the domains
            parent[path[-1]] = draw(_alike(parent[path[-1]]))
        elif action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(KNOWN_KEYS) | st.text(max_size=8))] = draw(values)
        else:
            parent.append(draw(values))
    return document
