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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import yaml

from btp_gitops.generator.core.layout import AppPath, app_path
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


def _wiring_kinds(files: Mapping[str, bytes], paths: list[str]) -> set[tuple[str, str]]:
    kinds = set()
    for path in paths:  # only the wiring's files are read
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
    paths = list(files)
    joined = "\0" + "\0".join(paths) + "\0"
    whole = joined.count("\0") == len(paths) + 1  # no path holds a NUL (none can, as a file's)
    wiring = [joined[at.start() + 1 : joined.index("\0", at.start() + 1)] for at in _WIRING.finditer(joined)]
    kinds = _wiring_kinds(files, wiring if whole else paths)
    if ("kustomize.toolkit.fluxcd.io", "Kustomization") in kinds:
        emit = ("source.toolkit.fluxcd.io", "GitRepository") in kinds
        what = "Flux Kustomizations" + (" and a GitRepository" if emit else "")
        return Layout(FLUX, emit, f"{WIRING_DIR}/ holds {what}")
    if ("argoproj.io", "ApplicationSet") in kinds:
        return Layout(ARGOCD, True, f"{WIRING_DIR}/ holds an Argo CD ApplicationSet")
    # A stage directory is a part `<NN>-<slug>` after a slash with a part after it: only the
    # paths holding one (found by a search in C over the 80,000 paths) are read path by path.
    staged = {joined.rfind("\0", 0, at.start()) for at in _STAGE_PART.finditer(joined)}
    candidates = (
        [joined[start + 1 : joined.index("\0", start + 1)] for start in sorted(staged)] if whole else paths
    )
    if any(_FLUX_STAGE.fullmatch(place.inside) for place in _app_places(candidates)):
        return Layout(FLUX, False, "its apps have Flux stage directories")
    if any(place.app for place in _app_places(paths)):  # the first app found tells
        return Layout(ARGOCD, False, f"it has no {WIRING_DIR}/ and no stage directories")
    return None


_WIRING = re.compile(f"\0(?={re.escape(WIRING_DIR)}/)")
_STAGE_PART = re.compile("/[0-9]{2}-[^/\0]+/")


def _app_places(paths: Iterable[str]) -> Iterator[AppPath]:
    """Where the directory of each path in an app directory lies (`<directory>/-`), once per
    directory. An app directory depends on a path's directory only (a stage directory shows as
    `<NN>-<slug>/-` inside its app, as `<NN>-<slug>/<file>` would)."""
    seen: set[str] = set()
    for path in paths:
        if "/" not in path or path.startswith("."):
            continue
        directory = path.rpartition("/")[0]
        if directory not in seen:
            seen.add(directory)
            yield app_path(f"{directory}/-")
