"""Consecutive renders of one Kyma into the same Git repo: what the record of a render decides next.

Covered: no downgrade (a lower resolved version keeps the rendered app byte for byte, Warning);
maintenance windows (an upgrade that requires downtime keeps the old app and commits nothing
outside a window, upgrades inside one, at once when the Kyma skips windows or no policy is given);
skip-reconciliation (the previous render stays as it is, whatever the Kyma now says); `managed:
false` and a module dropped from spec.modules (the app goes); an app deleted by hand (rendered
afresh); a broken record (refused, nothing written).
Real components: the installed CLI with the embedded Helm engine, a real Git repository per
test. Nothing is faked.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import RunCli, read_tree
from tests.kyma.conftest import POLICY, Render, edit_kyma, modules_of

SATURDAY_EVENING = "2025-10-11T21:00:00Z"  # inside the example policy's window for europe regions
WEDNESDAY_NOON = "2025-10-08T12:00:00Z"


def app(repo: Path, name: str) -> dict[str, bytes]:
    return read_tree(repo / "clusters/default" / name)


def record(repo: Path) -> dict[str, str]:
    """module -> version, from the record the render wrote."""
    data = json.loads((repo / "clusters/default/.kyma-modules.json").read_text())
    return {m["name"]: m["version"] for m in data["modules"]}


def head(repo: Path) -> str:
    return git.Repo(repo).head.commit.hexsha


def test_a_lower_version_keeps_the_rendered_one(
    tmp_path: Path, kyma_source: Path, render_json: Render
) -> None:
    repo = tmp_path / "repo"
    edit_kyma(kyma_source, spec={"channel": "fast"})
    render_json(kyma_source, "--out", repo, "--commit")
    upgraded = app(repo, "kyma-greeter")
    assert b"greeter-operator:1.1.0" in upgraded["deployment-greeter-operator.yaml"]

    edit_kyma(kyma_source, spec={"channel": "regular"})
    report = render_json(kyma_source, "--out", repo, "--commit")

    assert app(repo, "kyma-greeter") == upgraded
    greeter = modules_of(report)["greeter"]
    assert (greeter["state"], greeter["version"], greeter["channel"]) == ("Warning", "1.1.0", "fast")
    assert greeter["message"] == (
        "module template update not allowed: ignore channel skew (from fast to regular), as a higher "
        "version (1.1.0) of the module was previously installed: 1.0.0 (template kyma-system/greeter-regular: "
        "spec.moduleName=greeter, channel regular) is not rendered, 1.1.0 is kept (no downgrade)"
    )
    assert report["kymas"][0]["state"] == "Warning"
    assert record(repo) == {"auditlog": "1.2.0", "greeter": "1.1.0"}
    assert report["changes"] == {"added": [], "changed": [".kyma-modules.json"], "removed": []}

    again = render_json(kyma_source, "--out", repo, "--commit")
    assert again["commit"] is None
    assert modules_of(again)["greeter"]["state"] == "Warning"


def test_an_upgrade_that_requires_downtime_waits_for_the_window(
    tmp_path: Path, kyma_source: Path, render_json: Render
) -> None:
    repo = tmp_path / "repo"
    render_json(kyma_source, "--out", repo, "--commit")
    installed, before = app(repo, "kyma-greeter"), head(repo)
    edit_kyma(kyma_source, spec={"channel": "fast"})  # greeter-fast (1.1.0) requires downtime

    waiting = render_json(
        kyma_source, "--out", repo, "--commit", "--maintenance-policy", POLICY, "--at", WEDNESDAY_NOON
    )

    assert app(repo, "kyma-greeter") == installed
    assert (head(repo), waiting["commit"], waiting["changes"]["changed"]) == (before, None, [])
    greeter = modules_of(waiting)["greeter"]
    assert (greeter["state"], greeter["version"], greeter["maintenance"]) == ("Ready", "1.0.0", True)
    assert greeter["message"] == (
        "waiting for next maintenance window to update module version from 1.0.0 to 1.1.0 "
        "(next window 2025-10-11T20:00:00+00:00 to 2025-10-12T02:00:00+00:00)"
    )

    upgraded = render_json(
        kyma_source, "--out", repo, "--commit", "--maintenance-policy", POLICY, "--at", SATURDAY_EVENING
    )

    assert b"greeter-operator:1.1.0" in app(repo, "kyma-greeter")["deployment-greeter-operator.yaml"]
    assert upgraded["commit"] is not None
    greeter = modules_of(upgraded)["greeter"]
    assert (greeter["state"], greeter["version"], greeter["maintenance"]) == ("Ready", "1.1.0", False)
    assert greeter["message"].endswith(
        "; requires downtime, upgraded from 1.0.0 to 1.1.0 in the maintenance window "
        "2025-10-11T20:00:00+00:00 to 2025-10-12T02:00:00+00:00"
    )
    assert record(repo)["greeter"] == "1.1.0"


def test_a_kyma_that_skips_windows_upgrades_at_once_without_a_policy_it_is_an_error(
    tmp_path: Path, kyma_source: Path, render_json: Render, run_cli: RunCli
) -> None:
    skipping, without_policy = tmp_path / "skipping", tmp_path / "without-policy"
    for repo in (skipping, without_policy):
        render_json(kyma_source, "--out", repo, "--commit")
    edit_kyma(kyma_source, spec={"channel": "fast", "skipMaintenanceWindows": True})
    report = render_json(
        kyma_source, "--out", skipping, "--maintenance-policy", POLICY, "--at", WEDNESDAY_NOON
    )
    assert modules_of(report)["greeter"]["version"] == "1.1.0"

    # As Lifecycle Manager: a module that requires downtime while no policy is configured is not
    # upgraded, and is in Error.
    edit_kyma(kyma_source, spec={"skipMaintenanceWindows": None})
    installed = app(without_policy, "kyma-greeter")
    result = run_cli(
        "render", kyma_source, "--out", without_policy, "--at", WEDNESDAY_NOON, "--output", "json"
    )
    assert result.returncode == ExitCode.MODULE_PROBLEMS, result.stderr
    report = json.loads(result.stdout)
    greeter = modules_of(report)["greeter"]
    message = (
        "failed to determine if maintenance window is active: no maintenance window policy configured; "
        "the upgrade from 1.0.0 to 1.1.0 requires downtime and is not made"
    )
    assert (greeter["state"], greeter["version"], greeter["message"]) == ("Error", "1.0.0", message)
    assert report["kymas"][0]["state"] == "Error"
    assert app(without_policy, "kyma-greeter") == installed
    assert [p.split(": ", 3)[-1] for p in report["moduleProblems"]] == [f"module greeter: {message}"]
    assert record(without_policy)["greeter"] == "1.0.0"


def test_skip_reconciliation_keeps_the_previous_render(
    tmp_path: Path, kyma_source: Path, render_json: Render
) -> None:
    repo = tmp_path / "repo"
    render_json(kyma_source, "--out", repo, "--commit")
    before, commit = read_tree(repo), head(repo)
    edit_kyma(
        kyma_source,
        spec={"channel": "fast", "modules": [{"name": "greeter", "customResourcePolicy": "Ignore"}]},
        labels={"operator.kyma-project.io/skip-reconciliation": "true"},
    )

    report = render_json(kyma_source, "--out", repo, "--commit")

    assert read_tree(repo) == before
    assert head(repo) == commit
    (kyma,) = report["kymas"]
    assert kyma["skipReconciliation"] is True
    assert kyma["messages"] == [
        'labelled operator.kyma-project.io/skip-reconciliation: "true": the previous render is kept as it is'
    ]
    assert {m["name"]: (m["version"], m["state"]) for m in kyma["modules"]} == {
        "auditlog": ("1.2.0", "Ready"),
        "greeter": ("1.0.0", "Ready"),
    }


def test_unmanaged_and_dropped_modules_leave_the_repo(
    tmp_path: Path, kyma_source: Path, render_json: Render
) -> None:
    repo = tmp_path / "repo"
    render_json(kyma_source, "--out", repo)
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter", "managed": False}]})

    report = render_json(kyma_source, "--out", repo)

    assert not (repo / "clusters/default/kyma-greeter").exists()
    greeter = modules_of(report)["greeter"]
    assert (greeter["state"], greeter["version"], greeter["app"]) == ("Unmanaged", "1.0.0", "")
    assert report["kymas"][0]["state"] == "Ready"

    edit_kyma(kyma_source, spec={"modules": []})
    report = render_json(kyma_source, "--out", repo)
    assert sorted(modules_of(report)) == ["auditlog"]  # nothing of greeter was left to remove
    assert record(repo) == {"auditlog": "1.2.0"}


def test_an_app_deleted_by_hand_is_rendered_afresh(
    tmp_path: Path, kyma_source: Path, render_json: Render
) -> None:
    repo = tmp_path / "repo"
    edit_kyma(kyma_source, spec={"channel": "fast"})
    render_json(kyma_source, "--out", repo)
    for path in (repo / "clusters/default/kyma-greeter").iterdir():
        path.unlink()
    edit_kyma(kyma_source, spec={"channel": "regular"})

    report = render_json(kyma_source, "--out", repo)

    assert (modules_of(report)["greeter"]["state"], record(repo)["greeter"]) == ("Ready", "1.0.0")


def test_a_broken_record_is_refused(tmp_path: Path, kyma_source: Path, run_cli: RunCli) -> None:
    repo = tmp_path / "repo"
    assert run_cli("render", kyma_source, "--out", repo).returncode == 0
    (repo / "clusters/default/.kyma-modules.json").write_text("{not json")
    before = read_tree(repo)

    result = run_cli("render", kyma_source, "--out", repo)

    assert result.returncode == ExitCode.INPUT
    assert result.stderr.splitlines()[0] == "error: cannot read the record of the previous render"
    assert result.stderr.splitlines()[1].startswith(
        "  clusters/default/.kyma-modules.json: not a record btp-gitops wrote (JSONDecodeError("
    )
    assert read_tree(repo) == before


@pytest.mark.parametrize("target", ["argocd", "flux"])
def test_a_module_dropped_from_spec_goes_default_cr_first(
    tmp_path: Path, kyma_source: Path, render_json: Render, target: str
) -> None:
    repo = tmp_path / "repo"
    render_json(kyma_source, "--out", repo, "--target", target, "--commit")
    installed = app(repo, "kyma-greeter")
    [cr_file] = [
        path
        for path, data in installed.items()
        if b"apiVersion: modules.example.com/v1alpha1\nkind: Greeter\n" in data
    ]
    edit_kyma(kyma_source, spec={"modules": []})

    first = render_json(kyma_source, "--out", repo, "--target", target, "--commit")

    greeter = modules_of(first)["greeter"]
    assert (greeter["state"], greeter["app"]) == ("Deleting", "kyma-greeter")
    assert greeter["message"] == (
        "removed from spec.modules: its default CR Greeter default is deleted first; the module's "
        "resources are deleted with the next render"
    )
    kept = app(repo, "kyma-greeter")
    assert cr_file not in kept
    # every other file as it was, in the same stage directories (Flux)
    assert {p: d for p, d in kept.items() if not p.endswith("kustomization.yaml")} == {
        p: d for p, d in installed.items() if not p.endswith("kustomization.yaml") and p != cr_file
    }
    assert first["kymas"][0]["state"] == "Ready"  # Deleting modules do not count

    second = render_json(kyma_source, "--out", repo, "--target", target, "--commit")

    assert not (repo / "clusters/default/kyma-greeter").exists()
    assert modules_of(second)["greeter"]["message"] == (
        "removed from spec.modules: its default CR was deleted before, the module's resources are deleted"
    )
    assert record(repo) == {"auditlog": "1.2.0"}
    third = render_json(kyma_source, "--out", repo, "--target", target, "--commit")
    assert (sorted(modules_of(third)), third["commit"]) == (["auditlog"], None)


def test_a_module_without_default_cr_is_removed_at_once(
    tmp_path: Path, kyma_source: Path, render_json: Render
) -> None:
    repo = tmp_path / "repo"
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter", "customResourcePolicy": "Ignore"}]})
    render_json(kyma_source, "--out", repo)
    edit_kyma(kyma_source, spec={"modules": []})

    report = render_json(kyma_source, "--out", repo)

    assert not (repo / "clusters/default/kyma-greeter").exists()
    greeter = modules_of(report)["greeter"]
    assert (greeter["state"], greeter["message"]) == (
        "Deleting",
        "removed from spec.modules: the module's resources are deleted",
    )
    assert record(repo) == {"auditlog": "1.2.0"}
