"""Fixtures of the version-cleanup tests: the CAP CRDs in the real API server, a kube client, and
source repositories (a bare remote on disk and the controller's SourceRepo)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from btp_gitops.controller.gitstore import RepoSettings, SourceRepo
from btp_gitops.controller.kube import KubeClient
from tests.controller.version_cleanup.builders import Document, bare_remote_with
from tests.support.crds import OUR_CRDS, load_crds
from tests.support.kubeapi import KubeAPI, install_crds

CAP_CRD_FILES = ("capapplications.sme.sap.com.yaml", "capapplicationversions.sme.sap.com.yaml")


@pytest.fixture(scope="session")
def cap_crds(kube_api: KubeAPI) -> None:
    with kube_api.api_client() as api:
        install_crds(api, load_crds([OUR_CRDS / name for name in CAP_CRD_FILES]))


@pytest.fixture
def kube(kube_api: KubeAPI, cap_crds: None) -> Iterator[KubeClient]:
    client = KubeClient(kube_api.api_client())
    yield client
    client.close()


@dataclass
class Sources:
    remote: Path
    repo: SourceRepo


SourcesFactory = Callable[[Iterable[Document]], Sources]


@pytest.fixture
def sources_with(tmp_path: Path) -> Iterator[SourcesFactory]:
    """A bare remote holding the documents, and the controller's started SourceRepo on it."""
    started: list[SourceRepo] = []

    def make(documents: Iterable[Document]) -> Sources:
        directory = tmp_path / f"sources-{len(started)}"
        directory.mkdir()
        remote = bare_remote_with(directory, documents)
        repo = SourceRepo(RepoSettings(url=str(remote), workdir=directory / "controller-clone"))
        repo.start()
        started.append(repo)
        return Sources(remote, repo)

    yield make
    for repo in started:
        repo.stop()
