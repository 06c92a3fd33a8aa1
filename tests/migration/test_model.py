"""The import's shared model: one result from many translators, in a stable order."""

from __future__ import annotations

import pytest

from btp_gitops.generator.migration import (
    ImportedDocument,
    ImportedFile,
    ImportResult,
    LiveObject,
    Skipped,
    merge_results,
)


def test_a_live_object_describes_itself_as_messages_name_objects() -> None:
    tenant = LiveObject(
        {
            "apiVersion": "sme.sap.com/v1alpha1",
            "kind": "CAPTenant",
            "metadata": {"name": "acme", "namespace": "shop"},
        },
        "dumps/tenants.yaml: document 2",
    )
    domain = LiveObject({"kind": "ClusterDomain", "metadata": {"name": "public"}}, "cluster")
    assert tenant.describe() == "CAPTenant shop/acme"
    assert (tenant.api_version, tenant.namespace) == ("sme.sap.com/v1alpha1", "shop")
    assert domain.describe() == "ClusterDomain public"
    assert LiveObject({"kind": "Kyma", "metadata": []}, "cluster").describe() == "Kyma "


def test_merged_results_are_sorted_whatever_order_the_translators_ran_in() -> None:
    first = ImportResult(
        files=(ImportedFile("shop/tenants/zeta.yaml", (ImportedDocument({"kind": "CAPTenant"}),)),),
        skipped=(Skipped("Secret shop/x", "cluster", "a credential"),),
    )
    second = ImportResult(
        files=(ImportedFile("kyma-system/kyma.yaml", (ImportedDocument({"kind": "Kyma"}),)),),
        skipped=(Skipped("CAPTenant shop/a", "cluster", "no status"),),
    )
    merged = merge_results([first, second])
    assert merged == merge_results([second, first])
    assert [f.path for f in merged.files] == ["kyma-system/kyma.yaml", "shop/tenants/zeta.yaml"]
    assert [s.object for s in merged.skipped] == ["CAPTenant shop/a", "Secret shop/x"]


def test_two_translators_claiming_one_path_is_a_bug_not_a_silent_overwrite() -> None:
    one = ImportResult(files=(ImportedFile("a.yaml", ()),))
    with pytest.raises(ValueError, match=r"a\.yaml"):
        merge_results([one, one])
