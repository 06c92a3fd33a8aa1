"""Mutation testing of one module: how many small bugs do its tests catch?

    .venv/bin/python scripts/mutate.py MODULE [options] -- TEST [TEST ...]

MODULE is a path relative to the checkout (`generator/io/repo.py`); the TESTs are pytest
arguments (files, `file::test` ids), the module's own tests first and the CLI tests that reach it
after: with `-x`, a mutant dies at the first failing test, so fast tests first keep runs short.

Each mutant is one change to the module's syntax tree (a comparison, boolean or arithmetic
operator swapped, one operand of `and`/`or` dropped, a constant changed, a condition negated,
`not` dropped, a statement or a return value removed). The module file is patched in place,
the tests run in a subprocess (`-x -q -p no:cacheprovider`, under a per-mutant timeout), and
the original bytes are written back afterwards, also on Ctrl-C or SIGTERM. Patching in place,
rather than a copy, is what lets the CLI tests reach the mutant: they run the installed
`btp-gitops`, which imports this checkout.

A mutant is killed (a test failed, or the tests could not even be collected), timed out (counted
as killed: the tests noticed), or survived. A survivor a reviewer judged equivalent (no test can
tell it apart, e.g. `x >= 1` for `x > 0` on integers) is recorded in
`scripts/mutation-equivalents.toml` under the module, by its stable id, with a one-line reason.
The score is killed / (mutants - equivalent). Ids name the enclosing function and a hash of the
change, so they survive edits elsewhere in the module; an entry whose id no longer exists is
reported as stale.

Only the standard library is used.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import hashlib
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EQUIVALENTS = ROOT / "scripts" / "mutation-equivalents.toml"
NO_MUTATE = "pragma: no mutate"

_COMPARE_SWAPS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_BINARY_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
# Statements whose removal is a plausible bug (a forgotten call, a missing raise or cleanup);
# removing an assignment to a plain name mostly gives a NameError, which teaches nothing.
_REMOVABLE = (ast.Expr, ast.Raise, ast.AugAssign, ast.Continue, ast.Break, ast.Delete)


@dataclass(frozen=True, slots=True)
class Mutant:
    ident: str  # "<function qualname>:<hash>": stable across edits elsewhere in the module
    operator: str
    line: int
    source: str  # the whole mutated module

    def diff(self, original: str, name: str) -> str:
        lines = difflib.unified_diff(
            original.splitlines(keepends=True),
            self.source.splitlines(keepends=True),
            f"a/{name}",
            f"b/{name}",
            n=1,
        )
        return "".join(lines)


@dataclass(frozen=True, slots=True)
class _Edit:
    operator: str
    node: ast.expr | ast.stmt  # whose source span is replaced
    replacement: str  # source text put in its place


def _offsets(text: str) -> list[int]:
    """Character offset of the start of every line (1-based lines -> index line - 1)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _char_index(line_text: str, byte_col: int) -> int:
    """ast columns count UTF-8 bytes; strings index characters."""
    return len(line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def _wrapped(node: ast.expr) -> str:
    """The expression's text, in parentheses where its precedence might differ from the context."""
    text = ast.unparse(node)
    if isinstance(node, ast.BoolOp | ast.BinOp | ast.Compare | ast.UnaryOp | ast.IfExp | ast.Lambda):
        return f"({text})"
    return text


_TYPE_NAMES = frozenset(
    {"Callable", "dict", "tuple", "list", "set", "frozenset", "Mapping", "Iterator", "Iterable", "Sequence"}
)


def _never_mutated(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    if isinstance(node, ast.If):
        return "TYPE_CHECKING" in ast.unparse(node.test)
    # Type expressions outside annotations (aliases, casts) mutate into nonsense mypy would
    # catch; an index is still mutated through its constant.
    return (
        isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in _TYPE_NAMES
    )


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes never mutated: docstrings, decorators, annotations, f-strings (their positions are unreliable
    before Python 3.12), `__all__`, and `if TYPE_CHECKING` blocks."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip(body[0])
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:  # dataclass flags, caches: not behaviour under test
                skip(decorator)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            skip(node.returns)
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                skip(arg.annotation)
            skip(node.args.vararg.annotation if node.args.vararg else None)
            skip(node.args.kwarg.annotation if node.args.kwarg else None)
        elif isinstance(node, ast.AnnAssign):
            skip(node.annotation)
        elif _never_mutated(node):
            skip(node)
    return skipped


def _redundant_negation(test: ast.expr) -> bool:
    """`not x` is what dropping the `not` tests; `not (a < b)` is the swap to `a >= b`."""
    return (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
        isinstance(test, ast.Compare) and len(test.ops) == 1
    )


def _edits(node: ast.AST, strings: bool) -> Iterator[_Edit]:
    """The mutations of one node; string constants only with `strings` (mostly messages)."""
    if isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            for swap in _COMPARE_SWAPS.get(type(op), ()):
                changed = copy.deepcopy(node)
                changed.ops[position] = swap()
                yield _Edit("compare", node, _wrapped(changed))
    elif isinstance(node, ast.BoolOp):
        swapped = copy.deepcopy(node)
        swapped.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield _Edit("and-or", node, _wrapped(swapped))
        for position in range(len(node.values)):  # one condition forgotten: `a and b` -> `b`
            kept = [v for index, v in enumerate(node.values) if index != position]
            shorter = ast.BoolOp(node.op, kept) if len(kept) > 1 else kept[0]
            yield _Edit("drop-operand", node, _wrapped(shorter))
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY_SWAPS:
        computed = copy.deepcopy(node)
        computed.op = _BINARY_SWAPS[type(node.op)]()
        yield _Edit("arithmetic", node, _wrapped(computed))
    elif isinstance(node, ast.AugAssign) and type(node.op) in _BINARY_SWAPS:
        updated = copy.deepcopy(node)
        updated.op = _BINARY_SWAPS[type(node.op)]()
        yield _Edit("arithmetic", node, ast.unparse(updated))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.Invert):
        yield _Edit("unary-drop", node, _wrapped(node.operand))
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield _Edit("constant", node, repr(not value))
        elif isinstance(value, int | float):
            yield _Edit("constant", node, repr(value + 1))
            if value != 0:
                yield _Edit("constant", node, repr(type(value)(0)))
        elif isinstance(value, str) and strings:
            yield _Edit("constant", node, repr(value + "XX" if value else "XX"))
    if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
        test = node.test
        if not _redundant_negation(test):
            yield _Edit("negate", test, f"not ({ast.unparse(test)})")
    elif isinstance(node, ast.comprehension):
        for condition in node.ifs:
            if not _redundant_negation(condition):
                yield _Edit("negate", condition, f"not ({ast.unparse(condition)})")
    stores_into = isinstance(node, ast.Assign) and all(
        isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets
    )
    if isinstance(node, ast.stmt) and (isinstance(node, _REMOVABLE) or stores_into):
        yield _Edit("remove-statement", node, "pass")
    elif (
        isinstance(node, ast.Return)
        and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
    ):
        yield _Edit("return-none", node, "return None")


def _qualnames(tree: ast.Module) -> dict[int, str]:
    """Every node's enclosing function or class, dotted (`<module>` at the top level)."""
    names: dict[int, str] = {}

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = child.name if scope == "<module>" else f"{scope}.{child.name}"
            names[id(child)] = inner
            visit(child, inner)

    visit(tree, "<module>")
    return names


def mutants(source: str, *, strings: bool = False) -> list[Mutant]:
    """Every mutant of a module's source, in source order, each compiling and differing in its tree."""
    tree = ast.parse(source)
    original_dump = ast.dump(tree)
    lines = source.splitlines(keepends=True)
    starts = _offsets(source)
    skipped = _skipped_nodes(tree)
    scopes = _qualnames(tree)
    seen: dict[tuple[str, str], int] = {}
    found: list[Mutant] = []
    positioned: list[ast.expr | ast.stmt] = [
        n for n in ast.walk(tree) if isinstance(n, ast.expr | ast.stmt) and id(n) not in skipped
    ]
    positioned.sort(key=lambda n: (n.lineno, n.col_offset))
    nodes: list[ast.AST] = [*positioned, *(n for n in ast.walk(tree) if isinstance(n, ast.comprehension))]
    for node in nodes:
        for edit in _edits(node, strings):
            target = edit.node
            if id(target) in skipped or target.end_lineno is None:
                continue
            if NO_MUTATE in lines[target.lineno - 1]:
                continue
            begin = starts[target.lineno - 1] + _char_index(lines[target.lineno - 1], target.col_offset)
            end = starts[target.end_lineno - 1] + _char_index(
                lines[target.end_lineno - 1], target.end_col_offset or 0
            )
            mutated = source[:begin] + edit.replacement + source[end:]
            try:
                if ast.dump(ast.parse(mutated)) == original_dump:
                    continue
            except SyntaxError:
                continue
            scope = scopes.get(id(target), "<module>")
            key = (scope, f"{edit.operator}|{source[begin:end]}|{edit.replacement}")
            seen[key] = seen.get(key, 0) + 1
            digest = hashlib.sha1(f"{key[1]}|{seen[key]}".encode()).hexdigest()[:8]
            found.append(Mutant(f"{scope}:{digest}", edit.operator, target.lineno, mutated))
    return found


def load_equivalents(path: Path, module: str) -> dict[str, str]:
    """Reviewed equivalent mutants of `module`: id -> reason."""
    if not path.exists():
        return {}
    table = tomllib.loads(path.read_text(encoding="utf-8")).get(module, {})
    if not isinstance(table, dict) or not all(isinstance(v, str) and v.strip() for v in table.values()):
        raise SystemExit(f"{path}: [{module!r}] must map mutant ids to a one-line reason")
    return {str(k): str(v) for k, v in table.items()}


class _Patched:
    """The module file, patched with one mutant at a time and always restored."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.original = path.read_bytes()
        self._handlers: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}

    def __enter__(self) -> _Patched:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            self._handlers[signum] = signal.signal(signum, self._interrupt)
        return self

    def _interrupt(self, signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    def _forget_bytecode(self) -> None:
        # A pyc records the source's mtime in seconds and its size: a same-size mutant written
        # within the second would otherwise run the stale bytecode.
        cache = self.path.parent / "__pycache__"
        for pyc in cache.glob(f"{self.path.stem}.*.pyc"):
            pyc.unlink(missing_ok=True)

    def write(self, text: str) -> None:
        self.path.write_text(text, encoding="utf-8")
        self._forget_bytecode()

    def restore(self) -> None:
        self.path.write_bytes(self.original)
        self._forget_bytecode()

    def __exit__(self, *_: object) -> None:
        self.restore()
        for signum, handler in self._handlers.items():
            signal.signal(signum, handler)


def run_tests(tests: Sequence[str], timeout: float, cwd: Path) -> tuple[str, float]:
    """Run the tests once: 'passed', 'failed', 'timeout' or 'error' (pytest's usage errors)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    started = time.monotonic()
    with subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: a timeout ends the CLI it started too
    ) as process:
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return "timeout", time.monotonic() - started
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
    elapsed = time.monotonic() - started
    # 0: all passed; 1: a test failed; 2: interrupted, e.g. a collection error (the mutant broke
    # the import); 3: internal error; 4: usage error; 5: no tests collected.
    if code == 0:
        return "passed", elapsed
    if code in (1, 2, 3):
        return "failed", elapsed
    return "error", elapsed


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("module", help="the module's path, relative to --root (generator/io/repo.py)")
    parser.add_argument("tests", nargs="+", help="pytest arguments after --: the tests that reach it")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default: 3x the clean run + 10)")
    parser.add_argument("--equivalents", type=Path, default=DEFAULT_EQUIVALENTS)
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="run only these mutants")
    parser.add_argument("--strings", action="store_true", help="mutate string constants too (messages)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their diffs; run nothing")
    parser.add_argument("--min-score", type=float, default=0.0, help="exit 1 below this percentage")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    root: Path = args.root.resolve()
    path = root / args.module
    module = Path(args.module).as_posix()
    original = path.read_text(encoding="utf-8")
    every = mutants(original, strings=args.strings)
    equivalents = load_equivalents(args.equivalents, module)
    for stale in sorted(set(equivalents) - {m.ident for m in every}):
        print(f"stale equivalent (no such mutant any more): {stale}")
    selected = [m for m in every if not args.only or m.ident in args.only]
    if args.list:
        for mutant in selected:
            flag = "  (equivalent)" if mutant.ident in equivalents else ""
            print(f"{mutant.ident} line {mutant.line} {mutant.operator}{flag}")
            print(mutant.diff(original, module))
        return 0
    outcome, baseline = run_tests(args.tests, 3600.0, root)
    if outcome != "passed":
        print(f"the tests do not pass on the unmutated module ({outcome}): fix that first", file=sys.stderr)
        return 2
    timeout = args.timeout or 3 * baseline + 10
    print(f"{module}: {len(selected)} mutants; clean run {baseline:.1f} s, timeout {timeout:.0f} s")
    sys.stdout.flush()
    results: dict[str, str] = {}
    with _Patched(path) as patched:
        for number, mutant in enumerate(selected, 1):
            patched.write(mutant.source)
            try:
                outcome, elapsed = run_tests(args.tests, timeout, root)
            finally:
                patched.restore()
            if outcome == "error":
                print(f"pytest refused the test selection for {mutant.ident}", file=sys.stderr)
                return 2
            status = {"passed": "survived", "failed": "killed", "timeout": "timeout"}[outcome]
            results[mutant.ident] = status
            note = " (equivalent)" if status == "survived" and mutant.ident in equivalents else ""
            print(
                f"[{number}/{len(selected)}] {status:8} {mutant.ident} line {mutant.line} "
                f"{mutant.operator} ({elapsed:.1f} s){note}",
                flush=True,
            )
    survivors = [m for m in selected if results[m.ident] == "survived" and m.ident not in equivalents]
    for mutant in survivors:
        print(f"\nSURVIVED {mutant.ident} ({module}:{mutant.line}, {mutant.operator})")
        print(mutant.diff(original, module), end="")
    counted = [m for m in selected if m.ident not in equivalents or results[m.ident] != "survived"]
    killed = sum(results[m.ident] in ("killed", "timeout") for m in counted)
    timeouts = sum(results[m.ident] == "timeout" for m in counted)
    score = 100.0 * killed / len(counted) if counted else 100.0
    print(
        f"\n{module}: killed {killed} / non-equivalent {len(counted)} = {score:.1f}% "
        f"({timeouts} by timeout; {len(selected) - len(counted)} equivalent; {len(survivors)} survived)"
    )
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: the module was restored", file=sys.stderr)
        sys.exit(130)
