"""The kinds `btp-gitops import` reads from a cluster or a dump, and the two objects it reads by name.

Each kind is listed through its plural (the API path), namespaced or not. BTP Manager's two
objects are read by name only, never listed: the Secret `kyma-system/sap-btp-manager` (BTP Manager
keeps its non-secret settings, cluster id and credentials namespace, next to the credentials
there) and the ConfigMap `kyma-system/sap-btp-operator-config` (the flags it derived). No other
Secret is ever listed or read; in a dump directory any other Secret is passed over unread.
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
class NamedObject:
    """A core (`v1`) object read by name: `/api/v1/namespaces/<namespace>/<plural>/<name>`."""

    kind: str
    plural: str
    namespace: str
    name: str

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    def is_this(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        return api_version == "v1" and (kind, namespace, name) == (self.kind, self.namespace, self.name)


# BTP Manager's settings: read by name, never listed (see the module's docstring).
BTP_MANAGER_SECRET = NamedObject("Secret", "secrets", "kyma-system", "sap-btp-manager")
BTP_OPERATOR_CONFIG_MAP = NamedObject("ConfigMap", "configmaps", "kyma-system", "sap-btp-operator-config")
NAMED_OBJECTS: tuple[NamedObject, ...] = (BTP_MANAGER_SECRET, BTP_OPERATOR_CONFIG_MAP)


def imported_kind(api_version: str, kind: str) -> LiveKind | None:
    """The table's entry for an object's apiVersion and kind, or None when import does not read it."""
    for entry in IMPORTED_KINDS:
        if entry.api_version == api_version and entry.kind == kind:
            return entry
    return None


def is_named_object(api_version: str, kind: str, namespace: str, name: str) -> bool:
    """Whether an object is one of those import reads by name."""
    return any(named.is_this(api_version, kind, namespace, name) for named in NAMED_OBJECTS)
