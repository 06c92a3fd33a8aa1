"""The third-party schemas shipped in src/btp_gitops/data/crd-schemas, and `validate` using them.

- The committed files are what scripts/generate-crd-schemas.py makes of the pinned CRDs (byte
  for byte), and its `--check` reports drift.
- Every example, rendered for Argo CD and for Flux with its wiring, validates with no options;
  together the renders emit exactly the shipped kinds.
- The shipped schemas are really used: a misspelled cert-manager field, an Istio field of the
  wrong type (in every served version), an ExternalSecret without a required field fail with
  exit 3 naming file, document, object and field.
- `--crds` still adds kinds the shipped set does not know, and overrides a shipped one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.kube_schemas import BundledKubernetesSchemas, supported_kubernetes_versions
from btp_gitops.generator.manifests.crd_schemas import (
    ShippedSchemaError,
    compact_schema,
    crd_from_shipped,
    is_crd,
    served_versions,
    shipped_schema_document,
)
from tests.conftest import CHART, CLI, EXAMPLES, ROOT, RunCli
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files

NEWEST = supported_kubernetes_versions()[-1]
SHIPPED = ROOT / "src" / "btp_gitops" / "data" / "crd-schemas"
GENERATOR = ROOT / "scripts" / "generate-crd-schemas.py"
EXAMPLE_NAMES = ("btp-operator", "cap-app", "cap-services-only", "kyma-modules")
TARGETS = ("argocd", "flux")
WIRING = ("--emit-wiring", "--repo-url", "https://example.invalid/repo.git")


def _write(path: Path, *documents: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def _generate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=300,
    )


def _tree(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


# --- the shipped files ----------------------------------------------------------------------------


@pytest.mark.crds
def test_the_shipped_schemas_are_generated_from_the_pinned_crds(tmp_path: Path) -> None:
    third_party_crd_files()  # names the fetch command when the pinned CRDs are missing
    result = _generate("--out", tmp_path / "generated")
    assert (result.returncode, result.stderr) == (ExitCode.OK, ""), result.stderr
    assert _tree(tmp_path / "generated") == _tree(SHIPPED)
    assert _generate("--check").returncode == ExitCode.OK


@pytest.mark.crds
def test_check_names_changed_missing_and_stale_files(tmp_path: Path) -> None:
    third_party_crd_files()
    copy = tmp_path / "copy"
    shutil.copytree(SHIPPED, copy)
    (copy / "certificates.cert-manager.io.json").write_text("{}\n")
    (copy / "gateways.networking.istio.io.json").unlink()
    (copy / "old.example.com.json").write_text("{}\n")
    result = _generate("--out", copy, "--check")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"{copy}/certificates.cert-manager.io.json: changed",
        f"{copy}/gateways.networking.istio.io.json: missing",
        f"{copy}/old.example.com.json: not generated (stale)",
    ]
    # Writing repairs all three, leaving nothing else behind.
    assert _generate("--out", copy).returncode == ExitCode.OK
    assert _tree(copy) == _tree(SHIPPED)


def test_an_unfetched_family_is_named_with_the_command_that_fetches_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _generate("--cache-dir", tmp_path / "empty-cache", "--out", out)
    assert (result.returncode, result.stdout) == (2, "")
    # The first family of the script, at its pinned version.
    assert re.fullmatch(
        rf"generate-crd-schemas: cert-manager (v[0-9.]+) is not fetched into {re.escape(str(tmp_path))}"
        rf"/empty-cache/crds/cert-manager-\1: run `bash scripts/fetch-crds\.sh cert-manager` from "
        rf"{re.escape(str(ROOT))}\n",
        result.stderr,
    ), result.stderr
    assert not out.exists()


def test_the_installed_package_finds_the_shipped_directory() -> None:
    assert bundled.crd_schema_dir() == SHIPPED.resolve()
    assert not SHIPPED.is_symlink(), "a real directory of the package, not a link to the checkout"


@pytest.mark.crds
def test_shipped_documents_stand_for_the_pinned_crds() -> None:
    """Each file's versions are the served versions of its CRD, with the compacted schema."""
    pinned = {
        (crd["spec"]["group"], crd["spec"]["names"]["kind"]): crd
        for crd in load_crds(third_party_crd_files())
    }
    files = sorted(SHIPPED.glob("*.json"))
    assert files, f"no schemas in {SHIPPED}"
    for path in files:
        shipped = crd_from_shipped(yaml.safe_load(path.read_text()))
        crd = pinned[(shipped["spec"]["group"], shipped["spec"]["names"]["kind"])]
        assert shipped["spec"]["scope"] == crd["spec"]["scope"], path.name
        assert [(v, k, s) for v, k, s in served_versions(shipped)] == [
            (v, k, compact_schema(s)) for v, k, s in served_versions(crd)
        ], path.name


