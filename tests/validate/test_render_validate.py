"""`btp-gitops render --validate`: the rendered objects are validated before anything is written.

The invalid render comes from a real chart: a copy of charts/sap-btp-operator with one extra
template that renders a Service the API server would refuse (or an object of a kind nothing
knows). A render that fails validation exits 3 and leaves the repo rendered before
byte-identical. The example's third-party kinds (cert-manager, External Secrets) need no
--crds: their schemas ship with btp-gitops.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io.kube_schemas import supported_kubernetes_versions
from tests.conftest import CHART, EXAMPLES, RunCli, read_tree
from tests.support.crds import third_party_crd_files

NEWEST = supported_kubernetes_versions()[-1]

BROKEN_TEMPLATE = """\
apiVersion: v1
kind: Service
metadata:
  name: broken
spec:
  colour: blue
  ports:
  - port: eighty
"""


def _source(tmp_path: Path, name: str, chart: Path) -> Path:
    """The bundled example source, rendering `chart` (a copy inside the source, where a source may
    name it, unless it is the chart shipped with btp-gitops)."""
    source = tmp_path / name
    shutil.copytree(EXAMPLES / "btp-operator", source)
    if chart != CHART:
        shutil.copytree(chart, source / ".chart")
    config_path = source / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["spec"].setdefault("chart", {})["path"] = str(chart) if chart == CHART else ".chart"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return source


# Gateway API's HTTPRoute: neither built into Kubernetes nor among the shipped third-party schemas.
UNKNOWN_KIND_TEMPLATE = """\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: operator-route
spec:
  parentRefs:
  - name: gateway
"""


@pytest.fixture
def broken_chart(tmp_path: Path) -> Path:
    chart = tmp_path / "broken-chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "broken-service.yaml").write_text(BROKEN_TEMPLATE)
    return chart


@pytest.fixture
def unknown_kind_chart(tmp_path: Path) -> Path:
    chart = tmp_path / "unknown-kind-chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "httproute.yaml").write_text(UNKNOWN_KIND_TEMPLATE)
    return chart


def _pinned_crd_options() -> list[str]:
    return [option for path in third_party_crd_files() for option in ("--crds", str(path))]


def test_valid_render_is_written_as_without_validate(tmp_path: Path, run_cli: RunCli) -> None:
    source = _source(tmp_path, "source", CHART)
    plain = run_cli("render", source, "--out", tmp_path / "plain", "--cluster", "demo")
    validated = run_cli("render", source, "--out", tmp_path / "validated", "--cluster", "demo", "--validate")
    assert (validated.returncode, validated.stderr) == (ExitCode.OK, "")
    assert validated.stdout == plain.stdout.replace(str(tmp_path / "plain"), str(tmp_path / "validated"))
    assert read_tree(tmp_path / "validated") == read_tree(tmp_path / "plain")


@pytest.mark.crds
def test_invalid_render_leaves_the_previous_output_untouched(
    tmp_path: Path, run_cli: RunCli, broken_chart: Path
) -> None:
    repo = tmp_path / "repo"
    good = run_cli("render", _source(tmp_path, "good", CHART), "--out", repo, "--cluster", "demo", "--commit")
    assert good.returncode == ExitCode.OK, good.stderr
    before = read_tree(repo)
    # Without --validate this chart renders and is written: the API server would refuse it later.
    assert (
        run_cli(
            "render", _source(tmp_path, "unchecked", broken_chart), "--out", tmp_path / "unchecked"
        ).returncode
        == 0
    )

    result = run_cli(
        "render",
        _source(tmp_path, "bad", broken_chart),
        "--out",
        "repo",
        "--cluster",
        "demo",
        "--commit",
        "--validate",
        *_pinned_crd_options(),
        cwd=tmp_path,
    )
    service = "repo/clusters/demo/btp-operator/service-broken.yaml: document 1 (Service kyma-system/broken)"
    assert (result.returncode, result.stdout, result.stderr) == (
        ExitCode.INPUT,
        "",
        "error: invalid manifests (2 problems)\n"
        f"  {service}: spec.colour: unknown field\n"
        f"  {service}: spec.ports[0].port: must be of type integer, got string\n",
    )
    assert read_tree(repo) == before
    assert not list(repo.glob("clusters/.*")), "staging or backup directories left behind"


def test_missing_schemas_fail_a_validated_render_unless_ignored(
    tmp_path: Path, run_cli: RunCli, unknown_kind_chart: Path
) -> None:
    source = _source(tmp_path, "source", unknown_kind_chart)
    failed = run_cli("render", source, "--out", "repo", "--validate", cwd=tmp_path)
    assert (failed.returncode, failed.stdout) == (ExitCode.INPUT, "")
    assert failed.stderr == (
        "error: invalid manifests (1 problem)\n"
        "  repo/clusters/default/btp-operator/httproute-operator-route.yaml: document 1 "
        "(HTTPRoute kyma-system/operator-route): no schema for gateway.networking.k8s.io/v1 HTTPRoute "
        f"in Kubernetes {NEWEST}; pass --crds with its CRD or --ignore-missing-schemas\n"
    )
    assert not (tmp_path / "repo").exists()

    ignored = run_cli("render", source, "--out", tmp_path / "repo", "--validate", "--ignore-missing-schemas")
    assert (ignored.returncode, ignored.stderr) == (ExitCode.OK, "")
    warnings = [line for line in ignored.stdout.splitlines() if "MissingSchema" in line]
    assert warnings == [
        "  warning: MissingSchema: HTTPRoute kyma-system/operator-route: no schema for gateway.networking.k8s.io/v1 "
        f"HTTPRoute in Kubernetes {NEWEST}; not validated (--ignore-missing-schemas)"
    ]


@pytest.mark.crds
def test_render_to_stdout_validates_before_writing_anything(
    tmp_path: Path, run_cli: RunCli, broken_chart: Path
) -> None:
    source = _source(tmp_path, "bad", broken_chart)
    result = run_cli(
        "render", source, "--stdout", "--cluster", "demo", "--validate", *_pinned_crd_options(), cwd=tmp_path
    )
    service = "clusters/demo/btp-operator/service-broken.yaml: document 1 (Service kyma-system/broken)"
    assert (result.returncode, result.stdout, result.stderr) == (
        ExitCode.INPUT,
        "",
        "error: invalid manifests (2 problems)\n"
        f"  {service}: spec.colour: unknown field\n"
        f"  {service}: spec.ports[0].port: must be of type integer, got string\n",
    )
