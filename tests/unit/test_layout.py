"""Unit tests of `generator.core.layout`: file names, object order and kustomization.yaml.

Covered: `<kind>-<name>.yaml` in lower case; the namespace added when a kind+name repeats across
namespaces, the API group added when kind+name+namespace repeats across groups; unsafe characters
(`:` in ClusterRole names) replaced; a 253-character name shortened to at most 200 characters,
stably and uniquely; true duplicates rejected; sort order (Helm install order, then kind,
namespace, name); `kustomization.yaml` listing every file sorted; `app_files` as a whole.

Nothing is faked: objects are plain dicts parsed from YAML literals and the real layout functions
name, sort and serialise them.
"""

from __future__ import annotations

import pytest
import yaml

from btp_gitops.generator.core.layout import (
    KUSTOMIZATION,
    app_files,
    app_of_directory,
    app_path,
    file_names,
    kustomization,
    sort_manifests,
)
from btp_gitops.generator.core.objects import KubeObject, Manifest
from btp_gitops.generator.core.yamlio import dump_object
from tests.unit.helpers import documents, manifests, refs


def obj(api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject:
    meta = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [
                obj("v1", "ConfigMap", "Operator-Config", "kyma-system"),
                obj("apps/v1", "Deployment", "mgr", "x"),
            ],
            ["configmap-operator-config.yaml", "deployment-mgr.yaml"],
            id="kind-name-lower-case",
        ),
        pytest.param(
            [
                obj("v1", "ConfigMap", "cfg", "a"),
                obj("v1", "ConfigMap", "cfg", "b"),
                obj("v1", "Secret", "cfg", "a"),
            ],
            ["configmap-a-cfg.yaml", "configmap-b-cfg.yaml", "secret-cfg.yaml"],
            id="namespace-added-only-where-needed",
        ),
        pytest.param(
            [obj("v1", "ServiceAccount", "sa", "a"), obj("v1", "ServiceAccount", "sa")],
            ["serviceaccount-a-sa.yaml", "serviceaccount-cluster-sa.yaml"],
            id="no-namespace-shown-as-cluster",
        ),
        pytest.param(
            [
                obj("a.example.io/v1", "Certificate", "c", "ns"),
                obj("b.example.io/v1", "Certificate", "c", "ns"),
                obj("b.example.io/v1", "Certificate", "c", "other"),
            ],
            [
                "certificate.a.example.io-ns-c.yaml",
                "certificate.b.example.io-ns-c.yaml",
                "certificate-other-c.yaml",
            ],
            id="group-added-only-where-namespace-is-not-enough",
        ),
        pytest.param(
            [obj("v1", "Service", "s", "ns"), obj("example.io/v1", "Service", "s", "ns")],
            ["service.core-ns-s.yaml", "service.example.io-ns-s.yaml"],
            id="core-group-named-core",
        ),
        pytest.param(
            [
                obj("rbac.authorization.k8s.io/v1", "ClusterRole", "system:controller:sap-btp-operator"),
                obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "manager::rolebinding:"),
                obj("v1", "ConfigMap", "weird name/with spaces", "ns"),
            ],
            [
                "clusterrole-system_controller_sap-btp-operator.yaml",
                "clusterrolebinding-manager_rolebinding.yaml",
                "configmap-weird_name_with_spaces.yaml",
            ],
            id="unsafe-characters-replaced",
        ),
        pytest.param([], [], id="empty"),
    ],
)
def test_file_names(objects: list[KubeObject], expected: list[str]) -> None:
    assert file_names(objects) == expected


def test_file_name_of_a_253_character_name_is_bounded_stable_and_unique() -> None:
    long_a = "a" * 253
    long_b = "a" * 252 + "b"
    first = file_names([obj("v1", "ConfigMap", long_a, "ns")])[0]
    assert len(first) == 200
    assert first.startswith("configmap-aaaa")
    assert first.endswith(".yaml")
    assert first == file_names([obj("v1", "ConfigMap", long_a, "ns")])[0]
    assert first == file_names([obj("v1", "ConfigMap", long_a, "other"), obj("v1", "Secret", "s", "ns")])[0]
    both = file_names([obj("v1", "ConfigMap", long_a, "ns"), obj("v1", "ConfigMap", long_b, "ns")])
    assert len(set(both)) == 2
    assert all(len(name) == 200 for name in both)
    assert both[0] == first


def test_file_name_at_the_limit_is_not_hashed() -> None:
    name = "n" * (200 - len("configmap-") - len(".yaml"))
    assert file_names([obj("v1", "ConfigMap", name)]) == [f"configmap-{name}.yaml"]
    longer = file_names([obj("v1", "ConfigMap", name + "n")])[0]
    assert len(longer) == 200
    assert longer != f"configmap-{name}n.yaml"


