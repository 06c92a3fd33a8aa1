"""The kinds `btp-gitops import` reads from a cluster or a dump, and the one Secret it reads by name.

Each kind is listed through its plural (the API path), namespaced or not. The Secret
`kyma-system/sap-btp-manager` is the only Secret read, and only by name: BTP Manager keeps its
non-secret settings (cluster id, namespace, flags) next to the credentials there, and no other
Secret is ever listed or read. In a dump directory a Secret is passed over in the same way unless
it is that one.
"""

from __future__ import annotations

from dataclasses import dataclass

CAP_GROUP = "sme.sap.com"
KYMA_GROUP = "operator.kyma-project.io"


@dataclass(frozen=True, slots=True)
class LiveKind:
    """A kind as the API serves it: `/apis/<group>/<version>/[namespaces/<ns>/]<plural>`."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


IMPORTED_KINDS: tuple[LiveKind, ...] = (
    LiveKind(CAP_GROUP, "v1alpha1", "CAPApplication", "capapplications", namespaced=True),
    LiveKind(CAP_GROUP, "v1alpha1", "CAPApplicationVersion", "capapplicationversions", namespaced=True),
    LiveKind(CAP_GROUP, "v1alpha1", "CAPTenant", "captenants", namespaced=True),
    LiveKind(CAP_GROUP, "v1alpha1", "Domain", "domains", namespaced=True),
    LiveKind(CAP_GROUP, "v1alpha1", "ClusterDomain", "clusterdomains", namespaced=False),
    LiveKind(KYMA_GROUP, "v1beta2", "Kyma", "kymas", namespaced=True),
    LiveKind(KYMA_GROUP, "v1beta2", "ModuleTemplate", "moduletemplates", namespaced=True),
    LiveKind(KYMA_GROUP, "v1beta2", "ModuleReleaseMeta", "modulereleasemetas", namespaced=True),
    LiveKind(KYMA_GROUP, "v1alpha1", "BtpOperator", "btpoperators", namespaced=True),
)


@dataclass(frozen=True, slots=True)
class NamedSecret:
    namespace: str
    name: str

    def describe(self) -> str:
        return f"Secret {self.namespace}/{self.name}"


# BTP Manager's settings Secret: read by name, never listed (see the module's docstring).
BTP_MANAGER_SECRET = NamedSecret("kyma-system", "sap-btp-manager")


def imported_kind(api_version: str, kind: str) -> LiveKind | None:
    """The table's entry for an object's apiVersion and kind, or None when import does not read it."""
    for entry in IMPORTED_KINDS:
        if entry.api_version == api_version and entry.kind == kind:
            return entry
    return None


def is_btp_manager_secret(api_version: str, kind: str, namespace: str, name: str) -> bool:
    return (
        api_version == "v1"
        and kind == "Secret"
        and (namespace, name) == (BTP_MANAGER_SECRET.namespace, BTP_MANAGER_SECRET.name)
    )
