"""A source directory as GitOps repositories keep it (docs/commands/render.md, "What a source
directory may hold"), through the CLI as users run it.

Beside the custom resources btp-gitops reads sit kustomizations, READMEs, Helm values and charts,
plain Kubernetes objects, Argo CD Applications and Flux Kustomizations, and, with `--out` inside
the sources, the render's own output. A render passes over each with a note on stderr (`--quiet`
leaves the notes out) and renders the same bytes as from the bare sources; a kind that looks
meant for btp-gitops (a misspelt one of its own) is refused with the name it probably meant.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import EXAMPLES, RunCli, read_tree

CLUSTER = "demo"

KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - btpoperator.yaml
"""
VALUES = """\
# overrides for the chart
replicaCount: 2
image:
  tag: "1.2.3"
"""
CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: kyma-system
data:
  colour: blue
"""
ARGO_AND_FLUX = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: platform
  namespace: argocd
spec:
  project: default
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: platform
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/demo
"""
CHART = "apiVersion: v2\nname: extras\nversion: 0.1.0\n"
TEMPLATE = "{{- range .Values.items }}\nkind: {{ . }}\n{{- end }}\n"  # not YAML until Helm renders it


def btp_operator_sources(where: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / "btp-operator", where))


def with_repository_files(source: Path) -> Path:
    """`source` with what a GitOps repository keeps beside the sources."""
    (source / "kustomization.yaml").write_text(KUSTOMIZATION)
    (source / "README.md").write_text("# The platform's sources\n")
    (source / "values.yaml").write_text(VALUES)
    (source / "settings.yaml").write_text(CONFIG_MAP)
    (source / "wiring").mkdir()
    (source / "wiring" / "platform.yaml").write_text(ARGO_AND_FLUX)
    (source / "extras" / "templates").mkdir(parents=True)
    (source / "extras" / "Chart.yaml").write_text(CHART)
    (source / "extras" / "templates" / "items.yaml").write_text(TEMPLATE)
    return source


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("note: ")]


@pytest.mark.parametrize("cache", ["--no-cache", "--cache-dir"])
def test_a_render_into_its_own_sources_works_on_every_run(
    tmp_path: Path, run_cli: RunCli, cache: str
) -> None:
    source = btp_operator_sources(tmp_path / "src")
    cache_args = [cache] if cache == "--no-cache" else [cache, tmp_path / "cache"]
    args = ("render", "src", "--out", "src/out", "--cluster", CLUSTER, *cache_args)

    first = run_cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    written = read_tree(source / "out")
    second = run_cli(*args, cwd=tmp_path)
    assert second.returncode == 0, second.stderr  # main: exit 3, "metadata: must be a mapping"
    assert "24 objects in 1 app(s); 0 added, 0 changed, 0 removed" in second.stdout
    assert notes(second.stderr) == [
        "note: skipped src/out/clusters/demo: the output of a render (it holds .btp-gitops-files), not sources"
    ]
    assert read_tree(source / "out") == written
    third = run_cli(*args, "--quiet", cwd=tmp_path)
    assert (third.returncode, third.stderr) == (0, "")
    assert read_tree(source / "out") == written


