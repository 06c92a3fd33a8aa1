"""Which `--target` and `--emit-wiring` a rendered cluster directory was written with, read back
from its files: what `diff` compares the options of the render it is about to do with.

The wiring says it: `.wiring/` holds Flux Kustomizations whenever the target is Flux (and the
GitRepository they read with `--emit-wiring`), the ApplicationSet for Argo CD with
`--emit-wiring`, and does not exist for Argo CD without it. Flux's stage directories
(`<app directory>/<NN>-<slug>/`) tell Flux from Argo CD when `.wiring/` was removed by hand. App
directories are read as core.layout.app_path reads them, so a tree written before tenants were
sharded is told apart the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.objects import api_group, kind_of
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import load_trusted_document, split_documents
from btp_gitops.generator.wiring.objects import ARGOCD, FLUX, WIRING_DIR

_FLUX_STAGE = re.compile(r"[0-9]{2}-[^/]+/[^/]+")  # <NN>-<slug>/<file> inside an app directory


@dataclass(frozen=True, slots=True)
class Layout:
    target: str  # ARGOCD or FLUX
    emit: bool  # the wiring that makes the tool sync the repository is there
    evidence: str  # what it was read from, for a message

    @property
    def options(self) -> str:
        return f"--target {self.target}" + (" --emit-wiring" if self.emit else "")


def _wiring_kinds(files: Mapping[str, bytes]) -> set[tuple[str, str]]:
    kinds = set()
    for path in files:  # only the wiring's files are read
        if not path.startswith(f"{WIRING_DIR}/") or path.count("/") != 1:
            continue
        data = files[path]
        budget = AliasBudget()
        try:
            pieces = split_documents(data.decode("utf-8", errors="replace"))
            documents = [load_trusted_document(piece, budget) for piece in pieces]
        except (yaml.YAMLError, RecursionError):
            continue  # not ours to judge here: the comparison shows the file as it is
        for document in documents:
            if isinstance(document, dict):
                kinds.add((api_group(document), kind_of(document)))
    return kinds


def detect_layout(files: Mapping[str, bytes]) -> Layout | None:
    """The layout of a rendered cluster directory (`files` relative to it); None when it holds no
    app and no wiring (nothing to tell a layout by)."""
    kinds = _wiring_kinds(files)
    if ("kustomize.toolkit.fluxcd.io", "Kustomization") in kinds:
        emit = ("source.toolkit.fluxcd.io", "GitRepository") in kinds
        what = "Flux Kustomizations" + (" and a GitRepository" if emit else "")
        return Layout(FLUX, emit, f"{WIRING_DIR}/ holds {what}")
    if ("argoproj.io", "ApplicationSet") in kinds:
        return Layout(ARGOCD, True, f"{WIRING_DIR}/ holds an Argo CD ApplicationSet")
    # An app directory depends on a path's directory only: read once per directory (a stage
    # directory shows as `<NN>-<slug>/-` inside its app, as `<NN>-<slug>/<file>` would).
    directories = {path.rpartition("/")[0] for path in files if "/" in path and not path.startswith(".")}
    where = [app_path(f"{directory}/-") for directory in directories]
    if any(_FLUX_STAGE.fullmatch(place.inside) for place in where):
        return Layout(FLUX, False, "its apps have Flux stage directories")
    apps = {place.app for place in where}
    if apps:
        return Layout(ARGOCD, False, f"it has no {WIRING_DIR}/ and no stage directories")
    return None
