"""One name per module: btp-gitops imports only as `btp_gitops.*`, each module once, with its data.

The checkout's top-level `generator/` and `controller/` are `btp_gitops.generator` and
`btp_gitops.controller`; under their folder names they are no modules at all, in the test process
(pytest's importlib mode, tests/conftest.py), in the editable install scripts/setup.sh makes and
in the installed wheel (tests/packaging/test_installed_extras.py runs the same probe there).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

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
