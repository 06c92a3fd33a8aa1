"""Which documents of a source directory look meant for btp-gitops (refused when unknown) and
which are another tool's (skipped): core.source_contents, against the kinds of schemas/."""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.source_contents import KnownKinds, skipped_directory, skipped_file, values_file
from btp_gitops.generator.io.schemas import load_schema_registry

KNOWN = KnownKinds((kind.api_version, kind.kind) for kind in load_schema_registry().kinds())


@pytest.mark.parametrize(
    ("api_version", "kind", "meant"),
    [
        ("sme.sap.com/v1alpha1", "CAPTenant", True),
        ("sme.sap.com/v1alpha1", "CapTenant", True),  # close to one of its kinds, in its group
        ("sme.sap.com/v1", "CAPTenant", True),  # its kind, another version
        ("v1", "captenant", True),  # its kind in other letter case, whatever the group
        ("sme.sap.co/v1alpha1", "CAPTenant", True),  # a group close to one of its own
        ("sme.sap.com/v1alpha1", "CAPTenantOperation", True),  # a group only btp-gitops reads
        ("btp-gitops.io/v1alpha1", "Anything", True),
        ("operator.kyma-project.io/v1beta2", "Kymma", True),
        ("v1", "Secret", True),  # refused, never skipped
        ("v1", "List", True),
        ("operator.kyma-project.io/v1alpha1", "Serverless", False),  # a Kyma module's own resource
        ("operator.kyma-project.io/v1alpha1", "Keda", False),
        ("v1", "ConfigMap", False),
        ("apps/v1", "Deployment", False),
        ("argoproj.io/v1alpha1", "Application", False),  # close to CAPApplication, another group
        ("argoproj.io/v1alpha1", "ApplicationSet", False),
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization", False),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease", False),
        ("services.cloud.sap.com/v1", "ServiceInstance", False),
        ("gateway.kyma-project.io/v2", "APIRule", False),
        ("bitnami.com/v1alpha1", "SealedSecret", False),
    ],
)
def test_which_kinds_look_meant_for_btp_gitops(api_version: str, kind: str, meant: bool) -> None:
    assert KNOWN.meant_for_us(api_version, kind) is meant


def test_files_and_directories_recognised_by_name() -> None:
    assert skipped_file("kustomization.yaml") and skipped_file("kustomization.yml")
    assert skipped_file("tenant.yaml") is None
    assert values_file("values.yaml") and values_file("values-prod.yml")
    assert not values_file("my-values.yaml") and not values_file("values.json")
    assert "output of a render" in (skipped_directory([".btp-gitops-files", "Chart.yaml"]) or "")
    assert "Helm chart" in (skipped_directory(["Chart.yaml"]) or "")
    assert skipped_directory(["README.md"]) is None
