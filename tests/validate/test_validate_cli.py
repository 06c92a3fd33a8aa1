"""`btp-gitops validate` end to end, through the installed console script.

Exact stderr lines, stdout summaries, exit codes and JSON; inputs from files, directories and
stdin; the Kubernetes version switch; the pinned third-party CRDs (scripts/fetch-crds.sh) given
with --crds agree with the schemas shipped with btp-gitops (tests/validate/test_shipped_schemas.py)
for a real cert-manager Certificate and for the rendered example repo.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io.kube_schemas import supported_kubernetes_versions
from tests.conftest import CLI, EXAMPLES, RunCli
from tests.support.crds import third_party_crd_files
from tests.support.yaml_errors import PARSER, matches
from tests.validate.conftest import WIDGET_CRD_FILE, deployment, widget

NEWEST = supported_kubernetes_versions()[-1]


def _write(path: Path, *documents: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def _crd_options(files: list[Path]) -> list[str]:
    return [option for path in files for option in ("--crds", str(path))]


def test_problems_on_stderr_summary_on_stdout(tmp_path: Path, run_cli: RunCli) -> None:
    _write(
        tmp_path / "app" / "widgets.yaml",
        widget(size="three", colour="blue"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}, "data": {"a": "b"}},
        {**deployment(), "spec": {**deployment()["spec"], "replicas": "2"}},
    )
    result = run_cli("validate", "app", "--crds", WIDGET_CRD_FILE, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        ExitCode.INPUT,
        f"3 problems in 3 objects (Kubernetes {NEWEST})\n",
        "app/widgets.yaml: document 1 (Widget default/w): spec.colour: unknown field\n"
        "app/widgets.yaml: document 1 (Widget default/w): spec.size: must be of type integer, got string\n"
        "app/widgets.yaml: document 3 (Deployment default/web): spec.replicas: must be of type integer, got string\n",
    )


def test_json_output(tmp_path: Path, run_cli: RunCli) -> None:
    _write(
        tmp_path / "all.yaml",
        widget(mode="slow"),
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "c", "namespace": "n"},
        },
    )
    result = run_cli(
        "validate",
        "all.yaml",
        "--crds",
        WIDGET_CRD_FILE,
        "--ignore-missing-schemas",
        "--output",
        "json",
        cwd=tmp_path,
    )
    assert (result.returncode, result.stderr) == (ExitCode.INPUT, "")
    assert json.loads(result.stdout) == {
        "valid": False,
        "objects": 2,
        "kubernetesVersion": NEWEST,
        "problems": [
            {
                "file": "all.yaml",
                "document": 1,
                "object": "Widget default/w",
                "field": "spec.mode",
                "message": "must be one of 'fast', 'safe', got 'slow'",
            }
        ],
        "warnings": [
            {
                "file": "all.yaml",
                "document": 2,
                "object": "HTTPRoute n/c",
                "field": None,
                "message": f"no schema for gateway.networking.k8s.io/v1 HTTPRoute in Kubernetes {NEWEST}; "
                "not validated (--ignore-missing-schemas)",
            }
        ],
    }


def test_valid_json_output(tmp_path: Path, run_cli: RunCli) -> None:
    _write(tmp_path / "d.yaml", deployment())
    result = run_cli("validate", "d.yaml", "--output", "json", cwd=tmp_path)
    assert result.returncode == ExitCode.OK, result.stderr
    assert json.loads(result.stdout) == {
        "valid": True,
        "objects": 1,
        "kubernetesVersion": NEWEST,
        "problems": [],
        "warnings": [],
    }


def test_stdin(tmp_path: Path) -> None:
    stream = yaml.safe_dump_all([deployment(), {**deployment(), "kind": "Deployment", "status": {"x": 1}}])
    result = subprocess.run(
        [str(CLI), "validate", "-"], input=stream, capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        ExitCode.INPUT,
        f"1 problem in 2 objects (Kubernetes {NEWEST})\n",
        "<stdin>: document 2 (Deployment default/web): status.x: unknown field\n",
    )


def test_directory_walk_skips_dot_directories_and_kustomize_files(tmp_path: Path, run_cli: RunCli) -> None:
    repo = tmp_path / "repo"
    _write(repo / "clusters" / "a" / "deployment-web.yaml", deployment())
    _write(repo / "clusters" / "a" / "nested" / "widget.yml", widget())
    # Neither of these is an object for the cluster; validating them would fail.
    _write(
        repo / "clusters" / "a" / "kustomization.yaml",
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"},
    )
    _write(repo / ".git" / "broken.yaml", widget(colour="x"))
    _write(repo / "clusters" / ".staging" / "broken.yaml", widget(colour="x"))
    (repo / "README.md").write_text("apiVersion: [\n")
    result = run_cli("validate", "repo", "--crds", WIDGET_CRD_FILE, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        ExitCode.OK,
        f"2 objects valid (Kubernetes {NEWEST})\n",
        "",
    )


def test_a_named_file_is_read_even_if_it_is_a_kustomization(tmp_path: Path, run_cli: RunCli) -> None:
    _write(
        tmp_path / "kustomization.yaml",
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"},
    )
    result = run_cli("validate", "kustomization.yaml", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT
    assert result.stderr.startswith("kustomization.yaml: document 1 (Kustomization ): no schema for ")


def test_syntax_errors_and_non_objects_are_located(tmp_path: Path, run_cli: RunCli) -> None:
    """A broken document spoils only itself; its line is the line in the file."""
    (tmp_path / "mixed.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
        "---\n# comment only\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, name: c}\n"
        "---\n- just\n- a list\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {k: 1}\n"
    )
    result = run_cli("validate", "mixed.yaml", "missing.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        ExitCode.INPUT,
        f"4 problems in 3 objects (Kubernetes {NEWEST})\n",
        "missing.yaml: no such file or directory\n"
        "mixed.yaml: document 3: invalid YAML: line 9, column 21: found duplicate key 'name'\n"
        "mixed.yaml: document 4: expected a Kubernetes object (a mapping), got array\n"
        "mixed.yaml: document 5 (ConfigMap d): data.k: must be of type string, got integer\n",
    )


def test_missing_schema_is_an_error_unless_ignored(tmp_path: Path, run_cli: RunCli) -> None:
    """A kind neither built in nor shipped (Gateway API's HTTPRoute) and given no CRD."""
    _write(
        tmp_path / "c.yaml",
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "c"}},
    )
    line = (
        f"c.yaml: document 1 (HTTPRoute c): no schema for gateway.networking.k8s.io/v1 HTTPRoute in Kubernetes {NEWEST}; "
        "pass --crds with its CRD or --ignore-missing-schemas\n"
    )
    failed = run_cli("validate", "c.yaml", cwd=tmp_path)
    assert (failed.returncode, failed.stdout, failed.stderr) == (
        ExitCode.INPUT,
        f"1 problem in 1 object (Kubernetes {NEWEST})\n",
        line,
    )
    ignored = run_cli("validate", "c.yaml", "--ignore-missing-schemas", cwd=tmp_path)
    assert (ignored.returncode, ignored.stdout, ignored.stderr) == (
        ExitCode.OK,
        f"1 object valid, 1 warning (Kubernetes {NEWEST})\n",
        "warning: "
        + line.replace(
            "pass --crds with its CRD or --ignore-missing-schemas", "not validated (--ignore-missing-schemas)"
        ),
    )


