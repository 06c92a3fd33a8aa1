"""The wheel as users install it: `btp-gitops` alone is the generator, `btp-gitops[controller]`
adds the controller's dependencies, and the base install names the extra instead of failing with
a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES
from tests.packaging.test_one_namespace import assert_one_tree, probe
from tests.support.wheel import InstalledProduct, install

EXTRA_MODULES = ("kubernetes", "jwt", "prometheus_client")


@pytest.fixture(scope="module")
def base(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledProduct:
    return install(built_wheel, tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def with_controller(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledProduct:
    return install(built_wheel, tmp_path_factory.mktemp("controller"), extras="controller")


def importable(product: InstalledProduct, module: str) -> bool:
    result = product.python(f"import importlib.util; print(importlib.util.find_spec({module!r}) is not None)")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip() == "True"


def test_the_base_install_has_no_controller_dependencies(base: InstalledProduct) -> None:
    assert [m for m in EXTRA_MODULES if importable(base, m)] == []
    assert base.python("import btp_gitops.generator.cli").returncode == 0


@pytest.mark.parametrize("command", ["controller", "subscription-server"])
def test_the_base_install_names_the_extra_for_controller_commands(
    base: InstalledProduct, command: str
) -> None:
    result = base.run(command, "--kubeconfig", base.home / "absent")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'btp-gitops[controller]'" in result.stderr


def test_the_installed_wheel_imports_one_tree_with_its_data(with_controller: InstalledProduct) -> None:
    found = probe(with_controller.venv / "bin" / "python", with_controller.home, with_controller.env())
    assert_one_tree(found)
    assert Path(str(found["package"])).is_relative_to(with_controller.venv)


def test_the_base_install_names_the_extra_for_from_cluster(base: InstalledProduct) -> None:
    result = base.run("post-render", "--from-cluster", stdin="")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "pip install 'btp-gitops[controller]'" in result.stderr


def test_the_controller_extra_brings_them(with_controller: InstalledProduct) -> None:
    assert [m for m in EXTRA_MODULES if not importable(with_controller, m)] == []
    loaded = with_controller.python("import btp_gitops.controller.process")
    assert loaded.returncode == 0, loaded.stderr
    pip_check = with_controller.python(
        "import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-m', 'pip', 'check']))"
    )
    assert pip_check.returncode == 0, pip_check.stdout + pip_check.stderr


def test_the_base_install_imports_dumps_and_names_the_extra_for_a_cluster(
    base: InstalledProduct, tmp_path: Path
) -> None:
    from_cluster = base.run("import", "--context", "prod", "--out", tmp_path / "from-cluster")
    assert from_cluster.returncode == 2, from_cluster.stderr
    assert "Traceback" not in from_cluster.stderr
    assert "pip install 'btp-gitops[controller]'" in from_cluster.stderr
    assert not (tmp_path / "from-cluster").exists()
    # Dumps need nothing more than the generator.
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    application = EXAMPLES / "cap-app" / "capapplication.yaml"
    (dumps / "cap.yaml").write_text(application.read_text())
    # A Domain of a cluster where only cert-manager's Certificate CRD is installed: the installed
    # product tells the certificate manager from it, and that Gardener DNS is not installed
    # (migration.cluster_managers).
    domain = next(d for d in yaml.safe_load_all((EXAMPLES / "cap-app" / "domains.yaml").read_text()) if d)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
    }
    (dumps / "domain.yaml").write_text(yaml.safe_dump_all([domain, crd]))
    from_dir = base.run("import", "--from-dir", dumps, "--out", tmp_path / "sources")
    assert from_dir.returncode == 0, from_dir.stderr
    assert (tmp_path / "sources" / "cap" / "bookshop" / "bookshop" / "capapplication.yaml").is_file()
    (imported,) = [
        d for d in yaml.safe_load_all((tmp_path / "sources/cap/bookshop/domains.yaml").read_text()) if d
    ]
    assert imported["metadata"]["annotations"] == {
        "btp-gitops.io/certificate-manager": "cert-manager",
        "btp-gitops.io/dns-manager": "kubernetes",
    }
