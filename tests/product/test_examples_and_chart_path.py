"""From an installed wheel, with no checkout: `examples DIR` gives the sources the docs render and
`chart-path` the chart directory `helm install` takes (real helm v3 and v4 template it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, ROOT
from tests.support.tools import tool_path
from tests.support.wheel import InstalledProduct, install


@pytest.fixture(scope="module")
def product(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledProduct:
    return install(built_wheel, tmp_path_factory.mktemp("installed"))


def files_under(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }


def test_examples_writes_every_example_file_as_the_checkout_has_it(
    product: InstalledProduct, tmp_path: Path
) -> None:
    result = product.run("examples", tmp_path / "examples")

    assert result.returncode == 0, result.stderr
    assert files_under(tmp_path / "examples") == files_under(EXAMPLES)
    assert ".modules/relay/chart/Chart.yaml" in "\n".join(files_under(tmp_path / "examples"))
    assert result.stdout == (
        f"wrote {len(files_under(EXAMPLES))} files of 5 examples to {tmp_path / 'examples'}: "
        "btp-operator, cap-app, cap-services-only, kyma-beta.yaml, kyma-modules\n"
    )


def test_the_written_examples_render_outside_the_checkout(product: InstalledProduct) -> None:
    written = product.run("examples", "examples")
    assert written.returncode == 0, written.stderr

    rendered = product.run("render", "examples/kyma-modules", "--out", "out/kyma", "--cluster", "demo")

    assert rendered.returncode == 0, rendered.stderr
    assert "rendered cluster demo into out/kyma/clusters/demo" in rendered.stdout
    assert (product.home / "out" / "kyma" / "clusters" / "demo").is_dir()


def test_examples_never_overwrites_without_being_asked(product: InstalledProduct, tmp_path: Path) -> None:
    target = tmp_path / "mine"
    (target / "btp-operator").mkdir(parents=True)
    (target / "btp-operator" / "btpoperator.yaml").write_text("my own edits\n")
    (target / "notes.txt").write_text("keep me\n")

    refused = product.run("examples", target)

    assert refused.returncode == 2
    assert refused.stdout == ""
    assert (
        f"{target}: already holds example files (btp-operator/btpoperator.yaml); nothing written"
        in refused.stderr
    )
    assert "Traceback" not in refused.stderr
    assert (target / "btp-operator" / "btpoperator.yaml").read_text() == "my own edits\n"
    assert not (target / "cap-app").exists()

    replaced = product.run("examples", target, "--overwrite")

    assert replaced.returncode == 0, replaced.stderr
    assert (target / "btp-operator" / "btpoperator.yaml").read_bytes() == (
        EXAMPLES / "btp-operator" / "btpoperator.yaml"
    ).read_bytes()
    assert (target / "notes.txt").read_text() == "keep me\n"


def test_examples_writes_nothing_through_a_symbolic_link(product: InstalledProduct, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "examples"
    target.mkdir()
    (target / "cap-app").symlink_to(elsewhere)

    result = product.run("examples", target, "--overwrite")

    assert result.returncode == 2
    assert (
        f"{target / 'cap-app'}: a symbolic link where an example file goes; nothing written" in result.stderr
    )
    assert list(elsewhere.iterdir()) == []
    assert not (target / "btp-operator").exists()


def test_chart_path_names_the_installed_charts(product: InstalledProduct) -> None:
    install_chart = product.run("chart-path")
    operator_chart = product.run("chart-path", "sap-btp-operator")

    assert install_chart.returncode == 0, install_chart.stderr
    path = Path(install_chart.stdout.strip())
    assert path.is_relative_to(product.venv) and path.name == "btp-gitops"
    assert install_chart.stdout == f"{path}\n"
    assert yaml.safe_load((path / "Chart.yaml").read_text())["name"] == "btp-gitops"
    assert files_under(path) == files_under(ROOT / "charts" / "btp-gitops")
    assert Path(operator_chart.stdout.strip()) == path.parent / "sap-btp-operator"


def test_chart_path_refuses_a_chart_it_does_not_ship(product: InstalledProduct) -> None:
    result = product.run("chart-path", "nginx")

    assert result.returncode == 2
    assert "invalid choice: 'nginx' (choose from 'btp-gitops', 'sap-btp-operator')" in result.stderr


@pytest.mark.tools
@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_helm_templates_the_chart_at_the_printed_path(
    product: InstalledProduct, helm: str, tmp_path: Path
) -> None:
    chart = product.run("chart-path").stdout.strip()
    env = {
        **product.env(),
        "HELM_CONFIG_HOME": str(tmp_path / "config"),
        "HELM_DATA_HOME": str(tmp_path / "data"),
        "HELM_CACHE_HOME": str(tmp_path / "cache"),
    }

    result = subprocess.run(
        # The chart refuses its bare defaults (nothing to serve subscriptions from): a first
        # install names the source repository, as the chart's README says.
        [
            str(tool_path(helm)),
            "template",
            "btp-gitops",
            chart,
            "-n",
            "btp-gitops",
            "--include-crds",
            "--set",
            "source.repo=https://git.example.com/platform/sources.git",
        ],
        capture_output=True,
        text=True,
        cwd=product.home,
        env=env,
        check=False,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr
    kinds = {doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc}
    assert {"CustomResourceDefinition", "Deployment", "ServiceAccount"} <= kinds


def test_examples_refuses_a_file_where_it_needs_a_directory_before_writing_anything(
    product: InstalledProduct, tmp_path: Path
) -> None:
    target = tmp_path / "examples"
    target.mkdir()
    (target / "cap-app").write_text("not a directory\n")

    result = product.run("examples", target)

    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        f"{target / 'cap-app'}: a file where the examples need a directory; nothing written"
    )
    assert "Traceback" not in result.stderr
    assert sorted(path.name for path in target.iterdir()) == ["cap-app"]
