"""What `btp-gitops validate` reads: bundled Kubernetes schemas, CRD files and the manifests.

The Kubernetes schemas are the strict JSON Schemas that the `kubernetes-validate` package ships
(`kubernetes-json-schema/v<X.Y>.0-local-strict/`: one file per kind plus a shared
`_definitions.json`). We read those files ourselves instead of calling its `validate()`, which
reloads the 1.8 MB definitions for every object; manifests.validation builds one validator
per kind from them.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TextIO

import yaml

from btp_gitops.generator.core.errors import InstallationBroken, Problem, UsageError
from btp_gitops.generator.core.source_contents import KUSTOMIZATION_FILES as _KUSTOMIZATION_FILES
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import load_trusted_document, yaml_problem_location
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.crd_files import default_crd_dir
from btp_gitops.generator.io.input_files import MAX_STREAM_BYTES, UnreadableInput, read_input_text
from btp_gitops.generator.io.sources import display_path, source_files
from btp_gitops.generator.manifests.crd_schemas import crd_from_shipped, is_crd
from btp_gitops.generator.manifests.validation import (
    STDIN,
    ManifestDocument,
    documents_with_lines,
    parse_manifests,
)

_SCHEMA_PACKAGE = "kubernetes_validate"
_SCHEMA_ROOT = "kubernetes-json-schema"
_STRICT_DIRECTORY = re.compile(r"^v(\d+)\.(\d+)\.0-local-strict$")
_REQUESTED_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?$")
# Kinds and apiVersions become file names below: anything else cannot name a schema file.
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_API_VERSION = re.compile(r"^(?:[a-z0-9][a-z0-9.-]*/)?[a-z0-9]+$")

KUSTOMIZATION_FILES = _KUSTOMIZATION_FILES  # kustomize's names (core.source_contents has the one list)


def _schema_root() -> Traversable:
    return resources.files(_SCHEMA_PACKAGE).joinpath(_SCHEMA_ROOT)


@functools.cache
def supported_kubernetes_versions() -> tuple[str, ...]:
    """The Kubernetes minor versions whose strict schemas are bundled, oldest first ("1.25", ...)."""
    found = []
    for entry in _schema_root().iterdir():
        match = _STRICT_DIRECTORY.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match[1]), int(match[2])))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


def resolve_kubernetes_version(requested: str | None) -> str:
    """The bundled minor version for `requested` ("1.36", "v1.36.2"); the newest when None."""
    supported = supported_kubernetes_versions()
    if requested is None:
        return supported[-1]
    match = _REQUESTED_VERSION.match(requested.strip())
    version = f"{int(match[1])}.{int(match[2])}" if match else requested
    if version not in supported:
        raise UsageError(f"unsupported --kubernetes-version {requested!r}; supported: {', '.join(supported)}")
    return version


def _file_stem(api_version: str) -> str:
    """kubernetes-validate's file naming: `networking.k8s.io/v1` -> `networking-v1`, `v1` -> `v1`."""
    group, _, version = api_version.rpartition("/")
    return f"{group.split('.')[0]}-{version}" if group else version


class BundledKubernetesSchemas:
    """manifests.validation.BuiltinSchemas over the schema files of one Kubernetes version."""

    def __init__(self, kubernetes_version: str) -> None:
        self._version = kubernetes_version
        self._directory = _schema_root().joinpath(f"v{kubernetes_version}.0-local-strict")
        self._kind_schemas: dict[tuple[str, str], Mapping[str, Any] | None] = {}

    @property
    def kubernetes_version(self) -> str:
        return self._version

    @functools.cached_property
    def _definitions(self) -> Mapping[str, Any]:
        return self._read("_definitions.json") or {}

    def definitions(self) -> Mapping[str, Any]:
        return self._definitions

    def kind_schema(self, api_version: str, kind: str) -> Mapping[str, Any] | None:
        key = (api_version, kind)
        if key not in self._kind_schemas:
            self._kind_schemas[key] = self._find_kind_schema(api_version, kind)
        return self._kind_schemas[key]

    def _find_kind_schema(self, api_version: str, kind: str) -> Mapping[str, Any] | None:
        if not (_KIND.match(kind) and _API_VERSION.match(api_version)):
            return None
        schema = self._read(f"{kind.lower()}-{_file_stem(api_version)}.json")
        # The file name keeps only the first part of the group (networking.k8s.io and
        # networking.istio.io both give "networking"): the schema must name the exact group.
        if schema is None or (api_version, kind) not in set(_served_as(schema)):
            return None
        return schema

    def api_versions_of(self, kind: str) -> list[str]:
        prefix = f"{kind.lower()}-"
        found: set[str] = set()
        for name in self._file_names:
            if name.startswith(prefix):
                schema = self._read(name) or {}
                found.update(api_version for api_version, known in _served_as(schema) if known == kind)
        return sorted(found)

    @functools.cached_property
    def _file_names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self._directory.iterdir())

    def _read(self, name: str) -> Mapping[str, Any] | None:
        entry = self._directory.joinpath(name)
        if not entry.is_file():
            return None
        loaded: Mapping[str, Any] = json.loads(entry.read_text(encoding="utf-8"))
        return loaded


