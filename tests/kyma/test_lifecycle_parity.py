"""Lifecycle Manager's last lookup rules, through `btp-gitops render` as users run it.

Each table restates cases of Lifecycle Manager's template lookup and its tests with the example
catalog (greeter: classic templates per channel; relay: a ModuleReleaseMeta with channels, beta;
auditlog: a mandatory ModuleReleaseMeta):

- a ModuleReleaseMeta without `spec.ocmComponentName` is an error of that module (Lifecycle Manager
  cannot build the module's OCM component identity), for a listed and for a mandatory module;
- a module that is only in the Kyma's status (removed from `spec.modules`) is still looked up, with
  its recorded channel; when no template is found it reports that lookup error and keeps its files
  (Lifecycle Manager keeps its Manifest), and is removed as before when one is;
- a `spec.modules` entry naming a mandatory module is not eligible; the mandatory module is
  rendered for the Kyma all the same;
- restricted modules: a release meta's `spec.kymaSelector` counts only for a module named in the
  restricted-modules list (`--restricted-modules`); a selector on another module, or a listed
  module without a selector, is not allowed;
- maintenance policy keys Lifecycle Manager does not know (its own test policies carry `timeBegin`
  and `timeEnd` in `default`) are ignored with a warning naming each, instead of refusing the file.

Real components: the installed CLI, the embedded Helm engine, the example module content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import RunCli, read_tree
from tests.kyma.conftest import edit_kyma, modules_of

BETA = {"operator.kyma-project.io/beta": "true"}
REGION = "kyma-project.io/region"  # examples/kyma-modules/kyma.yaml: europe-west1


def _edit_documents(path: Path, edit: Any) -> None:
    """Apply `edit(document)` to every document of a catalog file."""
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    for document in documents:
        edit(document)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def _release_meta_spec(path: Path, **changes: Any) -> None:
    """Change the spec of the ModuleReleaseMeta in `path` (None removes a key)."""

    def edit(document: dict[str, Any]) -> None:
        if document["kind"] != "ModuleReleaseMeta":
            return
        for key, value in changes.items():
            if value is None:
                document["spec"].pop(key, None)
            else:
                document["spec"][key] = value

    _edit_documents(path, edit)


def _render(
    run_cli: RunCli, source: Path, out: Path, *options: str | Path
) -> tuple[int, dict[str, Any], str]:
    result = run_cli("render", source, "--out", out, "--output", "json", *options)
    assert result.returncode in (ExitCode.OK, ExitCode.MODULE_PROBLEMS), result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


# --- A ModuleReleaseMeta without an OCM component name --------------------------------------------


@pytest.mark.parametrize(
    ("catalog_file", "module", "rendered"),
    [
        pytest.param("relay.yaml", "relay", ["kyma-auditlog", "kyma-greeter"], id="listed-module"),
        pytest.param("auditlog.yaml", "auditlog", ["kyma-greeter", "kyma-relay"], id="mandatory-module"),
    ],
)
def test_a_release_meta_without_an_ocm_component_name_is_that_modules_error(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli, catalog_file: str, module: str, rendered: list[str]
) -> None:
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter"}, {"name": "relay"}]}, labels=BETA)
    _release_meta_spec(kyma_source / "catalog" / catalog_file, ocmComponentName=None)

    code, report, _ = _render(run_cli, kyma_source, tmp_path / "out")

    assert code == ExitCode.MODULE_PROBLEMS
    status = modules_of(report)[module]
    message = (
        f"failed to create OCM Component Identity: ModuleReleaseMeta kyma-system/{module} has no "
        "spec.ocmComponentName (the module's OCM component, e.g. kyma-project.io/module/<name>)"
    )
    assert (status["state"], status["message"]) == ("Error", message)
    meta_file = f"{kyma_source}/catalog/{catalog_file}: document 1 (ModuleReleaseMeta kyma-system/{module})"
    assert report["moduleProblems"] == [f"{meta_file}: spec.ocmComponentName: module {module}: {message}"]
    apps = sorted(p.name for p in (tmp_path / "out" / "clusters" / "default").iterdir() if p.is_dir())
    assert [app for app in apps if app.startswith("kyma-")] == rendered


# --- A module only in the status is still looked up ------------------------------------------------


@dataclass(frozen=True)
class Removal:
    name: str
    break_catalog: bool  # remove greeter's templates before greeter leaves spec.modules
    state: str
    message: str
    kept: bool  # greeter's files stay byte for byte


REMOVALS = [
    Removal(
        "no template left: the lookup error, the files kept",
        True,
        "Warning",
        "no templates were found: for module greeter in channel regular (the module is no longer in "
        "spec.modules; it is removed once its template can be looked up again)",
        True,
    ),
    Removal(
        "its template still there: removed as before, default CR first",
        False,
        "Deleting",
        "removed from spec.modules: its default CR Greeter default is deleted first; the module's "
        "resources are deleted with the next render",
        False,
    ),
]


@pytest.mark.parametrize("row", REMOVALS, ids=[r.name for r in REMOVALS])
def test_a_module_being_removed_is_still_looked_up(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli, row: Removal
) -> None:
    out = tmp_path / "out"
    code, _, _ = _render(run_cli, kyma_source, out)
    assert code == ExitCode.OK
    cluster = out / "clusters" / "default"
    before = {p: d for p, d in read_tree(cluster).items() if p.startswith("kyma-greeter/")}
    if row.break_catalog:
        (kyma_source / "catalog" / "greeter.yaml").unlink()
    edit_kyma(kyma_source, spec={"modules": []})

    code, report, _ = _render(run_cli, kyma_source, out)

    greeter = modules_of(report)["greeter"]
    assert (greeter["state"], greeter["message"]) == (row.state, row.message)
    after = {p: d for p, d in read_tree(cluster).items() if p.startswith("kyma-greeter/")}
    assert (after == before) is row.kept
    if row.kept:
        assert code == ExitCode.MODULE_PROBLEMS
        kyma_file = f"{kyma_source}/kyma.yaml: document 1 (Kyma kyma-system/default)"
        assert report["moduleProblems"] == [f"{kyma_file}: spec.modules: module greeter: {row.message}"]
    else:
        assert code == ExitCode.OK
        assert len(after) == len(before) - 1  # the default CR went, the module's resources next time


# --- A mandatory module named in spec.modules --------------------------------------------------------


def _greeter_regular_mandatory(source: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        if document["metadata"]["name"] == "greeter-regular":
            document["spec"]["mandatory"] = True

    _edit_documents(source / "catalog" / "greeter.yaml", edit)


MANDATORY = [
    pytest.param(
        None,
        "auditlog",
        "Error",
        "ModuleReleaseMeta kyma-system/auditlog has no version for channel regular (channels: none)",
        "spec.channel",
        "1.2.0",
        id="mandatory-release-meta",
    ),
    pytest.param(
        _greeter_regular_mandatory,
        "greeter",
        "Warning",
        "no templates were found: for module greeter in channel regular (channels with templates: fast)",
        "spec.channel",
        "1.0.0",
        id="mandatory-template",
    ),
]


@pytest.mark.parametrize(("change", "module", "state", "message", "field_path", "version"), MANDATORY)
def test_a_mandatory_module_named_in_spec_modules_is_not_eligible(
    tmp_path: Path,
    kyma_source: Path,
    run_cli: RunCli,
    change: Any,
    module: str,
    state: str,
    message: str,
    field_path: str,
    version: str,
) -> None:
    if callable(change):
        change(kyma_source)
    modules = [{"name": "greeter"}] if module == "greeter" else [{"name": "greeter"}, {"name": module}]
    edit_kyma(kyma_source, spec={"modules": modules})

    code, report, _ = _render(run_cli, kyma_source, tmp_path / "out")

    assert code == ExitCode.MODULE_PROBLEMS
    status = modules_of(report)[module]
    assert (status["state"], status["version"], status["mandatory"]) == (state, version, True)
    assert status["message"].startswith(f"{message}; the module is rendered as mandatory (mandatory: ")
    kyma_file = f"{kyma_source}/kyma.yaml: document 1 (Kyma kyma-system/default)"
    assert report["moduleProblems"] == [f"{kyma_file}: {field_path}: module {module}: {message}"]
    assert (tmp_path / "out" / "clusters" / "default" / f"kyma-{module}").is_dir()  # rendered as mandatory


# --- Restricted modules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Restriction:
    name: str
    selector: dict[str, Any] | None
    restricted: list[str]
    state: str
    message: str = ""
    options: list[str] = field(default_factory=list)


MATCHING = {"matchLabels": {REGION: "europe-west1"}}
RESTRICTIONS = [
    Restriction(
        "a selector on a module not in the list: not allowed",
        MATCHING,
        [],
        "Error",
        "module template not allowed: module has kymaSelector but is not in restricted modules list: "
        "ModuleReleaseMeta kyma-system/relay has a spec.kymaSelector, and relay is not named by "
        "--restricted-modules",
    ),
    Restriction(
        "a selector on another listed module's neighbour: still not allowed",
        MATCHING,
        ["greeter,auditlog"],
        "Error",
        "module template not allowed: module has kymaSelector but is not in restricted modules list: "
        "ModuleReleaseMeta kyma-system/relay has a spec.kymaSelector, and relay is not named by "
        "--restricted-modules",
    ),
    Restriction("listed, and its selector matches the Kyma", MATCHING, ["relay"], "Ready"),
    Restriction(
        "listed, its selector does not match the Kyma",
        {"matchLabels": {REGION: "us-east1"}},
        ["greeter", "relay"],
        "Error",
        "module template not allowed: restricted module not allowed for this Kyma: the spec.kymaSelector "
        "of ModuleReleaseMeta kyma-system/relay does not match the Kyma's labels",
    ),
    Restriction(
        "listed without a selector: not allowed",
        None,
        ["relay"],
        "Error",
        "module template not allowed: relay is a restricted module (--restricted-modules), but "
        "ModuleReleaseMeta kyma-system/relay has no spec.kymaSelector naming the Kymas that may use it",
    ),
    Restriction("neither listed nor a selector: an ordinary module", None, [], "Ready"),
]


@pytest.mark.parametrize("row", RESTRICTIONS, ids=[r.name for r in RESTRICTIONS])
def test_a_kyma_selector_counts_only_for_a_restricted_module(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli, row: Restriction
) -> None:
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter"}, {"name": "relay"}]}, labels=BETA)
    _release_meta_spec(kyma_source / "catalog" / "relay.yaml", kymaSelector=row.selector)
    options = [arg for names in row.restricted for arg in ("--restricted-modules", names)]

    code, report, _ = _render(run_cli, kyma_source, tmp_path / "out", *options)

    relay = modules_of(report)["relay"]
    assert relay["state"] == row.state
    if row.state == "Ready":
        assert code == ExitCode.OK
        assert relay["version"] == "0.2.0"
    else:
        assert code == ExitCode.MODULE_PROBLEMS
        assert relay["message"] == row.message
    assert modules_of(report)["greeter"]["state"] == "Ready"  # classic: no release meta, never restricted


def test_a_restricted_modules_entry_that_is_no_module_name_is_a_usage_error(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli
) -> None:
    result = run_cli(
        "render", kyma_source, "--out", tmp_path / "out", "--restricted-modules", "relay,Bad Name"
    )
    assert result.returncode == ExitCode.USAGE
    assert "--restricted-modules: 'Bad Name' is no module name" in result.stderr
    assert not (tmp_path / "out").exists()


# --- Maintenance policy keys Lifecycle Manager does not know ----------------------------------------


def test_unknown_maintenance_policy_keys_are_ignored_with_a_warning_naming_each(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli
) -> None:
    """A policy written like Lifecycle Manager's test policies: `default` also carries `timeBegin` and
    `timeEnd`, which it ignores; a rule has a note. The windows it knows still decide: greeter's
    upgrade to 1.1.0 (requires downtime) waits for the Sunday default window on a Wednesday."""
    out = tmp_path / "out"
    code, _, _ = _render(run_cli, kyma_source, out)
    assert code == ExitCode.OK
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps(
            {
                "rules": [
                    {
                        "match": {"region": "asia"},
                        "windows": [{"days": ["Sat"], "begin": "20:00:00Z", "end": "23:00:00Z"}],
                        "note": "asia only",
                    }
                ],
                "default": {
                    "days": ["Sun"],
                    "begin": "01:00:00Z",
                    "end": "05:00:00Z",
                    "timeBegin": "01:00:00Z",
                    "timeEnd": "05:00:00Z",
                },
            }
        )
    )
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter", "channel": "fast"}]})
    at = ("--at", "2025-10-08T12:00:00Z")

    code, report, _ = _render(run_cli, kyma_source, out, "--maintenance-policy", policy, *at)

    assert code == ExitCode.OK
    warnings = [(n["reason"], n["subject"]) for n in report["notes"] if n["level"] == "warning"]
    assert warnings == [
        ("MaintenancePolicyKeyIgnored", f"{policy}: default.timeBegin"),
        ("MaintenancePolicyKeyIgnored", f"{policy}: default.timeEnd"),
        ("MaintenancePolicyKeyIgnored", f"{policy}: rules[0].note"),
    ]
    greeter = modules_of(report)["greeter"]
    assert (greeter["version"], greeter["maintenance"]) == ("1.0.0", True)
    assert "next window 2025-10-12T01:00:00+00:00 to 2025-10-12T05:00:00+00:00" in greeter["message"]

    text = run_cli("render", kyma_source, "--out", out, "--maintenance-policy", policy, *at)
    assert text.returncode == ExitCode.OK, text.stderr
    for key in ("default.timeBegin", "default.timeEnd", "rules[0].note"):
        assert f"{policy}: {key}" in text.stdout + text.stderr
