"""The SAP BTP service operator module, rendered as BTP Manager would install it.

BTP Manager (https://github.com/kyma-project/btp-manager/tree/main/docs) installed the operator chart
into `kyma-system` for the
BtpOperator `kyma-system/btpoperator`, labelled every object as a module object, filled the
operator ConfigMap from the `sap-btp-manager` Secret, copied the credentials into the operator's
Secret and generated the webhook certificates. Rendering for Git keeps all of that except what
cannot live in Git: credentials become an ExternalSecret and certificates come from cert-manager
(or Gardener), with the CA injected in-cluster.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.charts import ChartRenderer, ChartRequest, RenderedChart
from btp_gitops.generator.core.errors import InvalidSpec, Problem, UsageError
from btp_gitops.generator.core.kinds import ScopeIndex
from btp_gitops.generator.core.objects import (
    KubeObject,
    Manifest,
    annotations_of,
    describe,
    kind_of,
    labels_of,
    pod_template,
)
from btp_gitops.generator.core.report import AppRender, Level, Note
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.domains.charts import render_chart_deterministically
from btp_gitops.generator.transforms.certificates import (
    CertificatePlan,
    issue_webhook_certificates_with_cert_manager,
)
from btp_gitops.generator.transforms.credentials import CredentialsPlan, reference_operator_credentials
from btp_gitops.generator.transforms.gardener_certificates import issue_webhook_certificates_with_gardener
from btp_gitops.generator.transforms.hooks import UNINSTALL_ONLY_HOOKS, drop_hook_phases
from btp_gitops.generator.transforms.metadata import (
    add_labels,
    add_pod_template_labels,
    set_default_namespace,
)
from btp_gitops.generator.transforms.operator_config import (
    OPERATOR_CONFIGMAP,
    OperatorSettings,
    apply_operator_settings,
)
from btp_gitops.generator.transforms.operator_secret import OperatorCredentials, install_operator_secret
from btp_gitops.generator.transforms.ordering import Stage, annotate_argocd_stage, annotate_argocd_sync_waves
from btp_gitops.generator.transforms.workloads import set_container_image

APP = "btp-operator"
MODULE_NAME = "btp-operator"
MODULE_NAMESPACE = "kyma-system"
CR_NAME = "btpoperator"
RELEASE_NAME = "sap-btp-operator"
MANAGER_CONTAINER = "manager"
BTP_OPERATOR = ("operator.kyma-project.io/v1alpha1", "BtpOperator")
BTP_OPERATOR_CONFIG = ("btp-gitops.io/v1alpha1", "BtpOperatorConfig")
CONFIG_CHECKSUM_ANNOTATION = "btp-gitops.io/config-checksum"
READS = (BTP_OPERATOR, BTP_OPERATOR_CONFIG)


@dataclass(frozen=True, slots=True)
class ModuleConfig:
    """A BtpOperatorConfig with its defaults applied and paths resolved."""

    source: SourceDocument
    chart: Path
    values_files: tuple[Path, ...]
    values: dict[str, Any]
    settings: OperatorSettings
    manager_image: str | None
    credentials: CredentialsPlan
    certificate_mode: str
    issuer: dict[str, str] | None

    @classmethod
    def from_source(cls, source: SourceDocument, bundled_chart: Path) -> ModuleConfig:
        """`bundled_chart` is the SAP BTP service operator chart shipped with btp-gitops, used when
        `spec.chart.path` names none."""
        spec = source.body["spec"]
        chart = spec.get("chart", {})
        credentials_namespace = spec.get("credentialsNamespace", MODULE_NAMESPACE)
        credentials = spec.get("credentials", {})
        secret = credentials.get("sourceSecret", {"name": "sap-btp-manager", "namespace": MODULE_NAMESPACE})
        store = credentials.get("secretStoreRef")
        certificates = spec.get("certificates", {})
        return cls(
            source=source,
            chart=source.path_of(chart["path"]) if chart.get("path") else bundled_chart,
            values_files=tuple(source.path_of(f) for f in chart.get("valuesFiles", [])),
            values=dict(chart.get("values", {})),
            settings=OperatorSettings(
                cluster_id=spec["clusterId"],
                credentials_namespace=credentials_namespace,
                enable_limited_cache=spec.get("enableLimitedCache", True),
            ),
            manager_image=spec.get("images", {}).get("manager"),
            credentials=CredentialsPlan(
                credentials_namespace=credentials_namespace,
                source_name=secret["name"],
                source_namespace=secret["namespace"],
                store_kind=store["kind"] if store else None,
                store_name=store["name"] if store else None,
                refresh_interval=credentials.get("refreshInterval", "1h"),
            ),
            certificate_mode=certificates.get("mode", "cert-manager"),
            issuer=certificates.get("issuerRef"),
        )


def module_labels(chart_version: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "btp-manager",
        "chart-version": chart_version,
        "kyma-project.io/module": MODULE_NAME,
    }


def _where(source: SourceDocument) -> str:
    return f"{source.file}: document {source.document} ({source.ref})"


def select_module_request(sources: SourceSet) -> tuple[SourceDocument | None, list[Note]]:
    """The BtpOperator BTP Manager would act on; every other one is reported, as the operator did."""
    accepted: SourceDocument | None = None
    notes = []
    for document in sources.of_kind(*BTP_OPERATOR):
        meta = document.body["metadata"]
        if meta.get("namespace") == MODULE_NAMESPACE and meta.get("name") == CR_NAME:
            accepted = document
        else:
            notes.append(
                Note(
                    Level.WARNING,
                    "WrongNamespaceOrName",
                    _where(document),
                    f"only {MODULE_NAMESPACE}/{CR_NAME} is rendered; this BtpOperator is ignored",
                )
            )
    return accepted, notes


def issuer_ref_problems(config: ModuleConfig) -> list[Problem]:
    """issuerRef fields the chosen certificate manager has no use for: ignoring them would issue
    from another issuer than the one the user meant."""
    issuer = config.issuer or {}
    unused: tuple[str, ...]
    if config.certificate_mode == "gardener":
        unused = ("kind", "group")
        why = "Gardener issuers are referenced by name and namespace; kind and group are for 'cert-manager'"
    else:
        unused = ("namespace",)
        why = "cert-manager issuers are referenced by name, kind and group; namespace is for 'gardener'"
    return [
        Problem(
            file=config.source.file,
            document=config.source.document,
            object_ref=config.source.ref,
            field_path=f"spec.certificates.issuerRef.{field}",
            message=why,
        )
        for field in unused
        if field in issuer
    ]


def select_module_config(sources: SourceSet, request: SourceDocument, bundled_chart: Path) -> ModuleConfig:
    configs = sources.of_kind(*BTP_OPERATOR_CONFIG)
    if len(configs) == 1:
        config = ModuleConfig.from_source(configs[0], bundled_chart)
        if config.certificate_mode == "self-signed":
            raise InvalidSpec(
                "self-signed certificates cannot be rendered into Git",
                [
                    Problem(
                        file=config.source.file,
                        document=config.source.document,
                        object_ref=config.source.ref,
                        field_path="spec.certificates.mode",
                        message="'self-signed' would put a CA private key into the repository; use "
                        "'cert-manager' or 'gardener' for render, and keep 'self-signed' for "
                        "`btp-gitops post-render`, whose output goes to the cluster",
                    )
                ],
            )
        if problems := issuer_ref_problems(config):
            raise InvalidSpec("the webhook certificate issuer cannot be rendered", problems)
        return config
    if not configs:
        problem = Problem(
            file=request.file,
            document=request.document,
            object_ref=request.ref,
            message="no BtpOperatorConfig (btp-gitops.io/v1alpha1) in the sources: add one with the "
            "cluster id",
        )
    else:
        problem = Problem(
            file=request.file,
            document=request.document,
            object_ref=request.ref,
            message="more than one BtpOperatorConfig: " + ", ".join(_where(c) for c in configs),
        )
    raise InvalidSpec("cannot render the BTP operator module", [problem])


def chart_request(config: ModuleConfig) -> ChartRequest:
    return ChartRequest(
        chart=config.chart,
        release=RELEASE_NAME,
        namespace=MODULE_NAMESPACE,
        values=config.values,
        values_files=config.values_files,
        requested_by=f"{_where(config.source)}: spec.chart.path",
        source=config.source,
    )


def config_checksum(manifests: list[Manifest]) -> str | None:
    """sha256 over the final operator ConfigMap data, so a changed cluster id rolls the operator."""
    for manifest in manifests:
        if (
            kind_of(manifest.body) == "ConfigMap"
            and manifest.body["metadata"].get("name") == OPERATOR_CONFIGMAP
        ):
            data = manifest.body.get("data") or {}
            return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return None


def annotate_config_checksum(manifests: list[Manifest]) -> list[Manifest]:
    checksum = config_checksum(manifests)
    if checksum is None:
        return manifests
    for manifest in manifests:
        template = pod_template(manifest.body)
        if kind_of(manifest.body) == "Deployment" and template is not None:
            annotations_of(template)[CONFIG_CHECKSUM_ANNOTATION] = checksum
    return manifests


def certificate_plan(config: ModuleConfig) -> CertificatePlan:
    issuer = config.issuer or {}
    return CertificatePlan(
        prefix=RELEASE_NAME,
        namespace=MODULE_NAMESPACE,
        issuer_name=issuer.get("name"),
        issuer_kind=issuer.get("kind", "Issuer"),
        issuer_group=issuer.get("group", "cert-manager.io"),
    )


def requested_resource(document: SourceDocument) -> Manifest:
    """The BtpOperator itself, as the user wrote it minus status and server-set metadata."""
    body: KubeObject = {key: value for key, value in document.body.items() if key != "status"}
    meta = {k: v for k, v in body["metadata"].items() if k in {"name", "namespace", "labels", "annotations"}}
    body["metadata"] = meta
    return Manifest(body, f"{document.file}#{document.document}")


def render_module_objects(
    config: ModuleConfig, rendered: RenderedChart, manifests: list[Manifest]
) -> AppRender:
    """Everything the module needs in Git: the chart's objects, transformed as BTP Manager did."""
    manifests, excluded = drop_hook_phases(manifests, UNINSTALL_ONLY_HOOKS)
    notes = [
        Note(
            Level.INFO,
            "ExcludedHook",
            f"{m.origin} ({describe(m.body)})",
            "uninstall-only Helm hook left out of the GitOps output (listed in excluded/to-exclude.yml)",
        )
        for m in excluded
    ]
    manifests = apply_operator_settings(manifests, config.settings)
    if config.manager_image:
        manifests = set_container_image(manifests, MANAGER_CONTAINER, config.manager_image)
    labels = module_labels(rendered.version)
    manifests = reference_operator_credentials(
        manifests, dataclasses.replace(config.credentials, module_labels=tuple(sorted(labels.items())))
    )
    plan = certificate_plan(config)
    if config.certificate_mode == "gardener":
        issuer_namespace = (config.issuer or {}).get("namespace")
        manifests = issue_webhook_certificates_with_gardener(manifests, plan, issuer_namespace)
    else:
        manifests = issue_webhook_certificates_with_cert_manager(manifests, plan)
    manifests = set_default_namespace(manifests, MODULE_NAMESPACE, ScopeIndex())
    manifests = add_labels(manifests, labels)
    manifests = add_pod_template_labels(manifests, {"kyma-project.io/module": MODULE_NAME})
    manifests = annotate_config_checksum(manifests)
    # The chart's CRDs sync before the objects that use them (see generator.transforms.ordering).
    manifests = annotate_argocd_sync_waves(manifests)
    return AppRender(APP, manifests, notes)


