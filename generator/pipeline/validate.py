"""`btp-gitops validate`: offline schema validation of a rendered repo, a stream or any manifests.

read manifests -> collect CRDs (theirs, --crds, ours, the shipped third-party ones) -> load
Kubernetes schemas -> validate

`render --validate` runs the same checks on the rendered files before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.io.kube_schemas import (
    KUSTOMIZATION_FILES,
    BundledKubernetesSchemas,
    bundled_crd_paths,
    read_crds,
    read_manifests,
    resolve_kubernetes_version,
    shipped_third_party_crds,
)
from btp_gitops.generator.io.sources import display_path
from btp_gitops.generator.manifests.validation import (
    ManifestDocument,
    ManifestSchemas,
    ValidationReport,
    crds_among,
    parse_manifests,
    validate_manifests,
)


@dataclass(frozen=True, slots=True)
class ValidateOptions:
    kubernetes_version: str | None = None  # None: the newest bundled
    crd_paths: tuple[Path, ...] = ()
    ignore_missing_schemas: bool = False


def load_manifest_schemas(
    options: ValidateOptions, documents: Iterable[ManifestDocument]
) -> tuple[ManifestSchemas, list[Problem]]:
    """The schemas for `documents`, and the problems of CRD files that could not be read.

    CRDs among the documents come first: they are what the cluster gets with the objects. Then
    the ones the user points at, then the ones btp-gitops itself installs, then the schemas of the
    third-party kinds btp-gitops emits that ship with it (cert-manager, Istio, Flux, ...): the first
    CRD of a kind wins, so `--crds` overrides a shipped schema.
    """
    builtin = BundledKubernetesSchemas(resolve_kubernetes_version(options.kubernetes_version))
    given, given_problems = read_crds(options.crd_paths)
    ours, our_problems = read_crds(bundled_crd_paths())
    crds: list[Mapping[str, Any]] = [*crds_among(documents), *given, *ours, *shipped_third_party_crds()]
    return ManifestSchemas(builtin, crds), [*given_problems, *our_problems]


def validate_documents(
    documents: list[ManifestDocument], options: ValidateOptions, read_problems: Sequence[Problem] = ()
) -> ValidationReport:
    schemas, crd_problems = load_manifest_schemas(options, documents)
    report = validate_manifests(documents, schemas, ignore_missing_schemas=options.ignore_missing_schemas)
    # A stable sort keeps each document's problems in field order while grouping by file.
    report.problems = sorted(
        [*read_problems, *crd_problems, *report.problems], key=lambda p: (p.file, p.document or 0)
    )
    return report


def validate_paths(
    paths: Sequence[str], options: ValidateOptions, stdin: TextIO | None = None
) -> ValidationReport:
    """Validate every manifest under `paths` (files, directories, `-` for stdin)."""
    documents, read_problems = read_manifests(paths, stdin)
    return validate_documents(documents, options, read_problems)


def validate_rendered_files(
    root: Path, files: Mapping[str, str], options: ValidateOptions
) -> ValidationReport:
    """Validate a rendered tree before it is written, naming files where they are going to be."""
    documents: list[ManifestDocument] = []
    problems: list[Problem] = []
    for path, text in sorted(files.items()):
        if Path(path).name in KUSTOMIZATION_FILES:
            continue
        parsed, syntax_problems = parse_manifests(text, display_path(root / path))
        documents.extend(parsed)
        problems.extend(syntax_problems)
    return validate_documents(documents, options, problems)
