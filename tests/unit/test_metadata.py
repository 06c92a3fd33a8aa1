"""Unit tests of `generator.transforms.metadata`: labels, default namespaces and finalizers.

Covered: `add_labels` keeps an object's other labels and overrides the keys it sets (creating the
labels map when missing); `add_pod_template_labels` touches the pod templates of Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job and CronJob only, never the object's own labels;
`remove_labels`; `add_finalizer` adds a finalizer once, after those the object has;
`set_default_namespace` sets a missing or empty namespace, keeps an explicit one,
and strips the namespace of cluster-scoped kinds, built-in or declared cluster-scoped by a CRD in
the same list (`ScopeIndex`), whatever the CRD's position; `drop_empty_metadata_maps`.

Nothing is faked: YAML literals in, the real transform, YAML literals out.
"""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.kinds import ScopeIndex
from btp_gitops.generator.transforms.metadata import (
    add_finalizer,
    add_labels,
    add_pod_template_labels,
    drop_empty_metadata_maps,
    remove_labels,
    set_default_namespace,
)
from tests.unit.helpers import bodies, documents, manifests


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(
            "kind: ConfigMap\nmetadata: {name: a, labels: {app: x, chart-version: '0.1'}}",
            "kind: ConfigMap\nmetadata: {name: a, labels: {app: x, chart-version: '1.2.3', "
            "kyma-project.io/module: btp-operator}}",
            id="keeps-others-overrides-same-key",
        ),
        pytest.param(
            "kind: Secret\nmetadata: {name: b}",
            "kind: Secret\nmetadata: {name: b, labels: {chart-version: '1.2.3', kyma-project.io/module: btp-operator}}",
            id="creates-labels",
        ),
        pytest.param(
            "kind: Secret",
            "kind: Secret\nmetadata: {labels: {chart-version: '1.2.3', kyma-project.io/module: btp-operator}}",
            id="creates-metadata",
        ),
    ],
)
def test_add_labels(given: str, expected: str) -> None:
    wanted = {"chart-version": "1.2.3", "kyma-project.io/module": "btp-operator"}
    assert bodies(add_labels(manifests(given), wanted)) == documents(expected)


WORKLOADS = """\
kind: Deployment
metadata: {name: d, labels: {own: d}}
spec: {template: {metadata: {labels: {app: d}}, spec: {containers: []}}}
---
kind: StatefulSet
metadata: {name: s}
spec: {template: {spec: {}}}
---
kind: DaemonSet
metadata: {name: ds}
spec: {template: {metadata: {labels: {m: old}}}}
---
kind: ReplicaSet
metadata: {name: rs}
spec: {template: {metadata: {}}}
---
kind: Job
metadata: {name: j}
spec: {template: {metadata: {annotations: {a: b}}}}
---
kind: CronJob
metadata: {name: cj}
spec: {jobTemplate: {spec: {template: {metadata: {labels: {app: cj}}}}}}
---
kind: Pod
metadata: {name: p, labels: {app: p}}
spec: {containers: []}
---
kind: Service
metadata: {name: svc}
spec: {template: {metadata: {labels: {not: a-pod-template}}}}
---
kind: Deployment
metadata: {name: no-template}
spec: {replicas: 1}
"""

WORKLOADS_LABELLED = """\
kind: Deployment
metadata: {name: d, labels: {own: d}}
spec: {template: {metadata: {labels: {app: d, m: btp}}, spec: {containers: []}}}
---
kind: StatefulSet
metadata: {name: s}
spec: {template: {spec: {}, metadata: {labels: {m: btp}}}}
---
kind: DaemonSet
metadata: {name: ds}
spec: {template: {metadata: {labels: {m: btp}}}}
---
kind: ReplicaSet
metadata: {name: rs}
spec: {template: {metadata: {labels: {m: btp}}}}
---
kind: Job
metadata: {name: j}
spec: {template: {metadata: {annotations: {a: b}, labels: {m: btp}}}}
---
kind: CronJob
metadata: {name: cj}
spec: {jobTemplate: {spec: {template: {metadata: {labels: {app: cj, m: btp}}}}}}
---
kind: Pod
metadata: {name: p, labels: {app: p}}
spec: {containers: []}
---
kind: Service
metadata: {name: svc}
spec: {template: {metadata: {labels: {not: a-pod-template}}}}
---
kind: Deployment
metadata: {name: no-template}
spec: {replicas: 1}
"""


def test_add_pod_template_labels_touches_workload_templates_only() -> None:
    assert bodies(add_pod_template_labels(manifests(WORKLOADS), {"m": "btp"})) == documents(
        WORKLOADS_LABELLED
    )


