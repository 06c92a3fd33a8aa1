"""A tenant record's labels are copied onto the CAPTenant rendered for it: `render` checks them as
the Kubernetes API server would (a qualified-name key, a value of at most 63 characters) and
refuses with exit 3, naming the record file, the CAPTenant and the field, rather than writing an
object the cluster refuses. Through the installed CLI, into a repository that already holds a
render, which must stay as it was.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.cap_tenants.conftest import CLUSTER, tenant_record, write_tenants
from tests.conftest import ROOT, RunCli

ALLOWED = {
    "team": "",
    "billing.example.com/cost-centre": "cc_4711.a",
    "k" * 63: "v" * 63,
    "Tier": "Gold-1",
    ("d" * 62 + ".") * 4 + "d/n": "x",  # a prefix of 253 characters
}


def hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def labelled(name: str, labels: dict[str, str]) -> dict[str, object]:
    record = tenant_record(name)
    record["metadata"]["labels"] = labels
    return record


def test_labels_kubernetes_takes_are_rendered(shop_source: Path, tmp_path: Path, run_cli: RunCli) -> None:
    write_tenants(shop_source, [labelled("acme", ALLOWED)])
    done = run_cli("render", shop_source, "--out", tmp_path / "repo", "--cluster", CLUSTER, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    (tenant,) = [
        yaml.safe_load(p.read_text()) for p in (tmp_path / "repo" / "clusters").rglob("captenant-acme.yaml")
    ]
    assert ALLOWED.items() <= tenant["metadata"]["labels"].items()


BAD_KEYS = [
    "bad key!",
    "a/b/c",
    "/no-prefix",
    "Example.com/upper-prefix",
    "example.com/",
    "-leading",
    "trailing_",
    "k" * 64,
    ("d" * 62 + ".") * 4 + "dd/n",  # a prefix of 254 characters
    "new\nline",
]
BAD_VALUES = ["two words", "v" * 64, "-leading", "trailing.", "ünïcode", "line\n"]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_a_label_key_kubernetes_refuses_is_an_input_error(
    shop_source: Path, tmp_path: Path, run_cli: RunCli, key: str
) -> None:
    refused(shop_source, tmp_path, run_cli, {key: "x"}, "metadata.labels: label key ")


@pytest.mark.parametrize("value", BAD_VALUES)
def test_a_label_value_kubernetes_refuses_is_an_input_error(
    shop_source: Path, tmp_path: Path, run_cli: RunCli, value: str
) -> None:
    refused(shop_source, tmp_path, run_cli, {"team": value}, "metadata.labels.team: label value ")


def refused(source: Path, tmp_path: Path, run_cli: RunCli, labels: dict[str, str], field: str) -> None:
    repo = tmp_path / "repo"
    write_tenants(source, [tenant_record("first")])
    assert run_cli("render", source, "--out", repo, "--cluster", CLUSTER, cwd=ROOT).returncode == 0
    before = hashes(repo)

    write_tenants(source, [labelled("acme", labels)])
    done = run_cli("render", source, "--out", repo, "--cluster", CLUSTER, cwd=ROOT)

    assert done.returncode == ExitCode.INPUT, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "tenants/acme.yaml" in line]
    assert f"tenants/acme.yaml: document 1 (CAPTenant shop/acme): {field}" in line
    assert "Traceback" not in done.stderr
    assert hashes(repo) == before
