"""bench.cap_tenants runs a baseline revision with its own console script: a revision's script
decides how its process starts and ends (this one's ends without freeing the heap, cli.run), so
the baseline must not be run through this revision's."""

from __future__ import annotations

from pathlib import Path

from bench.cap_tenants import CLI, console_script


def test_this_revision_runs_its_own_script() -> None:
    assert console_script(None) == CLI
    assert console_script({"PATH": "/usr/bin"}) == CLI


def test_a_baseline_runs_the_script_installed_with_it(tmp_path: Path) -> None:
    install = tmp_path / "baseline-install"
    (install / "bin").mkdir(parents=True)
    script = install / "bin" / "btp-gitops"
    script.write_text("#!/bin/sh\n")
    assert console_script({"PYTHONPATH": f"{install}:/elsewhere"}) == script


def test_an_install_without_a_script_is_not_taken_for_one(tmp_path: Path) -> None:
    assert console_script({"PYTHONPATH": str(tmp_path)}) == CLI
