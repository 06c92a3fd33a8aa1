"""A misspelt Kyma module name removes nothing, end to end through the CLI (issue 33).

A repo is rendered with greeter and the beta module relay; then relay is misspelt `rleay` in the
Kyma. As Lifecycle Manager reads that, relay is to be removed and `rleay` has no template: a render
that did so would delete relay's app (default CR first, or everything at once). The render is
refused instead: exit 3, the file, the Kyma, `spec.modules[1].name` and `did you mean "relay"?`
named, the repo byte for byte as before and no commit; `diff` refuses it the same way. Removing
relay anyway is an explicit choice (`--allow-module-removal`, or the Kyma's annotation
`btp-gitops.io/allow-module-removal: relay`), and a removal once begun goes on without it. An
unknown module name is suggested its nearest module even when nothing is removed.

Real components: the installed CLI with the embedded Helm engine, real Git; nothing is faked.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import RunCli, read_tree
from tests.kyma.conftest import edit_kyma, modules_of

CLUSTER = "clusters/default"
BETA = {"operator.kyma-project.io/beta": "true"}
ANNOTATION = "btp-gitops.io/allow-module-removal"


def _head(repo: Path) -> str:
    with git.Repo(repo) as opened:
        return str(opened.head.commit.hexsha)


def _rendered_with_relay(kyma_source: Path, repo: Path, run_cli: RunCli, policy: str) -> None:
    edit_kyma(
        kyma_source,
        spec={"modules": [{"name": "greeter"}, {"name": "relay", "customResourcePolicy": policy}]},
        labels=BETA,
    )
    first = run_cli("render", kyma_source, "--out", repo, "--commit")
    assert first.returncode == 0, first.stderr
    assert (repo / CLUSTER / "kyma-relay").is_dir()


def _misspell_relay(kyma_source: Path, policy: str) -> None:
    edit_kyma(
        kyma_source,
        spec={"modules": [{"name": "greeter"}, {"name": "rleay", "customResourcePolicy": policy}]},
    )


def _refusal(kyma_source: Path) -> str:
    return (
        "error: refusing to remove Kyma module relay: no longer in spec.modules while an entry there "
        "cannot be resolved (a misspelt name would delete the module it meant); nothing is written. If "
        "the removal is meant, pass --allow-module-removal, or annotate the Kyma with "
        f'{ANNOTATION}: "relay" (1 problem)\n'
        f"  {kyma_source}/kyma.yaml: document 1 (Kyma kyma-system/default): spec.modules[1].name: module "
        'rleay: no templates were found: for module rleay in channel regular (did you mean "relay"?)\n'
    )


# CreateAndDelete: the removal would begin with relay's default CR; Ignore: with the whole app.
@pytest.mark.parametrize("policy", ["CreateAndDelete", "Ignore"])
def test_a_misspelt_module_name_removes_nothing_and_names_the_module_meant(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli, policy: str
) -> None:
    repo = tmp_path / "repo"
    _rendered_with_relay(kyma_source, repo, run_cli, policy)
    before, commit = read_tree(repo), _head(repo)
    _misspell_relay(kyma_source, policy)

    result = run_cli("render", kyma_source, "--out", repo, "--commit")

    assert result.returncode == ExitCode.INPUT, result.stderr
    assert result.stderr == _refusal(kyma_source)
    assert result.stdout == ""
    assert read_tree(repo) == before
    assert _head(repo) == commit
    with git.Repo(repo) as opened:
        assert not opened.is_dirty(untracked_files=True)

    # A diff (a pull request of the sources) is refused alike: the mistake shows before a merge.
    diff = run_cli("diff", kyma_source, "--against", repo)
    assert diff.returncode == ExitCode.INPUT, diff.stderr
    assert diff.stderr == _refusal(kyma_source)

    # --strict changes nothing of it: the removal is refused before module problems count.
    strict = run_cli("render", kyma_source, "--out", repo, "--strict", "--output", "json")
    assert (strict.returncode, strict.stderr) == (ExitCode.INPUT, _refusal(kyma_source))
    assert read_tree(repo) == before


@pytest.mark.parametrize("how", ["flag", "annotation"])
def test_an_explicit_choice_removes_the_module(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli, how: str
) -> None:
    repo = tmp_path / "repo"
    _rendered_with_relay(kyma_source, repo, run_cli, "CreateAndDelete")
    _misspell_relay(kyma_source, "CreateAndDelete")
    options: list[str] = []
    body = (kyma_source / "kyma.yaml").read_text()
    if how == "flag":
        options = ["--allow-module-removal"]
    else:
        annotated = body.replace(
            "  labels:\n", f"  annotations:\n    {ANNOTATION}: greeter, relay\n  labels:\n"
        )
        assert annotated != body
        (kyma_source / "kyma.yaml").write_text(annotated)

    first = run_cli("render", kyma_source, "--out", repo, "--commit", "--output", "json", *options)

    # The removal goes on as any other; rleay stays the module problem it is (exit 9), with its hint.
    assert first.returncode == ExitCode.MODULE_PROBLEMS, first.stderr
    modules = modules_of(json.loads(first.stdout))
    assert (modules["relay"]["state"], modules["relay"]["app"]) == ("Deleting", "kyma-relay")
    assert modules["rleay"]["message"] == (
        'no templates were found: for module rleay in channel regular (did you mean "relay"?)'
    )
    assert "spec.modules[1].name: module rleay: no templates were found" in first.stderr
    assert "relay-default.yaml" not in read_tree(repo / CLUSTER / "kyma-relay")  # the default CR went first

    # The removal began with that render: the next one finishes it without being asked again.
    if how == "annotation":
        (kyma_source / "kyma.yaml").write_text(body)
    second = run_cli("render", kyma_source, "--out", repo, "--commit", "--output", "json")

    assert second.returncode == ExitCode.MODULE_PROBLEMS, second.stderr
    assert not (repo / CLUSTER / "kyma-relay").exists()
    assert "error:" not in second.stderr


def test_an_unknown_module_name_is_told_its_nearest_module_when_nothing_is_removed(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli
) -> None:
    """No render before: nothing to remove, so the render goes on (exit 9), and each unknown name
    is suggested the nearest module of the catalog, when one is close (a beta module included:
    the name is what is wrong, the label comes next)."""
    repo = tmp_path / "repo"
    edit_kyma(kyma_source, spec={"modules": [{"name": "Greeter"}, {"name": "rleay"}, {"name": "nope"}]})

    result = run_cli("render", kyma_source, "--out", repo, "--output", "json")

    assert result.returncode == ExitCode.MODULE_PROBLEMS, result.stderr
    modules = modules_of(json.loads(result.stdout))
    assert {name: modules[name]["message"] for name in ("Greeter", "nope", "rleay")} == {
        "Greeter": 'no templates were found: for module Greeter in channel regular (did you mean "greeter"?)',
        "nope": "no templates were found: for module nope in channel regular",
        "rleay": 'no templates were found: for module rleay in channel regular (did you mean "relay"?)',
    }
    where = f"{kyma_source}/kyma.yaml: document 1 (Kyma kyma-system/default)"
    assert (
        f"{where}: spec.modules[1].name: module rleay: no templates were found: for module rleay in "
        'channel regular (did you mean "relay"?)\n' in result.stderr
    )
