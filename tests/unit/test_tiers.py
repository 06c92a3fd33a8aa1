"""tests/support/tiers.py: a test that reaches a tier without its marker fails at once, naming the
marker; with the marker it runs. Run in a pytest of its own, on test files written for it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT

TESTS = """
import pytest
from tests.support.tiers import require_marker


def test_unmarked_helper_user():
    require_marker("crds", "the pinned CRDs")


@pytest.mark.crds
def test_marked_helper_user():
    require_marker("crds", "the pinned CRDs")


@pytest.fixture(scope="session")
def kube_api():
    return "an API server"


@pytest.mark.kube
def test_marked_fixture_user(kube_api):
    assert kube_api


def test_unmarked_fixture_user_after_the_fixture_is_set_up(kube_api):
    assert kube_api


@pytest.fixture(scope="session")
def root_bundle():
    require_marker("tools", "root")
    yield "a bundle"
    require_marker("tools", "root")  # its clean-up runs in the teardown of the session's last test


@pytest.mark.tools
def test_marked_session_fixture_user(root_bundle):
    assert root_bundle


def test_zz_unmarked_test_that_runs_last():
    pass
"""


def test_an_unmarked_test_fails_naming_its_marker_and_a_marked_one_runs(tmp_path: Path) -> None:
    (tmp_path / "test_tiers_sample.py").write_text(textwrap.dedent(TESTS))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.support.tiers",
            "-p",
            "no:cacheprovider",
            "-rA",
            "-W",
            "ignore::pytest.PytestUnknownMarkWarning",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    outcomes = sorted(
        line.split(" ")[0] + " " + line.split("::")[1].split(" ")[0]
        for line in result.stdout.splitlines()
        if line.startswith(("PASSED ", "FAILED ", "ERROR "))
    )
    # The fixture check runs in setup, so that test errors rather than fails.
    assert outcomes == [
        "ERROR test_unmarked_fixture_user_after_the_fixture_is_set_up",
        "FAILED test_unmarked_helper_user",
        "PASSED test_marked_fixture_user",
        "PASSED test_marked_helper_user",
        "PASSED test_marked_session_fixture_user",
        "PASSED test_zz_unmarked_test_that_runs_last",
    ], result.stdout
    assert (
        "test_unmarked_helper_user needs the pinned CRDs but is not marked @pytest.mark.crds" in result.stdout
    )
    assert "but is not marked @pytest.mark.kube" in result.stdout