def render_btp_operator(sources: SourceSet, engine: ChartRenderer, bundled_chart: Path) -> list[AppRender]:
    """BtpOperator + BtpOperatorConfig -> the `btp-operator` app, or nothing when not requested.

    `bundled_chart` is the chart rendered when the BtpOperatorConfig names none."""
    request, notes = select_module_request(sources)
    if request is None:
        configs = sources.of_kind(*BTP_OPERATOR_CONFIG)
        notes += [
            Note(
                Level.WARNING,
                "NoBtpOperator",
                _where(c),
                f"no BtpOperator {MODULE_NAMESPACE}/{CR_NAME}; ignored",
            )
            for c in configs
        ]
        return [AppRender(APP, [], notes)] if notes else []
    config = select_module_config(sources, request, bundled_chart)
    rendered, manifests, pin_notes = render_chart_deterministically(engine, chart_request(config))
    app = render_module_objects(config, rendered, manifests)
    # The BtpOperator syncs after the operator and, pruned in reverse order, is deleted before it:
    # its deletion finalizer deprovisions ServiceInstances while the operator still serves them.
    app.manifests.append(annotate_argocd_stage(requested_resource(request), Stage.CUSTOM_RESOURCES))
    app.notes = notes + pin_notes + app.notes
    return [app]


