"""The BTP operator's ConfigMap `sap-btp-operator-config`, as BTP Manager filled it."""

from __future__ import annotations

from dataclasses import dataclass

from btp_gitops.generator.core.objects import Manifest, kind_of, name_of

OPERATOR_CONFIGMAP = "sap-btp-operator-config"


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    cluster_id: str
    credentials_namespace: str
    enable_limited_cache: bool = True

    def configmap_data(self) -> dict[str, str]:
        return {
            "CLUSTER_ID": self.cluster_id,
            "RELEASE_NAMESPACE": self.credentials_namespace,
            "MANAGEMENT_NAMESPACE": self.credentials_namespace,
            "ENABLE_LIMITED_CACHE": "true" if self.enable_limited_cache else "false",
        }


def apply_operator_settings(manifests: list[Manifest], settings: OperatorSettings) -> list[Manifest]:
    """Set the four operator keys in the ConfigMap; other keys the chart put there are kept."""
    for manifest in manifests:
        if kind_of(manifest.body) == "ConfigMap" and name_of(manifest.body) == OPERATOR_CONFIGMAP:
            data = manifest.body.get("data")
            if not isinstance(data, dict):
                data = {}
                manifest.body["data"] = data
            data.update(settings.configmap_data())
    return manifests
