"""The docs site builds strictly (a broken link, anchor or nav entry fails) and its pages load
nothing from another host: CI and readers behind a proxy have no Google Fonts or CDN."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="the docs extra is not installed (floor venv)"
)
# What a browser fetches without a click: stylesheets, scripts, fonts, images.
LOADED = re.compile(r"<(?:link|script|img)\b[^>]*\b(?:href|src)=\"(https?:)?//", re.IGNORECASE)


def test_the_site_builds_strictly_and_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert len(pages) > 20
    external = {
        page.relative_to(tmp_path).as_posix(): match[0]
        for page in pages
        for match in [LOADED.search(page.read_text(encoding="utf-8"))]
        if match
    }
    assert external == {}