def test_file_names_rejects_true_duplicates() -> None:
    with pytest.raises(ValueError, match=r"^objects with the same identity: configmap\.core-ns-x$"):
        file_names([obj("v1", "ConfigMap", "x", "ns"), obj("v1", "ConfigMap", "x", "ns")])


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param(
            [
                obj("rbac.authorization.k8s.io/v1", "ClusterRole", "edit:pods"),
                obj("rbac.authorization.k8s.io/v1", "ClusterRole", "edit_pods"),
            ],
            id="colon-vs-underscore",
        ),
        pytest.param(
            [
                obj("rbac.authorization.k8s.io/v1", "ClusterRole", "Viewer"),
                obj("rbac.authorization.k8s.io/v1", "ClusterRole", "viewer"),
            ],
            id="case-only",
        ),
        pytest.param(
            [
                obj("v1", "ConfigMap", "b-c", "a"),
                obj("v1", "ConfigMap", "b-c", "x"),
                obj("v1", "ConfigMap", "c", "a-b"),
                obj("v1", "ConfigMap", "c", "y"),
            ],
            id="dash-between-namespace-and-name",
        ),
    ],
)
def test_distinct_objects_get_distinct_file_names(objects: list[KubeObject]) -> None:
    names = file_names(objects)
    assert len(set(names)) == len(objects)


SHUFFLED = """\
apiVersion: example.io/v1
kind: Widget
metadata: {name: w, namespace: a}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: v}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: b, namespace: ns}
---
apiVersion: v1
kind: Service
metadata: {name: z, namespace: a}
---
apiVersion: example.io/v1
kind: Gadget
metadata: {name: g, namespace: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: z, namespace: a}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cr}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: ns}
"""


def test_sort_manifests_helm_install_order_then_namespace_then_name() -> None:
    assert refs(sort_manifests(manifests(SHUFFLED))) == [
        "Namespace ns",
        "ServiceAccount ns/sa",
        "ConfigMap a/z",
        "ConfigMap b/a",
        "ConfigMap b/b",
        "CustomResourceDefinition widgets.example.io",
        "ClusterRole cr",
        "ClusterRoleBinding crb",
        "Service a/z",
        "Deployment ns/b",
        "ValidatingWebhookConfiguration v",
        "Gadget a/g",
        "Widget a/w",
    ]


def test_sort_manifests_same_identity_in_two_groups_sorted_by_group() -> None:
    found = manifests(
        "apiVersion: z.io/v1\nkind: Cert\nmetadata: {name: c, namespace: n}\n---\n"
        "apiVersion: a.io/v1\nkind: Cert\nmetadata: {name: c, namespace: n}\n"
    )
    assert [m.body["apiVersion"] for m in sort_manifests(found)] == ["a.io/v1", "z.io/v1"]


def test_kustomization_lists_resources_sorted() -> None:
    assert kustomization(["service-b.yaml", "configmap-z.yaml", "configmap-a.yaml"]) == (
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\n"
        "resources:\n"
        "- configmap-a.yaml\n"
        "- configmap-z.yaml\n"
        "- service-b.yaml\n"
    )


def test_app_files_one_file_per_object_and_a_sorted_kustomization() -> None:
    found = manifests(SHUFFLED)
    files = app_files(found)
    assert list(files) == sorted(files)
    assert list(files) == [
        "clusterrole-cr.yaml",
        "clusterrolebinding-crb.yaml",
        "configmap-a.yaml",
        "configmap-b.yaml",
        "configmap-z.yaml",
        "customresourcedefinition-widgets.example.io.yaml",
        "deployment-b.yaml",
        "gadget-g.yaml",
        KUSTOMIZATION,
        "namespace-ns.yaml",
        "service-z.yaml",
        "serviceaccount-sa.yaml",
        "validatingwebhookconfiguration-v.yaml",
        "widget-w.yaml",
    ]
    assert yaml.safe_load(files[KUSTOMIZATION])["resources"] == sorted(set(files) - {KUSTOMIZATION})
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in documents(SHUFFLED)}
    assert files["deployment-b.yaml"] == dump_object(by_name[("Deployment", "b")])
    assert (
        files["configmap-b.yaml"] == "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: b\n"
    )


def test_app_files_is_independent_of_input_order() -> None:
    found = manifests(SHUFFLED)
    assert app_files(found) == app_files(list(reversed(manifests(SHUFFLED))))


def test_app_files_of_nothing_is_an_empty_kustomization() -> None:
    assert app_files([]) == {
        KUSTOMIZATION: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"
    }


def test_app_files_keeps_origin_out_of_the_text() -> None:
    found = [Manifest({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "chart/t.yaml")]
    assert app_files(found)["configmap-x.yaml"] == "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"


@pytest.mark.parametrize(
    "directory",
    [
        "cap.bookshop.bookshop",
        "tenants",
        ".wiring",
        "tenants/bookshop.bookshop",
        "tenants/bookshop.bookshop/3a",
        "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme",
        "tenants/bookshop.bookshop/zz/cap-tenant.bookshop.acme",
        "tenants/bookshop.bookshop/3a/cap-tenant.bookshop.acme/10-crds",
        "cap-tenant.bookshop.acme/10-crds",
        "other/g/3a/app",
    ],
)
def test_the_app_of_a_directory_is_the_one_app_path_gives_its_files(directory: str) -> None:
    found = app_path(directory + "/file.yaml")
    expected = found.app if found.directory == directory else None
    assert app_of_directory(directory) == expected
