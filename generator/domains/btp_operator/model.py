"""The BTP operator module's sources: BtpOperator and BtpOperatorConfig, and the module's names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.transforms.credentials import CredentialsPlan
from btp_gitops.generator.transforms.operator_config import OperatorSettings

APP = "btp-operator"
MODULE_NAME = "btp-operator"
MODULE_NAMESPACE = "kyma-system"
CR_NAME = "btpoperator"
RELEASE_NAME = "sap-btp-operator"
MANAGER_CONTAINER = "manager"
BTP_OPERATOR = ("operator.kyma-project.io/v1alpha1", "BtpOperator")
BTP_OPERATOR_CONFIG = ("btp-gitops.io/v1alpha1", "BtpOperatorConfig")
CONFIG_CHECKSUM_ANNOTATION = "btp-gitops.io/config-checksum"
# BTP Manager's deletion finalizer, which the controller's BtpOperator reconciler holds the module
# with (controller.btp_operator). The render puts it on the BtpOperator it writes, so that one
# pruned while the controller is down waits for the deprovisioning; the controller imports this
# constant, so the two cannot name different finalizers.
BTP_OPERATOR_FINALIZER = "operator.kyma-project.io/btp-manager"


@dataclass(frozen=True, slots=True)
class ModuleConfig:
    """A BtpOperatorConfig with its defaults applied and paths resolved."""

    source: SourceDocument
    chart: Path
    values_files: tuple[Path, ...]
    values: dict[str, Any]
    allow_empty_chart: bool  # spec.chart.allowEmpty: the chart may render no object
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
            allow_empty_chart=chart.get("allowEmpty", False) is True,
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


def where(source: SourceDocument) -> str:
    return f"{source.file}: document {source.document} ({source.ref})"
