"""Table tests of sync stages (generator.transforms.ordering) and Kyma states (domains.kyma.status).

Covered: each kind's stage (CRDs and Namespaces first; custom resources of the app's own CRDs
last; custom resources of foreign CRDs stay with the resources), the Argo CD sync-wave each stage
maps to and which objects get the annotation; the Kyma state aggregated from module states
(Error > Warning > Processing > Ready, Deleting and Unmanaged aside); the report table.

Nothing is faked: YAML literals in, the real transform and functions, values out.
"""

from __future__ import annotations

import pytest

from btp_gitops.generator.domains.kyma.status import (
    KymaReport,
    ModuleState,
    ModuleStatus,
    TemplateRef,
    aggregate_state,
    report_table,
)
from btp_gitops.generator.transforms.ordering import (
    ARGOCD_SYNC_WAVE,
    Stage,
    annotate_argocd_sync_waves,
    argocd_sync_wave,
    assign_stages,
)
from tests.unit.helpers import manifests

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: operator}
---
apiVersion: modules.example.com/v1alpha1
kind: Greeter
metadata: {name: default}
---
apiVersion: v1
kind: Namespace
metadata: {name: module-ns}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: webhook}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: greeters.modules.example.com}
spec: {group: modules.example.com, names: {kind: Greeter}}
---
apiVersion: modules.example.com/v1alpha1
kind: Other
metadata: {name: not-ours}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: operator, annotations: {argocd.argoproj.io/sync-wave: "5"}}
"""


def test_every_object_gets_its_stage() -> None:
    staged = [(m.body["kind"], stage) for m, stage in assign_stages(manifests(APP))]
    assert staged == [
        ("Deployment", Stage.RESOURCES),
        ("Greeter", Stage.CUSTOM_RESOURCES),
        ("Namespace", Stage.CRDS),
        ("Certificate", Stage.RESOURCES),
        ("CustomResourceDefinition", Stage.CRDS),
        ("Other", Stage.RESOURCES),
        ("ServiceAccount", Stage.RESOURCES),
    ]


def test_argocd_waves_follow_the_stages() -> None:
    assert [argocd_sync_wave(s) for s in Stage] == [-1, 0, 1, 10, 100]
    assert [s.slug for s in Stage] == ["crds", "resources", "custom-resources", "release-jobs", "routing"]
    annotated = annotate_argocd_sync_waves(manifests(APP))
    waves = [
        (m.body["kind"], m.body["metadata"].get("annotations", {}).get(ARGOCD_SYNC_WAVE)) for m in annotated
    ]
    assert waves == [
        ("Deployment", None),
        ("Greeter", "1"),
        ("Namespace", "-1"),
        ("Certificate", None),
        ("CustomResourceDefinition", "-1"),
        ("Other", None),
        ("ServiceAccount", "5"),  # a wave the module set itself, in the default stage, is left alone
    ]


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([], ModuleState.READY),
        ([ModuleState.READY, ModuleState.READY], ModuleState.READY),
        ([ModuleState.READY, ModuleState.UNMANAGED, ModuleState.DELETING], ModuleState.READY),
        ([ModuleState.PROCESSING, ModuleState.READY], ModuleState.PROCESSING),
        ([ModuleState.PROCESSING, ModuleState.WARNING], ModuleState.WARNING),
        ([ModuleState.WARNING, ModuleState.ERROR, ModuleState.PROCESSING], ModuleState.ERROR),
        ([ModuleState.UNMANAGED], ModuleState.READY),
    ],
)
def test_aggregate_state(states: list[ModuleState], expected: ModuleState) -> None:
    assert aggregate_state(states) == expected


def test_report_table_sorts_modules_and_marks_waiting_ones() -> None:
    report = KymaReport(
        kyma="kyma-system/default",
        source="kyma.yaml: document 1",
        channel="regular",
        modules=(
            ModuleStatus("relay", ModuleState.WARNING, "kept 0.3.0", channel="fast", version="0.3.0"),
            ModuleStatus(
                "greeter",
                ModuleState.READY,
                "waiting",
                channel="regular",
                version="1.0.0",
                template=TemplateRef("greeter-regular", "kyma-system"),
                maintenance=True,
            ),
            ModuleStatus("old", ModuleState.UNMANAGED, "managed: false"),
        ),
    )
    assert report.state == ModuleState.WARNING
    assert report_table(report) == [
        "Kyma kyma-system/default (kyma.yaml: document 1): Warning",
        "  MODULE   CHANNEL  VERSION  STATE                TEMPLATE                     MESSAGE",
        "  greeter  regular  1.0.0    Ready (maintenance)  kyma-system/greeter-regular  waiting",
        "  old      -        -        Unmanaged            -                            managed: false",
        "  relay    fast     0.3.0    Warning              -                            kept 0.3.0",
    ]
    assert [m["name"] for m in report.as_dict()["modules"]] == ["greeter", "old", "relay"]


def test_report_table_without_modules() -> None:
    report = KymaReport("kyma-system/default", "kyma.yaml: document 1", "regular", messages=("skipped",))
    assert report_table(report) == [
        "Kyma kyma-system/default (kyma.yaml: document 1): Ready",
        "  skipped",
        "  no modules",
    ]