def test_compaction_drops_documentation_at_schema_positions_only() -> None:
    node = {
        "type": "object",
        "description": "dropped",
        "x-kubernetes-validations": [{"rule": "self.a != ''"}],
        "properties": {
            # A field named like a keyword is a field: it stays, its own description goes.
            "description": {"type": "string", "description": "dropped", "default": "kept"},
            "mode": {"type": "string", "enum": ["description"], "example": "dropped"},
            "list": {"type": "array", "items": {"type": "integer", "title": "dropped"}},
            "map": {"type": "object", "additionalProperties": {"type": "string", "description": "x"}},
        },
        "anyOf": [{"required": ["description"], "description": "dropped"}],
        "default": {"description": "a value, kept"},
    }
    assert compact_schema(node) == {
        "type": "object",
        "properties": {
            "description": {"type": "string", "default": "kept"},
            "mode": {"type": "string", "enum": ["description"]},
            "list": {"type": "array", "items": {"type": "integer"}},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "anyOf": [{"required": ["description"]}],
        "default": {"description": "a value, kept"},
    }


def test_versions_with_one_schema_share_it_and_unserved_versions_are_left_out() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "description": "d"}}}
    other = {"type": "object", "properties": {"spec": {"type": "string"}}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.com",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "scope": "Cluster",
            "versions": [
                {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}},
                {"name": "v1", "served": True, "storage": False, "schema": {"openAPIV3Schema": schema}},
                {"name": "v0", "served": False, "storage": False, "schema": {"openAPIV3Schema": other}},
                {"name": "v3", "served": True, "storage": False, "schema": {"openAPIV3Schema": other}},
            ],
        },
    }
    document = shipped_schema_document(crd, "example.com/gadgets@v1/crd.yaml")
    assert document == {
        "format": 1,
        "group": "example.com",
        "kind": "Gadget",
        "plural": "gadgets",
        "scope": "Cluster",
        "source": "example.com/gadgets@v1/crd.yaml",
        "versions": [
            {"name": "v2", "schema": 0, "storage": True},
            {"name": "v1", "schema": 0},
            {"name": "v3", "schema": 1},
        ],
        "schemas": [{"type": "object", "properties": {"spec": {"type": "object"}}}, other],
    }
    assert [(v, k) for v, k, _ in served_versions(crd_from_shipped(document))] == [
        ("example.com/v2", "Gadget"),
        ("example.com/v1", "Gadget"),
        ("example.com/v3", "Gadget"),
    ]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "not a shipped schema document of format 1"),
        ({"format": 2}, "not a shipped schema document of format 1"),
        (
            {"format": 1, "group": "g", "kind": "", "plural": "ps", "scope": "Namespaced", "schemas": []},
            "missing or malformed: kind, versions",
        ),
        (
            {
                "format": 1,
                "group": "g",
                "kind": "K",
                "plural": "ks",
                "scope": "Namespaced",
                "schemas": [{}],
                "versions": [{"name": "v1", "schema": 1}],
            },
            "missing or malformed: versions",
        ),
    ],
    ids=["not-a-mapping", "other-format", "no-kind-no-versions", "schema-index-out-of-range"],
)
def test_a_malformed_shipped_document_is_refused(document: Any, message: str) -> None:
    with pytest.raises(ShippedSchemaError) as raised:
        crd_from_shipped(document)
    assert str(raised.value) == message


# --- every example validates with no options ------------------------------------------------------


def _render(run_cli: RunCli, source: Path, out: Path, target: str) -> Path:
    result = run_cli("render", source, "--out", out, "--cluster", "demo", "--target", target, *WIRING)
    assert result.returncode == ExitCode.OK, result.stderr
    return out


def _objects(repo: Path) -> list[dict[str, Any]]:
    files = [p for p in repo.rglob("*.y*ml") if p.name != "kustomization.yaml" and ".git" not in p.parts]
    return [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]


