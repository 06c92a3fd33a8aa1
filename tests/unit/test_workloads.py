"""Unit tests of `generator.transforms.workloads`: container images.

Covered: `set_container_image` sets the image of every container (and init container) named
`manager` in any workload kind and of no other container or object; `blank_deployment_images`
empties the images of Deployments only, and does not add an `image` key where there was none.

Nothing is faked: YAML literals in, the real transform, YAML literals out.
"""

from __future__ import annotations

from btp_gitops.generator.transforms.workloads import blank_deployment_images, set_container_image
from tests.unit.helpers import bodies, documents, manifests

IMAGE = "europe-docker.pkg.dev/kyma-project/prod/sap-btp-service-operator:v0.6.8"

WORKLOADS = """\
kind: Deployment
metadata: {name: operator}
spec:
  template:
    spec:
      initContainers:
      - {name: manager, image: old-init}
      containers:
      - {name: manager, image: old}
      - {name: kube-rbac-proxy, image: proxy:1}
---
kind: StatefulSet
metadata: {name: sts}
spec:
  template:
    spec:
      containers:
      - {name: manager, image: sts:1}
      - {name: sidecar, image: sidecar:1}
---
kind: CronJob
metadata: {name: cj}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - {name: manager, image: cron:1}
---
kind: Pod
metadata: {name: bare-pod}
spec:
  containers:
  - {name: manager, image: pod:1}
---
kind: ConfigMap
metadata: {name: manager}
data: {image: cm:1}
---
kind: Deployment
metadata: {name: no-image}
spec:
  template:
    spec:
      containers:
      - {name: other}
"""

IMAGE_SET = """\
kind: Deployment
metadata: {name: operator}
spec:
  template:
    spec:
      initContainers:
      - {name: manager, image: IMAGE}
      containers:
      - {name: manager, image: IMAGE}
      - {name: kube-rbac-proxy, image: proxy:1}
---
kind: StatefulSet
metadata: {name: sts}
spec:
  template:
    spec:
      containers:
      - {name: manager, image: IMAGE}
      - {name: sidecar, image: sidecar:1}
---
kind: CronJob
metadata: {name: cj}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - {name: manager, image: IMAGE}
---
kind: Pod
metadata: {name: bare-pod}
spec:
  containers:
  - {name: manager, image: pod:1}
---
kind: ConfigMap
metadata: {name: manager}
data: {image: cm:1}
---
kind: Deployment
metadata: {name: no-image}
spec:
  template:
    spec:
      containers:
      - {name: other}
"""

BLANKED = """\
kind: Deployment
metadata: {name: operator}
spec:
  template:
    spec:
      initContainers:
      - {name: manager, image: ''}
      containers:
      - {name: manager, image: ''}
      - {name: kube-rbac-proxy, image: ''}
---
kind: StatefulSet
metadata: {name: sts}
spec:
  template:
    spec:
      containers:
      - {name: manager, image: sts:1}
      - {name: sidecar, image: sidecar:1}
---
kind: CronJob
metadata: {name: cj}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - {name: manager, image: cron:1}
---
kind: Pod
metadata: {name: bare-pod}
spec:
  containers:
  - {name: manager, image: pod:1}
---
kind: ConfigMap
metadata: {name: manager}
data: {image: cm:1}
---
kind: Deployment
metadata: {name: no-image}
spec:
  template:
    spec:
      containers:
      - {name: other}
"""


def test_set_container_image_touches_manager_containers_only() -> None:
    result = set_container_image(manifests(WORKLOADS), "manager", IMAGE)
    assert bodies(result) == documents(IMAGE_SET.replace("IMAGE", IMAGE))


def test_set_container_image_for_an_absent_container_changes_nothing() -> None:
    assert bodies(set_container_image(manifests(WORKLOADS), "absent", IMAGE)) == documents(WORKLOADS)


def test_blank_deployment_images_touches_deployments_only() -> None:
    assert bodies(blank_deployment_images(manifests(WORKLOADS))) == documents(BLANKED)
