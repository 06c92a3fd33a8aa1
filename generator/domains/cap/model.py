"""Typed views of CAPApplication, CAPApplicationVersion, Domain and ClusterDomain.

The documents have passed their schemas in schemas/ before they get here, so the views only read
fields and apply CAP Operator's defaults (https://sap.github.io/cap-operator/docs/usage/resources/);
rules spanning fields or
documents live in `validation`. Kubernetes types the CRDs pass through (probes, resources,
volumes, ...) stay plain mappings and are copied into the rendered objects as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from btp_gitops.generator.core.objects import get_path
from btp_gitops.generator.core.sources import SourceDocument

API_VERSION = "sme.sap.com/v1alpha1"
CAP_APPLICATION = (API_VERSION, "CAPApplication")
CAP_APPLICATION_VERSION = (API_VERSION, "CAPApplicationVersion")
DOMAIN = (API_VERSION, "Domain")
CLUSTER_DOMAIN = (API_VERSION, "ClusterDomain")

# The deletion finalizers of the controller (controller.cap.deletion), CAP Operator's names. The
# render puts them on the objects it writes, so that the API server holds one pruned while the
# controller is not running until the controller has deprovisioned its tenants; the controller
# imports these very constants, so the two cannot name different finalizers.
CAP_APPLICATION_FINALIZER = "sme.sap.com/capapplication"
CAP_APPLICATION_VERSION_FINALIZER = "sme.sap.com/capapplicationversion"

# Our own annotations on the source objects, for what CAP Operator read from its installation.
CREDENTIALS_ANNOTATION = "btp-gitops.io/credentials"
CERTIFICATE_MANAGER_ANNOTATION = "btp-gitops.io/certificate-manager"
DNS_MANAGER_ANNOTATION = "btp-gitops.io/dns-manager"
INGRESS_NAMESPACE_ANNOTATION = "btp-gitops.io/ingress-namespace"
# The namespace CAP Operator ran in: it named a ClusterDomain's TLS Secret after it.
CAP_OPERATOR_NAMESPACE_ANNOTATION = "btp-gitops.io/cap-operator-namespace"
# On a CAPApplicationVersion whose Deployments CAP Operator created: the version's
# `metadata.generation` then, which CAP Operator wrote into their pod selectors
# (`sme.sap.com/owner-generation`). A Deployment's selector cannot change, so a render keeps it.
CAP_OPERATOR_GENERATION_ANNOTATION = "btp-gitops.io/cap-operator-generation"
# CAP Operator's: the commonName of a Domain's cert-manager Certificate (none without it).
COMMON_NAME_ANNOTATION = "sme.sap.com/cert-manager-common-name"
DEFAULT_INGRESS_NAMESPACE = "istio-system"
DEFAULT_CAP_OPERATOR_NAMESPACE = "cap-operator-system"  # where every install method of CAP Operator puts it


class DeploymentType(StrEnum):
    CAP = "CAP"
    ROUTER = "Router"
    ADDITIONAL = "Additional"
    SERVICE = "Service"


class JobType(StrEnum):
    CONTENT = "Content"
    TENANT_OPERATION = "TenantOperation"
    CUSTOM_TENANT_OPERATION = "CustomTenantOperation"


TENANT_JOB_TYPES = frozenset({JobType.TENANT_OPERATION, JobType.CUSTOM_TENANT_OPERATION})


class TenantOperation(StrEnum):
    PROVISIONING = "provisioning"
    UPGRADE = "upgrade"
    DEPROVISIONING = "deprovisioning"


class CredentialsMode(StrEnum):
    """How workloads get their service credentials without any of them in Git (README: CAP)."""

    VCAP = "vcap"  # VCAP_SERVICES assembled in the cluster by an ExternalSecret
    SERVICE_BINDINGS = "service-bindings"  # each binding Secret mounted, SERVICE_BINDING_ROOT set


class CertificateManager(StrEnum):
    GARDENER = "gardener"
    CERT_MANAGER = "cert-manager"


class DnsManager(StrEnum):
    """Who writes a domain's DNS records: Gardener's DNS controller from DNSEntries, or nothing
    the render makes (CAP Operator's `DNS_MANAGER=kubernetes`, where `dnsMode` is ignored)."""

    GARDENER = "gardener"
    KUBERNETES = "kubernetes"


class TlsMode(StrEnum):
    SIMPLE = "Simple"
    MUTUAL = "Mutual"
    OPTIONAL_MUTUAL = "OptionalMutual"


class DnsMode(StrEnum):
    NONE = "None"
    WILDCARD = "Wildcard"
    SUBDOMAIN = "Subdomain"
    CUSTOM = "Custom"


def _text(body: Any, *path: str | int) -> str:
    value = get_path(body, *path)
    return str(value) if value is not None else ""


def _strings(body: Any, *path: str | int) -> tuple[str, ...]:
    value = get_path(body, *path)
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def _mapping(body: Any, *path: str | int) -> Mapping[str, Any]:
    value = get_path(body, *path)
    return value if isinstance(value, dict) else {}


def _annotation(source: SourceDocument, key: str) -> str:
    return _text(source.body, "metadata", "annotations", key)


# --- CAPApplication --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BtpService:
    name: str
    secret: str
    service_class: str


@dataclass(frozen=True, slots=True)
class DomainRef:
    kind: str  # Domain | ClusterDomain
    name: str


@dataclass(frozen=True, slots=True)
class Provider:
    sub_domain: str
    tenant_id: str


@dataclass(frozen=True, slots=True)
class Application:
    source: SourceDocument
    name: str
    namespace: str
    btp_app_name: str
    provider_subaccount_id: str
    global_account_id: str
    provider: Provider | None
    services: tuple[BtpService, ...]
    domain_refs: tuple[DomainRef, ...]
    rollout_on_credential_update: bool
    # CAP Operator's services-only application (no tenants, no tenant operations): no provider,
    # and its first version has only Service deployments and Content jobs. Without a provider that
    # is the versions' to say, so the catalog sets it (catalog.application_mode); until then, and
    # for an application without versions, it is "no provider".
    services_only: bool = False

    @property
    def account(self) -> str:
        """The account half of the identity: providerSubaccountId, else the deprecated globalAccountId."""
        return self.provider_subaccount_id or self.global_account_id

    @property
    def credentials_mode(self) -> str:
        return _annotation(self.source, CREDENTIALS_ANNOTATION) or CredentialsMode.VCAP

    @property
    def legacy_domains(self) -> Mapping[str, Any]:
        """The deprecated `spec.domains`, empty when unset."""
        return _mapping(self.source.body, "spec", "domains")

    def service(self, name: str) -> BtpService | None:
        return next((s for s in self.services if s.name == name), None)

    @classmethod
    def from_source(cls, source: SourceDocument) -> Application:
        spec = _mapping(source.body, "spec")
        provider = _provider(spec.get("provider"))
        return cls(
            source=source,
            name=_text(source.body, "metadata", "name"),
            namespace=_text(source.body, "metadata", "namespace"),
            btp_app_name=_text(spec, "btpAppName"),
            provider_subaccount_id=_text(spec, "providerSubaccountId"),
            global_account_id=_text(spec, "globalAccountId"),
            provider=provider,
            services=tuple(
                BtpService(_text(s, "name"), _text(s, "secret"), _text(s, "class"))
                for s in get_path(spec, "btp", "services") or []
            ),
            domain_refs=tuple(
                DomainRef(_text(r, "kind"), _text(r, "name")) for r in spec.get("domainRefs") or []
            ),
            rollout_on_credential_update=bool(spec.get("rolloutOnCredentialUpdate", False)),
            services_only=provider is None,
        )


def _provider(written: object) -> Provider | None:
    """`spec.provider`, None when absent or empty (`provider: {}`: no provider tenant, as CAP
    Operator reads it since the section became optional, even for multi-tenant applications)."""
    if not isinstance(written, dict):
        return None
    provider = Provider(_text(written, "subDomain"), _text(written, "tenantId"))
    return provider if provider.sub_domain or provider.tenant_id else None


# --- CAPApplicationVersion ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Port:
    name: str
    port: int
    app_protocol: str | None = None
    network_policy: str = "Application"
    router_destination_name: str | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Port:
        return cls(
            name=str(spec["name"]),
            port=int(spec["port"]),
            app_protocol=spec.get("appProtocol"),
            network_policy=str(spec.get("networkPolicy") or "Application"),
            router_destination_name=spec.get("routerDestinationName"),
        )


# Ports a workload gets when it declares none, as CAP Operator gives them: a CAP workload serves
# `srv-api` on 4004, a Router listens on 5000.
DEFAULT_PORTS = {
    DeploymentType.CAP: (Port("server-svc-port", 4004, router_destination_name="srv-api"),),
    DeploymentType.ROUTER: (Port("router-svc-port", 5000),),
}
_DEFAULT_PORTS_BY_TYPE: Mapping[str, tuple[Port, ...]] = {str(k): v for k, v in DEFAULT_PORTS.items()}


@dataclass(frozen=True, slots=True)
class Workload:
    """One entry of `spec.workloads`: a deployment or a job, with its definition as written."""

    index: int
    name: str
    consumed_services: tuple[str, ...]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    definition_field: str  # "deploymentDefinition" or "jobDefinition" (or "" when neither is set)
    definition: Mapping[str, Any]

    @property
    def is_deployment(self) -> bool:
        return self.definition_field == "deploymentDefinition"

    @property
    def is_job(self) -> bool:
        return self.definition_field == "jobDefinition"

    @property
    def type(self) -> str:
        return str(self.definition.get("type", ""))

    @property
    def declared_ports(self) -> tuple[Port, ...]:
        return tuple(Port.from_spec(p) for p in self.definition.get("ports") or [])

    @property
    def ports(self) -> tuple[Port, ...]:
        """The ports its Service exposes: declared ones, else CAP Operator's defaults for its type."""
        if not self.is_deployment:
            return ()
        return self.declared_ports or _DEFAULT_PORTS_BY_TYPE.get(self.type, ())

    def field(self, *path: str | int) -> str:
        """The field path of something in this workload, for problems."""
        text = f"spec.workloads[{self.index}]"
        for step in path:
            text += f"[{step}]" if isinstance(step, int) else f".{step}"
        return text

    def definition_path(self, *path: str | int) -> str:
        return self.field(self.definition_field, *path)

    @classmethod
    def from_spec(cls, index: int, spec: Mapping[str, Any]) -> Workload:
        field = next(
            (f for f in ("deploymentDefinition", "jobDefinition") if isinstance(spec.get(f), dict)), ""
        )
        return cls(
            index=index,
            name=str(spec.get("name", "")),
            consumed_services=_strings(spec, "consumedBTPServices"),
            labels=dict(_mapping(spec, "labels")),
            annotations=dict(_mapping(spec, "annotations")),
            definition_field=field,
            definition=_mapping(spec, field) if field else {},
        )


@dataclass(frozen=True, slots=True)
class TenantOperationStep:
    workload: str
    continue_on_failure: bool = False
    index: int = 0  # position in its phase's list, for problems


@dataclass(frozen=True, slots=True)
class ExposureRoute:
    workload: str
    port: int
    path: str = "/"


@dataclass(frozen=True, slots=True)
class ServiceExposure:
    index: int
    sub_domain: str
    routes: tuple[ExposureRoute, ...]


@dataclass(frozen=True, slots=True)
class Version:
    source: SourceDocument
    name: str
    namespace: str
    application: str  # spec.capApplicationInstance
    version: str
    registry_secrets: tuple[str, ...]
    workloads: tuple[Workload, ...]
    tenant_operations: Mapping[TenantOperation, tuple[TenantOperationStep, ...]] | None
    content_jobs: tuple[str, ...]
    service_exposures: tuple[ServiceExposure, ...]

    def workload(self, name: str) -> Workload | None:
        return next((w for w in self.workloads if w.name == name), None)

    @property
    def cap_operator_generation(self) -> str:
        """The generation at which CAP Operator created this version's Deployments, as written
        (validation checks it is a positive integer), or "" for a version btp-gitops renders anew."""
        return _annotation(self.source, CAP_OPERATOR_GENERATION_ANNOTATION)

    @property
    def services_shaped(self) -> bool:
        """Only Service deployments and Content jobs: what makes CAP Operator treat an application
        without provider as services-only."""
        return all(
            w.type == (DeploymentType.SERVICE if w.is_deployment else JobType.CONTENT)
            for w in self.workloads
            if w.is_deployment or w.is_job
        )

    def deployments(self) -> list[Workload]:
        return [w for w in self.workloads if w.is_deployment]

    def jobs_of_type(self, job_type: JobType) -> list[Workload]:
        return [w for w in self.workloads if w.is_job and w.type == job_type]

    def deployments_of_type(self, deployment_type: DeploymentType) -> list[Workload]:
        return [w for w in self.workloads if w.is_deployment and w.type == deployment_type]

    @property
    def router(self) -> Workload | None:
        """The Router workload, whose Service tenants' VirtualServices route to (first port)."""
        routers = self.deployments_of_type(DeploymentType.ROUTER)
        return routers[0] if routers else None

    def content_jobs_in_order(self) -> list[Workload]:
        """Content jobs in the order they run: `contentJobs` when given, else as listed."""
        if not self.content_jobs:
            return self.jobs_of_type(JobType.CONTENT)
        found = [self.workload(name) for name in self.content_jobs]
        return [w for w in found if w is not None]

    def tenant_operation_steps(self, operation: TenantOperation) -> tuple[TenantOperationStep, ...]:
        """The jobs a tenant operation runs on this version (CAPTenantOperation steps, issue #6).

        Without `tenantOperations` for the phase, the single step is the first TenantOperation job.
        A Content job listed among the steps is left out, as CAP Operator leaves it out (it runs
        once per version, never per tenant): `ignored_content_steps` lists them for the report.
        """
        listed = (self.tenant_operations or {}).get(operation)
        if listed:
            return tuple(step for step in listed if not self._is_content_job(step.workload))
        first = self.jobs_of_type(JobType.TENANT_OPERATION)
        return (TenantOperationStep(first[0].name),) if first else ()

    def ignored_content_steps(self) -> list[tuple[TenantOperation, TenantOperationStep]]:
        """Steps of `tenantOperations` that name a Content job, which tenant operations skip."""
        return [
            (operation, step)
            for operation, steps in (self.tenant_operations or {}).items()
            for step in steps
            if self._is_content_job(step.workload)
        ]

    def _is_content_job(self, name: str) -> bool:
        workload = self.workload(name)
        return workload is not None and workload.is_job and workload.type == JobType.CONTENT

    def exposed_workloads(self) -> set[str]:
        """Workloads that receive traffic from the ingress gateway: the Router and exposure targets."""
        names = {route.workload for exposure in self.service_exposures for route in exposure.routes}
        return names | {w.name for w in self.deployments_of_type(DeploymentType.ROUTER)}

    @classmethod
    def from_source(cls, source: SourceDocument) -> Version:
        spec = _mapping(source.body, "spec")
        return cls(
            source=source,
            name=_text(source.body, "metadata", "name"),
            namespace=_text(source.body, "metadata", "namespace"),
            application=_text(spec, "capApplicationInstance"),
            version=_text(spec, "version"),
            registry_secrets=_strings(spec, "registrySecrets"),
            workloads=tuple(Workload.from_spec(i, w) for i, w in enumerate(spec.get("workloads") or [])),
            tenant_operations=_tenant_operations(spec.get("tenantOperations")),
            content_jobs=_strings(spec, "contentJobs"),
            service_exposures=tuple(
                _service_exposure(i, e) for i, e in enumerate(spec.get("serviceExposures") or [])
            ),
        )


def _tenant_operations(written: object) -> dict[TenantOperation, tuple[TenantOperationStep, ...]] | None:
    """`spec.tenantOperations` by phase; None when unset (each phase then runs its default step)."""
    if not isinstance(written, dict):
        return None
    return {
        operation: tuple(
            TenantOperationStep(str(step["workloadName"]), bool(step.get("continueOnFailure")), index)
            for index, step in enumerate(written[operation.value])
        )
        for operation in TenantOperation
        if operation.value in written
    }


def _service_exposure(index: int, written: Mapping[str, Any]) -> ServiceExposure:
    routes = tuple(
        ExposureRoute(str(r["workloadName"]), int(r["port"]), str(r.get("path") or "/"))
        for r in written["routes"]
    )
    return ServiceExposure(index=index, sub_domain=str(written["subDomain"]), routes=routes)


# --- Domain and ClusterDomain ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DnsTemplate:
    name: str
    target: str


@dataclass(frozen=True, slots=True)
class Domain:
    """A Domain or ClusterDomain: written as one, or implied by a CAPApplication's deprecated `domains`.

    `field` is where the domain's settings sit in `source` ("spec" for a Domain document,
    "spec.domains.primary" for one a CAPApplication implies), so problems point at the right place.
    """

    kind: str  # Domain | ClusterDomain
    name: str
    namespace: str  # "" for a ClusterDomain
    host: str
    ingress_selector: Mapping[str, str]
    tls_mode: str
    dns_mode: str
    dns_templates: tuple[DnsTemplate, ...]
    dns_target: str
    additional_ca_certificate: str
    issuer_ref: Mapping[str, str]  # certConfig.certManager.issuerRef, empty when unset
    certificate_manager: str
    ingress_namespace: str
    source: SourceDocument
    field: str
    implied: bool = False
    common_name: str = ""  # annotation sme.sap.com/cert-manager-common-name
    dns_manager: str = DnsManager.GARDENER  # annotation btp-gitops.io/dns-manager

    @property
    def makes_dns_entries(self) -> bool:
        """Whether the domain's `dnsMode` gives DNSEntries: only with Gardener's DNS controller, as
        CAP Operator creates none under any other DNS manager."""
        return self.dns_manager == DnsManager.GARDENER

    @property
    def is_cluster_domain(self) -> bool:
        return self.kind == "ClusterDomain"

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    @property
    def cap_operator_namespace(self) -> str:
        """Where CAP Operator kept a ClusterDomain's sub-resources (`btp-gitops.io/cap-operator-namespace`,
        default `cap-operator-system`): its TLS Secret's name starts with it."""
        return _annotation(self.source, CAP_OPERATOR_NAMESPACE_ANNOTATION) or DEFAULT_CAP_OPERATOR_NAMESPACE

    def field_path(self, name: str) -> str:
        return f"{self.field}.{name}"

    @classmethod
    def from_source(cls, source: SourceDocument) -> Domain:
        spec = _mapping(source.body, "spec")
        templates = spec.get("dnsTemplates") or []
        issuer = get_path(spec, "certConfig", "certManager", "issuerRef")
        return cls(
            kind=source.kind,
            name=_text(source.body, "metadata", "name"),
            namespace="" if source.kind == "ClusterDomain" else _text(source.body, "metadata", "namespace"),
            host=_text(spec, "domain"),
            ingress_selector=dict(_mapping(spec, "ingressSelector")),
            tls_mode=_text(spec, "tlsMode") or TlsMode.SIMPLE,
            dns_mode=_text(spec, "dnsMode") or DnsMode.NONE,
            dns_templates=tuple(DnsTemplate(str(t["name"]), str(t["target"])) for t in templates),
            dns_target=_text(spec, "dnsTarget"),
            additional_ca_certificate=_text(spec, "certConfig", "additionalCACertificate"),
            issuer_ref=dict(issuer) if isinstance(issuer, dict) else {},
            certificate_manager=_certificate_manager(source, bool(issuer)),
            ingress_namespace=_annotation(source, INGRESS_NAMESPACE_ANNOTATION) or DEFAULT_INGRESS_NAMESPACE,
            source=source,
            field="spec",
            common_name=_annotation(source, COMMON_NAME_ANNOTATION),
            dns_manager=_annotation(source, DNS_MANAGER_ANNOTATION) or DnsManager.GARDENER,
        )


def _certificate_manager(source: SourceDocument, has_cert_manager_config: bool) -> str:
    """Annotated, else cert-manager when its issuer is configured, else Gardener (CAP Operator's default)."""
    chosen = _annotation(source, CERTIFICATE_MANAGER_ANNOTATION)
    if chosen:
        return chosen
    return CertificateManager.CERT_MANAGER if has_cert_manager_config else CertificateManager.GARDENER