def _third_party_kinds(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(group, kind) of what is neither built in, nor ours, nor defined by a CRD of the render."""
    builtin = BundledKubernetesSchemas(NEWEST)
    defined = {
        (api_version, kind)
        for crd in [*load_crds(our_crd_files()), *(o for o in objects if is_crd(o))]
        for api_version, kind, _ in served_versions(crd)
    }
    return {
        (body["apiVersion"].rpartition("/")[0], body["kind"])
        for body in objects
        if (body["apiVersion"], body["kind"]) not in defined
        and builtin.kind_schema(body["apiVersion"], body["kind"]) is None
    }


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Every example for every target, with the wiring, plus btp-operator in Gardener cert mode."""
    root = tmp_path_factory.mktemp("rendered")
    run = _run_cli
    repos = {
        (name, target): _render(run, EXAMPLES / name, root / f"{name}-{target}", target)
        for name in EXAMPLE_NAMES
        for target in TARGETS
    }
    gardener = root / "btp-operator-gardener-source"
    shutil.copytree(EXAMPLES / "btp-operator", gardener)
    config = yaml.safe_load((gardener / "btpoperatorconfig.yaml").read_text())
    config["spec"].setdefault("chart", {})["path"] = str(CHART)
    config["spec"]["certificates"] = {"mode": "gardener"}
    _write(gardener / "btpoperatorconfig.yaml", config)
    repos[("btp-operator-gardener", "argocd")] = _render(run, gardener, root / "gardener", "argocd")
    return repos


def _run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The run_cli fixture's console script, for the module-scoped renders."""
    return subprocess.run(
        [str(CLI), *map(str, args)], capture_output=True, text=True, cwd=cwd, check=False, timeout=300
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_example_render_validates_with_no_options(
    rendered: dict[tuple[str, str], Path], run_cli: RunCli, example: str, target: str
) -> None:
    repo = rendered[(example, target)]
    wiring = repo / "clusters" / "demo" / ".wiring"  # a dot-directory: only validated when named
    objects = len(_objects(repo))
    result = run_cli("validate", repo, wiring)
    assert (result.returncode, result.stderr) == (ExitCode.OK, "")
    assert result.stdout == f"{objects} objects valid (Kubernetes {NEWEST})\n"


def test_the_renders_emit_exactly_the_shipped_kinds(rendered: dict[tuple[str, str], Path]) -> None:
    emitted = set().union(*(_third_party_kinds(_objects(repo)) for repo in rendered.values()))
    shipped = {
        (crd["spec"]["group"], crd["spec"]["names"]["kind"])
        for crd in (crd_from_shipped(yaml.safe_load(p.read_text())) for p in SHIPPED.glob("*.json"))
    }
    assert emitted == shipped


def test_a_gardener_render_validates_with_no_options(
    rendered: dict[tuple[str, str], Path], run_cli: RunCli
) -> None:
    result = run_cli("validate", rendered[("btp-operator-gardener", "argocd")])
    assert (result.returncode, result.stderr) == (ExitCode.OK, "")


# --- the shipped schemas are what validates third-party kinds -------------------------------------


def test_a_misspelled_cert_manager_field_is_named(tmp_path: Path, run_cli: RunCli) -> None:
    _write(
        tmp_path / "certificate.yaml",
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {
                "secretName": "web-tls",
                "dnsName": ["web.example.com"],  # dnsNames
                "issuerRef": {"name": "ca", "kind": "Issuer"},
                "privateKey": {"algorithm": "RSA", "size": "4096"},
            },
        },
    )
    result = run_cli("validate", "certificate.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        ExitCode.INPUT,
        f"2 problems in 1 object (Kubernetes {NEWEST})\n",
        'certificate.yaml: document 1 (Certificate apps/web): spec.dnsName: unknown field (did you mean "dnsNames"?)\n'
        "certificate.yaml: document 1 (Certificate apps/web): spec.privateKey.size: must be of type integer, got string\n",
    )


@pytest.mark.parametrize("version", ["v1", "v1beta1", "v1alpha3"])
def test_an_istio_field_of_the_wrong_type_is_named_in_every_served_version(
    tmp_path: Path, run_cli: RunCli, version: str
) -> None:
    virtual_service = {
        "apiVersion": f"networking.istio.io/{version}",
        "kind": "VirtualService",
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {
            "hosts": "web.example.com",  # a list
            "gateways": ["apps/gateway"],
            "http": [{"route": [{"destination": {"host": "web", "port": {"number": "80"}}}]}],
        },
    }
    _write(tmp_path / "vs.yaml", virtual_service)
    result = run_cli("validate", "vs.yaml", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        ExitCode.INPUT,
        "vs.yaml: document 1 (VirtualService apps/web): spec.hosts: must be of type array, got string\n"
        "vs.yaml: document 1 (VirtualService apps/web): spec.http[0].route[0].destination.port.number: "
        "must be of type integer, got string\n",
    )


def test_an_external_secret_without_a_required_field_is_named(tmp_path: Path, run_cli: RunCli) -> None:
    _write(
        tmp_path / "es.yaml",
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ExternalSecret",
            "metadata": {"name": "db", "namespace": "apps"},
            "spec": {
                "secretStoreRef": {"name": "store", "kind": "SecretStore"},
                "target": {"name": "db"},
                "data": [{"remoteRef": {"key": "db-binding"}}],  # no secretKey
            },
        },
    )
    result = run_cli("validate", "es.yaml", "--output", "json", cwd=tmp_path)
    assert result.returncode == ExitCode.INPUT
    assert yaml.safe_load(result.stdout)["problems"] == [
        {
            "file": "es.yaml",
            "document": 1,
            "object": "ExternalSecret apps/db",
            "field": "spec.data[0].secretKey",
            "message": "required field is missing",
        }
    ]


