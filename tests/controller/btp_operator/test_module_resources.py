"""controller.btp_operator.module_resources: reading the project's real `module-resources/` (chart
version, kinds in deletion order, identities) and artifacts written under tmp_path for the cases
it does not show (a `chart-version` label, disagreeing versions, a delete list, broken files). The
last test lists every kind against the real API server, so a wrongly guessed resource name fails.
Nothing is faked."""

from __future__ import annotations

from pathlib import Path

import pytest

from btp_gitops.controller.btp_operator.module_resources import (
    MODULE_SELECTOR,
    RENDER_ADDED_KINDS,
    deletion_order,
    guess_plural,
    load_module_resources,
)
from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.controller.kube import KubeClient
from btp_gitops.generator.core.objects import ObjectKey
from tests.controller.btp_operator.cluster import MODULE_RESOURCES, ModuleCluster
from tests.support.crds import load_crds, third_party_crd_files
from tests.support.dry_run import request
from tests.support.kubeapi import install_crds

CONFIG_MAP = """---
# Source: my-chart/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: kyma-system
  labels:
    helm.sh/chart: my-chart-{version}
"""


def _artifact(root: Path, apply: dict[str, str], delete: str | None = "") -> Path:
    (root / "apply").mkdir(parents=True)
    for name, text in apply.items():
        (root / "apply" / name).write_text(text, encoding="utf-8")
    if delete is not None:
        (root / "delete").mkdir()
        (root / "delete" / "to-delete.yml").write_text(delete, encoding="utf-8")
    return root


def test_the_projects_artifact() -> None:
    module = load_module_resources(MODULE_RESOURCES)

    assert module.chart_version == "0.1.0"
    assert module.delete_objects == ()
    assert [(r.kind, r.plural, r.namespaced) for r in module.kinds] == [
        ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False),
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False),
        ("Deployment", "deployments", True),
        ("Service", "services", True),
        ("RoleBinding", "rolebindings", True),
        ("Role", "roles", True),
        ("ClusterRoleBinding", "clusterrolebindings", False),
        ("ClusterRole", "clusterroles", False),
        ("ConfigMap", "configmaps", True),
        ("Secret", "secrets", True),
        ("ServiceAccount", "serviceaccounts", True),
        ("CustomResourceDefinition", "customresourcedefinitions", False),
    ]
    assert ObjectKey("apps", "Deployment", "kyma-system", "sap-btp-operator-controller-manager") in (
        module.apply_identities
    )
    assert ObjectKey(
        "apiextensions.k8s.io", "CustomResourceDefinition", "", "serviceinstances.services.cloud.sap.com"
    ) in (module.apply_identities)


def test_render_added_kinds_go_first_and_crds_last() -> None:
    module = load_module_resources(MODULE_RESOURCES)

    order = [r.kind for r in deletion_order((*module.kinds, *RENDER_ADDED_KINDS))]

    assert order[:6] == ["Certificate", "Issuer", "Certificate", "Issuer", "ExternalSecret", "SecretStore"]
    assert order[-1] == "CustomResourceDefinition"
    assert len(order) == len(set(module.kinds) | set(RENDER_ADDED_KINDS))


def test_plural_guess_follows_kubernetes_names() -> None:
    assert [guess_plural(k) for k in ("Deployment", "Ingress", "NetworkPolicy", "Gateway", "Status")] == [
        "deployments",
        "ingresses",
        "networkpolicies",
        "gateways",
        "statuses",
    ]


def test_apply_files_are_read_by_either_yaml_extension_and_nothing_else(tmp_path: Path) -> None:
    """Files keep their template's extension (`.yaml` or `.yml`); anything else in apply/ is not
    an object file."""
    module = load_module_resources(
        _artifact(
            tmp_path,
            {
                "configmap.yaml": CONFIG_MAP.format(name="a", version="1.0.0"),
                "extra.yml": CONFIG_MAP.format(name="b", version="1.0.0"),
                "README.md": "not objects: [",
            },
        )
    )
    assert sorted(str(obj["metadata"]["name"]) for obj in module.apply_objects) == ["a", "b"]


