"""Facts about Kubernetes kinds: Helm's install order and which kinds are cluster-scoped."""

from __future__ import annotations

from collections.abc import Iterable

from btp_gitops.generator.core.objects import KubeObject, api_group, get_path, kind_of

# Helm's install order (the order `helm install` and `helm template` sort documents in); kinds not
# listed come after all of these. Uninstall is the reverse.
HELM_INSTALL_ORDER: tuple[str, ...] = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
_INSTALL_RANK = {kind: rank for rank, kind in enumerate(HELM_INSTALL_ORDER)}


def install_rank(kind: str) -> int:
    return _INSTALL_RANK.get(kind, len(HELM_INSTALL_ORDER))


# Cluster-scoped kinds we know without reading a CRD, keyed by (group, kind).
_CLUSTER_SCOPED: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("networking.k8s.io", "IngressClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("policy", "PodSecurityPolicy"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("cert-manager.io", "ClusterIssuer"),
        ("external-secrets.io", "ClusterSecretStore"),
        ("external-secrets.io", "ClusterExternalSecret"),
        ("sme.sap.com", "ClusterDomain"),
    }
)


class ScopeIndex:
    """Answers "is this kind cluster-scoped?" from built-in facts plus CRDs seen in the stream."""

    def __init__(self, crds: Iterable[KubeObject] = ()) -> None:
        self._cluster_scoped = set(_CLUSTER_SCOPED)
        for crd in crds:
            self.learn(crd)

    def learn(self, obj: KubeObject) -> None:
        if kind_of(obj) != "CustomResourceDefinition":
            return
        if get_path(obj, "spec", "scope") == "Cluster":
            group = get_path(obj, "spec", "group")
            kind = get_path(obj, "spec", "names", "kind")
            if isinstance(group, str) and isinstance(kind, str):
                self._cluster_scoped.add((group, kind))

    def is_cluster_scoped(self, obj: KubeObject) -> bool:
        return (api_group(obj), kind_of(obj)) in self._cluster_scoped