def test_render_validate_uses_the_shipped_schemas(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli(
        "render", EXAMPLES / "cap-app", "--out", tmp_path / "repo", "--cluster", "demo", "--validate"
    )
    assert (result.returncode, result.stderr) == (ExitCode.OK, "")
    assert "MissingSchema" not in result.stdout


# --- --crds adds and overrides --------------------------------------------------------------------


@pytest.mark.crds
def test_crds_adds_a_kind_the_shipped_schemas_do_not_know(tmp_path: Path, run_cli: RunCli) -> None:
    _write(
        tmp_path / "podmonitor.yaml",
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"selector": {}, "podMetricsEndpoint": [{"port": "metrics"}]},  # podMetricsEndpoints
        },
    )
    without = run_cli("validate", "podmonitor.yaml", cwd=tmp_path)
    assert (without.returncode, without.stderr) == (
        ExitCode.INPUT,
        "podmonitor.yaml: document 1 (PodMonitor apps/web): no schema for monitoring.coreos.com/v1 PodMonitor "
        f"in Kubernetes {NEWEST}; pass --crds with its CRD or --ignore-missing-schemas\n",
    )
    [podmonitors] = [p for p in third_party_crd_files("prometheus-operator") if "podmonitors" in p.name]
    with_crds = run_cli("validate", "podmonitor.yaml", "--crds", podmonitors, cwd=tmp_path)
    assert (with_crds.returncode, with_crds.stderr) == (
        ExitCode.INPUT,
        'podmonitor.yaml: document 1 (PodMonitor apps/web): spec.podMetricsEndpoint: unknown field (did you mean "podMetricsEndpoints"?)\n',
    )


def test_crds_overrides_a_shipped_kind(tmp_path: Path, run_cli: RunCli) -> None:
    """A CRD given with --crds wins over the shipped schema of the same apiVersion and kind."""
    spec = {"type": "object", "properties": {"colour": {"type": "string"}}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {
            "group": "cert-manager.io",
            "names": {"kind": "Certificate", "plural": "certificates"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }
    _write(tmp_path / "crd.yaml", crd)
    _write(
        tmp_path / "c.yaml",
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "c", "namespace": "apps"},
            "spec": {"colour": "blue"},
        },
    )
    shipped = run_cli("validate", "c.yaml", cwd=tmp_path)
    assert (shipped.returncode, shipped.stderr) == (
        ExitCode.INPUT,
        "c.yaml: document 1 (Certificate apps/c): spec.colour: unknown field\n"
        "c.yaml: document 1 (Certificate apps/c): spec.issuerRef: required field is missing\n"
        "c.yaml: document 1 (Certificate apps/c): spec.secretName: required field is missing\n",
    )
    overridden = run_cli("validate", "c.yaml", "--crds", "crd.yaml", cwd=tmp_path)
    assert (overridden.returncode, overridden.stderr) == (ExitCode.OK, "")