# --- post-render: the same module transforms over a stream Helm rendered -------------------------

CertificateStep = Callable[[list[Manifest]], tuple[list[Manifest], list[Note]]]
_CHART_LABEL = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d+\.\d+\.\d+(?:[-+].*)?)$")


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """What post-render knows that render reads from BtpOperatorConfig."""

    issue_certificates: CertificateStep
    namespace: str = MODULE_NAMESPACE
    chart_version: str | None = None  # else read from the `helm.sh/chart` label
    credentials: OperatorCredentials | None = None
    enable_limited_cache: bool = True
    manager_image: str | None = None


def chart_version_from_labels(manifests: list[Manifest]) -> str | None:
    """The version in `helm.sh/chart: <name>-<version>`, which Helm charts put on every object."""
    for manifest in manifests:
        match = _CHART_LABEL.match(labels_of(manifest.body).get("helm.sh/chart", ""))
        if match:
            return match["version"]
    return None


def post_render_module_objects(
    manifests: list[Manifest], settings: StreamSettings
) -> tuple[list[Manifest], list[Note]]:
    """BTP Manager's runtime preparation over a Helm-rendered stream, hooks included, in place.

    Unlike render, nothing is dropped: Helm runs its own hooks. With credentials, the operator
    Secret and ConfigMap get their values as BTP Manager set them; without, the chart's own stay.
    """
    version = settings.chart_version or chart_version_from_labels(manifests)
    if version is None:
        raise UsageError(
            "cannot tell the module's chart version: no object carries a helm.sh/chart label; "
            "pass --chart-version"
        )
    if settings.credentials is not None:
        operator = OperatorSettings(
            cluster_id=settings.credentials.cluster_id,
            credentials_namespace=settings.credentials.credentials_namespace,
            enable_limited_cache=settings.enable_limited_cache,
        )
        manifests = apply_operator_settings(manifests, operator)
        manifests = install_operator_secret(manifests, settings.credentials)
    if settings.manager_image:
        manifests = set_container_image(manifests, MANAGER_CONTAINER, settings.manager_image)
    manifests, notes = settings.issue_certificates(manifests)
    manifests = set_default_namespace(manifests, settings.namespace, ScopeIndex())
    manifests = add_labels(manifests, module_labels(version))
    manifests = add_pod_template_labels(manifests, {"kyma-project.io/module": MODULE_NAME})
    manifests = annotate_config_checksum(manifests)
    return manifests, notes
