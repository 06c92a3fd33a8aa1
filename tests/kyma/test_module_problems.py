"""One Kyma module that cannot be resolved does not block the others, end to end through the CLI.

A repo is rendered with three modules (greeter, relay, the mandatory auditlog); then greeter's
template can no longer be resolved (none found, several, an invalid one) while relay moves to a
new version. The render is written: relay is upgraded, greeter's previously rendered files stay
byte for byte (still listed in the ownership manifest, so the next render owns them and Argo CD or
Flux prune nothing; with Flux, its stage Kustomizations stay as well), greeter is reported with Lifecycle Manager's state and message, the problem
is named on stderr, and the exit code is 9. `--strict` refuses the same render (exit 3, nothing
written). Fixing the template brings greeter back.

Real components: the installed CLI with the embedded Helm engine, real Git; nothing is faked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import RunCli, read_tree
from tests.kyma.conftest import edit_kyma, modules_of

CLUSTER = "clusters/default"
BETA = {"operator.kyma-project.io/beta": "true"}
MODULES = [{"name": "greeter"}, {"name": "relay"}]


def _second_regular_template(source: Path) -> None:
    path = source / "catalog/greeter.yaml"
    twin = path.read_text().split("---\n")[0].replace("name: greeter-regular", "name: greeter-regular-2")
    (source / "catalog/greeter-twin.yaml").write_text(twin)


def _invalid_component_name(source: Path) -> None:
    path = source / "catalog/greeter.yaml"
    path.write_text(path.read_text().replace("name: example.com/kyma-modules/greeter", "name: Greeter", 1))


BREAKAGES = [
    pytest.param(
        None,
        "Warning",
        "no templates were found: for module greeter in channel edge (channels with templates: fast, regular)",
        "spec.modules[0].channel",
        "argocd",
        id="none-found-warning",
    ),
    pytest.param(
        None,
        "Warning",
        "no templates were found: for module greeter in channel edge (channels with templates: fast, regular)",
        "spec.modules[0].channel",
        "flux",
        id="none-found-warning-flux",
    ),
    pytest.param(
        _second_regular_template,
        "Error",
        "no unique template could be identified: more than one module template found for module greeter in "
        "channel regular: candidates: [kyma-system/greeter-regular, kyma-system/greeter-regular-2]",
        "spec.channel",
        "argocd",
        id="ambiguous-error",
    ),
    pytest.param(
        _invalid_component_name,
        "Error",
        "failed to get descriptor: template kyma-system/greeter-regular: spec.descriptor.component.name "
        "'Greeter' is not a valid OCM component name (a domain, then a path, in lower case, at most 255 "
        "characters)",
        "spec.modules[0].name",
        "argocd",
        id="invalid-template-error",
    ),
]


@pytest.mark.parametrize(("breakage", "state", "message", "field_path", "target"), BREAKAGES)
def test_an_unresolvable_module_keeps_its_files_and_the_others_render(
    tmp_path: Path,
    kyma_source: Path,
    run_cli: RunCli,
    breakage: object,
    state: str,
    message: str,
    field_path: str,
    target: str,
) -> None:
    repo = tmp_path / "repo"
    edit_kyma(kyma_source, spec={"modules": MODULES}, labels=BETA)
    first = run_cli("render", kyma_source, "--out", repo, "--target", target, "--commit")
    assert first.returncode == 0, first.stderr
    before = read_tree(repo / CLUSTER)
    # the app and, for Flux, its stage Kustomizations in .wiring/
    greeter_files = {path: data for path, data in before.items() if "kyma-greeter" in path}
    assert greeter_files
    # greeter breaks (a channel without templates, or a catalog change); relay moves to fast.
    greeter: dict[str, str] = {"name": "greeter"}
    if callable(breakage):
        breakage(kyma_source)
    else:
        greeter["channel"] = "edge"
    edit_kyma(kyma_source, spec={"modules": [greeter, {"name": "relay", "channel": "fast"}]})

    strict = run_cli("render", kyma_source, "--out", repo, "--target", target, "--strict")
    assert strict.returncode == ExitCode.INPUT, strict.stderr
    assert strict.stderr.startswith("error: Kyma modules that cannot be resolved (--strict) (1 problem)\n")
    assert read_tree(repo / CLUSTER) == before

    result = run_cli("render", kyma_source, "--out", repo, "--target", target, "--commit", "--output", "json")

    assert result.returncode == ExitCode.MODULE_PROBLEMS, result.stderr
    kyma_file = f"{kyma_source}/kyma.yaml: document 1 (Kyma kyma-system/default)"
    assert result.stderr == (
        "warning: rendered with 1 Kyma module problem(s); their previous files are kept:\n"
        f"  {kyma_file}: {field_path}: module greeter: {message}\n"
    )
    after = read_tree(repo / CLUSTER)
    assert {p: d for p, d in after.items() if "kyma-greeter" in p} == greeter_files
    owned = after[".btp-gitops-files"].decode()
    assert all(path in owned for path in greeter_files)
    report = json.loads(result.stdout)
    modules = modules_of(report)
    greeter = modules["greeter"]
    assert (greeter["state"], greeter["message"], greeter["version"], greeter["app"]) == (
        state,
        message,
        "1.0.0",
        "kyma-greeter",
    )
    assert (modules["relay"]["state"], modules["relay"]["version"]) == ("Ready", "0.3.0")
    assert modules["auditlog"]["state"] == "Ready"
    assert report["kymas"][0]["state"] == state
    assert report["moduleProblems"] == [f"{kyma_file}: {field_path}: module greeter: {message}"]
    assert report["commit"] is not None
    record = json.loads(after[".kyma-modules.json"])
    assert {m["name"]: (m["version"], m["state"]) for m in record["modules"]} == {
        "auditlog": ("1.2.0", "Ready"),
        "greeter": ("1.0.0", state),
        "relay": ("0.3.0", "Ready"),
    }

    # The same render again changes nothing; a fixed catalog brings greeter back.
    again = run_cli("render", kyma_source, "--out", repo, "--target", target, "--commit", "--output", "json")
    assert again.returncode == ExitCode.MODULE_PROBLEMS
    assert json.loads(again.stdout)["commit"] is None
    (kyma_source / "catalog/greeter-twin.yaml").unlink(missing_ok=True)
    path = kyma_source / "catalog/greeter.yaml"
    path.write_text(path.read_text().replace("name: Greeter", "name: example.com/kyma-modules/greeter"))
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter"}, {"name": "relay", "channel": "fast"}]})
    fixed = run_cli("render", kyma_source, "--out", repo, "--target", target, "--output", "json")
    assert fixed.returncode == 0, fixed.stderr
    assert modules_of(json.loads(fixed.stdout))["greeter"]["state"] == "Ready"


def test_a_module_that_never_rendered_is_reported_and_nothing_is_kept(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli
) -> None:
    repo = tmp_path / "repo"
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter"}, {"name": "nope"}]})

    result = run_cli("render", kyma_source, "--out", repo, "--output", "json")

    assert result.returncode == ExitCode.MODULE_PROBLEMS, result.stderr
    modules = modules_of(json.loads(result.stdout))
    nope = modules["nope"]
    assert (nope["state"], nope["channel"], nope["app"], nope["version"]) == ("Warning", "regular", "", "")
    assert nope["message"] == "no templates were found: for module nope in channel regular"
    assert modules["greeter"]["state"] == "Ready"
    assert sorted(p.name for p in (repo / CLUSTER).iterdir() if p.is_dir()) == [
        "kyma-auditlog",
        "kyma-greeter",
    ]
    record = json.loads((repo / CLUSTER / ".kyma-modules.json").read_text())
    assert [m["name"] for m in record["modules"]] == ["auditlog", "greeter"]


def test_diff_reports_module_problems_in_every_output(
    tmp_path: Path, kyma_source: Path, run_cli: RunCli
) -> None:
    """A diff keeps an unresolvable module's files as render does, so it shows no change for it:
    the problem must be in the report a pull request shows, and `--strict` fails the diff."""
    repo = tmp_path / "repo"
    edit_kyma(kyma_source, spec={"modules": MODULES}, labels=BETA)
    assert run_cli("render", kyma_source, "--out", repo).returncode == 0
    edit_kyma(kyma_source, spec={"modules": [{"name": "greeter", "channel": "edge"}, {"name": "relay"}]})
    problem = (
        f"{kyma_source}/kyma.yaml: document 1 (Kyma kyma-system/default): spec.modules[0].channel: module "
        "greeter: no templates were found: for module greeter in channel edge (channels with templates: "
        "fast, regular)"
    )

    text = run_cli("diff", kyma_source, "--against", repo, "--exit-code")
    # only the modules record changes (greeter's state); greeter's own files are kept
    assert text.returncode == ExitCode.CHANGES, text.stderr
    assert "kyma-greeter" not in text.stdout.split("Kyma module problems")[0]
    assert f"\nKyma module problems (1), previous files kept:\n  {problem}\n" in text.stdout
    assert "warning: rendered with 1 Kyma module problem(s)" in text.stderr

    as_json = run_cli("diff", kyma_source, "--against", repo, "--output", "json")
    assert json.loads(as_json.stdout)["moduleProblems"] == [problem]

    markdown = run_cli("diff", kyma_source, "--against", repo, "--output", "markdown")
    assert "> [!WARNING]\n> 1 Kyma module problem(s)" in markdown.stdout
    assert "module greeter: no templates were found" in markdown.stdout

    strict = run_cli("diff", kyma_source, "--against", repo, "--strict")
    assert strict.returncode == ExitCode.INPUT, strict.stderr
    assert strict.stdout == ""
