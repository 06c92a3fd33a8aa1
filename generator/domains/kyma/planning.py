"""Planning a cluster's Kyma (steps 1 to 4 of domains.kyma.render): its record, skip-reconciliation,
the resolution of every module and the rules that hold one at its previous version.

Apart from domains.kyma.render, which every render runs to find the Kyma: a cluster without one
loads none of this (resolution, maintenance windows, the removal guard, module content).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from btp_gitops.generator.core.errors import InvalidSpec, Problem, UsageError, raise_if_problems
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.core.sources import problem_at
from btp_gitops.generator.domains.kyma.catalog import Catalog
from btp_gitops.generator.domains.kyma.content import (
    ModuleRender,
    app_name,
)
from btp_gitops.generator.domains.kyma.maintenance import (
    MaintenancePolicy,
    parse_policy,
)
from btp_gitops.generator.domains.kyma.model import (
    DEFAULT_CHANNEL,
    NO_CHANNEL,
    SKIP_RECONCILIATION_LABEL,
    SYNC_NAMESPACE,
    CustomResourcePolicy,
    Kyma,
    ModuleRequest,
    qualified,
)
from btp_gitops.generator.domains.kyma.record import RECORD_FILE, Record, read_record, record_text
from btp_gitops.generator.domains.kyma.removal_guard import Unresolvable, refuse_unconfirmed_removals
from btp_gitops.generator.domains.kyma.render import KymaContext, KymaPlan, ModulePlan
from btp_gitops.generator.domains.kyma.resolution import (
    NO_TEMPLATES,
    Resolution,
    Resolved,
    Unresolved,
    is_lower,
    request_problems,
    resolve_mandatory,
    resolve_module,
)
from btp_gitops.generator.domains.kyma.status import (
    KymaReport,
    ModuleState,
    ModuleStatus,
    ResourceRef,
    TemplateRef,
)

# A module's problem, from its message: the file, object and field it points at.
Locate = Callable[[str], Problem]


def _default_cr(resolved: Resolved, policy: CustomResourcePolicy) -> ResourceRef | None:
    """The default CR a rendered module gets (Lifecycle Manager's status.modules[].resource)."""
    data = resolved.template.data
    if policy is not CustomResourcePolicy.CREATE_AND_DELETE or data is None:
        return None
    metadata = data.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if not metadata.get("name"):
        return None  # render_module refuses it, naming the field
    return ResourceRef(
        str(data.get("apiVersion", "")),
        str(data.get("kind", "")),
        str(metadata["name"]),
        str(metadata.get("namespace") or SYNC_NAMESPACE),
    )


@dataclass(frozen=True, slots=True)
class _Decider:
    """The rules that can hold a resolved module at its previous version."""

    kyma: Kyma
    catalog: Catalog
    record: Record
    previous: Mapping[str, str]
    policy: MaintenancePolicy | None
    at: datetime | None
    min_window: timedelta

    def installed(self, module: str) -> ModuleStatus | None:
        """The module as the previous render left it, if its app is still in the repo."""
        found = self.record.module(module)
        if found is None or not found.app:
            return None
        return found if any(path.startswith(f"{found.app}/") for path in self.previous) else None

    def decide(self, resolved: Resolved, policy: CustomResourcePolicy, locate: Locate) -> ModulePlan:
        installed = self.installed(resolved.module)
        status = dataclasses.replace(_resolved_status(resolved), resource=_default_cr(resolved, policy))
        if installed and is_lower(resolved.version, installed.version):
            message = (
                "module template update not allowed: ignore channel skew "
                f"(from {installed.channel or '-'} to {resolved.channel or '-'}), "
                f"as a higher version ({installed.version}) of the module was "
                f"previously installed: {resolved.version} ({resolved.how}) is not rendered, "
                f"{installed.version} is kept (no downgrade)"
            )
            return _keep(installed, ModuleState.WARNING, message)
        if installed and installed.version != resolved.version and self.waits_for_downtime(resolved):
            return self.maintenance(resolved, installed, status, policy, locate)
        return ModulePlan(status, render=ModuleRender(resolved.module, resolved.template, policy))

    def waits_for_downtime(self, resolved: Resolved) -> bool:
        return resolved.template.requires_downtime and not self.kyma.skip_maintenance_windows

    def maintenance(
        self,
        resolved: Resolved,
        installed: ModuleStatus,
        status: ModuleStatus,
        policy: CustomResourcePolicy,
        locate: Locate,
    ) -> ModulePlan:
        """An upgrade that requires downtime: inside an active window, else later; without a policy
        (or a window it can name) Lifecycle Manager cannot tell, and the module is in Error."""
        upgrade = f"from {installed.version} to {resolved.version}"
        if self.policy is None:
            return self.undetermined(installed, "no maintenance window policy configured", upgrade, locate)
        if self.at is None:
            raise UsageError("maintenance windows need the time to check them at")
        window = self.policy.resolve(self.kyma.labels, self.at, self.min_window)
        if window is None:
            reason = f"{self.policy.file}: matches and defaults also failed to provide a window"
            return self.undetermined(installed, reason, upgrade, locate)
        if window.active(self.at):
            why = f"requires downtime, upgraded {upgrade} in the maintenance window {window.describe()}"
            render = ModuleRender(resolved.module, resolved.template, policy)
            return ModulePlan(dataclasses.replace(status, message=f"{status.message}; {why}"), render)
        message = (
            f"waiting for next maintenance window to update module version {upgrade} "
            f"(next window {window.describe()})"
        )
        return _keep(installed, installed.state, message, maintenance=True)

    @staticmethod
    def undetermined(installed: ModuleStatus, reason: str, upgrade: str, locate: Locate) -> ModulePlan:
        message = (
            f"failed to determine if maintenance window is active: {reason}; the upgrade {upgrade} "
            "requires downtime and is not made"
        )
        return dataclasses.replace(_keep(installed, ModuleState.ERROR, message), problem=locate(message))

    def failed(self, failure: Unresolved, problem: Problem) -> ModulePlan:
        """A module whose template cannot be resolved: its previous app, if any, stays as it was."""
        installed = self.installed(failure.module)
        if installed is not None:
            status = dataclasses.replace(
                installed, state=failure.state, message=failure.message, maintenance=False
            )
            return ModulePlan(status, keep=installed.app, problem=problem)
        before = self.record.module(failure.module)
        status = ModuleStatus(
            name=failure.module,
            state=failure.state,
            message=failure.message,
            channel=failure.channel,
            version=before.version if before else "",  # never below it, once a template is found
        )
        return ModulePlan(status, problem=problem)

    def removal_under_way(self, module: str) -> bool:
        """Whether the previous render began removing the module (deleted its default CR)."""
        recorded = self.record.module(module)
        return recorded is not None and recorded.state is ModuleState.DELETING

    def lookup_failure(self, installed: ModuleStatus) -> Unresolved | None:
        """A module being removed is still looked up, as Lifecycle Manager looks up every module of
        the Kyma's status (with its recorded channel, or version in channel none); when that fails,
        the module is reported with the lookup error and keeps its app, as it keeps its Manifest.
        A module that was mandatory is not in the Kyma's status there, and is not looked up."""
        if installed.mandatory:
            return None
        fixed = installed.channel == NO_CHANNEL
        request = ModuleRequest(
            index=-1,
            name=installed.name,
            channel=None if fixed else (installed.channel or None),
            version=installed.version if fixed else None,
            policy=CustomResourcePolicy.CREATE_AND_DELETE,
            managed=True,
        )
        found = resolve_module(self.catalog, self.kyma, request)
        if not isinstance(found, Unresolved):
            return None
        message = (
            f"{found.message} (the module is no longer in spec.modules; it is removed once its template "
            "can be looked up again)"
        )
        return dataclasses.replace(found, message=message, field_path="spec.modules")

    def removals(self, wanted: set[str]) -> list[ModulePlan]:
        """The recorded modules no longer asked for, removed as Lifecycle Manager removes a module:
        with `CreateAndDelete`, its default CR goes first (this render keeps the rest of the app,
        so the module's operator is still there to finalize its CR), its resources with the next
        render; without a default CR, everything at once."""
        plans = []
        for recorded in sorted(self.record.modules.values(), key=lambda s: s.name):
            if recorded.name in wanted:
                continue
            installed = self.installed(recorded.name)
            if installed is None:
                continue  # nothing of it left in the repo: forgotten
            failure = self.lookup_failure(installed)
            if failure is not None:
                plans.append(self.failed(failure, failure.problem(self.kyma)))
                continue
            if installed.state is not ModuleState.DELETING and installed.resource is not None:
                resource = installed.resource
                message = (
                    f"removed from spec.modules: its default CR {resource.kind} {resource.name} is deleted "
                    "first; the module's resources are deleted with the next render"
                )
                status = dataclasses.replace(
                    installed, state=ModuleState.DELETING, message=message, maintenance=False
                )
                plans.append(ModulePlan(status, keep=installed.app, without=resource))
                continue
            done = "its default CR was deleted before, " if installed.state is ModuleState.DELETING else ""
            message = f"removed from spec.modules: {done}the module's resources are deleted"
            status = dataclasses.replace(
                installed,
                state=ModuleState.DELETING,
                message=message,
                app="",
                maintenance=False,
                resource=None,
            )
            plans.append(ModulePlan(status))
        return plans


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


def _plan(
    kyma: Kyma, decider: _Decider, resolution: Resolution, policy: CustomResourcePolicy, field_path: str
) -> ModulePlan:
    """`field_path`: the module's spec.modules entry; empty for a mandatory module not listed,
    whose problems point at its template."""
    if isinstance(resolution, Unresolved):
        return decider.failed(resolution, resolution.problem(kyma))
    source = kyma.source if field_path else resolution.template.source

    def locate(message: str) -> Problem:
        return problem_at(source, field_path or None, f"module {resolution.module}: {message}")

    return decider.decide(resolution, policy, locate)


def _module_plans(
    kyma: Kyma, catalog: Catalog, decider: _Decider, allow_removal: bool = False
) -> list[ModulePlan]:
    """One plan per module: the mandatory ones, every entry of spec.modules, and the removed ones.
    A module that cannot be resolved is planned like the others (state and message), never
    stopping the rest; but a removal beside an entry that cannot be resolved (a misspelt name?) is
    refused unless `allow_removal` or the Kyma allows it (domains.kyma.removal_guard)."""
    mandatory = resolve_mandatory(catalog)
    unresolvable: list[Unresolvable] = []
    listed = {request.name: request for request in kyma.modules}
    unmanaged = {request.name for request in kyma.modules if not request.managed}
    by_mandatory = {
        module: _plan(kyma, decider, resolution, CustomResourcePolicy.CREATE_AND_DELETE, "")
        for module, resolution in mandatory.items()
        if module not in unmanaged
    }
    plans = []
    for request in kyma.modules:
        if not request.managed:
            plans.append(_unmanaged(request, decider.record))
            continue
        resolution = resolve_module(catalog, kyma, request)
        if isinstance(resolution, Unresolved):
            unresolvable.append((request, resolution))
        if request.name in by_mandatory:
            listed_plan = _listed_mandatory(kyma, by_mandatory[request.name], resolution, request)
            by_mandatory[request.name] = listed_plan
        else:
            plans.append(_plan(kyma, decider, resolution, request.policy, request.field("name")))
    removals = decider.removals({*listed, *mandatory})
    starting = [
        plan.status.name
        for plan in removals
        if plan.status.state is ModuleState.DELETING and not decider.removal_under_way(plan.status.name)
    ]
    refuse_unconfirmed_removals(kyma, starting, unresolvable, catalog.module_names(), allow_removal)
    return [*by_mandatory.values(), *plans, *removals]


def _listed_mandatory(
    kyma: Kyma, mandatory: ModulePlan, resolution: Resolution, request: ModuleRequest
) -> ModulePlan:
    """A spec.modules entry naming a mandatory module: Lifecycle Manager installs the mandatory
    module for every Kyma whatever the entry says, and the entry itself is not eligible (its
    template is mandatory, or its channel has none). The mandatory module is rendered as it is; its
    status carries the entry's failure, which is a problem of the render (exit 9)."""
    if mandatory.problem is not None:
        return mandatory  # the mandatory module itself failed: that is what to report
    if isinstance(resolution, Unresolved):
        failure = resolution
    else:  # a non-mandatory template of a mandatory module: one app per module, the mandatory one
        message = (
            f"{NO_TEMPLATES}: for module {request.name} in channel {resolution.channel}: {request.name} is a "
            f"mandatory module (installed for every Kyma); template {resolution.template.qualified_name} "
            "is not installed beside it"
        )
        where = request.field("name")
        failure = Unresolved(request.name, resolution.channel, message, where, ModuleState.WARNING)
    status = dataclasses.replace(
        mandatory.status,
        state=failure.state,
        message=f"{failure.message}; the module is rendered as mandatory ({mandatory.status.message})",
    )
    return dataclasses.replace(mandatory, status=status, problem=failure.problem(kyma))


def plan_modules(kyma: Kyma, catalog: Catalog, context: KymaContext) -> KymaPlan:
    """The plan of a cluster's Kyma (domains.kyma.render.plan_kyma_modules found it and its catalog)."""
    record = read_record(context.previous, context.where)
    if kyma.skips_reconciliation:
        return _skip_reconciliation(kyma, record, context)
    raise_if_problems(InvalidSpec, f"invalid Kyma {kyma.ref}", request_problems(kyma, kyma.modules))
    policy = parse_policy(context.maintenance_policy) if context.maintenance_policy else None
    decider = _Decider(kyma, catalog, record, context.previous, policy, context.at, context.min_window)
    plans = _module_plans(kyma, catalog, decider, context.allow_module_removal)
    report = _report(kyma, plans)
    notes = ignored_policy_keys(policy) if policy is not None else ()
    return KymaPlan(
        tuple(plans), (report,), {RECORD_FILE: record_text(report)}, context.previous, context.where, notes
    )


def ignored_policy_keys(policy: MaintenancePolicy) -> tuple[Note, ...]:
    """A warning per key of the maintenance policy that Lifecycle Manager does not know: it skips
    them, and so does the render, but a misspelt key (`window` for `windows`) changes the policy."""
    return tuple(
        Note(
            Level.WARNING,
            "MaintenancePolicyKeyIgnored",
            f"{policy.file}: {path}",
            f"{path.rsplit('.', 1)[-1]} is no field of Lifecycle Manager's maintenance policy: ignored, "
            "as Lifecycle Manager ignores it",
        )
        for path in policy.ignored
    )
