"""`btp-gitops post-render` as a user (or Helm) runs it: inputs, credentials, failures, parity with render."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import CLI, EXAMPLES, ROOT, RunCli
from tests.post_render.conftest import PostRender

SECRET_VALUES = {
    "clientid": "client-7f3a",
    "clientsecret": "do-not-print-this-9b1c",
    "sm_url": "https://service-manager.example.com",
    "tokenurl": "https://auth.example.com/oauth/token",
    "cluster_id": "3f9d2c1e-7a4b-4e2f-9c8d-1b2a3c4d5e6f",
}
MINIMAL_STREAM = """---
# Source: sap-btp-operator/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sap-btp-operator-config
  labels:
    helm.sh/chart: sap-btp-operator-1.2.3
data:
  CLUSTER_ID: from-values
---
# Source: sap-btp-operator/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: sap-btp-service-operator
  labels:
    helm.sh/chart: sap-btp-operator-1.2.3
data:
  clientid: ""
"""


def secret_manifest(values: dict[str, str], *, encode: bool = True, name: str = "sap-btp-manager") -> str:
    field = "data" if encode else "stringData"
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()} if encode else values
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": "kyma-system"},
            field: data,
        }
    )


def objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def find(found: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in found if o["kind"] == kind and o["metadata"]["name"] == name)


@pytest.mark.parametrize("encode", [True, False], ids=["data", "stringData"])
def test_credentials_become_the_operator_secret_and_configmap(
    post_render_cli: PostRender, tmp_path: Path, encode: bool
) -> None:
    credentials = tmp_path / "creds.yaml"
    credentials.write_text(
        secret_manifest({**SECRET_VALUES, "credentials_namespace": "btp-creds"}, encode=encode)
    )
    result = post_render_cli(MINIMAL_STREAM, "--credentials", credentials)
    assert result.returncode == 0, result.stderr
    found = objects(result.stdout)
    secret = find(found, "Secret", "sap-btp-service-operator")
    assert secret["metadata"]["namespace"] == "btp-creds"
    assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == {
        k: v for k, v in SECRET_VALUES.items() if k != "cluster_id"
    }
    assert find(found, "ConfigMap", "sap-btp-operator-config")["data"] == {
        "CLUSTER_ID": SECRET_VALUES["cluster_id"],
        "RELEASE_NAMESPACE": "btp-creds",
        "MANAGEMENT_NAMESPACE": "btp-creds",
        "ENABLE_LIMITED_CACHE": "true",
    }
    assert secret["metadata"]["labels"]["chart-version"] == "1.2.3"
    assert SECRET_VALUES["clientsecret"] not in result.stderr


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(
            {k: v for k, v in SECRET_VALUES.items() if k not in {"clientsecret", "tokenurl"}},
            "key(s) clientsecret, tokenurl not found",
            id="missing-keys",
        ),
        pytest.param(
            {**SECRET_VALUES, "sm_url": "", "clientsecret": " "},
            "missing value(s) for clientsecret, sm_url key(s)",
            id="empty-values",
        ),
    ],
)
def test_invalid_credentials_use_btp_manager_wording_and_never_show_values(
    post_render_cli: PostRender, tmp_path: Path, values: dict[str, str], message: str
) -> None:
    credentials = tmp_path / "creds.yaml"
    credentials.write_text(secret_manifest(values))
    result = post_render_cli(MINIMAL_STREAM, "--credentials", credentials)
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == "error: InvalidSecret: sap-btp-manager Secret is not usable"
    assert f"(Secret kyma-system/sap-btp-manager): {message}" in result.stderr
    for value in SECRET_VALUES.values():
        assert base64.b64encode(value.encode()).decode() not in result.stderr
        assert value not in result.stderr or value == ""


def test_bad_stream_fails_with_position_and_writes_nothing(post_render_cli: PostRender) -> None:
    stream = (
        MINIMAL_STREAM + "---\n# Source: sap-btp-operator/templates/broken.yaml\napiVersion: v1\nkind: X\n"
    )
    result = post_render_cli(stream)
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr == (
        "error: the manifest stream is not valid post-renderer input\n"
        "  <stdin>: document 3 (line 22, Source: sap-btp-operator/templates/broken.yaml): metadata: "
        "every object needs metadata\n"
    )


def test_non_utf8_input_is_a_clean_error(post_render_cli: PostRender) -> None:
    result = post_render_cli(b"apiVersion: v1\nkind: \xff\n")
    assert result.returncode == 3
    assert "<stdin>: not UTF-8 text (byte 21)" in result.stderr


def test_unknown_chart_version_asks_for_the_option(post_render_cli: PostRender) -> None:
    stream = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    result = post_render_cli(stream)
    assert result.returncode == 2
    assert "pass --chart-version" in result.stderr
    assert post_render_cli(stream, "--chart-version", "9.9.9").returncode == 0


def test_empty_input_is_refused_unless_allowed(post_render_cli: PostRender) -> None:
    refused = post_render_cli("")
    assert (refused.returncode, refused.stdout) == (4, "")
    assert "the manifest stream holds no objects" in refused.stderr
    allowed = post_render_cli("", "--allow-empty")
    assert (allowed.returncode, allowed.stdout) == (0, "")


def _without_mode_specific(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop what differs by design: credentials by reference (render) or by value (post-render), the
    BtpOperator itself (render writes it to Git), Argo CD sync waves (Git only) and the chart's own
    random-seeded checksum."""
    skipped_kinds = {"ExternalSecret", "SecretStore", "BtpOperator"}
    kept = []
    for obj in found:
        if obj["kind"] in skipped_kinds or obj["metadata"]["name"] in {
            "btp-gitops-credentials-reader",
            "sap-btp-service-operator",
        }:
            continue
        annotations = obj["metadata"].get("annotations", {})
        annotations.pop("argocd.argoproj.io/sync-wave", None)
        if not annotations:
            obj["metadata"].pop("annotations", None)
        template = obj.get("spec", {}).get("template", {}).get("metadata", {})
        template.get("annotations", {}).pop("checksum/config", None)
        kept.append(obj)
    return sorted(kept, key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]))


@pytest.mark.tools
def test_post_render_and_render_give_the_same_objects(
    helm3_stream: str, post_render_cli: PostRender, run_cli: RunCli, tmp_path: Path
) -> None:
    rendered = run_cli("render", EXAMPLES / "btp-operator", "--stdout", cwd=ROOT)
    assert rendered.returncode == 0, rendered.stderr
    credentials = tmp_path / "creds.yaml"
    credentials.write_text(secret_manifest(SECRET_VALUES))
    post_rendered = post_render_cli(helm3_stream, "--credentials", credentials)
    assert post_rendered.returncode == 0, post_rendered.stderr
    assert _without_mode_specific(objects(post_rendered.stdout)) == _without_mode_specific(
        objects(rendered.stdout)
    )


def test_a_reader_that_goes_away_is_not_an_internal_error(tmp_path: Path) -> None:
    """`btp-gitops post-render ... | head`: exit like a SIGPIPE'd tool, no traceback."""
    stream = tmp_path / "stream.yaml"
    stream.write_text(MINIMAL_STREAM * 50)
    with stream.open("rb") as stdin:
        process = subprocess.Popen(
            [str(CLI), "post-render"], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        with process.stderr:
            stderr = process.stderr.read()
        assert process.wait(timeout=60) == 141
    assert stderr == b""
