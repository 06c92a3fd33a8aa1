"""One name per module: btp-gitops imports only as `btp_gitops.*`, each module once, with its data.

The checkout's top-level `generator/` and `controller/` are `btp_gitops.generator` and
`btp_gitops.controller`; under their folder names they are no modules at all, in the test process
(pytest's importlib mode, tests/conftest.py), in the editable install scripts/setup.sh makes and
in the installed wheel (tests/packaging/test_installed_extras.py runs the same probe there).
The mapping is setuptools' package-dir (pyproject.toml, setup.py), not links: Git tracks none and
the package's folders hold none.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from tests.conftest import ROOT
from tests.support.wheel import source_files

# pyproject.toml's package-dir: each folder of the checkout and its name in the namespace.
PACKAGE_DIR: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-dir"
]

# Run in a fresh interpreter: loads the generator and the controller, then reports what it found.
ONE_TREE_PROBE = """
import importlib.util, json, sys
from pathlib import Path
import btp_gitops.controller.errors, btp_gitops.controller.process, btp_gitops.generator.cli
from btp_gitops.generator.core.errors import BtpGitopsError
from btp_gitops.generator.io import bundled

by_file = {}
for name, module in list(sys.modules.items()):
    file = getattr(module, "__file__", None)
    if file and (name.startswith("btp_gitops") or name.split(".")[0] in ("generator", "controller")):
        by_file.setdefault(str(Path(file).resolve()), []).append(name)
roots = {
    c.__module__ for m in list(sys.modules.values()) for c in vars(m).values()
    if isinstance(c, type) and c.__name__ == "BtpGitopsError"
}
data = {
    "schemas": bundled.schema_dir() / "captenant.sme.sap.com.v1alpha1.json",
    "chart": bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART) / "Chart.yaml",
    "helmignore": bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART) / ".helmignore",
    "crds": bundled.crd_dir(),
    "crd-schemas": bundled.crd_schema_dir() / "certificates.cert-manager.io.json",
    "module-resources": bundled.module_resources_dir() / ".release.yml",
}
print(json.dumps({
    "short_names": [n for n in ("generator", "controller") if importlib.util.find_spec(n) is not None],
    "twice": {file: names for file, names in by_file.items() if len(names) > 1},
    "error_roots": sorted(roots),
    "controller_error_is_one": issubclass(btp_gitops.controller.errors.ControllerError, BtpGitopsError),
    "package": str(Path(btp_gitops.generator.cli.__file__).resolve().parents[1]),
    "missing_data": sorted(key for key, path in data.items() if not path.exists()),
    "data": {key: str(path) for key, path in data.items()},
}))
"""


def probe(python: Path, cwd: Path, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [str(python), "-c", ONE_TREE_PROBE],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def assert_one_tree(found: dict[str, object]) -> None:
    assert found["short_names"] == []
    assert found["twice"] == {}
    assert found["error_roots"] == ["btp_gitops.generator.core.errors"]
    assert found["controller_error_is_one"] is True
    assert found["missing_data"] == []


def test_the_test_process_has_no_short_names() -> None:
    # pytest ran from the checkout (its working directory): the folders are still no modules.
    assert importlib.util.find_spec("generator") is None
    assert importlib.util.find_spec("controller") is None
    assert not [name for name in sys.modules if name.split(".")[0] in ("generator", "controller")]
    assert str(ROOT) not in [str(Path(entry or os.curdir).resolve()) for entry in sys.path]


def test_the_editable_install_imports_one_tree_of_the_checkout(tmp_path: Path) -> None:
    """The venv scripts/setup.sh made, from a folder outside the checkout, with no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    found = probe(Path(sys.executable), tmp_path, env)
    assert_one_tree(found)
    assert Path(str(found["package"])).is_relative_to(ROOT)
    # The data are the checkout's own files, read where they are: not through a link (the readers
    # open files without following one), not from the editable install's tree of links under build/.
    data = found["data"]
    assert isinstance(data, dict)
    for key, path in data.items():
        assert Path(path).resolve() == Path(path), (key, path)
        assert Path(path).is_relative_to(ROOT) and not Path(path).is_relative_to(ROOT / "build"), path


def test_git_tracks_no_symlink() -> None:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-s"], capture_output=True, text=True, check=True
    )
    links = [line.split("\t")[1] for line in listed.stdout.splitlines() if line.startswith("120000 ")]
    assert links == []


def test_the_package_folders_hold_no_symlink() -> None:
    """Not in Git, nor made by a script or an install: the folders package-dir maps, as they are."""
    found = []
    for folder in sorted(set(PACKAGE_DIR.values())):
        for directory, subdirectories, files in os.walk(ROOT / folder):  # does not enter linked folders
            found += [Path(directory, n) for n in subdirectories + files if Path(directory, n).is_symlink()]
    assert found == []
    assert {"src", "generator", "controller", "schemas", "charts", "module-resources"} <= set(
        PACKAGE_DIR.values()
    )


def import_name(checkout_file: str) -> str | None:
    """Where a file of the checkout is in the installed package (package-dir's longest match)."""
    for name, folder in sorted(PACKAGE_DIR.items(), key=lambda item: -len(item[1])):
        if checkout_file.startswith(f"{folder}/"):
            rest = checkout_file.removeprefix(f"{folder}/")
            return f"{name.replace('.', '/')}/{rest}" if name else rest
    return None


def test_the_wheel_holds_each_file_of_the_mapped_folders_once_under_its_import_name(
    built_wheel: Path,
) -> None:
    with zipfile.ZipFile(built_wheel) as wheel:
        members = [info for info in wheel.infolist() if ".dist-info/" not in info.filename]
    names = [info.filename for info in members]
    expected = sorted(filter(None, map(import_name, source_files(ROOT))))
    assert sorted(names) == expected
    assert (
        "btp_gitops/generator/cli/__init__.py" in names
        and "btp_gitops/data/charts/sap-btp-operator/.helmignore" in names
    )
    # No member is a link (a zip's link is a file whose mode says so).
    assert [info.filename for info in members if (info.external_attr >> 16) & 0o170000 == 0o120000] == []


def test_a_module_added_changes_the_list_that_reinstalls_the_editable_install(tmp_path: Path) -> None:
    """The strict editable install links each file it was built with: scripts/setup.sh reinstalls
    when scripts/package-files.sh's answer differs from its stamp, which a new module must change."""
    script = (ROOT / "scripts" / "package-files.sh").read_text()
    find = next(line for line in script.splitlines() if line.startswith("find "))
    mapped = {"src/btp_gitops" if folder == "src" else folder for folder in PACKAGE_DIR.values()}
    assert set(find.split()[1:]) - {"\\"} == mapped, "package-files.sh reads each folder package-dir maps"
    for name in source_files(ROOT):
        if import_name(name) is not None or name == "scripts/package-files.sh":
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes((ROOT / name).read_bytes())

    def listed() -> str:
        done = subprocess.run(
            ["bash", str(tmp_path / "scripts" / "package-files.sh")],
            check=False,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    before = listed()
    (tmp_path / "controller" / "gitstore_queue.py").write_text('"""A module split out of another."""\n')
    added = listed()
    assert added != before
    (tmp_path / "controller" / "gitstore_queue.py").unlink()
    assert listed() == before
    (tmp_path / "controller" / "events.py").write_text(
        "# an edit: the linked file follows it, no reinstall\n"
    )
    assert listed() == before
