"""The declared dependencies are exactly what the code imports, installed consistently, with floors
and pins kept in step.

What the code needs is read from the code itself: the third-party top-level modules that
generator/ and controller/ import (an AST scan), mapped to their distributions with
`importlib.metadata.packages_distributions()`. The generator's imports are the base dependencies;
the controller's, and those of the generator's cluster readers, the `controller` extra. A
dependency nobody imports, or an import nobody declares, fails here.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.conftest import ROOT

DISTRIBUTION = "btp-gitops"
# The generator's modules that read a cluster (post-render --from-cluster, import, diff
# --against-cluster): their imports belong to the `controller` extra (imported lazily; a usage
# error names the extra when it is missing).
FROM_CLUSTER = tuple(
    ROOT / "generator" / "io" / name for name in ("cluster.py", "live_objects.py", "live_lookup.py")
)
# Packages the code loads by name rather than by an import statement, and the file that names them.
LOADED_BY_NAME = {"kubernetes_validate": ROOT / "generator" / "io" / "kube_schemas.py"}
REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[(?P<extras>[^\]]*)\])?\s*(?P<spec>[^;]*)"
)
EXTRA_MARKER = re.compile(r"""extra\s*==\s*["'](?P<extra>[^"']+)["']""")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def python_files(*paths: Path) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return files


def third_party_modules(files: Iterable[Path]) -> set[str]:
    """Top-level names of every absolute import (module level or inside functions) that is
    neither the standard library nor ours."""
    ours = {"btp_gitops", "tests", "bench", "generator", "controller"}
    found: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name not in ours}


def distributions(modules: Iterable[str]) -> dict[str, str]:
    """module -> the (normalized) distribution that installs it."""
    installed = importlib.metadata.packages_distributions()
    mapping: dict[str, str] = {}
    for module in modules:
        candidates = installed.get(module)
        assert candidates, f"{module} is imported but no installed distribution provides it"
        assert len(set(map(normalize, candidates))) == 1, f"{module} comes from {candidates}"
        mapping[module] = normalize(candidates[0])
    return mapping


def declared() -> dict[str, dict[str, str]]:
    """extra ("" for the base) -> {normalized name: version specifier}, from the installed metadata."""
    groups: dict[str, dict[str, str]] = {}
    for line in importlib.metadata.requires(DISTRIBUTION) or []:
        requirement, _, marker = line.partition(";")
        match = REQUIREMENT.match(requirement.strip())
        assert match, line
        extra = EXTRA_MARKER.search(marker)
        name = normalize(match["name"]) + (f"[{match['extras']}]" if match["extras"] else "")
        groups.setdefault(extra["extra"] if extra else "", {})[name] = match["spec"].strip()
    return groups


def needed() -> tuple[set[str], set[str]]:
    """(base, controller extra) distributions as the code imports them."""
    generator = [p for p in python_files(ROOT / "generator") if p not in FROM_CLUSTER]
    controller = [*python_files(ROOT / "controller"), *FROM_CLUSTER]
    for module, path in LOADED_BY_NAME.items():
        constants = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)}
        assert module in constants, f"{path.name} no longer loads {module}: drop it from LOADED_BY_NAME"
    base = set(distributions(third_party_modules(generator) | set(LOADED_BY_NAME)).values())
    extra = set(distributions(third_party_modules(controller)).values()) - base
    return base, extra


def test_base_dependencies_are_what_the_generator_imports() -> None:
    base, _ = needed()
    assert set(declared()[""]) == base


def test_controller_extra_is_what_only_the_controller_and_from_cluster_import() -> None:
    _, extra = needed()
    assert set(declared()["controller"]) == extra


def test_the_test_extra_covers_the_controller_and_every_import_of_the_tests() -> None:
    groups = declared()
    assert "btp-gitops[controller]" in groups["test"]
    available = set(groups[""]) | set(groups["controller"]) | set(groups["test"])
    imported = distributions(third_party_modules(python_files(ROOT / "tests", ROOT / "bench")))
    assert {module: dist for module, dist in imported.items() if dist not in available} == {}


def test_pip_check_finds_nothing_broken() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def read_pins(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.partition("#")[0].strip()
        if line:
            name, separator, version = line.partition("==")
            assert separator and version, f"{path.name}: {line!r} is not name==version"
            assert normalize(name) not in pins, f"{path.name}: {name} pinned twice"
            pins[normalize(name)] = version.strip()
    return pins


def release(version: str) -> tuple[int, ...]:
    """As pip compares release numbers: 37 == 37.0.0."""
    parts = [int(part) for part in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def test_every_direct_dependency_is_pinned_at_its_declared_floor() -> None:
    floors: dict[str, str] = {}
    for requirements in declared().values():
        for name, spec in requirements.items():
            if name.startswith(f"{DISTRIBUTION}["):
                continue  # the test extra pulling in the controller extra
            match = re.fullmatch(r">=\s*([^,\s]+)", spec)
            assert match, f"{name}: declare a tested floor (>=X), not {spec!r}"
            floors[name] = match[1]
    pinned = read_pins(ROOT / "constraints-floor.txt")
    assert set(pinned) == set(floors)
    assert {name: release(version) for name, version in pinned.items()} == {
        name: release(floor) for name, floor in floors.items()
    }


def test_the_lock_pins_every_direct_dependency_and_the_venv_matches_it() -> None:
    pins = read_pins(ROOT / "constraints.txt")
    direct = {name for group in declared().values() for name in group if "[" not in name}
    assert direct - set(pins) == set()
    if not (ROOT / ".venv" / ".btp-gitops-installed").exists() or Path(sys.prefix) != ROOT / ".venv":
        pytest.skip("not the venv scripts/setup.sh installs from constraints.txt")
    mismatched = {}
    for name, version in pins.items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            mismatched[name] = (version, None)
            continue
        if installed != version:
            mismatched[name] = (version, installed)
    assert mismatched == {}
