"""The module catalog: every ModuleTemplate and ModuleReleaseMeta, from the sources and `--catalog`.

Building it checks what the schemas cannot: a template names one kind of content, a release meta
has either channels or a mandatory version, and no catalog object is given twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.names import source_name_problem
from btp_gitops.generator.core.sources import SourceDocument, problem_at
from btp_gitops.generator.domains.kyma.model import (
    CATALOG_KINDS,
    MODULE_NAME_LABEL,
    MODULE_RELEASE_META,
    MODULE_TEMPLATE,
    ReleaseMeta,
    Template,
)


@dataclass(frozen=True, slots=True)
class Catalog:
    templates: tuple[Template, ...] = ()
    release_metas: tuple[ReleaseMeta, ...] = ()
    # Lifecycle Manager's restricted-modules list: the modules whose release meta's kymaSelector
    # decides which Kymas may use them (--restricted-modules).
    restricted_modules: frozenset[str] = frozenset()

    def templates_of(self, module: str) -> list[Template]:
        """Classic resolution's candidates: the templates whose spec.moduleName is the module, and
        those without a moduleName labelled with it (Lifecycle Manager's match)."""
        return [t for t in self.templates if t.belongs_to(module)]

    def release_metas_named(self, module: str) -> list[ReleaseMeta]:
        return [meta for meta in self.release_metas if meta.name == module]

    def template(self, namespace: str, name: str) -> Template | None:
        return next((t for t in self.templates if (t.namespace, t.name) == (namespace, name)), None)

    def named_or_by_fqdn(self, reference: str) -> list[Template]:
        """Templates a module entry could mean in Lifecycle Manager's deprecated reference styles."""
        return [t for t in self.templates if reference in {t.name, t.qualified_name, t.fqdn}]

    def module_names(self) -> frozenset[str]:
        """The modules a spec.modules entry may name, the candidates of a "did you mean": those of
        the templates found by spec.moduleName or the module-name label, and of the release metas,
        mandatory ones aside (no entry may name them)."""
        by_templates = {t.module_name or t.module_label or "" for t in self.templates if not t.mandatory}
        by_metas = {meta.name for meta in self.release_metas if meta.mandatory_version is None}
        return frozenset(name for name in by_templates | by_metas if name)

    def mandatory_templates(self) -> list[Template]:
        return [t for t in self.templates if t.mandatory]

    def mandatory_release_metas(self) -> list[ReleaseMeta]:
        return [meta for meta in self.release_metas if meta.mandatory_version is not None]


def foreign_documents(documents: Iterable[SourceDocument]) -> list[Problem]:
    """A `--catalog` directory holds catalog objects only: anything else is a mistake to report."""
    return [
        problem_at(d, "kind", "a --catalog directory holds only ModuleTemplates and ModuleReleaseMetas")
        for d in documents
        if (d.api_version, d.kind) not in CATALOG_KINDS
    ]


def _template_problems(template: Template) -> list[Problem]:
    spec = template.source.body.get("spec") or {}
    problems: list[Problem | None] = []
    if "rawManifest" in spec and "chart" in spec:
        problems.append(
            problem_at(template.source, "spec.chart", "rawManifest and chart are mutually exclusive")
        )
    # A module's name becomes its app directory (kyma-<module>), however the module is found.
    if template.module_label is not None:
        label_field = f"metadata.labels.{MODULE_NAME_LABEL}"
        problems.append(source_name_problem(template.source, label_field, template.module_label))
    if template.module_name:
        problems.append(source_name_problem(template.source, "spec.moduleName", template.module_name))
    return [problem for problem in problems if problem is not None]


def _release_meta_problems(meta: ReleaseMeta) -> list[Problem]:
    spec = meta.source.body.get("spec") or {}
    problems = []
    if ("mandatory" in spec) == ("channels" in spec):
        problems.append(
            problem_at(meta.source, "spec", "exactly one of 'mandatory' or 'channels' must be specified")
        )
    if meta.module_name != meta.name:
        problems.append(
            problem_at(
                meta.source,
                "spec.moduleName",
                f"must equal metadata.name ({meta.name!r}): a module's release meta is found by its name",
            )
        )
    return problems


def _duplicates(sources: Iterable[SourceDocument]) -> list[Problem]:
    seen: dict[tuple[str, str], list[SourceDocument]] = defaultdict(list)
    for source in sources:
        seen[(source.kind, source.ref)].append(source)
    problems = []
    for (_, _), found in sorted(seen.items()):
        for duplicate in found[1:]:
            first = found[0]
            problems.append(
                problem_at(duplicate, None, f"given twice: also in {first.file}: document {first.document}")
            )
    return problems


def build_catalog(
    documents: Iterable[SourceDocument], restricted_modules: Iterable[str] = ()
) -> tuple[Catalog, list[Problem]]:
    """The catalog of every ModuleTemplate and ModuleReleaseMeta among `documents`, and its problems;
    `restricted_modules` is Lifecycle Manager's restricted-modules list."""
    sources = [d for d in documents if (d.api_version, d.kind) in CATALOG_KINDS]
    templates = tuple(Template.from_source(d) for d in sources if (d.api_version, d.kind) == MODULE_TEMPLATE)
    metas = tuple(
        ReleaseMeta.from_source(d) for d in sources if (d.api_version, d.kind) == MODULE_RELEASE_META
    )
    problems = [
        *_duplicates(sources),
        *(p for t in templates for p in _template_problems(t)),
        *(p for m in metas for p in _release_meta_problems(m)),
    ]
    return Catalog(templates, metas, frozenset(restricted_modules)), problems
