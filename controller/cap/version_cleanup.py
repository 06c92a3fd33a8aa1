"""CAP version cleanup: outdated CAPApplicationVersions whose workloads Prometheus shows unused are
reported (`dry-run`) or removed from the source repository by a commit (`true`).

For every CAPApplication annotated `sme.sap.com/enable-cleanup-monitoring: "true" | "dry-run"`,
every `interval` (CAP Operator's METRICS_EVAL_INTERVAL):

    source repo (the truth)          cluster                     Prometheus
    application, versions, tenants   version gates `<cav>-ready`  deletion rules of each candidate
            \\_____________________________|______________________________/
                          candidates -> verdicts -> Event ReadyForDeletion (+ commit with "true")

- A version is Ready once its gate ConfigMap `<cav>-ready` exists: the application's app creates
  it after the version's workloads are healthy and its content jobs succeeded (README, "CAP
  tenants"). Services-only applications render no gates, so none of their versions is Ready here.
- Candidates (reference, "Version cleanup"): versions at or below the highest Ready version, except
  that version itself and any version a tenant is on, upgrading to, or has an operation pending on
  (the generator's selection says which); without a Ready version nothing is a candidate.
- A candidate is eligible when every deployment workload is: no deletionRules; each Gauge rule
  `sum(avg_over_time(<m>{job="<cav>-<wl>-svc",namespace="<ns>"}[<period>])) <= threshold`; each
  Counter rule the same with `rate`; an empty vector satisfies a metric rule; an `expression` must
  evaluate to the scalar 1. A rule Prometheus cannot answer is not satisfied (and the pass is
  retried as a temporary error).

The removal is a GitOps change, never one behind Git's back: the version's document leaves the
source repository in a commit saying which version and why, and the GitOps tool prunes what it
rendered. The change checks the tree it is applied to again, so a tenant recorded meanwhile on that
version keeps it. A version already gone from the sources is simply no candidate any more.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import textwrap
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path

import semver

from btp_gitops.controller.clients.prometheus import (
    OtherResult,
    PrometheusClient,
    QueryResult,
    Scalar,
    Vector,
)
from btp_gitops.controller.errors import PrometheusUnavailable, TemporaryError
from btp_gitops.controller.events import NORMAL, WARNING, record_event
from btp_gitops.controller.gitstore import SourceRepo, TreeChange
from btp_gitops.controller.kube import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CONFIG_MAP,
    KubeClient,
    KubeObject,
)
from btp_gitops.controller.records import SourceIndex, remove_version
from btp_gitops.controller.runtime import DONE, ObjectKey, Outcome, Watch
from btp_gitops.generator.core import SourceSet
from btp_gitops.generator.domains.cap import (
    Application,
    Tenant,
    Version,
    VersionIndex,
    Workload,
    build_catalog,
    build_tenant_catalog,
    desired_version,
    plan_tenant,
    semantic_version,
    service_name,
    version_gate_name,
)

log = logging.getLogger("btp_gitops.controller.version_cleanup")

CLEANUP_ANNOTATION = "sme.sap.com/enable-cleanup-monitoring"
READY_FOR_DELETION = "ReadyForDeletion"
CLEANUP_DEFERRED = "VersionCleanupDeferred"
CLEANUP_MODE_TRAILER = "Cleanup-Mode"


class CleanupMode(StrEnum):
    ENABLED = "true"  # report and remove
    DRY_RUN = "dry-run"  # report only


def cleanup_mode(app: Application) -> CleanupMode | None:
    """The application's annotation as CAP Operator reads it; any other value leaves cleanup off."""
    value = (app.source.body.get("metadata", {}).get("annotations") or {}).get(CLEANUP_ANNOTATION)
    try:
        return CleanupMode(str(value).strip().lower()) if value is not None else None
    except ValueError:
        return None


# --- the application as the source repository holds it -------------------------------------------


@dataclass(frozen=True, slots=True)
class ApplicationSources:
    """One application's CAPApplication, versions (in the sources) and tenants (with the provider)."""

    app: Application
    versions: tuple[Version, ...]
    tenants: tuple[Tenant, ...]


def read_application(tree: Path, namespace: str, name: str) -> ApplicationSources | None:
    """The application `namespace/name` in the tree, None when its CAPApplication is not there.

    Read through the records' index, which checked every CAP document against its schema: the
    model reads fields the schemas guarantee, and a broken document stops the cleanup
    (UnreadableSource), it does not mislead it."""
    sources = SourceSet.of(SourceIndex.of_tree(tree).documents_of_namespace(namespace))
    catalog = build_catalog(sources)
    app = next((a for a in catalog.applications if a.name == name), None)
    if app is None:
        return None
    tenants = build_tenant_catalog(sources, catalog)
    group = next((g for g in tenants.applications if g.app.name == name), None)
    return ApplicationSources(app, tuple(catalog.versions_of(app)), group.tenants if group else ())


