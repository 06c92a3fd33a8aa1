"""Small rooms: no Python module of the checkout (the package, its tests, the benchmarks and the
maintainer scripts) is longer than 800 lines. A module that grows past it is split along what its
parts are about, not cut at a line number."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT
from tests.support.wheel import source_files

MAX_LINES = 800


def too_long(root: Path, names: list[str]) -> list[str]:
    """Each Python module of `names` (paths under `root`) longer than MAX_LINES, with its length."""
    found = []
    for name in names:
        if name.endswith(".py"):
            lines = len((root / name).read_bytes().splitlines())
            if lines > MAX_LINES:
                found.append(f"{name}: {lines} lines")
    return found


def test_no_module_of_the_checkout_is_longer_than_800_lines() -> None:
    names = source_files(ROOT)
    assert any(name.startswith("generator/") for name in names)  # the listing found the tree
    assert too_long(ROOT, names) == []


def test_a_module_one_line_past_the_bound_is_named(tmp_path: Path) -> None:
    (tmp_path / "at.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "past.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "notes.txt").write_text("x\n" * (MAX_LINES + 1))
    assert too_long(tmp_path, ["at.py", "notes.txt", "past.py"]) == [f"past.py: {MAX_LINES + 1} lines"]
