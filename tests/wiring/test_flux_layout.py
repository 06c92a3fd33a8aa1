"""`render --target flux`: the same objects as `--target argocd`, in stage directories.

Every example is rendered for both targets by the installed CLI. The Flux tree must hold every
object file of the Argo CD tree, byte for byte apart from the sync-wave annotation, under the
stage directory its wave stands for; files beside the apps (Kyma's record) are the same; what
is new is only the wiring and a kustomization.yaml per stage. kustomize (the real binary) reads
each stage directory back as exactly its files, and the cluster directory as only the wiring,
so nothing is applied twice. Re-rendering the Flux layout is a no-op.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.core.layout import TENANTS_DIR, app_path
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.ownership import is_manifest
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.pipeline.wiring import flux_app_stages
from btp_gitops.generator.transforms.ordering import (
    ARGOCD_SYNC_WAVE,
    FluxStage,
    Stage,
    annotate_argocd_stage,
    argocd_sync_wave,
    flux_stages,
    stage_of_sync_wave,
    stage_steps,
)
from tests.conftest import EXAMPLES, ROOT, RunCli, read_tree
from tests.support.tools import tool_path

CLUSTER = "demo"
SYNC_WAVE_LINE = re.compile(rf"^ +{re.escape(ARGOCD_SYNC_WAVE)}: '?\"?-?\d+'?\"?\n", re.MULTILINE)
STAGE_DIRECTORY = re.compile(r"[0-9]{2}-[a-z-]+(-[0-9]+)?")
EMPTY_ANNOTATIONS = re.compile(r"^( +)annotations:\n(?!\1 )", re.MULTILINE)


def example_dirs() -> list[Path]:
    return sorted(path for path in EXAMPLES.iterdir() if path.is_dir())


def render(run_cli: RunCli, example: Path, out: Path, *options: str) -> dict[str, bytes]:
    result = run_cli("render", example, "--out", out, "--cluster", CLUSTER, *options, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return read_tree(out / "clusters" / CLUSTER)


def without_sync_wave(text: str) -> str:
    """The Argo CD file as the Flux target must write it: the annotation line gone, and the
    `annotations:` key too when that was its only entry."""
    return EMPTY_ANNOTATIONS.sub("", SYNC_WAVE_LINE.sub("", text))


def is_object_file(path: str) -> bool:
    return (
        path.count("/") >= 1
        and not path.startswith(".wiring/")
        and not path.endswith("kustomization.yaml")
        and not is_manifest(path)  # the ownership manifests of the tenants' shard and group directories
    )


def wave_of(text: bytes) -> int:
    annotations = yaml.safe_load(text)["metadata"].get("annotations") or {}
    return int(annotations.get(ARGOCD_SYNC_WAVE, "0"))


@pytest.mark.parametrize("example", example_dirs(), ids=lambda path: path.name)
def test_flux_files_are_the_argocd_files_in_stage_directories(
    tmp_path: Path, run_cli: RunCli, example: Path
) -> None:
    argocd = render(run_cli, example, tmp_path / "argocd")
    flux = render(run_cli, example, tmp_path / "flux", "--target", "flux")

    flux_objects = {path for path in flux if is_object_file(path)}
    expected = set()
    for path, data in argocd.items():
        if is_manifest(path):  # the ownership manifests list each target's own paths
            continue
        if "/" not in path:  # a record beside the apps
            assert flux[path] == data, path
            continue
        if path.endswith("/kustomization.yaml"):
            continue
        where = app_path(path)
        assert "/" not in where.inside, path
        stage, step = stage_of_sync_wave(wave_of(data))
        flux_path = f"{where.directory}/{FluxStage(stage, step).directory}/{where.inside}"
        expected.add(flux_path)
        assert flux_path in flux, f"{path}: expected at {flux_path}"
        assert flux[flux_path].decode() == without_sync_wave(data.decode()), flux_path
        assert ARGOCD_SYNC_WAVE not in flux[flux_path].decode()
    assert flux_objects == expected
    extra = set(flux) - expected - set(argocd)
    assert all(p.endswith("kustomization.yaml") or p.startswith(".wiring/") for p in extra), sorted(extra)


def test_the_sync_wave_is_the_only_difference_somewhere(tmp_path: Path, run_cli: RunCli) -> None:
    """The comparison above is not vacuous: the Kyma example has waves, and an object whose only
    annotation is the wave (its `annotations:` key goes too)."""
    argocd = render(run_cli, EXAMPLES / "kyma-modules", tmp_path / "argocd")
    with_waves = [p for p, data in argocd.items() if ARGOCD_SYNC_WAVE.encode() in data]
    assert with_waves
    stripped = [yaml.safe_load(without_sync_wave(argocd[p].decode()))["metadata"] for p in with_waves]
    assert any("annotations" not in meta for meta in stripped)


def test_rendering_the_flux_layout_again_changes_nothing(tmp_path: Path, run_cli: RunCli) -> None:
    example = EXAMPLES / "kyma-modules"  # with its record beside the apps, read back on re-render
    options = ("--target", "flux", "--commit")
    render(run_cli, example, tmp_path / "repo", *options)

    again = run_cli("render", example, "--out", tmp_path / "repo", "--cluster", CLUSTER, *options, cwd=ROOT)

    assert again.returncode == 0, again.stderr
    assert "0 added, 0 changed, 0 removed" in again.stdout
    assert "nothing to commit" in again.stdout


def kustomize_build(directory: Path) -> list[dict[str, Any]]:
    built = subprocess.run(
        [str(tool_path("kustomize")), "build", str(directory)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert built.returncode == 0, f"kustomize build {directory}:\n{built.stderr}"
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc is not None]


def identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    return (obj["apiVersion"], obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


@pytest.mark.tools
@pytest.mark.parametrize("example", example_dirs(), ids=lambda path: path.name)
def test_kustomize_builds_each_stage_and_the_cluster_directory_only_as_wiring(
    tmp_path: Path, run_cli: RunCli, example: Path
) -> None:
    render(run_cli, example, tmp_path, "--target", "flux")
    cluster = tmp_path / "clusters" / CLUSTER
    stages = sorted(
        path.parent
        for path in cluster.rglob("kustomization.yaml")
        if STAGE_DIRECTORY.fullmatch(path.parent.name) and ".wiring" not in path.parts
    )
    assert stages
    if example.name == "cap-app":  # the tenants' stages too, in their shard directories
        assert any(TENANTS_DIR in stage.relative_to(cluster).parts for stage in stages)

    for stage in stages:
        files = [
            yaml.safe_load(p.read_text())
            for p in sorted(stage.glob("*.yaml"))
            if p.name != "kustomization.yaml"
        ]
        assert sorted(map(identity, kustomize_build(stage))) == sorted(map(identity, files)), stage
        assert sorted(kustomize_build(stage), key=identity) == sorted(files, key=identity), stage

    entry = kustomize_build(cluster)
    assert {obj["kind"] for obj in entry} == {"Kustomization"}
    assert sorted(obj["spec"]["path"] for obj in entry) == sorted(
        [f"./clusters/{CLUSTER}"]  # the root Kustomization: the wiring applies itself
        + [f"./clusters/{CLUSTER}/{stage.relative_to(cluster).as_posix()}" for stage in stages]
    )


# --- the stage mapping itself ------------------------------------------------------------------


def job(name: str) -> Manifest:
    return Manifest(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"}}, "test"
    )


def test_every_sync_wave_maps_back_to_its_stage_and_step() -> None:
    for stage in Stage:
        for step in sorted({0, stage_steps(stage) // 2, stage_steps(stage) - 1}):
            assert stage_of_sync_wave(argocd_sync_wave(stage, step)) == (stage, step)
    with pytest.raises(ValueError, match="outside the waves of every stage"):
        stage_of_sync_wave(-2)


def test_stage_directories_follow_the_documented_names() -> None:
    assert [FluxStage(stage).directory for stage in Stage] == [
        "00-crds",
        "10-resources",
        "20-custom-resources",
        "30-release-jobs",
        "40-routing",
    ]
    assert FluxStage(Stage.RELEASE_JOBS, 1).directory == "30-release-jobs-1"


def test_steps_order_numerically_not_by_name() -> None:
    """Twelve release jobs: 30-release-jobs-10 depends on -9, not on -1 (as names would sort)."""
    manifests = [annotate_argocd_stage(job(f"content-{n}"), Stage.RELEASE_JOBS, n) for n in range(12)]

    stages = flux_app_stages([AppRender("app", manifests)])

    assert stages["app"] == ["30-release-jobs", *(f"30-release-jobs-{n}" for n in range(1, 12))]


def test_flux_stages_leave_the_argocd_objects_as_they_are() -> None:
    annotated = annotate_argocd_stage(job("content"), Stage.RELEASE_JOBS, 2)

    [(placed, stage)] = flux_stages([annotated])

    assert stage == FluxStage(Stage.RELEASE_JOBS, 2)
    assert placed.body["metadata"]["annotations"] == {}
    assert annotated.body["metadata"]["annotations"] == {ARGOCD_SYNC_WAVE: "12"}


def test_a_sync_wave_that_is_no_number_is_reported() -> None:
    odd = job("odd")
    odd.body["metadata"]["annotations"] = {ARGOCD_SYNC_WAVE: "early"}

    with pytest.raises(InvalidSpec) as raised:
        flux_stages([odd])

    assert raised.value.problems[0].render() == "test (Job ns/odd): argocd.argoproj.io/sync-wave: 'early'"