# --- candidates ------------------------------------------------------------------------------------


def _semver(version: Version) -> semver.Version | None:
    try:
        return semantic_version(version.version)
    except ValueError:
        return None


def tenant_holds(app: Application, versions: Sequence[Version], tenants: Iterable[Tenant]) -> dict[str, str]:
    """CAPApplicationVersion name -> why a tenant still needs it: the version it runs on, the one it
    is upgrading (or being provisioned) to, the one a pending operation runs on, the one it is routed
    to. Read from each tenant's record and the generator's selection, as a render decides them."""
    index = VersionIndex.of([v for v in versions if _semver(v) is not None])
    holds: dict[str, str] = {}
    for tenant in tenants:

        def hold(version_name: str, why: str, tenant: Tenant = tenant) -> None:
            holds.setdefault(version_name, f"{tenant.ref} {why}")

        current = tenant.status.current_instance
        if current:
            hold(current, "runs on it")
        if index.newest is None:
            continue
        desired = desired_version(tenant, app, index)
        if isinstance(desired, Version) and desired.name != current:
            hold(desired.name, "is upgrading to it" if current else "is being provisioned on it")
        plan = plan_tenant(tenant, app, index)
        if plan.operation is not None:
            hold(plan.operation.version.name, f"has its {plan.operation.operation.value} pending on it")
        if plan.route_to is not None:
            hold(plan.route_to.name, "is routed to it")
    return holds


@dataclass(frozen=True, slots=True)
class KeptVersion:
    version: Version
    reason: str


@dataclass(frozen=True, slots=True)
class CandidateSelection:
    candidates: tuple[Version, ...]  # oldest first
    kept: tuple[KeptVersion, ...]
    highest_ready: Version | None


def select_candidates(
    versions: Sequence[Version], ready: Collection[str], holds: Mapping[str, str]
) -> CandidateSelection:
    """Which versions may be evaluated for deletion (`ready`: names of Ready versions; `holds`:
    tenant_holds). Versions whose spec.version is not semver are kept: they cannot be ordered."""
    ordered = sorted(
        ((parsed, v) for v in versions if (parsed := _semver(v)) is not None), key=lambda item: item[0]
    )
    kept = [
        KeptVersion(v, f"spec.version {v.version!r} is not a semantic version")
        for v in versions
        if _semver(v) is None
    ]
    ready_ones = [(parsed, v) for parsed, v in ordered if v.name in ready]
    if not ready_ones:
        kept += [KeptVersion(v, "no version of the application is Ready") for _, v in ordered]
        return CandidateSelection((), tuple(kept), None)
    top, highest = ready_ones[-1]
    candidates = []
    for parsed, version in ordered:
        if version is highest:
            kept.append(KeptVersion(version, "the highest Ready version"))
        elif parsed > top:
            kept.append(KeptVersion(version, f"newer than the highest Ready version {highest.version}"))
        elif version.name in holds:
            kept.append(KeptVersion(version, holds[version.name]))
        else:
            candidates.append(version)
    return CandidateSelection(tuple(candidates), tuple(kept), highest)


# --- deletion rules --------------------------------------------------------------------------------


class MetricType(StrEnum):
    GAUGE = "Gauge"
    COUNTER = "Counter"


@dataclass(frozen=True, slots=True)
class MetricRule:
    name: str
    type: MetricType
    calculation_period: str
    threshold_value: str  # as written: CAP Operator parses it as a float


@dataclass(frozen=True, slots=True)
class DeletionRules:
    metrics: tuple[MetricRule, ...]
    expression: str  # "" when unset


def deletion_rules(workload: Workload) -> DeletionRules | None:
    """`monitoring.deletionRules` of a deployment workload, None when it has none."""
    monitoring = workload.definition.get("monitoring")
    written = monitoring.get("deletionRules") if isinstance(monitoring, dict) else None
    if not isinstance(written, dict):
        return None
    metrics = tuple(
        MetricRule(
            str(m["name"]), MetricType(m["type"]), str(m["calculationPeriod"]), str(m["thresholdValue"])
        )
        for m in written.get("metrics") or []
    )
    return DeletionRules(metrics, str(written.get("expression") or ""))


