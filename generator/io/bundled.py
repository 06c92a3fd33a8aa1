"""The data files that ship inside btp-gitops, found through `importlib.resources`.

In a checkout `btp_gitops/data/` links to the repository's `schemas/`, `charts/` and
`module-resources/`; in an installed wheel the same names are plain directories of the package.
Either way the answer is a real directory, because the Helm engine and the schema loader read
files by path.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from btp_gitops.generator.core.errors import InstallationBroken

SAP_BTP_OPERATOR_CHART = "sap-btp-operator"
INSTALL_CHART = "btp-gitops"


@functools.cache
def data_dir() -> Path:
    root = resources.files("btp_gitops").joinpath("data")
    if not isinstance(root, Path) or not root.is_dir():
        # A zipped or otherwise virtual install: charts and schemas must be files on disk.
        raise InstallationBroken(
            f"btp-gitops's data files are not a directory on disk ({root}): reinstall from the wheel"
        )
    return root


def is_checkout() -> bool:
    """True when the data files are the repository's own (linked), not an installation's copies."""
    return (data_dir() / "schemas").is_symlink()


def _member(name: str) -> Path:
    # Resolved, so that a checkout reports (and `btp-gitops crds` writes) the repository's own files.
    return (data_dir() / name).resolve()


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


def module_resources_dir() -> Path:
    """The committed `module-resources/` artifact of the bundled SAP BTP service operator chart."""
    return _member("module-resources")
