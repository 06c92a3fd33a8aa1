"""One render reports every problem of every stage, with the name most probably meant.

Schema validation, the CAP rules across objects and the tenants' plans used to stop the run at the
first stage that failed, so a user fixed their sources in three runs. Each case here runs the
installed CLI on a copy of the CAP example with mistakes in different files and checks the whole
stderr (ordered by file, object, field), the exit code, and that nothing was written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import EXAMPLES, RunCli

CAP_TENANT = "apiVersion: sme.sap.com/v1alpha1\nkind: CAPTenant\n"


def _cap_source(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLES / "cap-app", source)
    return source


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _render(run_cli: RunCli, tmp_path: Path) -> tuple[int, str]:
    result = run_cli("render", "src", "--out", "out", cwd=tmp_path)
    assert result.stdout == ""
    assert not (tmp_path / "out").exists(), "a failed render wrote its output"
    return result.returncode, result.stderr


def test_schema_cross_object_and_tenant_problems_in_one_run(tmp_path: Path, run_cli: RunCli) -> None:
    source = _cap_source(tmp_path)
    # A schema error: a misspelt field of one tenant's record.
    _edit(source / "tenants/globex.yaml", "  subDomain: globex", "  subdomain: globex")
    _misspelt_application_version(source)
    # A tenant check: a tenant pinned to a version no CAPApplicationVersion has.
    _edit(source / "tenants/acme.yaml", "  subDomain: acme\n", "  subDomain: acme\n  version: 1.1.1\n")

    code, stderr = _render(run_cli, tmp_path)

    assert code == ExitCode.INPUT
    assert stderr == (
        "error: invalid sources (4 problems: invalid source documents; invalid CAP applications)\n"
        "  src/tenants/acme.yaml: document 1 (CAPTenant bookshop/acme): spec.version: no "
        "CAPApplicationVersion of bookshop has version 1.1.1 (versions in the sources: 1.0.0, 1.1.0) "
        '(did you mean "1.1.0"?)\n'
        "  src/tenants/globex.yaml: document 1 (CAPTenant bookshop/globex): spec.subDomain: required "
        "field is missing\n"
        "  src/tenants/globex.yaml: document 1 (CAPTenant bookshop/globex): spec.subdomain: unknown "
        'field (did you mean "subDomain"?)\n'
        "  src/version-2.0.0.yaml: document 1 (CAPApplicationVersion bookshop/bookshop-2-0-0): "
        "spec.capApplicationInstance: no CAPApplication bookshp in namespace bookshop in the sources "
        '(did you mean "bookshop"?)\n'
    )


def _misspelt_application_version(source: Path) -> None:
    """A cross-object error: a version of an application the sources do not hold (a typo)."""
    version = (source / "version-1.1.0.yaml").read_text()
    version = version.replace("name: bookshop-1-1-0", "name: bookshop-2-0-0")
    version = version.replace("capApplicationInstance: bookshop", "capApplicationInstance: bookshp")
    (source / "version-2.0.0.yaml").write_text(version.replace("version: 1.1.0", "version: 2.0.0"))


def test_tenant_plans_are_checked_beside_the_rules_across_objects(tmp_path: Path, run_cli: RunCli) -> None:
    """The CAP rules and the tenants' plans were two runs even with valid schemas."""
    source = _cap_source(tmp_path)
    _misspelt_application_version(source)
    _edit(source / "tenants/acme.yaml", "  subDomain: acme\n", "  subDomain: acme\n  version: 9.9.9\n")

    code, stderr = _render(run_cli, tmp_path)

    assert code == ExitCode.INPUT
    assert stderr.splitlines() == [
        "error: invalid CAP applications (2 problems)",
        "  src/tenants/acme.yaml: document 1 (CAPTenant bookshop/acme): spec.version: no CAPApplicationVersion "
        "of bookshop has version 9.9.9 (versions in the sources: 1.0.0, 1.1.0)",
        "  src/version-2.0.0.yaml: document 1 (CAPApplicationVersion bookshop/bookshop-2-0-0): "
        "spec.capApplicationInstance: no CAPApplication bookshp in namespace bookshop in the sources "
        '(did you mean "bookshop"?)',
    ]


def test_a_document_that_fails_its_schema_is_skipped_with_what_needs_it(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """An invalid CAPApplication is reported once: its versions and tenants are not also reported as
    orphans, and a problem elsewhere still is."""
    source = _cap_source(tmp_path)
    _edit(source / "capapplication.yaml", "  btpAppName: bookshop", "  btpAppName: bookshop\n  colour: blue")
    (source / "typo.yaml").write_text(
        CAP_TENANT.replace("CAPTenant", "CapTenant") + "metadata: {name: t, namespace: bookshop}\n"
    )

    code, stderr = _render(run_cli, tmp_path)

    assert code == ExitCode.INPUT
    assert stderr == (
        "error: invalid source documents (2 problems)\n"
        "  src/capapplication.yaml: document 1 (CAPApplication bookshop/bookshop): spec.colour: unknown field\n"
        "  src/typo.yaml: document 1 (CapTenant bookshop/t): apiVersion: unknown kind "
        'sme.sap.com/v1alpha1/CapTenant (did you mean "CAPTenant"? btp-gitops reads CAPTenant at '
        "sme.sap.com/v1alpha1)\n"
    )


def test_kyma_problems_are_reported_with_the_others(tmp_path: Path, run_cli: RunCli) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLES / "kyma-modules", source)
    shutil.copytree(EXAMPLES / "cap-app", source / "cap")
    _edit(source / "kyma.yaml", "  channel: regular", "  channel: none")
    _edit(source / "cap/tenants/globex.yaml", "  subDomain: globex", "  subdomain: globex")

    code, stderr = _render(run_cli, tmp_path)

    assert code == ExitCode.INPUT
    assert stderr.splitlines() == [
        "error: invalid sources (3 problems: invalid source documents; invalid Kyma Kyma kyma-system/default)",
        "  src/cap/tenants/globex.yaml: document 1 (CAPTenant bookshop/globex): spec.subDomain: required field "
        "is missing",
        "  src/cap/tenants/globex.yaml: document 1 (CAPTenant bookshop/globex): spec.subdomain: unknown field "
        '(did you mean "subDomain"?)',
        "  src/kyma.yaml: document 1 (Kyma kyma-system/default): spec.channel: 'none' is not a release channel",
    ]


def test_a_chart_error_keeps_its_exit_code_and_lists_the_input_problems(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """A chart that cannot be loaded is not a problem of the sources: exit 4, as the table says, with
    the sources' problems found before it listed under it."""
    source = tmp_path / "src"
    shutil.copytree(EXAMPLES / "btp-operator", source)
    shutil.copytree(EXAMPLES / "cap-app", source / "cap")
    chart = tmp_path / "chart"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\n")
    config = source / "btpoperatorconfig.yaml"
    config.write_text(config.read_text() + f"  chart:\n    path: {chart}\n")
    _edit(source / "cap/tenants/globex.yaml", "  subDomain: globex", "  subdomain: globex")

    result = run_cli("render", "src", "--out", "out", "--allow-path", chart, cwd=tmp_path)

    assert result.returncode == ExitCode.CHART, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: cannot load chart "), lines
    assert lines[1:] == [
        "  src/cap/tenants/globex.yaml: document 1 (CAPTenant bookshop/globex): spec.subDomain: required field "
        "is missing",
        "  src/cap/tenants/globex.yaml: document 1 (CAPTenant bookshop/globex): spec.subdomain: unknown field "
        '(did you mean "subDomain"?)',
    ]
    assert not (tmp_path / "out").exists()