def _label_value(text: str) -> str:
    """A PromQL string literal (names here are DNS labels; escaping keeps any other text literal)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def metric_query(rule: MetricRule, version: Version, workload: Workload) -> str:
    """The PromQL CAP Operator evaluates for a metric rule, restricted to the workload's Service."""
    selector = (
        f"{rule.name}{{job={_label_value(service_name(version, workload))},"
        f"namespace={_label_value(version.namespace)}}}[{rule.calculation_period}]"
    )
    inner = "avg_over_time" if rule.type == MetricType.GAUGE else "rate"
    return f"sum({inner}({selector}))"


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    satisfied: bool
    description: str  # human-readable: the rule, the value and the comparison
    query: str


@dataclass(frozen=True, slots=True)
class WorkloadVerdict:
    workload: str
    eligible: bool
    outcomes: tuple[RuleOutcome, ...]  # empty: the workload has no deletion rules

    @property
    def reason(self) -> str:
        if not self.outcomes:
            return f"{self.workload}: no deletion rules"
        return f"{self.workload}: " + "; ".join(o.description for o in self.outcomes)


@dataclass(frozen=True, slots=True)
class VersionVerdict:
    version: Version
    eligible: bool
    workloads: tuple[WorkloadVerdict, ...]

    @property
    def reason(self) -> str:
        return "; ".join(w.reason for w in self.workloads) or "no deployment workloads"


def _number(value: float) -> str:
    return "NaN" if math.isnan(value) else f"{value:g}"


def _metric_label(rule: MetricRule) -> str:
    measure = "average" if rule.type == MetricType.GAUGE else "rate"
    return f"{rule.type.value} {rule.name} ({measure} over {rule.calculation_period})"


def judge_metric(rule: MetricRule, result: QueryResult, *, query: str) -> RuleOutcome:
    """Every sample of the result at or below the threshold; an empty vector satisfies the rule."""
    label = _metric_label(rule)
    try:
        threshold = float(rule.threshold_value)
    except ValueError:
        return RuleOutcome(False, f"{label}: thresholdValue {rule.threshold_value!r} is not a number", query)
    if isinstance(result, OtherResult):
        return RuleOutcome(False, f"{label}: Prometheus answered a {result.result_type}, not a vector", query)
    values = [s.value for s in result.samples] if isinstance(result, Vector) else [result.value]
    if not values:
        return RuleOutcome(True, f"{label}: no samples (empty vector)", query)
    shown = ", ".join(_number(v) for v in values)
    satisfied = all(v <= threshold for v in values)  # NaN compares false: not satisfied
    comparison = "<=" if satisfied else "exceeds"
    return RuleOutcome(satisfied, f"{label}: {shown} {comparison} {_number(threshold)}", query)


def judge_expression(expression: str, result: QueryResult) -> RuleOutcome:
    """The expression must evaluate to the scalar 1 (a bool comparison's true)."""
    label = f"expression {expression}"
    if not isinstance(result, Scalar):
        got = (
            "an empty vector"
            if isinstance(result, Vector) and not result.samples
            else f"a {result.result_type}"
        )
        return RuleOutcome(False, f"{label}: gave {got}, not a scalar", expression)
    if result.value == 1:
        return RuleOutcome(True, f"{label}: 1", expression)
    return RuleOutcome(False, f"{label}: {_number(result.value)}, not 1", expression)


QueryFunction = Callable[[str], QueryResult]


class RuleEvaluator:
    """Evaluates versions' deletion rules through `query`. After the first PrometheusUnavailable
    no further query is sent in this pass (each would wait for its timeout): the remaining rules
    are not satisfied, and `unavailable` holds the error for the caller."""

    def __init__(self, query: QueryFunction) -> None:
        self._query = query
        self.unavailable: PrometheusUnavailable | None = None

    def _outcome(self, query: str, judge: Callable[[QueryResult], RuleOutcome], label: str) -> RuleOutcome:
        if self.unavailable is None:
            try:
                return judge(self._query(query))
            except PrometheusUnavailable as error:
                self.unavailable = error
        return RuleOutcome(False, f"{label}: not evaluated, {self.unavailable.message}", query)

    def workload(self, version: Version, workload: Workload) -> WorkloadVerdict:
        rules = deletion_rules(workload)
        if rules is None or (not rules.metrics and not rules.expression):
            return WorkloadVerdict(workload.name, True, ())
        outcomes: list[RuleOutcome] = []
        for rule in rules.metrics:
            query = metric_query(rule, version, workload)
            outcomes.append(
                self._outcome(query, partial(judge_metric, rule, query=query), _metric_label(rule))
            )
            if not outcomes[-1].satisfied:
                return WorkloadVerdict(workload.name, False, tuple(outcomes))
        if rules.expression:
            expression = rules.expression
            outcomes.append(
                self._outcome(expression, partial(judge_expression, expression), f"expression {expression}")
            )
        return WorkloadVerdict(workload.name, all(o.satisfied for o in outcomes), tuple(outcomes))

    def version(self, version: Version) -> VersionVerdict:
        """Eligible when every deployment workload is; stops at the first one that is not."""
        verdicts: list[WorkloadVerdict] = []
        for workload in version.deployments():
            verdicts.append(self.workload(version, workload))
            if not verdicts[-1].eligible:
                return VersionVerdict(version, False, tuple(verdicts))
        return VersionVerdict(version, True, tuple(verdicts))


