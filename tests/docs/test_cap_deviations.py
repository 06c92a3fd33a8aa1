"""The README's CAP section and the CAP applications page list the same deviations from CAP
Operator (issue #20 asks for the table in the README; the docs site keeps it too, since mkdocs
cannot include a file from outside docs/). Equal row for row, and each row has its three cells."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- deviations: start -->", "<!-- deviations: end -->"


def _table(path: Path) -> list[str]:
    text = path.read_text()
    assert text.count(START) == 1 and text.count(END) == 1, f"{path}: one marked deviations table"
    return text[text.index(START) + len(START) : text.index(END)].strip().splitlines()


def test_the_readme_and_the_docs_page_list_the_same_deviations() -> None:
    readme = _table(ROOT / "README.md")
    page = _table(ROOT / "docs" / "domains" / "cap-applications.md")
    assert readme == page
    header, rule, *rows = readme
    assert header == "| CAP Operator | btp-gitops | Why |"
    assert rule == "|---|---|---|"
    assert len(rows) >= 2  # at least the credentials and the readiness ConfigMaps
    for row in rows:
        cells = [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        assert len(cells) == 3 and all(cells), row
    assert any("ExternalSecret" in row for row in rows)  # credentials by reference
    assert any("<cav>-ready" in row for row in rows)  # readiness ConfigMaps
