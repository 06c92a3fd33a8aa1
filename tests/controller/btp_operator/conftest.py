"""Fixtures of the BtpOperator controller tests: a client of the real API server, the module's
cluster prepared per test (CRDs, namespace, nothing left from other tests), the service operand,
and settings with short timeouts."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from btp_gitops.controller.btp_operator import BtpOperatorSettings
from btp_gitops.controller.kube import KubeClient
from tests.controller.btp_operator.cluster import MODULE_RESOURCES, ModuleCluster, ServiceOperand
from tests.support.kubeapi import KubeAPI


@pytest.fixture
def kube(kube_api: KubeAPI) -> Iterator[KubeClient]:
    client = KubeClient(kube_api.api_client())
    yield client
    client.close()


@pytest.fixture
def cluster(kube_api: KubeAPI, kube: KubeClient) -> Iterator[ModuleCluster]:
    with kube_api.api_client() as api:
        module_cluster = ModuleCluster(kube, api)
        module_cluster.prepare()
        yield module_cluster
        module_cluster.clean()


@pytest.fixture
def operand(kube: KubeClient) -> Iterator[ServiceOperand]:
    playing = ServiceOperand(kube)
    yield playing
    playing.stop()


@pytest.fixture
def settings() -> BtpOperatorSettings:
    return BtpOperatorSettings(
        module_resources_dir=MODULE_RESOURCES,
        hard_delete_timeout=30.0,
        hard_delete_check_interval=0.2,
        ready_check_interval=0.5,
        blocked_check_interval=0.5,
    )


@pytest.fixture
def decisions(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The controller's decision log lines (one per decision), captured."""
    caplog.set_level(logging.INFO, logger="btp_gitops.controller")
    return caplog