def test_unsupported_kubernetes_version_is_a_usage_error(tmp_path: Path, run_cli: RunCli) -> None:
    _write(tmp_path / "d.yaml", deployment())
    result = run_cli("validate", "d.yaml", "--kubernetes-version", "1.20", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (ExitCode.USAGE, "")
    assert result.stderr == (
        f"error: unsupported --kubernetes-version '1.20'; supported: {', '.join(supported_kubernetes_versions())}\n"
    )


def test_the_kubernetes_version_selects_the_schemas(tmp_path: Path, run_cli: RunCli) -> None:
    """admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is served from Kubernetes 1.30 on."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {"validations": [{"expression": "true"}]},
    }
    _write(tmp_path / "p.yaml", policy)
    assert run_cli("validate", "p.yaml", "--kubernetes-version", "v1.30.4", cwd=tmp_path).stdout == (
        "1 object valid (Kubernetes 1.30)\n"
    )
    old = run_cli("validate", "p.yaml", "--kubernetes-version", "1.29", cwd=tmp_path)
    assert old.returncode == ExitCode.INPUT
    assert old.stderr == (
        "p.yaml: document 1 (ValidatingAdmissionPolicy p): no schema for admissionregistration.k8s.io/v1 "
        "ValidatingAdmissionPolicy in Kubernetes 1.29 (known apiVersions of ValidatingAdmissionPolicy: "
        "admissionregistration.k8s.io/v1alpha1, admissionregistration.k8s.io/v1beta1); "
        "pass --crds with its CRD or --ignore-missing-schemas\n"
    )


def test_a_crd_in_the_input_defines_its_kind(tmp_path: Path, run_cli: RunCli) -> None:
    crd = yaml.safe_load(WIDGET_CRD_FILE.read_text())
    _write(tmp_path / "stream.yaml", crd, widget(colour="blue"))
    result = run_cli("validate", "stream.yaml", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        ExitCode.INPUT,
        "stream.yaml: document 2 (Widget default/w): spec.colour: unknown field\n",
    )


@pytest.mark.crds
def test_third_party_custom_resource(tmp_path: Path, run_cli: RunCli) -> None:
    """A cert-manager Certificate: cert-manager's own pinned CRD and the shipped schema agree."""
    certificate = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {
            "secretName": "web-tls",
            "dnsName": ["web.example.com"],  # dnsNames
            "issuerRef": {"name": "ca", "kind": "Issuer"},
            "privateKey": {"algorithm": "RSA", "size": "4096"},
            "duration": "2160h",
        },
    }
    _write(tmp_path / "certificate.yaml", certificate)
    result = run_cli(
        "validate", "certificate.yaml", *_crd_options(third_party_crd_files("cert-manager")), cwd=tmp_path
    )
    assert (result.returncode, result.stderr) == (
        ExitCode.INPUT,
        'certificate.yaml: document 1 (Certificate apps/web): spec.dnsName: unknown field (did you mean "dnsNames"?)\n'
        "certificate.yaml: document 1 (Certificate apps/web): spec.privateKey.size: must be of type integer, got string\n",
    )
    shipped = run_cli("validate", "certificate.yaml", cwd=tmp_path)
    assert (shipped.returncode, shipped.stdout, shipped.stderr) == (
        result.returncode,
        result.stdout,
        result.stderr,
    )


