""".github/workflows/release.yml grants each job only what it uses, and publishes only after the
tag has passed scripts/release.py. (actionlint, in tests/actions/, checks its syntax, expressions
and the inputs of the actions it calls; tests/actions/test_pinned_actions.py its pins.)"""

from __future__ import annotations

from typing import Any

import yaml

from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if step.get("uses", "").split("@")[0] == action]


def test_it_runs_on_version_tags_only() -> None:
    # PyYAML reads the key `on` as True (YAML 1.1).
    assert workflow()[True] == {"push": {"tags": ["v*"]}}


def test_no_permission_by_default_and_each_job_names_its_own() -> None:
    release = workflow()
    assert release["permissions"] == {}
    granted = {name: job["permissions"] for name, job in release["jobs"].items()}
    assert granted == {
        "check": {"contents": "read"},
        "dist": {"contents": "read"},
        "pypi": {"id-token": "write"},
        "image": {"contents": "read", "packages": "write"},
        "chart": {"contents": "read", "packages": "write"},
        "helm-plugin": {"contents": "read"},
        "github-release": {"contents": "write"},
    }


def test_every_publishing_job_waits_for_the_tag_check() -> None:
    jobs = workflow()["jobs"]

    def upstream(name: str) -> set[str]:
        needs = jobs[name].get("needs", [])
        direct = {needs} if isinstance(needs, str) else set(needs)
        return direct.union(*(upstream(need) for need in direct)) if direct else set()

    assert all("check" in upstream(name) for name in jobs if name != "check")
    assert upstream("github-release") >= {"pypi", "image", "chart", "helm-plugin"}


def test_pypi_is_reached_by_trusted_publishing_from_its_environment_without_a_token() -> None:
    job = workflow()["jobs"]["pypi"]
    assert job["environment"]["name"] == "pypi"
    (publish,) = steps_using(job, "pypa/gh-action-pypi-publish")
    assert "password" not in publish.get("with", {})
    assert "secrets." not in yaml.safe_dump(job)


def test_checkouts_leave_no_credentials_behind() -> None:
    for name, job in workflow()["jobs"].items():
        for step in steps_using(job, "actions/checkout"):
            assert step["with"]["persist-credentials"] is False, name


def test_the_signing_key_reaches_only_the_step_that_signs() -> None:
    text = WORKFLOW.read_text()
    assert text.count("secrets.HELM_PLUGIN_SIGNING_KEY }}") == 1
    (signing,) = [
        step for step in workflow()["jobs"]["helm-plugin"]["steps"] if "SIGNING_KEY" in step.get("env", {})
    ]
    assert signing["run"] == "bash scripts/package-helm-plugin.sh build/helm-plugin"
