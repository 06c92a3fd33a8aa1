"""The data files that ship inside btp-gitops, found through `importlib.resources`.

In an installed wheel they are plain directories of the package, `btp_gitops/data/{schemas,charts,
module-resources,crd-schemas,examples}`. In a checkout's editable install they are the repository's
own folders (`schemas/`, `charts/`, `module-resources/`, `src/btp_gitops/data/crd-schemas/`,
`examples/`), which pyproject.toml's package-dir maps into the package: the answer names those
folders, never the editable install's tree of links to them, because the readers open every file
without following a link. Either way the answer is a real directory, because the Helm engine and
the schema loader read files by path.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from btp_gitops.generator.core.errors import InstallationBroken

SAP_BTP_OPERATOR_CHART = "sap-btp-operator"
INSTALL_CHART = "btp-gitops"
# Where each data folder of the package is in a checkout (pyproject.toml's package-dir).
CHECKOUT_FOLDERS = {
    "schemas": Path("schemas"),
    "charts": Path("charts"),
    "module-resources": Path("module-resources"),
    "crd-schemas": Path("src", "btp_gitops", "data", "crd-schemas"),
    "examples": Path("examples"),
}


@functools.cache
def package_dir() -> Path:
    root = resources.files("btp_gitops")
    if not isinstance(root, Path) or not (root / "data").is_dir():
        # A zipped or otherwise virtual install: charts and schemas must be files on disk.
        raise InstallationBroken(
            f"btp-gitops's data files are not a directory on disk ({root}): reinstall from the wheel"
        )
    return root


@functools.cache
def checkout_root() -> Path | None:
    """The repository whose `src/btp_gitops` this package is (an editable install), else None.

    setuptools' strict editable install links each file of the package, so the package's own
    `__init__.py` resolves into the checkout; a plain editable install imports it from there."""
    own = (package_dir() / "__init__.py").resolve().parent
    root = own.parents[1]
    if own == root / "src" / "btp_gitops" and (root / "pyproject.toml").is_file():
        return root
    return None


def is_checkout() -> bool:
    """True when the data files are the repository's own, not an installation's copies."""
    return checkout_root() is not None


def _member(name: str) -> Path:
    root = checkout_root()
    if root is not None:  # the repository's own folder: a checkout reports and writes its own files
        return root / CHECKOUT_FOLDERS[name]
    return (package_dir() / "data" / name).resolve()  # as before: the installation's real path


def schema_dir() -> Path:
    """The input schemas (`schemas/`)."""
    return _member("schemas")


def chart_dir(name: str) -> Path:
    """A chart shipped with btp-gitops: the SAP BTP service operator's, or the install chart."""
    if name not in (SAP_BTP_OPERATOR_CHART, INSTALL_CHART):
        raise ValueError(f"no bundled chart {name!r}")
    return _member("charts") / name


def crd_dir() -> Path:
    """Our CRDs, generated from `schemas/` into the install chart."""
    return chart_dir(INSTALL_CHART) / "crds"


def crd_schema_dir() -> Path:
    """The schemas of the third-party custom resource kinds btp-gitops emits (cert-manager, Istio, ...)."""
    return _member("crd-schemas")


def module_resources_dir() -> Path:
    """The committed `module-resources/` artifact of the bundled SAP BTP service operator chart."""
    return _member("module-resources")


def examples_dir() -> Path:
    """The example sources the docs render (`examples/`), which `btp-gitops examples DIR` copies out."""
    return _member("examples")