@pytest.mark.crds
def test_rendered_example_validates_clean_with_or_without_the_pinned_crds(
    tmp_path: Path, run_cli: RunCli
) -> None:
    rendered = run_cli("render", EXAMPLES / "btp-operator", "--out", tmp_path / "repo", "--cluster", "demo")
    assert rendered.returncode == ExitCode.OK, rendered.stderr
    objects = len([p for p in (tmp_path / "repo").rglob("*.yaml") if p.name != "kustomization.yaml"])
    valid = (ExitCode.OK, f"{objects} objects valid (Kubernetes {NEWEST})\n", "")
    result = run_cli("validate", tmp_path / "repo", *_crd_options(third_party_crd_files()))
    assert (result.returncode, result.stdout, result.stderr) == valid
    # Its Certificates, Issuers, ExternalSecrets and SecretStore need no option: their schemas ship.
    without_crds = run_cli("validate", tmp_path / "repo")
    assert (without_crds.returncode, without_crds.stdout, without_crds.stderr) == valid


@pytest.mark.parametrize(
    "argv", [["validate"], ["validate", "x.yaml", "--output", "xml"]], ids=["no-path", "bad-output"]
)
def test_usage_errors(argv: list[str], run_cli: RunCli) -> None:
    assert run_cli(*argv).returncode == ExitCode.USAGE


def test_unreadable_inputs_and_crd_files_are_problems(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "latin1.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\ndata: {a: \xe9}\n")
    (tmp_path / "crds.yaml").write_text(WIDGET_CRD_FILE.read_text() + "---\nkind: [\n")
    _write(tmp_path / "w.yaml", widget(colour="blue"))
    result = run_cli(
        "validate", "latin1.yaml", "w.yaml", "--crds", "crds.yaml", "--crds", "gone", cwd=tmp_path
    )
    assert (result.returncode, result.stdout) == (
        ExitCode.INPUT,
        f"4 problems in 1 object (Kubernetes {NEWEST})\n",
    )
    assert matches(
        result.stderr,
        f"crds.yaml: document 2: invalid YAML: line 99, column 1: {PARSER}\n"
        "gone: no such file or directory\n"
        "latin1.yaml: not UTF-8 text (byte 41)\n"
        "w.yaml: document 1 (Widget default/w): spec.colour: unknown field\n",
    ), result.stderr
