"""transforms.ordering.helm_hooks: an app's sync stages as a Helm release needs them."""

from __future__ import annotations

import copy

import pytest

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.core.objects import KubeObject, Manifest
from btp_gitops.generator.transforms.ordering import ARGOCD_SYNC_WAVE, helm_hooks


def obj(kind: str, name: str, wave: str | None = None, **annotations: str) -> Manifest:
    body: KubeObject = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}
    if wave is not None:
        annotations[ARGOCD_SYNC_WAVE] = wave
    if annotations:
        body["metadata"]["annotations"] = annotations
    return Manifest(body, "test")


def annotations(manifest: Manifest) -> dict[str, str]:
    return dict(manifest.body["metadata"].get("annotations", {}))


HOOKED = "helm.sh/hook"


def test_plain_stages_lose_only_the_sync_wave() -> None:
    crd = obj("CustomResourceDefinition", "a", "-1")
    deployment = obj("Deployment", "b", None, keep="me")
    route = obj("VirtualService", "c", "100")
    result = helm_hooks([crd, deployment, route])
    assert [annotations(m) for m in result] == [{}, {"keep": "me"}, {}]


def test_release_jobs_are_ordered_hooks_and_tiers_come_after_each_other() -> None:
    first, second = obj("Job", "step-0", "10"), obj("Job", "step-1", "11")
    app = helm_hooks([copy.deepcopy(first), copy.deepcopy(second)], tier=0)
    tenant = helm_hooks([first, second], tier=1)
    assert [annotations(m) for m in app] == [
        {
            HOOKED: "post-install,post-upgrade",
            "helm.sh/hook-weight": w,
            "helm.sh/hook-delete-policy": "before-hook-creation",
        }
        for w in ("10", "11")
    ]
    assert [annotations(m)["helm.sh/hook-weight"] for m in tenant] == ["1010", "1011"]


def test_custom_resources_are_created_once_after_install() -> None:
    (cr,) = helm_hooks([obj("Greeter", "default", "1")])
    assert annotations(cr)[HOOKED] == "post-install"
    assert annotations(cr)["helm.sh/hook-weight"] == "1"


def test_the_input_objects_are_not_changed() -> None:
    job = obj("Job", "j", "10")
    before = copy.deepcopy(job.body)
    helm_hooks([job])
    assert job.body == before


def test_a_wave_of_no_stage_is_refused_naming_the_object() -> None:
    with pytest.raises(InvalidSpec) as raised:
        helm_hooks([obj("Job", "late", "-5")])
    assert "Job late" in str(raised.value.problems[0])