# --- messages ----------------------------------------------------------------------------------------


def _version_ref(version: Version) -> str:
    return f"CAPApplicationVersion {version.namespace}/{version.name} ({version.version})"


def commit_message(app: Application, verdict: VersionVerdict, selection: CandidateSelection) -> str:
    """Which version goes and why: the selection, then each workload's rules with values and queries."""
    version = verdict.version
    highest = selection.highest_ready
    highest_ref = f"{highest.name} ({highest.version})" if highest else "-"
    why = (
        f"Version cleanup of CAPApplication {app.namespace}/{app.name} ({CLEANUP_ANNOTATION}: "
        f'"{CleanupMode.ENABLED.value}"). The highest Ready version is {highest_ref}; no tenant runs on, '
        f"upgrades to or has an operation pending on {version.version}; every deployment workload "
        "satisfies its deletion rules:"
    )
    lines = [
        f"Remove {_version_ref(version)}: ready for deletion",
        "",
        *textwrap.wrap(why, 72, break_on_hyphens=False, break_long_words=False),
        "",
    ]
    for workload in verdict.workloads:
        lines.append(f"- {workload.reason}")
        lines += [f"  query: {o.query}" for o in workload.outcomes]
    lines += ["", f"{CLEANUP_MODE_TRAILER}: {CleanupMode.ENABLED.value}"]
    return "\n".join(lines)


def ready_message(verdict: VersionVerdict, mode: CleanupMode, commit: str | None) -> str:
    head = f"{_version_ref(verdict.version)} is ready for deletion: {verdict.reason}"
    if mode == CleanupMode.DRY_RUN:
        return f"dry-run: {head}; not removed ({CLEANUP_ANNOTATION} is {mode.value!r})"
    return f"{head}; removed from the source repository in commit {(commit or '')[:12]}"


# --- the reconciler ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CleanupSettings:
    interval: float = 600.0  # seconds between evaluations of an application
    namespace: str | None = None  # only applications of this namespace; all when None
    unavailable_retry: float = 60.0  # delay hint when Prometheus could not answer
    commit_timeout: float = 300.0  # how long to wait for the removal's push


@dataclass(slots=True)
class Refusal:
    """Why the last application of a guarded removal removed nothing ("" when it did not refuse)."""

    reason: str = ""


def guarded_removal(namespace: str, app_name: str, version_name: str, refusal: Refusal) -> TreeChange:
    """`remove_version`, unless the tree it is applied to no longer allows it: the application is
    gone, or a tenant recorded meanwhile holds the version. The writer may apply a change several
    times (after a rejected push); `refusal` tells what the last application decided."""
    remove = remove_version(namespace, version_name)

    def change(tree: Path) -> str | None:
        refusal.reason = ""
        sources = read_application(tree, namespace, app_name)
        if sources is None:
            refusal.reason = f"CAPApplication {namespace}/{app_name} is no longer in the sources"
            return None
        holds = tenant_holds(sources.app, sources.versions, sources.tenants)
        if version_name in holds:
            refusal.reason = holds[version_name]
            return None
        return remove(tree)

    return change


