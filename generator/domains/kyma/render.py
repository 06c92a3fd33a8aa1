"""Kyma modules: a Kyma CR and the module catalog -> one app per module, and why.

Lifecycle Manager (https://github.com/kyma-project/lifecycle-manager/tree/main/docs) watched each Kyma
CR, resolved its modules
against the catalog of ModuleTemplates and ModuleReleaseMetas and installed each module through
a Manifest. Rendering for Git does the same once per render, for the one Kyma of the cluster:

1. Read the record of the previous render of this cluster (domains.kyma.record).
2. A Kyma labelled `operator.kyma-project.io/skip-reconciliation: "true"` keeps that render as
   it is: every app, and the record.
3. Resolve every mandatory module and every `spec.modules` entry (domains.kyma.resolution). A
   module that cannot be resolved is that module's problem only: it is reported with Lifecycle
   Manager's state and message, keeps its previously rendered app as it was, and the plan lists
   its problem (the render is written, and its exit code says so).
4. Decide per module: `managed: false` renders nothing (Unmanaged); a version below the recorded
   one keeps the previous app (no downgrade, Warning); an upgrade to a template that requires
   downtime keeps the previous app until a maintenance window is open (domains.kyma.maintenance);
   a recorded module no longer asked for is still looked up (kept while that fails) and removed,
   its default CR before its resources; but while an entry of spec.modules cannot be resolved
   (a misspelt name?), starting a removal needs an explicit allowance, else nothing is rendered
   (domains.kyma.removal_guard).
5. Render the rest (domains.kyma.content), record the versions, report in the shape of the Kyma
   CR's status (domains.kyma.status).

Planning (1-4) is separate from rendering (5) so the pipeline has the report and the record
without rendering a chart. Steps 1 to 4 are in domains.kyma.planning, loaded once a Kyma is
found: every render asks this module for the cluster's Kyma, most clusters have none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.core.errors import InvalidSpec, Problem, raise_if_problems
from btp_gitops.generator.core.report import AppRender, Note
from btp_gitops.generator.core.sources import SourceDocument, SourceSet, problem_at
from btp_gitops.generator.domains.kyma.catalog import Catalog, build_catalog, foreign_documents
from btp_gitops.generator.domains.kyma.maintenance import DEFAULT_MIN_WINDOW, PolicyText
from btp_gitops.generator.domains.kyma.model import CATALOG_KINDS, KYMA, Kyma

if TYPE_CHECKING:
    from btp_gitops.generator.domains.kyma.content import ModuleRender, ReadManifests
    from btp_gitops.generator.domains.kyma.status import KymaReport, ModuleStatus, ResourceRef


@dataclass(frozen=True, slots=True)
class KymaContext:
    """What the Kyma domain needs beyond the sources; the pipeline reads it."""

    catalog: tuple[SourceDocument, ...] = ()  # the documents of the --catalog directories
    maintenance_policy: PolicyText | None = None
    at: datetime | None = None  # the time maintenance windows are checked at
    previous: Mapping[str, str] = field(default_factory=dict)  # previous render: path in cluster dir -> text
    where: str = "the previous render"  # how errors name the previous render's cluster directory
    min_window: timedelta = DEFAULT_MIN_WINDOW  # a running window with less left is not entered
    restricted_modules: frozenset[str] = frozenset()  # Lifecycle Manager's restricted-modules list
    allow_module_removal: bool = False  # --allow-module-removal: a removal beside an unresolvable entry


@dataclass(frozen=True, slots=True)
class ModulePlan:
    """What happens to one module: rendered, kept from the previous render, or nothing."""

    status: ModuleStatus
    render: ModuleRender | None = None
    keep: str | None = None  # the app to keep as the previous render wrote it
    without: ResourceRef | None = None  # keep the app but not this object (a module being removed)
    problem: Problem | None = None  # the module could not be resolved: why, and where


@dataclass(frozen=True, slots=True)
class KymaPlan:
    modules: tuple[ModulePlan, ...] = ()
    reports: tuple[KymaReport, ...] = ()
    record_files: Mapping[str, str] = field(default_factory=dict)  # path in cluster dir -> text
    previous: Mapping[str, str] = field(default_factory=dict)
    where: str = ""
    notes: tuple[Note, ...] = ()  # what the render should say besides the module statuses

    @property
    def problems(self) -> list[Problem]:
        """The modules that could not be resolved (their previous apps are kept): a render with
        these is written, and says so in its exit code."""
        return [module.problem for module in self.modules if module.problem is not None]

    @property
    def untouched_apps(self) -> frozenset[str]:
        """Apps kept exactly as the previous render wrote them: their files are carried over as they are."""
        return frozenset(m.keep for m in self.modules if m.keep is not None and m.without is None)


def _the_kyma(sources: SourceSet) -> tuple[Kyma | None, list[Problem]]:
    """The cluster's Kyma: Lifecycle Manager installs one Kyma per runtime cluster."""
    kymas = sources.of_kind(*KYMA)
    problems = [
        problem_at(
            other,
            None,
            f"a cluster has one Kyma, and {kymas[0].ref} ({kymas[0].file}: document {kymas[0].document}) "
            "comes first: render each Kyma into its own cluster",
        )
        for other in kymas[1:]
    ]
    return (Kyma.from_source(kymas[0]) if kymas else None), problems


def _catalog(sources: SourceSet, context: KymaContext) -> tuple[Catalog, list[Problem]]:
    in_sources = []
    if not sources.kinds().isdisjoint(CATALOG_KINDS):  # in source order (a pass only when there are some)
        in_sources = [d for d in sources.documents if (d.api_version, d.kind) in CATALOG_KINDS]
    catalog, problems = build_catalog([*in_sources, *context.catalog], context.restricted_modules)
    return catalog, [*foreign_documents(context.catalog), *problems]


def plan_kyma_modules(sources: SourceSet, context: KymaContext) -> KymaPlan:
    """Resolve the cluster's Kyma and decide, module by module, what to render. No chart is rendered."""
    kyma, problems = _the_kyma(sources)
    catalog, catalog_problems = _catalog(sources, context)
    raise_if_problems(InvalidSpec, "invalid Kyma or module catalog", [*problems, *catalog_problems])
    if kyma is None:
        return KymaPlan()
    # Resolution, maintenance windows and the removal guard (domains.kyma.planning) are loaded for
    # a cluster with a Kyma: every render plans the Kyma domain, most clusters have none.
    from btp_gitops.generator.domains.kyma.planning import plan_modules  # noqa: PLC0415

    return plan_modules(kyma, catalog, context)


def render_kyma_modules(plan: KymaPlan, engine: ChartRenderer, read: ReadManifests) -> list[AppRender]:
    """The apps of a plan: rendered modules, and modules kept as the previous render wrote them."""
    if not plan.modules:
        return []
    # A module's content (chart rendering, its labels and order) is loaded when there is a module.
    from btp_gitops.generator.domains.kyma.content import kept_app, render_module  # noqa: PLC0415

    apps = []
    for module in plan.modules:
        if module.render is not None:
            apps.append(render_module(module.render, engine, read))
        elif module.keep is not None:
            apps.append(kept_app(module.keep, plan.previous, plan.where, without=module.without))
    return apps
