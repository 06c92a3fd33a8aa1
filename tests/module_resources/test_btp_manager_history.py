"""`module-resources` walked through a release history shaped like BTP Manager's, as its release
script would have computed each step.

BTP Manager's repository keeps the SAP BTP service operator chart in `module-chart/chart` with
`module-chart/overrides.yaml`, and its release script regenerates `module-resources/` for every
chart release: `helm template` into one file per template, pre-delete hooks moved to
`excluded/to-exclude.yml`, and `delete/to-delete.yml` recomputed as the previous `apply/` minus
the new one (the previous `delete/` is dropped, never carried over). Its repository cannot be
fetched here, so the chart below is written for this test after that chart's shape: the same
template files (`service_account.yaml` the only `.yaml`), the operator Secret with blank
credentials and the token path constant, the pre-delete cleanup Job, the manager binding whose
kind follows `allow_cluster_access`, the metrics proxy objects. Each release makes one of the
kinds of inventory change the upstream chart went through (the copies studied do not tie every
change to a release, so the versions here name steps, not upstream releases one for one): a version bump only, objects removed (the metrics
proxy) and a bump after that, a template file added, an object renamed, a binding changing kind through an override,
a template file removed.

Every step runs the installed CLI on the previous step's tree as BTP Manager's repository holds
it (no `.release.yml`: their artifact has none) and, separately, as btp-gitops leaves it, and
checks apply/, delete/ and excluded/ against an independent computation of the script's rule:
documents of the previous apply/ whose name and kind the new apply/ no longer has.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import RunCli

NS = "{{ .Release.Namespace }}"


def _doc(api: str, kind: str, name: str, namespaced: bool = True, **rest: Any) -> str:
    metadata: dict[str, Any] = {"name": name}
    body = {"apiVersion": api, "kind": kind, "metadata": metadata, **rest}
    text = yaml.safe_dump(body, sort_keys=False)
    return (
        text.replace("  name: " + name + "\n", f"  name: {name}\n  namespace: {NS}\n", 1)
        if namespaced
        else text
    )


OPERATOR_SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: sap-btp-service-operator
  namespace: {{ .Release.Namespace }}
  labels:
    services.cloud.sap.com/managed-by-sap-btp-operator: "true"
type: Opaque
data:
  clientid: {{ .Values.manager.secret.clientid | b64enc | quote }}
  {{- with .Values.manager.secret.clientsecret }}
  clientsecret: {{ . | b64enc | quote }}
  {{- end }}
  sm_url: {{ .Values.manager.secret.sm_url | b64enc | quote }}
  tokenurl: {{ .Values.manager.secret.tokenurl | b64enc | quote }}
  tokenurlsuffix: {{ .Values.manager.secret.tokenurlsuffix | b64enc | quote }}
"""
MANAGER_BINDING = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ if .Values.manager.allow_cluster_access }}ClusterRoleBinding{{ else }}RoleBinding{{ end }}
metadata:
  name: {{ .Values.manager.binding_name }}
  {{- if not .Values.manager.allow_cluster_access }}
  namespace: {{ .Release.Namespace }}
  {{- end }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sap-btp-operator-manager-role}
