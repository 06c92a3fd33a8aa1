"""The kinds `btp-gitops import` reads from a cluster or a dump, and the objects it reads by name.

Each kind is listed through its plural (the API path), namespaced or not. BTP Manager's two
objects are read by name only, never listed: the Secret `kyma-system/sap-btp-manager` (BTP Manager
keeps its non-secret settings, cluster id and credentials namespace, next to the credentials
there) and the ConfigMap `kyma-system/sap-btp-operator-config` (the flags it derived). No other
Secret is ever listed or read; in a dump directory any other Secret is passed over unread.

Three CustomResourceDefinitions are read by name too, to tell which certificate manager and which
DNS manager the cluster runs: cert-manager's `certificates.cert-manager.io`, Gardener
cert-management's `certificates.cert.gardener.cloud` and Gardener DNS's
`dnsentries.dns.gardener.cloud` (the imported sources choose the ones installed, see
migration.cluster_managers). Credentials without the right to read them are no error: the
import then does not know, says so, and keeps its defaults.
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
    """An object read by name: a core (`v1`) one in its namespace,
    `/api/v1/namespaces/<namespace>/<plural>/<name>`, or a cluster-wide one of an API group,
    `/apis/<group>/<version>/<plural>/<name>` (`namespace` empty). `optional`: one the
    credentials may not be allowed to read (403: noted, not an error)."""

    kind: str
    plural: str
    namespace: str
    name: str
    api_version: str = "v1"
    optional: bool = False

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def path(self) -> str:
        if self.namespace:
            return f"/api/{self.api_version}/namespaces/{self.namespace}/{self.plural}/{self.name}"
        return f"/apis/{self.api_version}/{self.plural}/{self.name}"

    def is_this(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        wanted = (self.api_version, self.kind, self.namespace, self.name)
        return (api_version, kind, namespace, name) == wanted


# BTP Manager's settings: read by name, never listed (see the module's docstring).
BTP_MANAGER_SECRET = NamedObject("Secret", "secrets", "kyma-system", "sap-btp-manager")
BTP_OPERATOR_CONFIG_MAP = NamedObject("ConfigMap", "configmaps", "kyma-system", "sap-btp-operator-config")
CRD_API = "apiextensions.k8s.io/v1"
CRD_KIND, CRD_PLURAL = "CustomResourceDefinition", "customresourcedefinitions"
CERT_MANAGER_CRD = NamedObject(
    CRD_KIND, CRD_PLURAL, "", "certificates.cert-manager.io", CRD_API, optional=True
)
GARDENER_CERT_CRD = NamedObject(
    CRD_KIND, CRD_PLURAL, "", "certificates.cert.gardener.cloud", CRD_API, optional=True
)
GARDENER_DNS_CRD = NamedObject(
    CRD_KIND, CRD_PLURAL, "", "dnsentries.dns.gardener.cloud", CRD_API, optional=True
)
NAMED_OBJECTS: tuple[NamedObject, ...] = (
    BTP_MANAGER_SECRET,
    BTP_OPERATOR_CONFIG_MAP,
    CERT_MANAGER_CRD,
    GARDENER_CERT_CRD,
    GARDENER_DNS_CRD,
)


def imported_kind(api_version: str, kind: str) -> LiveKind | None:
    """The table's entry for an object's apiVersion and kind, or None when import does not read it."""
    for entry in IMPORTED_KINDS:
        if entry.api_version == api_version and entry.kind == kind:
            return entry
    return None


def is_named_object(api_version: str, kind: str, namespace: str, name: str) -> bool:
    """Whether an object is one of those import reads by name."""
    return any(named.is_this(api_version, kind, namespace, name) for named in NAMED_OBJECTS)
