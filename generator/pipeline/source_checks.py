"""The first checks of a render's sources, collected rather than fatal (core.collected_problems).

Every freshly read document is checked against its schema, then the names of those that passed
(names become paths). A document that fails either is left out of the sources the domains read,
and so are the documents that cannot be checked without it (each domain's `unchecked_dependents`);
every other document goes on to the domains' rules, so one run reports every problem.
"""

from __future__ import annotations

from collections.abc import Sequence

from btp_gitops.generator.core.collected_problems import CollectedProblems
from btp_gitops.generator.core.errors import InvalidSpec, SchemaViolation
from btp_gitops.generator.core.names import metadata_name_problems
from btp_gitops.generator.core.progress import Progress
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.core.validation import SchemaRegistry, source_problems
from btp_gitops.generator.domains import btp_operator, cap


def _key(document: SourceDocument) -> tuple[str, int]:
    return (document.file, document.document)


def checked_sources(
    documents: Sequence[SourceDocument],
    fresh: Sequence[SourceDocument],
    catalog: Sequence[SourceDocument],
    *,
    schemas: SchemaRegistry,
    progress: Progress,
    checks: CollectedProblems,
) -> tuple[SourceSet, list[SourceDocument]]:
    """The sources and Kyma catalog documents the domains read, their problems kept in `checks`.

    `fresh` are the documents of `documents` read from their files in this run (the others come
    from the render cache and were checked when they were read)."""
    read = [*fresh, *catalog]
    checks.add(SchemaViolation, "invalid source documents", source_problems(read, schemas, progress))
    failed = checks.failed_documents()
    named = [document for document in read if _key(document) not in failed]
    checks.add(InvalidSpec, "source names that cannot become paths", metadata_name_problems(named))
    failed = checks.failed_documents()
    if not failed:
        return SourceSet.of(documents), list(catalog)
    kept = SourceSet.of(still_checked(documents, failed))
    return kept, [document for document in catalog if _key(document) not in failed]


def still_checked(documents: Sequence[SourceDocument], failed: set[tuple[str, int]]) -> list[SourceDocument]:
    """`documents` without those that `failed` a check and those that cannot be checked without them."""
    if not failed:
        return list(documents)
    skipped = failed | cap.unchecked_dependents(documents, failed)
    skipped |= btp_operator.unchecked_dependents(documents, failed)
    return [document for document in documents if _key(document) not in skipped]