subjects: [{kind: ServiceAccount, name: sap-btp-operator, namespace: {{ .Release.Namespace }}}]
"""
CLEANUP_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: pre-delete-job
  namespace: {{ .Release.Namespace }}
  labels: {release: {{ .Chart.Version | quote }}}
  annotations: {"helm.sh/hook": pre-delete, "helm.sh/hook-delete-policy": hook-succeeded}
spec:
  template:
    spec:
      serviceAccountName: sap-btp-operator
      restartPolicy: Never
      containers: [{name: cleanup, image: "kubectl:pinned", command: [/bin/true]}]
"""
PROXY = [
    _doc(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "sap-btp-operator-metrics-reader",
        False,
        rules=[{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    ),
    _doc(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "sap-btp-operator-proxy-role",
        False,
        rules=[{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}],
    ),
    _doc(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "sap-btp-operator-proxy-rolebinding",
        False,
        roleRef={
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "sap-btp-operator-proxy-role",
        },
        subjects=[{"kind": "ServiceAccount", "name": "sap-btp-operator", "namespace": "kyma-system"}],
    ),
]
METRICS_SERVICE = _doc(
    "v1", "Service", "sap-btp-operator-controller-manager-metrics-service", spec={"ports": [{"port": 8443}]}
)


def _crd(plural: str, kind: str, version: str) -> str:
    return _doc(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        f"{plural}.services.cloud.sap.com",
        False,
        spec={
            "group": "services.cloud.sap.com",
            "names": {"kind": kind, "plural": plural},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    )


@dataclass
class Release:
    """One chart release: its version, overrides, and template files (name -> documents)."""

    version: str
    templates: dict[str, list[str]]
    overrides: dict[str, Any] = field(default_factory=dict)


def _base(crd_version: str, proxy: bool) -> dict[str, list[str]]:
    manager_role = _doc(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "sap-btp-operator-manager-role",
        False,
        rules=[{"apiGroups": ["services.cloud.sap.com"], "resources": ["*"], "verbs": ["*"]}],
    )
    election = [
        _doc("rbac.authorization.k8s.io/v1", "Role", "sap-btp-operator-leader-election-role", rules=[]),
        _doc(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            "sap-btp-operator-leader-election-rolebinding",
            roleRef={
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "sap-btp-operator-leader-election-role",
            },
            subjects=[{"kind": "ServiceAccount", "name": "sap-btp-operator"}],
        ),
    ]
    webhook = {"name": "mserviceinstance.kb.io", "admissionReviewVersions": ["v1"], "sideEffects": "None"}
    webhook_service = {"service": {"name": "sap-btp-operator-webhook-service", "namespace": "kyma-system"}}
    return {
        "configmap.yml": [
            _doc("v1", "ConfigMap", "sap-btp-operator-config", data={"MANAGEMENT_NAMESPACE": "kyma-system"})
        ],
        "crd.yml": [
            _crd("servicebindings", "ServiceBinding", crd_version),
            _crd("serviceinstances", "ServiceInstance", crd_version),
        ],
        "deployment.yml": [
            _doc(
                "apps/v1",
                "Deployment",
                "sap-btp-operator-controller-manager",
                spec={
                    "selector": {"matchLabels": {"app": "sap-btp-operator"}},
                    "template": {
                        "metadata": {"labels": {"app": "sap-btp-operator"}},
                        "spec": {"containers": [{"name": "manager", "image": "operator:tag"}]},
                    },
                },
            )
        ],
        "pre-delete-job.yml": [CLEANUP_JOB],
        "rbac.yml": [manager_role, *(PROXY if proxy else []), *election, MANAGER_BINDING],
        "secret.yml": [OPERATOR_SECRET],
        "service.yml": [
            _doc("v1", "Service", "sap-btp-operator-webhook-service", spec={"ports": [{"port": 443}]}),
            *([METRICS_SERVICE] if proxy else []),
        ],
        "service_account.yaml": [_doc("v1", "ServiceAccount", "sap-btp-operator")],
        "webhook.yml": [
            _doc(
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
                "sap-btp-operator-mutating-webhook-configuration",
                False,
                webhooks=[{**webhook, "clientConfig": webhook_service}],
            )
        ],
    }


NETWORK_POLICY = _doc(
    "networking.k8s.io/v1",
    "NetworkPolicy",
    "sap-btp-operator-allow-egress",
    spec={"podSelector": {"matchLabels": {"app": "sap-btp-operator"}}, "policyTypes": ["Egress"]},
)
RENAMED_BINDING = {"manager": {"binding_name": "sap-btp-operator-manager-clusterrolebinding"}}

HISTORY = [
    Release("v0.8.0", _base("v1alpha1", proxy=True)),
    # A version bump: the same objects (CRD content and the hook's label change).
    Release("v0.9.0", _base("v1", proxy=True)),
    # The metrics proxy goes: its ClusterRoles, binding and Service.
    Release("v0.10.0", _base("v1", proxy=False)),
    # A version bump after a removal: the removal is not listed again (the list is one step).
    Release("v0.10.1", _base("v1", proxy=False)),
    # A template file is added.
    Release("v0.10.3", {**_base("v1", proxy=False), "network-policies.yml": [NETWORK_POLICY]}),
    # The manager binding is renamed.
    Release(
        "v0.11.0", {**_base("v1", proxy=False), "network-policies.yml": [NETWORK_POLICY]}, RENAMED_BINDING
    ),
    # An override turns cluster access off: the binding keeps its name and becomes a RoleBinding.
    Release(
        "v0.11.4",
        {**_base("v1", proxy=False), "network-policies.yml": [NETWORK_POLICY]},
        {"manager": {**RENAMED_BINDING["manager"], "allow_cluster_access": False}},
    ),
    # The template file is removed again.
    Release(
        "v0.11.10",
        _base("v1", proxy=False),
        {"manager": {**RENAMED_BINDING["manager"], "allow_cluster_access": False}},
    ),
]

VALUES = {
    "manager": {
        "allow_cluster_access": True,
        "binding_name": "sap-btp-operator-manager-rolebinding",
        "secret": {
            "clientid": "",
            "clientsecret": "",
            "sm_url": "",
            "tokenurl": "",
            "tokenurlsuffix": "/oauth/token",
        },
    }
}


def write_chart(root: Path, release: Release) -> tuple[Path, Path]:
    """The release's `module-chart/chart` and `module-chart/overrides.yaml`."""
    chart = root / "module-chart" / "chart"
    shutil.rmtree(chart, ignore_errors=True)
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v2", "name": "sap-btp-operator", "version": release.version})
    )
    (chart / "values.yaml").write_text(yaml.safe_dump(VALUES))
    for name, documents in release.templates.items():
        (chart / "templates" / name).write_text("---\n".join(d for d in documents if d))
    overrides = root / "module-chart" / "overrides.yaml"
    overrides.write_text(yaml.safe_dump(release.overrides))
    return chart, overrides


Identity = tuple[str, str]  # (name, kind), what BTP Manager's script matches on


def identities(text: str) -> list[Identity]:
    return [(d["metadata"]["name"], d["kind"]) for d in yaml.safe_load_all(text) if d]


def apply_inventory(out: Path) -> dict[str, list[Identity]]:
    return {p.name: identities(p.read_text()) for p in sorted((out / "apply").iterdir())}


def expected_to_delete(
    previous: dict[str, list[Identity]], current: dict[str, list[Identity]]
) -> list[Identity]:
    """The script's rule: every document of the previous apply/ (file by file, in order) whose
    name and kind are not among the new apply/'s."""
    produced = {identity for documents in current.values() for identity in documents}
    return [
        identity
        for _, documents in sorted(previous.items())
        for identity in documents
        if identity not in produced
    ]


def rendered_inventory(release: Release) -> dict[str, list[Identity]]:
    """What each apply/ file must hold, sorted: the release's templates as the script keeps them
    (the pre-delete Job moved out, and with it its file, which held nothing else)."""
    binding_name = release.overrides.get("manager", {}).get("binding_name", VALUES["manager"]["binding_name"])
    cluster = release.overrides.get("manager", {}).get("allow_cluster_access", True)
    inventory = {}
    for name, documents in release.templates.items():
        found = []
        for document in documents:
            if document == CLEANUP_JOB:
                continue
            if document == MANAGER_BINDING:
                found.append((binding_name, "ClusterRoleBinding" if cluster else "RoleBinding"))
                continue
            if document == OPERATOR_SECRET:
                found.append(("sap-btp-service-operator", "Secret"))
                continue
            body = yaml.safe_load(document.replace(NS, "kyma-system"))
            found.append((body["metadata"]["name"], body["kind"]))
        if found:
            inventory[name] = sorted(found)
    return dict(sorted(inventory.items()))


EXPECTED_STEPS: dict[str, list[Identity]] = {
    "v0.8.0": [],
    "v0.9.0": [],
    "v0.10.0": [
        ("sap-btp-operator-metrics-reader", "ClusterRole"),
        ("sap-btp-operator-proxy-role", "ClusterRole"),
        ("sap-btp-operator-proxy-rolebinding", "ClusterRoleBinding"),
        ("sap-btp-operator-controller-manager-metrics-service", "Service"),
    ],
    "v0.10.1": [],
    "v0.10.3": [],
    "v0.11.0": [("sap-btp-operator-manager-rolebinding", "ClusterRoleBinding")],
    "v0.11.4": [("sap-btp-operator-manager-clusterrolebinding", "ClusterRoleBinding")],
    "v0.11.10": [("sap-btp-operator-allow-egress", "NetworkPolicy")],
}


@pytest.mark.parametrize(
    "as_btp_manager_keeps_it", [True, False], ids=["btp-manager-tree", "btp-gitops-tree"]
)
def test_each_release_reproduces_the_release_script(
    tmp_path: Path, run_cli: RunCli, as_btp_manager_keeps_it: bool
) -> None:
    out = tmp_path / "module-resources"
    previous: dict[str, list[Identity]] = {}
    for release in HISTORY:
        chart, overrides = write_chart(tmp_path, release)
        result = run_cli(
            "module-resources",
            "--chart",
            chart,
            "--values",
            overrides,
            "--release",
            "sap-btp-operator",
            "--out",
            out,
        )
        assert result.returncode == 0, f"{release.version}: {result.stderr}"

        current = apply_inventory(out)
        assert {k: sorted(v) for k, v in current.items()} == rendered_inventory(release), release.version
        to_delete = identities((out / "delete" / "to-delete.yml").read_text())
        assert to_delete == expected_to_delete(previous, current), release.version
        assert to_delete == EXPECTED_STEPS[release.version], release.version
        excluded = yaml.safe_load((out / "excluded" / "to-exclude.yml").read_text())
        assert (excluded["kind"], excluded["metadata"]["name"]) == ("Job", "pre-delete-job")
        assert excluded["metadata"]["labels"]["release"] == release.version
        secret = yaml.safe_load((out / "apply" / "secret.yml").read_text())
        assert secret["data"] == {
            "clientid": "",
            "sm_url": "",
            "tokenurl": "",
            "tokenurlsuffix": "L29hdXRoL3Rva2Vu",
        }
        deployment = yaml.safe_load((out / "apply" / "deployment.yml").read_text())
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == ""

        if as_btp_manager_keeps_it:
            (out / ".release.yml").unlink()  # BTP Manager's repository holds no release record
        previous = current
