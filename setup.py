"""The packages of the one import namespace `btp_gitops`, listed from the folders pyproject.toml maps.

pyproject.toml's `[tool.setuptools.package-dir]` maps each design folder to its name without a link
(`generator/` is `btp_gitops.generator`, `charts/` is `btp_gitops.data.charts`; `src/btp_gitops/`
holds the namespace's own files). setuptools finds packages only where the import name is the folder
path, so this lists them from the folders themselves: a new subpackage (a module split into a
package) is in the wheel, and in the editable install after `scripts/setup.sh`, without an edit.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
NAMESPACE = "btp_gitops"
DATA = f"{NAMESPACE}.data"
# Every file of a data folder, the dotfiles too (a chart's .helmignore, the artifact's .release.yml).
ALL_FILES = ["*", ".*"]


def folder_of(package: str, mapping: dict[str, str]) -> Path:
    """Where setuptools looks for `package`: the longest mapped prefix, then the name's parts."""
    prefix = max((n for n in mapping if n in ("", package) or package.startswith(f"{n}.")), key=len)
    rest = package[len(prefix) :].lstrip(".")
    return ROOT / mapping[prefix] / Path(*rest.split(".") if rest else ())


def packages_under(package: str, folder: Path, *, code: bool) -> Iterator[str]:
    """`package` and the folders below it: for code those with an `__init__.py`, for data every folder
    (a data folder not listed as a package is shipped with a warning, or not at all)."""
    yield package
    for path in sorted(folder.rglob("*")):
        if not path.is_dir() or "__pycache__" in path.parts:
            continue
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue  # no package name can start with a dot: shipped by dot_folder_files below
        if code and not (path / "__init__.py").is_file():
            continue
        yield ".".join([package, *path.relative_to(folder).parts])


with (ROOT / "pyproject.toml").open("rb") as pyproject:
    mapping: dict[str, str] = tomllib.load(pyproject)["tool"]["setuptools"]["package-dir"]
own = folder_of(NAMESPACE, mapping)
tops = {name: folder_of(name, mapping) for name in mapping if name}
# The namespace's own data folders (crd-schemas) besides the mapped ones.
tops |= {f"{DATA}.{path.name}": path for path in sorted((own / "data").iterdir()) if path.is_dir()}
code = [
    p
    for name, folder in tops.items()
    if not name.startswith(DATA)
    for p in packages_under(name, folder, code=True)
]
data = [
    p
    for name, folder in tops.items()
    if name.startswith(DATA)
    for p in packages_under(name, folder, code=False)
]


def dot_folder_files(package: str) -> list[str]:
    """Patterns for the files under a data package's dot-directories (an example's `.modules/`)."""
    folder = folder_of(package, mapping)
    if not folder.is_dir():
        return []
    dots = sorted(path.name for path in folder.iterdir() if path.is_dir() and path.name.startswith("."))
    return [f"{name}/**/{pattern}" for name in dots for pattern in ALL_FILES]


setup(
    packages=[NAMESPACE, DATA, *code, *data],
    package_data={
        NAMESPACE: ["py.typed"],
        **{package: [*ALL_FILES, *dot_folder_files(package)] for package in data},
    },
)