def test_remove_labels_removes_only_the_given_keys() -> None:
    given = manifests("kind: A\nmetadata: {name: a, labels: {x: '1', y: '2', z: '3'}}\n---\nkind: B\n")
    assert bodies(remove_labels(given, {"x", "z", "absent"})) == documents(
        "kind: A\nmetadata: {name: a, labels: {y: '2'}}\n---\nkind: B\nmetadata: {labels: {}}\n"
    )


NAMESPACES_IN = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: missing}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty, namespace: ''}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: nulled, namespace: null}
---
apiVersion: v1
kind: Secret
metadata: {name: explicit, namespace: sap-btp-operator}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cr, namespace: kyma-system}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mwc, namespace: kyma-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: kyma-system}
---
apiVersion: services.cloud.sap.com/v1
kind: ClusterWidget
metadata: {name: declared-before-crd, namespace: kyma-system}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterwidgets.services.cloud.sap.com, namespace: kyma-system}
spec:
  group: services.cloud.sap.com
  scope: Cluster
  names: {kind: ClusterWidget, plural: clusterwidgets}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: serviceinstances.services.cloud.sap.com}
spec:
  group: services.cloud.sap.com
  scope: Namespaced
  names: {kind: ServiceInstance, plural: serviceinstances}
---
apiVersion: services.cloud.sap.com/v1
kind: ServiceInstance
metadata: {name: namespaced-cr}
---
apiVersion: other.example.io/v1
kind: ClusterWidget
metadata: {name: same-kind-other-group}
"""

NAMESPACES_OUT = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: missing, namespace: kyma-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty, namespace: kyma-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: nulled, namespace: kyma-system}
---
apiVersion: v1
kind: Secret
metadata: {name: explicit, namespace: sap-btp-operator}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cr}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mwc}
---
apiVersion: v1
kind: Namespace
metadata: {name: kyma-system}
---
apiVersion: services.cloud.sap.com/v1
kind: ClusterWidget
metadata: {name: declared-before-crd}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterwidgets.services.cloud.sap.com}
spec:
  group: services.cloud.sap.com
  scope: Cluster
  names: {kind: ClusterWidget, plural: clusterwidgets}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: serviceinstances.services.cloud.sap.com}
spec:
  group: services.cloud.sap.com
  scope: Namespaced
  names: {kind: ServiceInstance, plural: serviceinstances}
---
apiVersion: services.cloud.sap.com/v1
kind: ServiceInstance
metadata: {name: namespaced-cr, namespace: kyma-system}
---
apiVersion: other.example.io/v1
kind: ClusterWidget
metadata: {name: same-kind-other-group, namespace: kyma-system}
"""


def test_set_default_namespace() -> None:
    result = set_default_namespace(manifests(NAMESPACES_IN), "kyma-system", ScopeIndex())
    assert bodies(result) == documents(NAMESPACES_OUT)


def test_set_default_namespace_with_scope_index_built_from_crds_beforehand() -> None:
    crd = documents(NAMESPACES_IN)[8]
    assert crd["metadata"]["name"] == "clusterwidgets.services.cloud.sap.com"
    scopes = ScopeIndex([crd])
    given = manifests(
        "apiVersion: services.cloud.sap.com/v1\nkind: ClusterWidget\nmetadata: {name: w, namespace: x}\n"
    )
    assert bodies(set_default_namespace(given, "kyma-system", scopes)) == documents(
        "apiVersion: services.cloud.sap.com/v1\nkind: ClusterWidget\nmetadata: {name: w}\n"
    )


def test_drop_empty_metadata_maps() -> None:
    given = manifests(
        "kind: A\nmetadata: {name: a, labels: {}, annotations: {}}\n---\n"
        "kind: B\nmetadata: {name: b, labels: {x: y}, annotations: {}}\n"
    )
    assert bodies(drop_empty_metadata_maps(given)) == documents(
        "kind: A\nmetadata: {name: a}\n---\nkind: B\nmetadata: {name: b, labels: {x: y}}\n"
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param("kind: A\nmetadata: {name: a}", ["example.com/ours"], id="none-before"),
        pytest.param(
            "kind: A\nmetadata: {name: a, finalizers: [example.com/other]}",
            ["example.com/other", "example.com/ours"],
            id="keeps-others",
        ),
        pytest.param(
            "kind: A\nmetadata: {name: a, finalizers: [example.com/ours, example.com/other]}",
            ["example.com/ours", "example.com/other"],
            id="once",
        ),
    ],
)
def test_add_finalizer(given: str, expected: list[str]) -> None:
    manifest = manifests(given)[0]
    assert add_finalizer(manifest, "example.com/ours") is manifest
    assert manifest.body["metadata"]["finalizers"] == expected