def test_diff_against_an_out_directory_inside_the_sources(tmp_path: Path, run_cli: RunCli) -> None:
    btp_operator_sources(tmp_path / "src")
    rendered = run_cli("render", "src", "--out", "src/out", "--cluster", CLUSTER, "--no-cache", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr

    diff = run_cli(
        "diff", "src", "--against", "src/out", "--cluster", CLUSTER, "--no-cache", "--exit-code", cwd=tmp_path
    )

    assert diff.returncode == ExitCode.OK, diff.stdout + diff.stderr
    assert diff.stdout == "btp-gitops diff: clusters/demo against directory src/out: no changes\n"
    assert notes(diff.stderr) == [
        "note: skipped src/out/clusters/demo: the output of a render (it holds .btp-gitops-files), not sources"
    ]


def test_a_source_directory_as_repositories_keep_it_renders_what_the_sources_alone_render(
    tmp_path: Path, run_cli: RunCli
) -> None:
    bare = btp_operator_sources(tmp_path / "bare")
    source = with_repository_files(btp_operator_sources(tmp_path / "src"))
    reference = run_cli("render", bare, "--out", tmp_path / "reference", "--cluster", CLUSTER, "--no-cache")
    assert reference.returncode == 0, reference.stderr

    done = run_cli("render", "src", "--out", "repo", "--cluster", CLUSTER, "--no-cache", cwd=tmp_path)

    assert done.returncode == 0, done.stderr  # main: exit 3, "metadata: must be a mapping"
    assert read_tree(tmp_path / "repo") == read_tree(tmp_path / "reference")
    assert notes(done.stderr) == [
        "note: skipped src/extras: a Helm chart (it holds Chart.yaml): charts are read through spec.chart.path",
        "note: skipped src/kustomization.yaml: a kustomization (kustomize's file), not a btp-gitops source",
        "note: skipped src/settings.yaml: document 1 (ConfigMap kyma-system/settings): "
        "v1 ConfigMap is not a kind btp-gitops reads",
        "note: skipped src/values.yaml: Helm values (no document is a Kubernetes object), not a btp-gitops source",
        "note: skipped src/wiring/platform.yaml: document 1 (Application argocd/platform): "
        "argoproj.io/v1alpha1 Application is not a kind btp-gitops reads",
        "note: skipped src/wiring/platform.yaml: document 2 (Kustomization flux-system/platform): "
        "kustomize.toolkit.fluxcd.io/v1 Kustomization is not a kind btp-gitops reads",
    ]
    assert "README" not in done.stderr  # not YAML: never read, nothing to say

    quiet = run_cli("render", source, "--out", tmp_path / "repo", "--cluster", CLUSTER, "--no-cache", "-q")
    assert (quiet.returncode, quiet.stderr) == (0, "")
    as_json = run_cli(
        "render", "src", "--out", "repo", "--cluster", CLUSTER, "--no-cache", "--output", "json", cwd=tmp_path
    )
    assert as_json.returncode == 0, as_json.stderr
    skipped = json.loads(as_json.stdout)["skipped"]
    assert [(s["path"], s["document"], s["object"]) for s in skipped][2] == (
        "src/settings.yaml",
        1,
        "ConfigMap kyma-system/settings",
    )
    assert len(skipped) == len(notes(as_json.stderr)) == 6


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            "apiVersion: sme.sap.com/v1alpha1\nkind: CapTenant\n",
            'apiVersion: unknown kind sme.sap.com/v1alpha1/CapTenant (did you mean "CAPTenant"? btp-gitops reads '
            "CAPTenant at sme.sap.com/v1alpha1)",
        ),
        (
            "apiVersion: v1\nkind: captenant\n",
            'apiVersion: unknown kind v1/captenant (did you mean "CAPTenant"?)',
        ),
        (
            "apiVersion: operator.kyma-project.io/v1beta2\nkind: Kymma\n",
            'apiVersion: unknown kind operator.kyma-project.io/v1beta2/Kymma (did you mean "Kyma"? btp-gitops reads '
            "Kyma at operator.kyma-project.io/v1beta2)",
        ),
        (
            "apiVersion: sme.sap.co/v1alpha1\nkind: CAPTenant\n",
            "apiVersion: unknown kind sme.sap.co/v1alpha1/CAPTenant "
            "(supported apiVersions of CAPTenant: sme.sap.com/v1alpha1)",
        ),
        (  # a group only btp-gitops reads: meant for it, whatever the kind
            "apiVersion: sme.sap.com/v1alpha1\nkind: CAPTenantOperation\n",
            "apiVersion: unknown kind sme.sap.com/v1alpha1/CAPTenantOperation (btp-gitops does not read this kind)",
        ),
    ],
    ids=["case", "other-group", "kyma", "group-typo", "own-group"],
)
def test_a_kind_meant_for_btp_gitops_that_it_does_not_know_is_an_error_with_a_suggestion(
    tmp_path: Path, run_cli: RunCli, document: str, message: str
) -> None:
    source = btp_operator_sources(tmp_path / "src")
    (source / "tenant.yaml").write_text(document + "metadata:\n  name: t1\n  namespace: shop\nspec: {}\n")

    done = run_cli("render", "src", "--out", "repo", "--cluster", CLUSTER, "--no-cache", cwd=tmp_path)

    assert done.returncode == ExitCode.INPUT, done.stderr
    kind = document.split("kind: ")[1].strip()
    assert done.stderr == (
        "error: invalid source documents (1 problem)\n"
        f"  src/tenant.yaml: document 1 ({kind} shop/t1): {message}\n"
    )
    assert not (tmp_path / "repo" / "clusters").exists()


def test_a_values_file_holding_objects_is_read_as_sources(tmp_path: Path, run_cli: RunCli) -> None:
    """Only a values file of no objects is passed over: a tenant record in `values-prod.yaml` is
    read (skipping it would remove the tenant from the cluster)."""
    source = btp_operator_sources(tmp_path / "src")
    (source / "values-prod.yaml").write_text(
        "apiVersion: sme.sap.com/v1alpha1\nkind: CapTenant\nmetadata:\n  name: t1\n  namespace: shop\n"
    )

    done = run_cli("render", "src", "--out", "repo", "--cluster", CLUSTER, "--no-cache", cwd=tmp_path)

    assert done.returncode == ExitCode.INPUT
    assert "src/values-prod.yaml: document 1 (CapTenant shop/t1): apiVersion: unknown kind" in done.stderr
    assert '(did you mean "CAPTenant"?' in done.stderr


def test_yaml_that_is_no_object_outside_a_values_file_is_refused_saying_so(
    tmp_path: Path, run_cli: RunCli
) -> None:
    source = btp_operator_sources(tmp_path / "src")
    (source / "overrides.yaml").write_text(VALUES)

    done = run_cli("render", "src", "--out", "repo", "--cluster", CLUSTER, "--no-cache", cwd=tmp_path)

    assert done.returncode == ExitCode.INPUT
    assert done.stderr == (
        "error: cannot read source documents (1 problem)\n"
        "  src/overrides.yaml: document 1: apiVersion: required field is missing: not a Kubernetes object "
        "(Helm values beside the sources are recognised by their name, values*.yaml)\n"
    )