def test_a_chart_version_label_wins_over_helms_label(tmp_path: Path) -> None:
    text = CONFIG_MAP.format(name="a", version="1.0.0").replace(
        "    helm.sh/chart", "    chart-version: 1.2.0\n    helm.sh/chart"
    )
    module = load_module_resources(_artifact(tmp_path, {"configmap.yml": text}))
    assert module.chart_version == "1.2.0"


def test_a_prerelease_version_with_dashes_is_read_whole(tmp_path: Path) -> None:
    text = CONFIG_MAP.format(name="a", version="2.0.0-rc.1-hotfix")
    assert (
        load_module_resources(_artifact(tmp_path, {"configmap.yml": text})).chart_version
        == "2.0.0-rc.1-hotfix"
    )


def test_objects_must_agree_on_the_version(tmp_path: Path) -> None:
    text = CONFIG_MAP.format(name="a", version="1.0.0") + CONFIG_MAP.format(name="b", version="1.1.0")
    with pytest.raises(ConfigurationError, match=r"versions found on the apply/ objects: 1\.0\.0, 1\.1\.0"):
        load_module_resources(_artifact(tmp_path, {"configmap.yml": text}))


def test_an_object_without_version_labels_is_refused(tmp_path: Path) -> None:
    text = CONFIG_MAP.format(name="a", version="1.0.0").replace(
        "# Source: my-chart/templates/configmap.yaml\n", ""
    )
    with pytest.raises(ConfigurationError, match="versions found on the apply/ objects: none"):
        load_module_resources(_artifact(tmp_path, {"configmap.yml": text}))


def test_the_delete_list_adds_its_kinds(tmp_path: Path) -> None:
    removed = (
        "---\n# Source: my-chart/templates/pdb.yaml\napiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata:\n  name: old\n  namespace: kyma-system\n"
    )
    module = load_module_resources(
        _artifact(tmp_path, {"configmap.yml": CONFIG_MAP.format(name="a", version="1.0.0")}, removed)
    )
    assert [(o["kind"], o["metadata"]["name"]) for o in module.delete_objects] == [
        ("PodDisruptionBudget", "old")
    ]
    pdb = module.resource_of(module.delete_objects[0])
    assert (pdb.group, pdb.version, pdb.plural, pdb.namespaced) == (
        "policy",
        "v1",
        "poddisruptionbudgets",
        True,
    )


def test_a_missing_delete_list_is_an_empty_one(tmp_path: Path) -> None:
    module = load_module_resources(
        _artifact(tmp_path, {"configmap.yml": CONFIG_MAP.format(name="a", version="1")}, None)
    )
    assert module.delete_objects == ()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "holds no .yaml or .yml files"),
        (
            {"configmap.yml": "---\n# Source: c/templates/x.yaml\nkind: [unclosed\n"},
            "apply/configmap.yml: not valid YAML",
        ),
        ({"configmap.yml": "---\n# Source: c/templates/x.yaml\n- a list\n"}, "not a Kubernetes object"),
    ],
)
def test_broken_artifacts_are_configuration_errors(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_module_resources(_artifact(tmp_path, files))


@pytest.mark.kube
@pytest.mark.crds
def test_every_kind_is_served_under_the_resource_name_used(cluster: ModuleCluster, kube: KubeClient) -> None:
    """With the module's CRDs and those of the render-added kinds installed, the API server's
    discovery serves every kind under the resource name and scope used, and every kind lists."""
    install_crds(
        cluster.api, load_crds(third_party_crd_files("cert-manager", "external-secrets", "gardener-cert"))
    )
    module = load_module_resources(MODULE_RESOURCES)
    resources = (*module.kinds, *RENDER_ADDED_KINDS)
    served: dict[tuple[str, str], tuple[str, bool]] = {}
    for api_version in sorted({r.api_version for r in resources}):
        reply = request(cluster.api, "GET", "/api/v1" if api_version == "v1" else f"/apis/{api_version}")
        assert reply.status == 200, reply.message()
        for entry in reply.body["resources"]:
            served[api_version, entry["name"]] = (entry["kind"], entry["namespaced"])

    assert {(r.api_version, r.plural): served.get((r.api_version, r.plural)) for r in resources} == {
        (r.api_version, r.plural): (r.kind, r.namespaced) for r in resources
    }
    for resource in resources:
        kube.list(resource, label_selector=MODULE_SELECTOR)  # the controller's own request; raises if refused