def _served_as(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for gvk in schema.get("x-kubernetes-group-version-kind") or []:
        group, version = gvk.get("group", ""), gvk.get("version", "")
        yield (f"{group}/{version}" if group else version), gvk.get("kind", "")


# --- manifests and CRD files --------------------------------------------------------------------


def manifest_files(paths: Iterable[str]) -> Iterator[str | Path]:
    """Files named, and YAML files under directories named, in a stable order; `-` is stdin.

    Under directories, dot-directories (.git) and kustomize's own files are skipped: they are
    not objects for the cluster.
    """
    for path in paths:
        if path == "-":
            yield STDIN
            continue
        as_path = Path(path)
        if as_path.is_dir():
            yield from (found for found in source_files([as_path]) if found.name not in KUSTOMIZATION_FILES)
        else:
            yield as_path


def _read_text(path: str | Path, stdin: TextIO, problems: list[Problem]) -> tuple[str, str | None]:
    """(the name shown for `path`, its text); None and a problem when it cannot be read."""
    shown = STDIN if isinstance(path, str) else display_path(path)
    try:
        if isinstance(path, str):
            text = stdin.read(MAX_STREAM_BYTES + 1)
            if len(text) > MAX_STREAM_BYTES:
                raise UnreadableInput(f"the stream is too large (the limit is {MAX_STREAM_BYTES >> 20} MiB)")
            return shown, text
        return shown, read_input_text(path)
    except UnicodeDecodeError as error:
        problems.append(Problem(file=shown, message=f"not UTF-8 text (byte {error.start})"))
    except UnreadableInput as error:
        problems.append(Problem(file=shown, message=error.reason))
    except OSError as error:
        problems.append(Problem(file=shown, message=f"cannot read: {error.strerror or error}"))
    return shown, None


def read_manifests(
    paths: Iterable[str], stdin: TextIO | None = None
) -> tuple[list[ManifestDocument], list[Problem]]:
    """Every document under `paths` (strictly parsed), and the problems of what could not be read."""
    documents: list[ManifestDocument] = []
    problems: list[Problem] = []
    for path in manifest_files(paths):
        shown, text = _read_text(path, stdin or sys.stdin, problems)
        if text is not None:
            parsed, syntax_problems = parse_manifests(text, shown)
            documents.extend(parsed)
            problems.extend(syntax_problems)
    return documents, problems


def read_crds(paths: Iterable[Path]) -> tuple[list[Mapping[str, Any]], list[Problem]]:
    """The CustomResourceDefinitions in files and directories; other documents are ignored.

    CRD files are machine-written and some are megabytes (Prometheus, Argo CD): they are parsed
    with the fast loader, without the duplicate-key check of manifests.
    """
    crds: list[Mapping[str, Any]] = []
    problems: list[Problem] = []
    for path in manifest_files(str(p) for p in paths):
        shown, text = _read_text(path, sys.stdin, problems)
        budget = AliasBudget()  # the alias limit holds for the whole file
        for index, (line, piece) in enumerate(documents_with_lines(text or ""), start=1):
            try:
                body = load_trusted_document(piece, budget)
            except RecursionError:
                problems.append(
                    Problem(file=shown, document=index, message="invalid YAML: nested too deeply")
                )
                continue
            except yaml.YAMLError as error:
                location = yaml_problem_location(error, line_offset=line)
                problems.append(Problem(file=shown, document=index, message=f"invalid YAML: {location}"))
                continue
            if is_crd(body):
                crds.append(body)
    return crds, problems


def bundled_crd_paths() -> list[Path]:
    """The CRDs btp-gitops installs (charts/btp-gitops/crds/ of this checkout), when present."""
    directory = default_crd_dir()
    return [directory] if directory.is_dir() else []


@functools.cache
def shipped_third_party_crds() -> tuple[Mapping[str, Any], ...]:
    """The CRDs of the third-party kinds btp-gitops emits, from the schemas shipped with it.

    `data/crd-schemas/*.json` (scripts/generate-crd-schemas.py) hold their served versions'
    schemas; each file stands for one CRD. A missing or unreadable file is a broken install.
    """
    directory = bundled.crd_schema_dir()
    if not directory.is_dir():
        raise InstallationBroken(f"the shipped CRD schemas are missing ({directory}): reinstall btp-gitops")
    crds = []
    for path in sorted(directory.glob("*.json")):
        try:
            crds.append(crd_from_shipped(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as error:  # JSONDecodeError and ShippedSchemaError are ValueErrors
            raise InstallationBroken(
                f"{path}: broken shipped CRD schema ({error}): reinstall btp-gitops"
            ) from error
    return tuple(crds)
