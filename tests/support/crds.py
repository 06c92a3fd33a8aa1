"""Locate the CustomResourceDefinitions that rendered repos need in a cluster.

Third-party CRDs are fetched by ``scripts/fetch-crds.sh`` from their projects' Go
modules (pinned by version and checksum) into ``$CACHE/crds/<family>-<version>/``,
with a copy of the pinned version under ``$CACHE/crds/current/<family>/``. Ours are
generated from ``schemas/`` into ``charts/btp-gitops/crds/`` and committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support.cache import cache_dir
from tests.support.tiers import require_marker

REPO_ROOT = Path(__file__).resolve().parents[2]
CRDS_CACHE = cache_dir() / "crds"
CURRENT_CRDS = CRDS_CACHE / "current"
FETCH_SCRIPT = REPO_ROOT / "scripts" / "fetch-crds.sh"
OUR_CRDS = REPO_ROOT / "charts" / "btp-gitops" / "crds"

# Istio's CRDs alone are 18,000 lines: libyaml parses them seven times faster than pure Python.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The families scripts/fetch-crds.sh pins, in its order.
CRD_FAMILIES = (
    "cert-manager",
    "istio",
    "gardener-cert",
    "gardener-dns",
    "prometheus-operator",
    "external-secrets",
    "argo-cd",
    "flux",
)


class CrdsNotFetchedError(FileNotFoundError):
    """A third-party CRD family has not been fetched into ``$CACHE/crds`` yet."""


class OurCrdsMissingError(FileNotFoundError):
    """``charts/btp-gitops/crds`` holds no CRDs."""


def third_party_crd_files(*families: str) -> list[Path]:
    """The pinned CRD files of ``families`` (every family when none is named), sorted.

    Raises ``ValueError`` for an unknown family and ``CrdsNotFetchedError``, naming the
    command that fetches them, when a family is not in the cache.
    """
    require_marker("crds", "the pinned third-party CRDs (scripts/fetch-crds.sh)")
    unknown = sorted(set(families) - set(CRD_FAMILIES))
    if unknown:
        raise ValueError(f"unknown CRD families {unknown}; known: {', '.join(CRD_FAMILIES)}")
    wanted = families or CRD_FAMILIES
    missing = [family for family in wanted if not _family_files(family)]
    if missing:
        script = FETCH_SCRIPT.relative_to(REPO_ROOT)
        raise CrdsNotFetchedError(
            f"CRDs not fetched for {', '.join(missing)} (expected YAML files under "
            f"{CURRENT_CRDS}/<family>/). Run `{script} {' '.join(missing)}` from {REPO_ROOT} "
            f"(or `{script}` to fetch every family)."
        )
    return [path for family in wanted for path in _family_files(family)]


def pinned_crds_dir(*families: str) -> Path:
    """``$CACHE/crds/current``, the directory `validate --crds` reads, once ``families`` (every
    family when none is named) are fetched; raises like :func:`third_party_crd_files`."""
    third_party_crd_files(*families)
    return CURRENT_CRDS


def our_crd_files() -> list[Path]:
    """The CRDs our chart installs (``charts/btp-gitops/crds/*.yaml``), sorted."""
    files = sorted(OUR_CRDS.glob("*.yaml"))
    if not files:
        raise OurCrdsMissingError(
            f"no CRDs in {OUR_CRDS}; they are generated from schemas/ with `btp-gitops crds`"
        )
    return files


def load_crds(files: list[Path]) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition document in ``files`` (a file may hold several)."""
    docs: list[dict[str, Any]] = []
    for path in files:
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER):
            if doc is None:
                continue
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                raise ValueError(f"{path}: not a CustomResourceDefinition document")
            docs.append(doc)
    return docs


def _family_files(family: str) -> list[Path]:
    return sorted((CURRENT_CRDS / family).glob("*.yaml"))
