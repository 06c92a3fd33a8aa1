"""Kyma modules: a Kyma CR and the module catalog -> one app per module, and why.

Lifecycle Manager (https://github.com/kyma-project/lifecycle-manager/tree/main/docs) watched each Kyma
CR, resolved its modules
against the catalog of ModuleTemplates and ModuleReleaseMetas and installed each module through
a Manifest. Rendering for Git does the same once per render, for the one Kyma of the cluster:

1. Read the record of the previous render of this cluster (domains.kyma.record).
2. A Kyma labelled `operator.kyma-project.io/skip-reconciliation: "true"` keeps that render as
   it is: every app, and the record.
3. Resolve every mandatory module and every `spec.modules` entry (domains.kyma.resolution); any
   failure stops the render, naming the file, the entry and the candidates.
4. Decide per module: `managed: false` renders nothing (Unmanaged); a version below the recorded
   one keeps the previous app (no downgrade, Warning); an upgrade to a template that requires
   downtime keeps the previous app until a maintenance window is open (domains.kyma.maintenance).
5. Render the rest (domains.kyma.content), record the versions, report in the shape of the Kyma
   CR's status (domains.kyma.status).

Planning (1-4) is separate from rendering (5) so the pipeline has the report and the record
without rendering a chart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.core.errors import InvalidSpec, Problem, UsageError, raise_if_problems
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.core.sources import SourceDocument, SourceSet, problem_at
from btp_gitops.generator.domains.kyma.catalog import Catalog, build_catalog, foreign_documents
from btp_gitops.generator.domains.kyma.content import (
    ModuleRender,
    ReadManifests,
    app_name,
    kept_app,
    render_module,
)
from btp_gitops.generator.domains.kyma.maintenance import MaintenancePolicy, PolicyText, parse_policy
from btp_gitops.generator.domains.kyma.model import (
    CATALOG_KINDS,
    DEFAULT_CHANNEL,
    KYMA,
    SKIP_RECONCILIATION_LABEL,
    CustomResourcePolicy,
    Kyma,
    ModuleRequest,
    qualified,
)
from btp_gitops.generator.domains.kyma.record import RECORD_FILE, Record, read_record, record_text
from btp_gitops.generator.domains.kyma.resolution import (
    Resolved,
    Unresolved,
    is_lower,
    request_problems,
    resolve_mandatory,
    resolve_module,
)
from btp_gitops.generator.domains.kyma.status import KymaReport, ModuleState, ModuleStatus, TemplateRef


@dataclass(frozen=True, slots=True)
class KymaContext:
    """What the Kyma domain needs beyond the sources; the pipeline reads it."""

    catalog: tuple[SourceDocument, ...] = ()  # the documents of the --catalog directories
    maintenance_policy: PolicyText | None = None
    at: datetime | None = None  # the time maintenance windows are checked at
    previous: Mapping[str, str] = field(default_factory=dict)  # previous render: path in cluster dir -> text
    where: str = "the previous render"  # how errors name the previous render's cluster directory


@dataclass(frozen=True, slots=True)
class ModulePlan:
    """What happens to one module: rendered, kept from the previous render, or nothing."""

    status: ModuleStatus
    render: ModuleRender | None = None
    keep: str | None = None  # the app to keep as the previous render wrote it


@dataclass(frozen=True, slots=True)
class KymaPlan:
    modules: tuple[ModulePlan, ...] = ()
    reports: tuple[KymaReport, ...] = ()
    record_files: Mapping[str, str] = field(default_factory=dict)  # path in cluster dir -> text
    previous: Mapping[str, str] = field(default_factory=dict)
    where: str = ""


@dataclass(frozen=True, slots=True)
class _Decider:
    """The rules that can hold a resolved module at its previous version."""

    kyma: Kyma
    record: Record
    previous: Mapping[str, str]
    policy: MaintenancePolicy | None
    at: datetime | None

    def installed(self, module: str) -> ModuleStatus | None:
        """The module as the previous render left it, if its app is still in the repo."""
        found = self.record.module(module)
        if found is None or not found.app:
            return None
        return found if any(path.startswith(f"{found.app}/") for path in self.previous) else None

    def decide(self, resolved: Resolved, policy: CustomResourcePolicy) -> ModulePlan:
        installed = self.installed(resolved.module)
        status = _resolved_status(resolved)
        if installed and is_lower(resolved.version, installed.version):
            message = (
                f"ignore channel skew: {resolved.version} ({resolved.how}) is lower than the rendered "
                f"version {installed.version}, which is kept (no downgrade)"
            )
            return _keep(installed, ModuleState.WARNING, message)
        if installed and installed.version != resolved.version and self.waits_for_downtime(resolved):
            return self.maintenance(resolved, installed, status, policy)
        return ModulePlan(status, render=ModuleRender(resolved.module, resolved.template, policy))

    def waits_for_downtime(self, resolved: Resolved) -> bool:
        return resolved.template.requires_downtime and not self.kyma.skip_maintenance_windows

    def maintenance(
        self, resolved: Resolved, installed: ModuleStatus, status: ModuleStatus, policy: CustomResourcePolicy
    ) -> ModulePlan:
        """An upgrade that requires downtime: now inside a window (or without a policy), else later."""
        upgrade = f"from {installed.version} to {resolved.version}"
        render = ModuleRender(resolved.module, resolved.template, policy)
        if self.policy is None:
            why = f"requires downtime, upgraded {upgrade} at once (no maintenance policy)"
            return ModulePlan(dataclasses.replace(status, message=f"{status.message}; {why}"), render)
        if self.at is None:
            raise UsageError("maintenance windows need the time to check them at")
        window = self.policy.next_window(self.kyma.labels, self.at)
        if window is not None and window.contains(self.at):
            why = f"requires downtime, upgraded {upgrade} in the maintenance window {window.describe()}"
            return ModulePlan(dataclasses.replace(status, message=f"{status.message}; {why}"), render)
        ahead = f"next window {window.describe()}" if window else "the policy has no window ahead"
        message = f"waiting for the next maintenance window to upgrade {upgrade} ({ahead})"
        return _keep(installed, installed.state, message, maintenance=True)


def _template_ref(resolved: Resolved) -> TemplateRef:
    return TemplateRef(resolved.template.name, resolved.template.namespace)


def _resolved_status(resolved: Resolved) -> ModuleStatus:
    return ModuleStatus(
        name=resolved.module,
        state=ModuleState.READY,
        message=resolved.how,
        fqdn=resolved.fqdn,
        channel=resolved.channel,
        version=resolved.version,
        template=_template_ref(resolved),
        app=app_name(resolved.module),
        mandatory=resolved.mandatory,
    )


def _keep(installed: ModuleStatus, state: ModuleState, message: str, maintenance: bool = False) -> ModulePlan:
    """Keep the app the previous render wrote, reported with a new state and why."""
    status = dataclasses.replace(installed, state=state, message=message, maintenance=maintenance)
    return ModulePlan(status, keep=installed.app)


def _unmanaged(request: ModuleRequest, record: Record) -> ModulePlan:
    before = record.module(request.name)
    message = (
        "managed: false: nothing is rendered; the module's objects stay in the cluster only where the "
        "GitOps tool does not prune what leaves the repo"
    )
    status = ModuleStatus(
        name=request.name,
        state=ModuleState.UNMANAGED,
        message=message,
        fqdn=before.fqdn if before else "",
        channel=before.channel if before else "",
        version=before.version if before else "",  # the version last rendered, for the reader
        template=before.template if before else None,
    )
    return ModulePlan(status)


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
    in_sources = [d for d in sources.documents if (d.api_version, d.kind) in CATALOG_KINDS]
    catalog, problems = build_catalog([*in_sources, *context.catalog])
    return catalog, [*foreign_documents(context.catalog), *problems]


def _report(kyma: Kyma, modules: list[ModulePlan], messages: tuple[str, ...] = ()) -> KymaReport:
    return KymaReport(
        kyma=qualified(kyma.namespace, kyma.name),
        source=f"{kyma.source.file}: document {kyma.source.document}",
        channel=kyma.channel or DEFAULT_CHANNEL,
        modules=tuple(sorted((m.status for m in modules), key=lambda s: s.name)),
        skip_reconciliation=kyma.skips_reconciliation,
        messages=messages,
    )


def _skip_reconciliation(kyma: Kyma, record: Record, context: KymaContext) -> KymaPlan:
    recorded = sorted(record.modules.values(), key=lambda s: s.name)
    modules = [ModulePlan(status, keep=status.app or None) for status in recorded]
    message = f'labelled {SKIP_RECONCILIATION_LABEL}: "true": the previous render is kept as it is'
    kept_record = {RECORD_FILE: context.previous[RECORD_FILE]} if RECORD_FILE in context.previous else {}
    report = _report(kyma, modules, (message,))
    return KymaPlan(tuple(modules), (report,), kept_record, context.previous, context.where)


def _module_plans(kyma: Kyma, catalog: Catalog, decider: _Decider) -> tuple[list[ModulePlan], list[Problem]]:
    mandatory, problems = resolve_mandatory(catalog)
    plans = [decider.decide(resolved, CustomResourcePolicy.CREATE_AND_DELETE) for resolved in mandatory]
    for request in kyma.modules:
        if not request.managed:
            plans.append(_unmanaged(request, decider.record))
            continue
        resolution = resolve_module(catalog, kyma, request)
        if isinstance(resolution, Unresolved):
            problems.append(problem_at(kyma.source, resolution.field_path, resolution.message))
        else:
            plans.append(decider.decide(resolution, request.policy))
    return plans, problems


def plan_kyma_modules(sources: SourceSet, context: KymaContext) -> KymaPlan:
    """Resolve the cluster's Kyma and decide, module by module, what to render. No chart is rendered."""
    kyma, problems = _the_kyma(sources)
    catalog, catalog_problems = _catalog(sources, context)
    raise_if_problems(InvalidSpec, "invalid Kyma or module catalog", [*problems, *catalog_problems])
    if kyma is None:
        return KymaPlan()
    record = read_record(context.previous, context.where)
    if kyma.skips_reconciliation:
        return _skip_reconciliation(kyma, record, context)
    raise_if_problems(InvalidSpec, f"invalid Kyma {kyma.ref}", request_problems(kyma, kyma.modules))
    policy = parse_policy(context.maintenance_policy) if context.maintenance_policy else None
    decider = _Decider(kyma, record, context.previous, policy, context.at)
    plans, problems = _module_plans(kyma, catalog, decider)
    raise_if_problems(InvalidSpec, f"cannot resolve the modules of {kyma.ref}", problems)
    report = _report(kyma, plans)
    return KymaPlan(
        tuple(plans), (report,), {RECORD_FILE: record_text(report)}, context.previous, context.where
    )


def render_kyma_modules(plan: KymaPlan, engine: ChartRenderer, read: ReadManifests) -> list[AppRender]:
    """The apps of a plan: rendered modules, and modules kept as the previous render wrote them."""
    apps = []
    for module in plan.modules:
        if module.render is not None:
            apps.append(render_module(module.render, engine, read))
        elif module.keep is not None:
            apps.append(kept_app(module.keep, plan.previous, plan.where))
    return apps
