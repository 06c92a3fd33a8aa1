"""Render-time rules of a CAPApplicationVersion: CAP Operator's webhook rules, checked offline.

Each rule returns the problems it finds, located at the field to fix; `version_problems` runs them
all so one render reports everything, where the webhook stops at the first.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.sources import problem_at
from btp_gitops.generator.core.validation import type_name
from btp_gitops.generator.domains.cap.identity import binding_volume_name, service_name
from btp_gitops.generator.domains.cap.model import (
    TENANT_JOB_TYPES,
    CredentialsMode,
    DeploymentType,
    JobType,
    TenantOperation,
    TenantOperationStep,
    Version,
    Workload,
)
from btp_gitops.generator.transforms.ordering import Stage, stage_steps

MAX_NAME = 63  # Service names and label values
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
RESERVED_ENV = ("CAPOP_APP_VERSION", "VCAP_SERVICES")
SERVICE_BINDING_ROOT = "SERVICE_BINDING_ROOT"
DESTINATIONS_ENV = "destinations"


def _duplicates(names: Iterable[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def is_label_value(text: str) -> bool:
    return len(text) <= MAX_NAME and bool(LABEL_VALUE.match(text))


class VersionRules:
    """The rules of one version; `services_only` and `credentials_mode` come from its application."""

    def __init__(
        self, version: Version, services_only: bool, credentials_mode: str, service_names: set[str]
    ) -> None:
        self.version = version
        self.services_only = services_only
        self.credentials_mode = credentials_mode
        self.service_names = service_names  # the application's spec.btp.services[].name

    def problem(self, field_path: str | None, message: str) -> Problem:
        return problem_at(self.version.source, field_path, message)

    def all(self) -> list[Problem]:
        rules: list[Callable[[], list[Problem]]] = [
            self.version_label,
            self.workload_names,
            self.definitions,
            self.ports,
            self.router_destinations,
            self.workload_counts,
            self.content_jobs,
            self.service_exposures,
            self.tenant_operations,
            self.environment,
            self.consumed_services,
            self.restart_policies,
            self.service_features,
            self.binding_volumes,
        ]
        return [problem for rule in rules for problem in rule()]

    # --- names ------------------------------------------------------------------------------------

    def version_label(self) -> list[Problem]:
        if is_label_value(self.version.version):
            return []
        return [
            self.problem(
                "spec.version",
                f"{self.version.version!r} is the sme.sap.com/cav-version label of every workload: at most "
                "63 characters of A-Z, a-z, 0-9, '-', '_' and '.' (no '+build' part)",
            )
        ]

    def workload_names(self) -> list[Problem]:
        problems = []
        duplicates = _duplicates(w.name for w in self.version.workloads)
        seen: set[str] = set()
        for workload in self.version.workloads:
            if workload.name in duplicates and workload.name in seen:
                problems.append(
                    self.problem(workload.field("name"), f"duplicate workload name {workload.name!r}")
                )
            seen.add(workload.name)
            name = service_name(self.version, workload)
            if len(name) > MAX_NAME:
                problems.append(
                    self.problem(
                        workload.field("name"),
                        f"the Service name {name!r} would have {len(name)} characters, more than {MAX_NAME}: "
                        "shorten the version's or the workload's name",
                    )
                )
        return problems

    def definitions(self) -> list[Problem]:
        return [
            self.problem(w.field(), "needs exactly one of deploymentDefinition and jobDefinition")
            for w, written in ((w, self._definitions_written(w)) for w in self.version.workloads)
            if written != 1
        ]

    def _definitions_written(self, workload: Workload) -> int:
        spec = self.version.source.body["spec"]["workloads"][workload.index]
        return sum(1 for key in ("deploymentDefinition", "jobDefinition") if key in spec)

    # --- ports and destinations -------------------------------------------------------------------

    def ports(self) -> list[Problem]:
        problems = []
        for workload in self.version.deployments():
            ports = workload.declared_ports
            for field, values in (("name", [p.name for p in ports]), ("port", [str(p.port) for p in ports])):
                repeated = _duplicates(values)
                seen: set[str] = set()
                for index, value in enumerate(values):
                    if value in repeated and value in seen:
                        problems.append(
                            self.problem(
                                workload.definition_path("ports", index, field),
                                f"duplicate port {field} {value}",
                            )
                        )
                    seen.add(value)
        return problems

    def router_destinations(self) -> list[Problem]:
        problems = []
        for workload in self.version.deployments():
            ports = workload.declared_ports
            if (
                workload.type == DeploymentType.CAP
                and ports
                and not any(p.router_destination_name for p in ports)
            ):
                problems.append(
                    self.problem(
                        workload.definition_path("ports"),
                        "a CAP workload with ports needs a routerDestinationName on one of them "
                        "(the Router's destination to it)",
                    )
                )
            if workload.type == DeploymentType.ROUTER:
                problems += [
                    self.problem(
                        workload.definition_path("ports", index, "routerDestinationName"),
                        "a Router is no destination of its own",
                    )
                    for index, port in enumerate(ports)
                    if port.router_destination_name
                ]
        return problems

    # --- application mode -------------------------------------------------------------------------

    def workload_counts(self) -> list[Problem]:
        if self.services_only:
            return self._services_only_workloads()
        problems = []
        for kind, wanted in ((DeploymentType.CAP, "exactly one"), (DeploymentType.ROUTER, "exactly one")):
            found = len(self.version.deployments_of_type(kind))
            if found != 1:
                problems.append(
                    self.problem(
                        "spec.workloads",
                        f"a multi-tenant application needs {wanted} {kind} workload, found {found}",
                    )
                )
        if not self.version.jobs_of_type(JobType.TENANT_OPERATION):
            problems.append(
                self.problem(
                    "spec.workloads",
                    "a multi-tenant application needs a TenantOperation job workload (it provisions tenants)",
                )
            )
        return problems

    def _services_only_workloads(self) -> list[Problem]:
        problems = []
        why = (
            "in a services-only application (its CAPApplication has no spec.provider, and its first "
            "version only Service deployments and Content jobs)"
        )
        for workload in self.version.workloads:
            if workload.is_deployment and workload.type != DeploymentType.SERVICE:
                problems.append(
                    self.problem(
                        workload.definition_path("type"),
                        f"{workload.type}: only Service deployments run {why}",
                    )
                )
            if workload.is_deployment and not workload.declared_ports:
                problems.append(
                    self.problem(workload.definition_path("ports"), f"required for a Service workload {why}")
                )
            if workload.is_job and workload.type in TENANT_JOB_TYPES:
                problems.append(
                    self.problem(
                        workload.definition_path("type"), f"{workload.type}: there are no tenants {why}"
                    )
                )
        if self.version.tenant_operations is not None:
            problems.append(self.problem("spec.tenantOperations", f"there are no tenants {why}"))
        return problems

    # --- jobs -------------------------------------------------------------------------------------

    def content_jobs(self) -> list[Problem]:
        jobs = [w.name for w in self.version.jobs_of_type(JobType.CONTENT)]
        listed = self.version.content_jobs
        problems = []
        for index, name in enumerate(listed):
            if name not in jobs:
                problems.append(
                    self.problem(f"spec.contentJobs[{index}]", f"{name!r} is no Content job workload")
                )
            elif name in listed[:index]:
                problems.append(self.problem(f"spec.contentJobs[{index}]", f"{name!r} is listed twice"))
        if len(jobs) > 1 and not listed:
            problems.append(
                self.problem(
                    "spec.contentJobs",
                    f"{len(jobs)} Content jobs ({', '.join(jobs)}) need contentJobs to order them",
                )
            )
        elif listed:
            missing = [name for name in jobs if name not in listed]
            if missing:
                problems.append(
                    self.problem(
                        "spec.contentJobs", f"must list every Content job; missing: {', '.join(missing)}"
                    )
                )
        if len(jobs) > stage_steps(Stage.RELEASE_JOBS):
            problems.append(
                self.problem(
                    "spec.contentJobs",
                    f"at most {stage_steps(Stage.RELEASE_JOBS)} Content jobs can run in order",
                )
            )
        return problems

    def tenant_operations(self) -> list[Problem]:
        operations = self.version.tenant_operations
        custom = self.version.jobs_of_type(JobType.CUSTOM_TENANT_OPERATION)
        if operations is None:
            if custom:
                return [
                    self.problem(
                        "spec.tenantOperations",
                        "required to sequence the CustomTenantOperation jobs "
                        + ", ".join(w.name for w in custom),
                    )
                ]
            return []
        problems = []
        for operation, steps in operations.items():
            problems += self._tenant_operation_steps(operation, steps)
        used = {step.workload for steps in operations.values() for step in steps}
        unused = [
            w.name
            for w in self.version.workloads
            if w.is_job and w.type in TENANT_JOB_TYPES and w.name not in used
        ]
        if unused and not self.services_only:
            problems.append(
                self.problem("spec.tenantOperations", f"runs no step of {', '.join(unused)}: list them")
            )
        return problems

    def _tenant_operation_steps(
        self, operation: TenantOperation, steps: tuple[TenantOperationStep, ...]
    ) -> list[Problem]:
        problems = []
        has_tenant_operation = False
        for step in steps:
            where = f"spec.tenantOperations.{operation.value}[{step.index}]"
            workload = self.version.workload(step.workload)
            if workload is not None and workload.is_job and workload.type == JobType.CONTENT:
                continue  # skipped by tenant operations, with a note (tenants.tenant_operation_notes)
            if workload is None or not workload.is_job or workload.type not in TENANT_JOB_TYPES:
                problems.append(
                    self.problem(
                        f"{where}.workloadName",
                        f"{step.workload!r} is no TenantOperation or CustomTenantOperation job",
                    )
                )
                continue
            has_tenant_operation |= workload.type == JobType.TENANT_OPERATION
            if step.continue_on_failure and workload.type != JobType.CUSTOM_TENANT_OPERATION:
                problems.append(
                    self.problem(
                        f"{where}.continueOnFailure",
                        "only a CustomTenantOperation step may continue on failure",
                    )
                )
        if steps and not has_tenant_operation:
            problems.append(
                self.problem(
                    f"spec.tenantOperations.{operation.value}",
                    "needs a TenantOperation step (it migrates the tenant)",
                )
            )
        return problems

    # --- exposures --------------------------------------------------------------------------------

    def service_exposures(self) -> list[Problem]:
        problems = []
        repeated = _duplicates(e.sub_domain for e in self.version.service_exposures)
        seen: set[str] = set()
        for exposure in self.version.service_exposures:
            where = f"spec.serviceExposures[{exposure.index}]"
            if exposure.sub_domain in repeated and exposure.sub_domain in seen:
                problems.append(
                    self.problem(f"{where}.subDomain", f"duplicate subDomain {exposure.sub_domain!r}")
                )
            seen.add(exposure.sub_domain)
            paths = _duplicates(route.path for route in exposure.routes)
            problems += [
                self.problem(f"{where}.routes[{index}].path", f"duplicate path {route.path!r}")
                for index, route in enumerate(exposure.routes)
                if route.path in paths and route.path in [r.path for r in exposure.routes[:index]]
            ]
            for index, route in enumerate(exposure.routes):
                problems += self._route(f"{where}.routes[{index}]", route.workload, route.port)
        return problems

    def _route(self, where: str, name: str, port: int) -> list[Problem]:
        workload = self.version.workload(name)
        if workload is None or not workload.is_deployment:
            return [self.problem(f"{where}.workloadName", f"{name!r} is no deployment workload")]
        ports = [p.port for p in workload.ports]
        if port not in ports:
            listed = ", ".join(str(p) for p in ports) or "none"
            return [self.problem(f"{where}.port", f"{name} has no port {port} (its ports: {listed})")]
        return []

    # --- containers -------------------------------------------------------------------------------

    def environment(self) -> list[Problem]:
        reserved = set(RESERVED_ENV)
        if self.credentials_mode == CredentialsMode.SERVICE_BINDINGS:
            reserved.add(SERVICE_BINDING_ROOT)
        problems = []
        for workload in self.version.workloads:
            for path, env in _environments(workload):
                for index, variable in enumerate(env):
                    if not isinstance(variable, dict):
                        problems.append(
                            self.problem(
                                workload.definition_path(*path, index),
                                f"must be of type object, got {type_name(variable)}",
                            )
                        )
                        continue
                    name = str(variable.get("name", ""))
                    if name in reserved:
                        problems.append(
                            self.problem(
                                workload.definition_path(*path, index, "name"),
                                f"{name} is reserved: btp-gitops sets it, as CAP Operator did",
                            )
                        )
                    elif (
                        name == DESTINATIONS_ENV
                        and workload.type == DeploymentType.ROUTER
                        and path == ("env",)
                    ):
                        problems += self._destinations(workload, index, variable)
        return problems

    def _destinations(self, workload: Workload, index: int, variable: dict[str, object]) -> list[Problem]:
        if destinations_entries(variable.get("value")) is not None:
            return []
        return [
            self.problem(
                workload.definition_path("env", index, "value"),
                "the Router's destinations must be a JSON array of objects with a name "
                "(btp-gitops sets their URLs)",
            )
        ]

    def consumed_services(self) -> list[Problem]:
        return [
            self.problem(
                workload.field("consumedBTPServices", index),
                f"{name!r} is no service of the CAPApplication's spec.btp.services",
            )
            for workload in self.version.workloads
            for index, name in enumerate(workload.consumed_services)
            if name not in self.service_names
        ]

    def restart_policies(self) -> list[Problem]:
        problems = []
        for workload in self.version.workloads:
            policy = workload.definition.get("restartPolicy")
            if workload.is_deployment and policy not in (None, "Always"):
                problems.append(
                    self.problem(
                        workload.definition_path("restartPolicy"), "a Deployment's pods restart Always"
                    )
                )
            if workload.is_job and policy == "Always":
                problems.append(
                    self.problem(
                        workload.definition_path("restartPolicy"), "a Job's pods restart Never or OnFailure"
                    )
                )
        return problems

    def service_features(self) -> list[Problem]:
        """Stickiness and scraping need the workload's Service; a hash takes one source; HPA bounds."""
        problems = []
        for workload in self.version.deployments():
            ports = [p.name for p in workload.ports]
            for feature in ("stickiness", "monitoring.scrapeConfig"):
                if _nested(workload.definition, feature) is not None and not ports:
                    problems.append(
                        self.problem(
                            workload.definition_path(feature), "needs ports: the workload has no Service"
                        )
                    )
            port = _nested(workload.definition, "monitoring.scrapeConfig.port")
            if ports and port is not None and port not in ports:
                problems.append(
                    self.problem(
                        workload.definition_path("monitoring", "scrapeConfig", "port"),
                        f"{port!r} names no port of {workload.name} (its ports: {', '.join(ports)})",
                    )
                )
            hash_spec = _nested(workload.definition, "stickiness.hash")
            if isinstance(hash_spec, dict) and len(hash_spec) != 1:
                problems.append(
                    self.problem(
                        workload.definition_path("stickiness", "hash"), "takes exactly one of its fields"
                    )
                )
            problems += self._autoscaler_bounds(workload)
        return problems

    def _autoscaler_bounds(self, workload: Workload) -> list[Problem]:
        hpa = workload.definition.get("horizontalPodAutoscaler")
        if isinstance(hpa, dict) and int(hpa.get("minReplicas", 1)) > int(hpa["maxReplicas"]):
            return [
                self.problem(
                    workload.definition_path("horizontalPodAutoscaler", "minReplicas"),
                    "is more than maxReplicas",
                )
            ]
        return []

    def binding_volumes(self) -> list[Problem]:
        """Service-binding mode mounts each binding Secret as a volume named after its service."""
        if self.credentials_mode != CredentialsMode.SERVICE_BINDINGS:
            return []
        problems = []
        for workload in self.version.workloads:
            taken = {binding_volume_name(name) for name in workload.consumed_services}
            for index, volume in enumerate(workload.definition.get("volumes") or []):
                if volume.get("name") in taken:
                    problems.append(
                        self.problem(
                            workload.definition_path("volumes", index, "name"),
                            f"{volume.get('name')!r} is the volume of a service binding: rename it",
                        )
                    )
        return problems


def _environments(workload: Workload) -> list[tuple[tuple[str | int, ...], list[dict[str, object]]]]:
    """(path inside the definition, env list) of the workload's container and init containers."""
    found: list[tuple[tuple[str | int, ...], list[dict[str, object]]]] = [
        (("env",), list(workload.definition.get("env") or []))
    ]
    for index, container in enumerate(workload.definition.get("initContainers") or []):
        found.append((("initContainers", index, "env"), list(container.get("env") or [])))
    return found


def _nested(mapping: object, dotted: str) -> object:
    current = mapping
    for key in dotted.split("."):
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    return current


def destinations_entries(value: object) -> list[dict[str, object]] | None:
    """A user's `destinations` env value as a list of named objects, or None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    if not isinstance(parsed, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) for e in parsed
    ):
        return None
    return parsed