class VersionCleanupReconciler:
    """Keys are CAPApplications in the cluster (the generator renders them, annotations included);
    what is evaluated and removed is read from the source repository."""

    def __init__(
        self,
        kube: KubeClient,
        source_repo: SourceRepo,
        prometheus: PrometheusClient,
        settings: CleanupSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._kube = kube
        self._repo = source_repo
        self._prometheus = prometheus
        self._settings = settings or CleanupSettings()
        self._clock = clock  # the instant every query of one pass is evaluated at
        # When each application was last evaluated, and its cluster object's resourceVersion then:
        # resyncs and unrelated wakeups do not shorten the interval. Only an optimisation: after a
        # restart the first pass just comes early.
        self._last_pass: dict[ObjectKey, tuple[float, str]] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "cap-version-cleanup"

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch(CAP_APPLICATION, namespace=self._settings.namespace),)

    def reconcile(self, key: ObjectKey) -> Outcome:
        cluster_app = self._kube.get(CAP_APPLICATION, key.name, key.namespace)
        if cluster_app is None:
            with self._lock:
                self._last_pass.pop(key, None)
            return DONE
        version_stamp = str(cluster_app["metadata"].get("resourceVersion", ""))
        wait = self._time_until_due(key, version_stamp)
        if wait > 0:
            return Outcome(requeue_after=wait)
        sources = self._repo.read(lambda tree: read_application(tree, key.namespace, key.name))
        if sources is None:
            log.info("CAPApplication %s is not in the source repository: nothing to clean up", key)
            return DONE
        mode = cleanup_mode(sources.app)
        if mode is None:
            return DONE
        self._clean_up(cluster_app, sources, mode)
        with self._lock:
            self._last_pass[key] = (time.monotonic(), version_stamp)
        return Outcome(requeue_after=self._settings.interval)

    def _time_until_due(self, key: ObjectKey, version_stamp: str) -> float:
        with self._lock:
            last = self._last_pass.get(key)
        if last is None or last[1] != version_stamp:
            return 0.0
        return last[0] + self._settings.interval - time.monotonic()

    def _ready_versions(self, versions: Iterable[Version]) -> set[str]:
        ready = set()
        for version in versions:
            gate = self._kube.get(CONFIG_MAP, version_gate_name(version), version.namespace)
            if gate is not None and not gate["metadata"].get("deletionTimestamp"):
                ready.add(version.name)
        return ready

    def _clean_up(self, cluster_app: KubeObject, sources: ApplicationSources, mode: CleanupMode) -> None:
        app = sources.app
        holds = tenant_holds(app, sources.versions, sources.tenants)
        selection = select_candidates(sources.versions, self._ready_versions(sources.versions), holds)
        for kept in selection.kept:
            log.debug("%s kept: %s", _version_ref(kept.version), kept.reason)
        at = self._clock()
        evaluator = RuleEvaluator(lambda query: self._prometheus.query(query, at))
        for version in selection.candidates:
            verdict = evaluator.version(version)
            if not verdict.eligible:
                log.info("%s is not eligible for deletion: %s", _version_ref(version), verdict.reason)
                continue
            if mode == CleanupMode.DRY_RUN:
                self._report(cluster_app, verdict, ready_message(verdict, mode, None))
            else:
                self._remove(cluster_app, app, verdict, selection)
        if evaluator.unavailable is not None:
            error = evaluator.unavailable
            record_event(
                self._kube,
                cluster_app,
                WARNING,
                CLEANUP_DEFERRED,
                f"deletion rules not evaluated: {error.message}",
            )
            raise PrometheusUnavailable(error.message, delay=self._settings.unavailable_retry)

    def _report(self, cluster_app: KubeObject, verdict: VersionVerdict, message: str) -> None:
        """The Event goes on the CAPApplicationVersion when the cluster has it, else the application."""
        version = verdict.version
        target = self._kube.get(CAP_APPLICATION_VERSION, version.name, version.namespace) or cluster_app
        log.info("%s", message)
        record_event(self._kube, target, NORMAL, READY_FOR_DELETION, message)

    def _remove(
        self,
        cluster_app: KubeObject,
        app: Application,
        verdict: VersionVerdict,
        selection: CandidateSelection,
    ) -> None:
        version = verdict.version
        refusal = Refusal()
        change = guarded_removal(app.namespace, app.name, version.name, refusal)
        try:
            outcome = self._repo.apply(
                change, commit_message(app, verdict, selection), self._settings.commit_timeout
            )
        except concurrent.futures.TimeoutError as error:
            waited = self._settings.commit_timeout
            raise TemporaryError(
                f"the removal of {_version_ref(version)} was not pushed within {waited:g}s"
            ) from error
        if refusal.reason:
            log.info("%s kept after all: %s", _version_ref(version), refusal.reason)
            return
        if outcome.commit is None:
            log.info("%s was already gone from the source repository", _version_ref(version))
            return
        self._report(cluster_app, verdict, ready_message(verdict, CleanupMode.ENABLED, outcome.commit))
