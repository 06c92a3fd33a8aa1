"""Bad Kyma input through the installed CLI: whole stderr, exit code, and a previous render untouched.

Covered: resolution failures (several at once, each naming the entry and the candidates), beta
gating, entry rules (`none`, version with channel), two Kymas in one cluster, a catalog directory
holding other kinds, a schema violation of a catalog object, module content that is missing or not
named, and the `--at` and `--maintenance-policy` options.
Real components: the installed console script, real files. Nothing is faked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import RunCli, read_tree
from tests.kyma.conftest import BETA_KYMA, edit_kyma

KYMA = "source/kyma.yaml: document 1 (Kyma kyma-system/default)"


@pytest.fixture
def rendered_repo(tmp_path: Path, kyma_source: Path, run_cli: RunCli) -> Path:
    """A repo rendered from the good example, to check that failures leave it untouched."""
    repo = tmp_path / "repo"
    assert run_cli("render", kyma_source, "--out", repo, "--commit").returncode == 0
    return repo


def assert_refused(run_cli: RunCli, repo: Path, *args: str | Path, code: int, stderr: str) -> None:
    before = read_tree(repo)
    result = run_cli("render", "source", "--out", repo, *args, cwd=repo.parent)
    assert (result.returncode, result.stderr, result.stdout) == (code, stderr, "")
    assert read_tree(repo) == before


def test_with_strict_every_unresolvable_module_is_reported_at_once(
    kyma_source: Path, rendered_repo: Path, run_cli: RunCli
) -> None:
    edit_kyma(
        kyma_source,
        spec={"modules": [{"name": "greeter", "channel": "beta"}, {"name": "relay"}, {"name": "nope"}]},
    )
    assert_refused(
        run_cli,
        rendered_repo,
        "--strict",
        code=ExitCode.INPUT,
        stderr=(
            "error: Kyma modules that cannot be resolved (--strict) (3 problems)\n"
            f"  {KYMA}: spec.modules[0].channel: module greeter: no templates were found: for module greeter "
            "in channel beta (channels with templates: fast, regular)\n"
            f"  {KYMA}: spec.modules[1].name: module relay: module template not allowed: beta module: template "
            'kyma-system/relay-0.2.0 is beta, only a Kyma labelled operator.kyma-project.io/beta: "true" may '
            "use it\n"
            f"  {KYMA}: spec.modules[2].name: module nope: no templates were found: for module nope in channel "
            "regular\n"
        ),
    )


def test_entry_rules(kyma_source: Path, rendered_repo: Path, run_cli: RunCli) -> None:
    edit_kyma(
        kyma_source,
        spec={"channel": "none", "modules": [{"name": "greeter", "channel": "fast", "version": "1.1.0"}]},
    )
    assert_refused(
        run_cli,
        rendered_repo,
        code=ExitCode.INPUT,
        stderr=(
            "error: invalid Kyma Kyma kyma-system/default (2 problems)\n"
            f"  {KYMA}: spec.channel: 'none' is not a release channel\n"
            f"  {KYMA}: spec.modules[0].version: version and channel are mutually exclusive\n"
        ),
    )


def test_one_kyma_per_cluster(kyma_source: Path, rendered_repo: Path, run_cli: RunCli) -> None:
    shutil.copy(BETA_KYMA, kyma_source / "second.yaml")
    assert_refused(
        run_cli,
        rendered_repo,
        code=ExitCode.INPUT,
        stderr=(
            "error: invalid Kyma or module catalog (1 problem)\n"
            "  source/second.yaml: document 1 (Kyma kyma-system/beta-cluster): a cluster has one Kyma, and "
            "Kyma kyma-system/default (source/kyma.yaml: document 1) comes first: render each Kyma into its "
            "own cluster\n"
        ),
    )


def test_a_catalog_directory_holds_catalog_objects_only(
    tmp_path: Path, kyma_source: Path, rendered_repo: Path, run_cli: RunCli
) -> None:
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    shutil.copy(BETA_KYMA, catalog / "kyma.yaml")
    assert_refused(
        run_cli,
        rendered_repo,
        "--catalog",
        "catalog",
        code=ExitCode.INPUT,
        stderr=(
            "error: invalid Kyma or module catalog (1 problem)\n"
            "  catalog/kyma.yaml: document 1 (Kyma kyma-system/beta-cluster): kind: a --catalog directory holds "
            "only ModuleTemplates and ModuleReleaseMetas\n"
        ),
    )


def test_catalog_objects_are_validated_with_the_sources(
    kyma_source: Path, rendered_repo: Path, run_cli: RunCli
) -> None:
    path = kyma_source / "catalog/greeter.yaml"
    path.write_text(path.read_text().replace("  requiresDowntime: true", "  requiresDowntime: yes please"))
    assert_refused(
        run_cli,
        rendered_repo,
        code=ExitCode.INPUT,
        stderr=(
            "error: invalid source documents (1 problem)\n"
            "  source/catalog/greeter.yaml: document 2 (ModuleTemplate kyma-system/greeter-fast): "
            "spec.requiresDowntime: must be of type boolean, got string\n"
        ),
    )


def test_missing_module_content(kyma_source: Path, rendered_repo: Path, run_cli: RunCli) -> None:
    shutil.rmtree(kyma_source / ".modules/greeter/1.0.0")
    assert_refused(
        run_cli,
        rendered_repo,
        code=ExitCode.INPUT,
        stderr=(
            "error: cannot read the resources of module greeter (source/catalog/greeter.yaml: document 1 "
            "(ModuleTemplate kyma-system/greeter-regular): spec.rawManifest.path)\n"
            "  source/.modules/greeter/1.0.0: no such file or directory\n"
        ),
    )


def test_template_without_content(kyma_source: Path, rendered_repo: Path, run_cli: RunCli) -> None:
    path = kyma_source / "catalog/greeter.yaml"
    path.write_text(path.read_text().replace("  rawManifest:\n    path: ../.modules/greeter/1.0.0\n", "", 1))
    assert_refused(
        run_cli,
        rendered_repo,
        code=ExitCode.INPUT,
        stderr=(
            "error: cannot render module greeter\n"
            "  source/catalog/greeter.yaml: document 1 (ModuleTemplate kyma-system/greeter-regular): spec: "
            "spec.rawManifest or spec.chart is required to render it\n"
        ),
    )


@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        (
            ("--at", "tomorrow"),
            ExitCode.USAGE,
            "error: --at 'tomorrow': not a timestamp like 2025-10-11T21:30:00Z\n",
        ),
        (
            ("--at", "2025-10-11T21:30:00"),
            ExitCode.USAGE,
            "error: --at '2025-10-11T21:30:00': give a UTC offset (Z or +hh:mm)\n",
        ),
        (
            ("--maintenance-policy", "missing.json"),
            ExitCode.INPUT,
            "error: cannot read the maintenance policy\n  missing.json: no such file or directory\n",
        ),
    ],
)
def test_option_errors(
    rendered_repo: Path, kyma_source: Path, run_cli: RunCli, args: tuple[str, ...], code: int, stderr: str
) -> None:
    assert_refused(run_cli, rendered_repo, *args, code=code, stderr=stderr)


def test_an_invalid_policy_names_the_field(
    tmp_path: Path, kyma_source: Path, rendered_repo: Path, run_cli: RunCli
) -> None:
    (tmp_path / "policy.json").write_text(
        '{"default": {"days": ["Sat"], "begin": "20:00", "end": "22:00:00Z"}}'
    )
    assert_refused(
        run_cli,
        rendered_repo,
        "--maintenance-policy",
        "policy.json",
        code=ExitCode.INPUT,
        stderr=(
            "error: invalid maintenance policy (1 problem)\n"
            "  policy.json: default.begin: must be a timestamp like 2025-10-10T20:00:00Z or a time of day like "
            "20:00:00Z, got '20:00'\n"
        ),
    )
