"""What a source directory may hold besides sources, and which of it a render passes over.

A GitOps repository keeps more beside the custom resources btp-gitops reads: kustomizations,
Helm charts and values files, plain Kubernetes objects, Argo CD Applications, Flux
Kustomizations, READMEs, and, when `--out` lies under a source path, the output of a render. A
render passes over what it recognises as not being its sources, and says so with a note
(`Skipped`), rather than failing on a file it was never meant to read:

- a kustomization (`kustomization.yaml`, `kustomization.yml`), by its name, as kustomize finds it;
- a Helm values file (`values*.yaml`) none of whose documents is a Kubernetes object;
- a directory holding a `Chart.yaml` (a Helm chart, read only through `spec.chart.path`), or a
  regular `.btp-gitops-files` (a cluster directory a render wrote, with everything below it);
- a document whose apiVersion and kind are not a kind btp-gitops reads, unless it looks meant for
  btp-gitops (`meant_for_us`): those stay, and validation refuses them with a suggestion.

Files whose names do not end in `.yaml` or `.yml` are not read at all, and need no note. Pure: the
I/O layer (io.sources) asks here about each name and document it meets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.generator.core.redact import printable
from btp_gitops.generator.core.suggestions import nearest

__all__ = [
    "CHART_FILE",
    "KUSTOMIZATION_FILES",
    "MANIFEST_FILE",
    "VALUES_REASON",
    "KnownKinds",
    "Skipped",
    "SourceSorting",
    "foreign_reason",
    "object_ref",
    "skipped_directory",
    "skipped_file",
    "values_file",
]

MANIFEST_FILE = ".btp-gitops-files"  # core.ownership: what a render wrote into a cluster directory
KUSTOMIZATION_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})
CHART_FILE = "Chart.yaml"
_YAML_SUFFIXES = (".yaml", ".yml")
VALUES_REASON = "Helm values (no document is a Kubernetes object), not a btp-gitops source"

# API groups btp-gitops shares with kinds it does not read: the custom resources of Kyma modules
# (Serverless, Keda, Telemetry, ...) are `operator.kyma-project.io` too, and a repository may keep
# them beside the Kymas. Any other unknown kind of a group btp-gitops reads (`sme.sap.com`,
# `btp-gitops.io`) was meant for it and is refused.
_SHARED_GROUPS = frozenset({"operator.kyma-project.io"})

# Kinds a render refuses in the sources although they are not btp-gitops's: a Secret (plain or
# SOPS-encrypted) does not belong in a source directory, and a List may hold btp-gitops's kinds.
_REFUSED = frozenset({("v1", "Secret"), ("v1", "List")})


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file, directory or document under the source paths a render passed over, and why."""

    path: str  # as shown to the user
    reason: str
    document: int | None = None  # 1-based, for one document of a file
    object_ref: str | None = None  # "Kind namespace/name", for a document

    def render(self) -> str:
        where = self.path
        if self.document is not None:
            where += f": document {self.document}"
            if self.object_ref:
                where += f" ({self.object_ref})"
        return printable(f"skipped {where}: {self.reason}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "document": self.document,
            "object": self.object_ref,
            "reason": self.reason,
        }


def skipped_file(name: str) -> str | None:
    """Why a YAML file of this name is no source whatever it holds, or None."""
    if name in KUSTOMIZATION_FILES:
        return "a kustomization (kustomize's file), not a btp-gitops source"
    return None


def values_file(name: str) -> bool:
    """A name Helm values files go by: such a file is skipped when no document is an object."""
    return name.startswith("values") and name.endswith(_YAML_SUFFIXES)


def skipped_directory(regular_files: Iterable[str]) -> str | None:
    """Why a directory holding these regular files is passed over with everything below it, or None."""
    names = set(regular_files)
    if MANIFEST_FILE in names:
        return f"the output of a render (it holds {MANIFEST_FILE}), not sources"
    if CHART_FILE in names:
        return f"a Helm chart (it holds {CHART_FILE}): charts are read through spec.chart.path"
    return None


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class KnownKinds:
    """The kinds btp-gitops reads (apiVersion, kind), and which unknown ones look meant for it."""

    def __init__(self, kinds: Iterable[tuple[str, str]]) -> None:
        self.kinds = frozenset(kinds)
        self._names = frozenset(kind for _, kind in self.kinds)
        self._groups = frozenset(_group(api_version) for api_version, _ in self.kinds)

    def meant_for_us(self, api_version: str, kind: str) -> bool:
        """Whether a document of this apiVersion and kind is one btp-gitops should read or refuse.

        Yes for a kind it reads; for one of its kind names under another apiVersion, or in other
        letter case (`apiVersion: v1`, `kind: captenant`); for any kind of a group only it reads;
        and for a kind close to one of its own (`CapTenant`, `Kymma`) in one of its groups or a
        group close to one (`sme.sap.co`). Everything else (a ConfigMap, an Argo CD Application,
        a Flux Kustomization, a Kyma module's own custom resource) is not: the render skips it.
        """
        if (api_version, kind) in self.kinds or (api_version, kind) in _REFUSED:
            return True
        if kind.casefold() in {name.casefold() for name in self._names}:
            return True
        group = _group(api_version)
        if group in self._groups:
            return group not in _SHARED_GROUPS or nearest(kind, self._names) is not None
        if group and nearest(group, self._groups) is not None:
            return kind in self._names or nearest(kind, self._names) is not None
        return False


def foreign_reason(api_version: str, kind: str) -> str:
    """Why a document `KnownKinds.meant_for_us` says no to is skipped."""
    return f"{api_version} {kind} is not a kind btp-gitops reads"


def object_ref(body: dict[str, Any]) -> str:
    """`Kind namespace/name` of a document that may not have an object's shape (it is skipped,
    not checked), with whatever of it is there."""
    metadata = body.get("metadata")
    fields = metadata if isinstance(metadata, dict) else {}
    name, namespace = (fields.get(key) for key in ("name", "namespace"))
    name = name if isinstance(name, str) else ""
    namespace = namespace if isinstance(namespace, str) else ""
    kind = str(body.get("kind", ""))
    named = f"{namespace}/{name}" if namespace and name else name
    return f"{kind} {named}" if named else kind


@dataclass(slots=True)
class SourceSorting:
    """How a render tells its sources from the rest of a source directory, and what it passed over."""

    known: KnownKinds
    skipped: list[Skipped] = field(default_factory=list)

    def sorted_skipped(self) -> list[Skipped]:
        """What was passed over, in the order of the paths (part by part), then the documents."""
        return sorted(self.skipped, key=lambda s: (s.path.replace("/", "\0"), s.document or 0))
