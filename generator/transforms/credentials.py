"""Service Manager credentials by reference: an ExternalSecret instead of a Secret with data.

BTP Manager copied every key of `kyma-system/sap-btp-manager` except `cluster_id` and
`credentials_namespace` into the Secret `sap-btp-service-operator` in the credentials namespace.
In Git we cannot hold those values, so we render an external-secrets.io/v1 ExternalSecret that
performs the same copy inside the cluster. Excluding two keys while taking all others is done with
a Data template over the extracted map, because `dataFrom.extract` alone cannot drop keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from btp_gitops.generator.core.objects import KubeObject, Manifest, kind_of, name_of

OPERATOR_SECRET = "sap-btp-service-operator"
EXCLUDED_KEYS = ("cluster_id", "credentials_namespace")
STORE_READER = "btp-gitops-credentials-reader"

# Go template run by external-secrets over the extracted keys of the source Secret.
_COPY_ALL_BUT_EXCLUDED = (
    "{{- range $key, $value := . }}\n"
    + "{{- if and "
    + " ".join(f'(ne $key "{key}")' for key in EXCLUDED_KEYS)
    + " }}\n"
    + "{{ $key }}: {{ $value | toJson }}\n"
    + "{{- end }}\n"
    + "{{- end }}\n"
)


@dataclass(frozen=True, slots=True)
class CredentialsPlan:
    credentials_namespace: str
    source_name: str = "sap-btp-manager"
    source_namespace: str = "kyma-system"
    store_kind: str | None = None  # an existing SecretStore / ClusterSecretStore
    store_name: str | None = None
    refresh_interval: str = "1h"
    module_labels: tuple[tuple[str, str], ...] = ()

    @property
    def renders_own_store(self) -> bool:
        return self.store_name is None


def _external_secret(plan: CredentialsPlan) -> KubeObject:
    store = (
        {"kind": "SecretStore", "name": STORE_READER}
        if plan.renders_own_store
        else {"kind": plan.store_kind, "name": plan.store_name}
    )
    return {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": OPERATOR_SECRET, "namespace": plan.credentials_namespace},
        "spec": {
            "refreshInterval": plan.refresh_interval,
            "secretStoreRef": store,
            "dataFrom": [{"extract": {"key": plan.source_name}}],
            "target": {
                "name": OPERATOR_SECRET,
                "creationPolicy": "Owner",
                "deletionPolicy": "Delete",
                "template": {
                    "engineVersion": "v2",
                    "mergePolicy": "Replace",
                    "type": "Opaque",
                    "metadata": {"labels": dict(plan.module_labels)},
                    "templateFrom": [{"target": "Data", "literal": _COPY_ALL_BUT_EXCLUDED}],
                },
            },
        },
    }


def _store_objects(plan: CredentialsPlan) -> list[KubeObject]:
    """A Kubernetes-provider SecretStore that may read exactly the source Secret, and its RBAC."""
    namespace = plan.credentials_namespace
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": STORE_READER, "namespace": namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": STORE_READER, "namespace": plan.source_namespace},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [plan.source_name],
                    "verbs": ["get"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": STORE_READER, "namespace": plan.source_namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": STORE_READER},
            "subjects": [{"kind": "ServiceAccount", "name": STORE_READER, "namespace": namespace}],
        },
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "SecretStore",
            "metadata": {"name": STORE_READER, "namespace": namespace},
            "spec": {
                "provider": {
                    "kubernetes": {
                        "remoteNamespace": plan.source_namespace,
                        "server": {
                            "caProvider": {"type": "ConfigMap", "name": "kube-root-ca.crt", "key": "ca.crt"}
                        },
                        "auth": {"serviceAccount": {"name": STORE_READER}},
                    }
                }
            },
        },
    ]


def reference_operator_credentials(manifests: list[Manifest], plan: CredentialsPlan) -> list[Manifest]:
    """Drop the chart's `sap-btp-service-operator` Secret; add the ExternalSecret (and its store)."""
    kept = [m for m in manifests if not (kind_of(m.body) == "Secret" and name_of(m.body) == OPERATOR_SECRET)]
    added = [_external_secret(plan)]
    if plan.renders_own_store:
        added += _store_objects(plan)
    return kept + [Manifest(body, "btp-gitops/credentials") for body in added]
