"""Deployments CAP Operator created keep the pod selector it gave them (issue 35's cutover).

A Deployment's `spec.selector` cannot change. CAP Operator selected a workload's pods by its whole
label set: the workload's own labels, `app`, `cav-version`, `category`, `workload-type`,
`workload-name`, `owner-identifier-hash`, `owner-generation` (the version's generation when it
created the Deployment) and, on exposed workloads, `exposed-workload`. A version annotated
`btp-gitops.io/cap-operator-generation` (what `btp-gitops import` writes) renders its Deployments
with exactly that selector, and pods labelled to match; every other rendered file stays as it was.
The expected selector is computed here from the source documents, not from the render's code.
A malformed value is an input error naming the file, the object and the annotation.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cap.conftest import CLUSTER, RenderRepo
from tests.conftest import ROOT, RunCli

ANNOTATION = "btp-gitops.io/cap-operator-generation"
APP_DIR = f"clusters/{CLUSTER}/cap.bookshop.bookshop"
GENERATIONS = {"version-1.0.0.yaml": "4", "version-1.1.0.yaml": "1"}


def annotate(source: Path, file_name: str, value: str) -> dict[str, Any]:
    """Put the annotation (as YAML text, so that non-strings can be written too) on the version
    in `file_name`; the version as parsed afterwards."""
    path = source / file_name
    text = path.read_text()
    name_line = next(line for line in text.splitlines() if line.startswith("  name: "))
    path.write_text(
        text.replace(f"{name_line}\n", f"{name_line}\n  annotations:\n    {ANNOTATION}: {value}\n", 1)
    )
    (version,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return dict(version)


def cap_operator_labels(version: dict[str, Any], workload: dict[str, Any], generation: str) -> dict[str, str]:
    """The label set CAP Operator gives a Deployment it creates, as its source says it."""
    metadata = version["metadata"]
    definition = workload["deploymentDefinition"]
    exposed = definition["type"] == "Router" or any(
        route["workloadName"] == workload["name"]
        for exposure in version["spec"].get("serviceExposures", [])
        for route in exposure["routes"]
    )
    owner = hashlib.sha1(
        f"{metadata['namespace']}{metadata['name']}".encode(), usedforsecurity=False
    ).hexdigest()
    labels = {
        **workload.get("labels", {}),
        "app": "bookshop",  # the CAPApplication's btpAppName
        "sme.sap.com/cav-version": version["spec"]["version"],
        "sme.sap.com/category": "Workload",
        "sme.sap.com/workload-type": definition["type"],
        "sme.sap.com/workload-name": f"{metadata['name']}-{workload['name'].lower()}",
        "sme.sap.com/owner-identifier-hash": owner,
        "sme.sap.com/owner-generation": generation,
    }
    if exposed:
        labels["sme.sap.com/exposed-workload"] = "true"
    return labels


def deployment_path(version: dict[str, Any], workload: dict[str, Any]) -> str:
    return f"{APP_DIR}/deployment-{version['metadata']['name']}-{workload['name'].lower()}.yaml"


def test_annotated_versions_give_their_deployments_cap_operators_selector(
    cap_source: Path, tmp_path: Path, render_repo: RenderRepo, yaml_snapshot: object
) -> None:
    plain = render_repo(cap_source, tmp_path / "plain")
    versions = {name: annotate(cap_source, name, f'"{value}"') for name, value in GENERATIONS.items()}
    adopted = render_repo(cap_source, tmp_path / "adopted")

    expected_changes = set()
    for file_name, version in versions.items():
        # The version keeps the annotation in the cluster (an import of it gives it back).
        path = f"{APP_DIR}/capapplicationversion-{version['metadata']['name']}.yaml"
        expected_changes.add(path)
        assert yaml.safe_load(adopted[path])["metadata"]["annotations"] == {
            ANNOTATION: GENERATIONS[file_name]
        }
        for workload in version["spec"]["workloads"]:
            if "deploymentDefinition" not in workload:
                continue
            path = deployment_path(version, workload)
            expected_changes.add(path)
            deployment = yaml.safe_load(adopted[path])
            labels = cap_operator_labels(version, workload, GENERATIONS[file_name])
            assert deployment["spec"]["selector"] == {"matchLabels": labels}, path
            assert deployment["spec"]["template"]["metadata"]["labels"] == labels, path
            assert deployment["metadata"]["labels"] == labels, path
            # Everything else of the Deployment is as it was: the pods differ by one label.
            before = yaml.safe_load(plain[path])
            for body in (before, deployment):
                del body["spec"]["selector"]
                del body["metadata"]["labels"]
                template = body["spec"]["template"]
                del template["metadata"]["labels"]
                for constraint in template["spec"].get("topologySpreadConstraints", []):
                    del constraint["labelSelector"]
            assert deployment == before, path
    assert {"Router", "CAP", "Additional"} <= {
        w["deploymentDefinition"]["type"]
        for v in versions.values()
        for w in v["spec"]["workloads"]
        if "deploymentDefinition" in w
    }
    # Services, PodDisruptionBudgets, ServiceMonitors, Jobs, ...: byte for byte as without the annotation
    # (their selectors can change; only a Deployment's cannot).
    changed = {path for path in plain.keys() | adopted.keys() if plain.get(path) != adopted.get(path)}
    assert changed == expected_changes
    assert adopted[f"{APP_DIR}/deployment-bookshop-1-1-0-srv.yaml"].decode() == yaml_snapshot


def test_a_spread_constraint_selects_what_the_deployment_selects(
    cap_source: Path, tmp_path: Path, render_repo: RenderRepo
) -> None:
    annotate(cap_source, "version-1.1.0.yaml", '"7"')
    tree = render_repo(cap_source, tmp_path / "repo")
    deployment = yaml.safe_load(tree[f"{APP_DIR}/deployment-bookshop-1-1-0-srv.yaml"])
    (constraint,) = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert constraint["labelSelector"] == deployment["spec"]["selector"]
    assert constraint["labelSelector"]["matchLabels"]["sme.sap.com/owner-generation"] == "7"


@pytest.mark.parametrize(
    "value",
    ['"0"', '"-1"', '"03"', '"1.5"', '"one"', '""', '" 2"', '"9223372036854775808"', "2", "true"],
)
def test_a_malformed_generation_is_an_input_error(
    cap_source: Path, tmp_path: Path, run_cli: RunCli, value: str
) -> None:
    annotate(cap_source, "version-1.1.0.yaml", value)
    result = run_cli("render", cap_source, "--out", tmp_path / "repo", "--cluster", CLUSTER, cwd=ROOT)
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "repo").exists()
    (line,) = [line for line in result.stderr.splitlines() if ANNOTATION in line]
    assert "version-1.1.0.yaml: document 1 (CAPApplicationVersion bookshop/bookshop-1-1-0)" in line
    assert f"metadata.annotations.{ANNOTATION}" in line


def test_the_largest_generation_is_accepted(
    cap_source: Path, tmp_path: Path, render_repo: RenderRepo
) -> None:
    annotate(cap_source, "version-1.1.0.yaml", '"9223372036854775807"')
    tree = render_repo(cap_source, tmp_path / "repo")
    deployment = yaml.safe_load(tree[f"{APP_DIR}/deployment-bookshop-1-1-0-srv.yaml"])
    assert deployment["spec"]["selector"]["matchLabels"]["sme.sap.com/owner-generation"] == (
        "9223372036854775807"
    )
