"""Fixtures of the chart's API server tests: the session's kube-apiserver with the CRDs installed.

Our CRDs (charts/btp-gitops/crds, what the chart installs) and every pinned third-party family:
prometheus-operator and Istio for the chart's optional objects, the others so that discovery knows
every kind the BTP operator module and its render may hold (the RBAC coverage test asks it for
their resource names).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.kubeapi import KubeAPI, install_crds


@pytest.fixture(scope="session")
def chart_api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, load_crds([*our_crd_files(), *third_party_crd_files()]), timeout=120)
        yield client
