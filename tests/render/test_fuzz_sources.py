"""Fuzzing `btp-gitops render` over source documents, with a bounded budget.

Each example copies one bundled example, changes one to three random field paths of its
documents (another type, a deleted or an added field) or adds a file of random text, and renders
it. Whatever the input: no traceback and no exit 70; nothing outside `--out` changes (the
sources, and a canary Secret kept beside them outside the source roots, are hashed before and
after); the canary's secret value reaches no output (stdout, stderr, the rendered files), whether
the Secret is referenced through a path field or given among the sources.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLES
from tests.support.fuzzing import (
    CANARY_SECRET,
    Run,
    assert_clean_exit,
    assert_no_canary,
    files_under,
    mutated,
    run_in_process,
    run_subprocess,
    snapshot,
)

# btp-operator renders the bundled chart twice per example: it is fuzzed too, but its share of
# the budget is smaller (see the sampling weights below).
EXAMPLE_NAMES = ("cap-app", "cap-services-only", "kyma-modules", "btp-operator")
CANARY_SECRET_YAML = f"""apiVersion: v1
kind: Secret
metadata:
  name: canary
  namespace: kyma-system
stringData:
  clientsecret: {CANARY_SECRET}
"""
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load_example(name: str) -> dict[str, list[Any]]:
    root = EXAMPLES / name
    return {
        path.relative_to(root).as_posix(): list(yaml.safe_load_all(path.read_text()))
        for path in sorted(root.rglob("*.yaml"))
    }


EXAMPLES_LOADED = {name: _load_example(name) for name in EXAMPLE_NAMES}


@st.composite
def mutated_example(draw: st.DrawFn) -> tuple[str, dict[str, list[Any]]]:
    name = draw(
        st.sampled_from(
            ("cap-app", "cap-app", "cap-services-only", "kyma-modules", "kyma-modules", "btp-operator")
        )
    )
    files = {path: list(documents) for path, documents in EXAMPLES_LOADED[name].items()}
    targets = [(path, index) for path, documents in files.items() for index in range(len(documents))]
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        path, index = draw(st.sampled_from(targets))
        files[path][index] = draw(mutated(files[path][index]))
    return name, files


def _render(
    root: Path, write_sources: Any, *, with_canary_source: bool, subprocess_run: bool = False
) -> None:
    sources, out, outside = root / "sources", root / "out", root / "outside"
    sources.mkdir()
    outside.mkdir()
    (outside / "secret.yaml").write_text(CANARY_SECRET_YAML)
    (root / "canary.txt").write_text("next to --out: must not change\n")
    write_sources(sources)
    if with_canary_source:
        (sources / "zz-secret.yaml").write_text(CANARY_SECRET_YAML)
    before = snapshot(root, skip=out)
    args = ["render", str(sources), "--out", str(out)]
    run: Run = run_subprocess(args) if subprocess_run else run_in_process(args)
    assert_clean_exit(run)
    event(f"exit {run.code}")
    assert snapshot(root, skip=out) == before, "a file outside --out changed"
    assert_no_canary([run.stdout, run.stderr, *files_under(out)])


def _writer(files: dict[str, list[Any]]) -> Any:
    def write(sources: Path) -> None:
        for path, documents in files.items():
            target = sources / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True))

    return write


@FUZZ
@given(mutated_example(), st.integers(min_value=0, max_value=4).map(lambda n: n == 0))
def test_mutated_sources_render_or_fail_cleanly(
    example: tuple[str, dict[str, list[Any]]], canary: bool
) -> None:
    _, files = example
    with tempfile.TemporaryDirectory() as tmp:
        _render(Path(tmp), _writer(files), with_canary_source=canary)


yaml_ish = st.lists(
    st.sampled_from(
        [
            "apiVersion: sme.sap.com/v1alpha1\n",
            "kind: CAPTenant\n",
            "metadata:\n",
            "  name: t\n",
            "spec:\n",
            "  - ",
            "---\n",
            "&a ",
            "*a\n",
            "<<: *a\n",
            "[",
            "]\n",
            "{",
            "}\n",
            ": ",
            "'",
            '"',
            "!!binary ",
            "? ",
            "%YAML 1.1\n",
            "\t",
            "\ufeff",
            "# c\n",
            "|\n  x\n",
        ]
    )
    | st.text(max_size=10),
    max_size=25,
).map("".join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(("cap-app", "kyma-modules")),
    yaml_ish | st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
)
def test_random_text_beside_a_valid_example_fails_cleanly(name: str, text: str) -> None:
    def write(sources: Path) -> None:
        _writer(EXAMPLES_LOADED[name])(sources)
        (sources / "random.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")

    with tempfile.TemporaryDirectory() as tmp:
        _render(Path(tmp), write, with_canary_source=False)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_example(), st.booleans())
def test_the_console_script_on_mutated_sources(
    example: tuple[str, dict[str, list[Any]]], canary: bool
) -> None:
    """A few examples through the installed command, as a user runs it (a fresh process each)."""
    with tempfile.TemporaryDirectory() as tmp:
        _render(Path(tmp), _writer(example[1]), with_canary_source=canary, subprocess_run=True)
