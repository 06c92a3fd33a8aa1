"""The SAP BTP service operator module, rendered as BTP Manager would install it.

BTP Manager (https://github.com/kyma-project/btp-manager/tree/main/docs) installed the operator
chart into `kyma-system` for the BtpOperator `kyma-system/btpoperator`, labelled every object as a
module object, filled the operator ConfigMap from the `sap-btp-manager` Secret, copied the
credentials into the operator's Secret and generated the webhook certificates. Rendering for Git
keeps all of that except what cannot live in Git: credentials become an ExternalSecret and
certificates come from cert-manager (or Gardener), with the CA injected in-cluster.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from btp_gitops.generator.charts.renderer import ChartRenderer, ChartRequest, RenderedChart
from btp_gitops.generator.core.kinds import ScopeIndex
from btp_gitops.generator.core.objects import (
    KubeObject,
    Manifest,
    annotations_of,
    kind_of,
    pod_template,
)
from btp_gitops.generator.core.report import AppRender, Level, Note
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.domains.btp_operator.model import (
    APP,
    BTP_OPERATOR_CONFIG,
    BTP_OPERATOR_FINALIZER,
    CONFIG_CHECKSUM_ANNOTATION,
    CR_NAME,
    MANAGER_CONTAINER,
    MODULE_NAME,
    MODULE_NAMESPACE,
    RELEASE_NAME,
    ModuleConfig,
    module_labels,
    where,
)
from btp_gitops.generator.domains.btp_operator.validation import select_module_config, select_module_request
from btp_gitops.generator.transforms.certificates import (
    CertificatePlan,
    issue_webhook_certificates_with_cert_manager,
)
from btp_gitops.generator.transforms.credentials import reference_operator_credentials
from btp_gitops.generator.transforms.gardener_certificates import issue_webhook_certificates_with_gardener
from btp_gitops.generator.transforms.hooks import drop_uninstall_hooks
from btp_gitops.generator.transforms.metadata import (
    add_finalizer,
    add_labels,
    add_pod_template_labels,
    set_default_namespace,
)
from btp_gitops.generator.transforms.operator_config import (
    OPERATOR_CONFIGMAP,
    apply_operator_settings,
)
from btp_gitops.generator.transforms.ordering import Stage, annotate_argocd_stage, annotate_argocd_sync_waves
from btp_gitops.generator.transforms.workloads import set_container_image


def chart_values(config: ModuleConfig) -> dict[str, Any]:
    """The chart's inline values plus the config's cluster id as `cluster.id` (the SAP BTP service
    operator chart's value for CLUSTER_ID): the chart then renders the id the operator gets instead
    of a random `uuidv4` that a later step replaces, so nothing is pinned or reported as volatile."""
    cluster = config.values.get("cluster")
    cluster_values = dict(cluster) if isinstance(cluster, dict) else {}
    cluster_values["id"] = config.settings.cluster_id
    return {**config.values, "cluster": cluster_values}


def chart_request(config: ModuleConfig) -> ChartRequest:
    return ChartRequest(
        chart=config.chart,
        release=RELEASE_NAME,
        namespace=MODULE_NAMESPACE,
        values=chart_values(config),
        values_files=config.values_files,
        requested_by=f"{where(config.source)}: spec.chart.path",
        source=config.source,
        allow_empty=config.allow_empty_chart,
    )


def config_checksum(manifests: list[Manifest]) -> str | None:
    """sha256 over the final operator ConfigMap data, so a changed cluster id rolls the operator."""
    for manifest in manifests:
        if (
            kind_of(manifest.body) == "ConfigMap"
            and manifest.body["metadata"].get("name") == OPERATOR_CONFIGMAP
        ):
            # Imported here: post-render loads this module on every Helm install, and hashlib loads
            # OpenSSL (~4 MiB of its peak memory), which only a stream holding this ConfigMap needs.
            import hashlib  # noqa: PLC0415
            import json  # noqa: PLC0415

            data = manifest.body.get("data") or {}
            # A plain `1:` or `on:` key is read as an integer or a boolean: hashed as the text the
            # API server stores it under (json.dumps writes 1 and True as "1" and "true").
            text_keys = {
                key if isinstance(key, str) else json.dumps(key): value for key, value in data.items()
            }
            return hashlib.sha256(json.dumps(text_keys, sort_keys=True).encode()).hexdigest()
    return None


def annotate_config_checksum(manifests: list[Manifest]) -> list[Manifest]:
    return annotate_with_checksum(manifests, config_checksum(manifests))


def annotate_with_checksum(manifests: list[Manifest], checksum: str | None) -> list[Manifest]:
    """Put `checksum` (of the operator ConfigMap, wherever it is) on every Deployment's pods."""
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
    """The BtpOperator itself, as the user wrote it minus status and server-set metadata, plus the
    deletion finalizer: held from its creation, one pruned while the controller is down waits for
    the controller's deprovisioning instead of leaving the service instances behind."""
    body: KubeObject = {key: value for key, value in document.body.items() if key != "status"}
    meta = {k: v for k, v in body["metadata"].items() if k in {"name", "namespace", "labels", "annotations"}}
    body["metadata"] = meta
    return add_finalizer(Manifest(body, f"{document.file}#{document.document}"), BTP_OPERATOR_FINALIZER)


def render_module_objects(
    config: ModuleConfig, rendered: RenderedChart, manifests: list[Manifest]
) -> AppRender:
    """Everything the module needs in Git: the chart's objects, transformed as BTP Manager did."""
    manifests, notes = drop_uninstall_hooks(manifests)
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
                where(c),
                f"no BtpOperator {MODULE_NAMESPACE}/{CR_NAME}; ignored",
            )
            for c in configs
        ]
        return [AppRender(APP, [], notes)] if notes else []
    config = select_module_config(sources, request, bundled_chart)
    # Imported here: post-render, which loads this module too, renders no chart, and these load
    # hashlib (OpenSSL: ~4 MiB of post-render's peak memory), uuid and platform (see config_checksum).
    from btp_gitops.generator.charts.deterministic import (  # noqa: PLC0415
        pinned_value_notes,
        render_chart_deterministically,
    )
    from btp_gitops.generator.transforms.volatile import still_pinned  # noqa: PLC0415

    rendered, manifests, pinned = render_chart_deterministically(engine, chart_request(config))
    app = render_module_objects(config, rendered, manifests)
    pin_notes = pinned_value_notes(still_pinned(pinned, app.manifests))
    # The BtpOperator syncs after the operator and, pruned in reverse order, is deleted before it:
    # its deletion finalizer deprovisions ServiceInstances while the operator still serves them.
    app.manifests.append(annotate_argocd_stage(requested_resource(request), Stage.CUSTOM_RESOURCES))
    app.notes = notes + pin_notes + app.notes
    return [app]
