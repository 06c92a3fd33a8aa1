"""The credential guard on module-resources, both ways, through the installed CLI.

BTP Manager's own chart renders the operator's Secret `sap-btp-service-operator` with its
credentials blank (the cluster fills them in) and one constant, `tokenurlsuffix: /oauth/token`:
that artifact is committed by BTP Manager's release workflow and must pass. The chart here is
written for these tests after that shape (credentials from values, the client secret left out
when empty, the suffix defaulted, an optional TLS pair); every value a release could actually
carry (a client secret, a URL, another suffix, a private key) must be refused with exit 5 at
its key, name the file and the object, show no value, and leave the previous artifact as it was.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import RunCli
from tests.support import keys

SECRET_TEMPLATE = """\
apiVersion: v1
kind: Secret
metadata:
  name: sap-btp-service-operator
  namespace: {{ .Release.Namespace }}
  labels:
    services.cloud.sap.com/managed-by-sap-btp-operator: "true"
type: Opaque
{{- $given := .Values.operator.credentials }}
{{- if $given.asText }}
stringData:
  clientid: {{ $given.clientid | quote }}
  tokenurlsuffix: {{ $given.tokenurlsuffix | quote }}
{{- else }}
data:
  clientid: {{ $given.clientid | b64enc | quote }}
  {{- with $given.clientsecret }}
  clientsecret: {{ . | b64enc | quote }}
  {{- end }}
  sm_url: {{ $given.sm_url | b64enc | quote }}
  tokenurl: {{ $given.tokenurl | b64enc | quote }}
  tokenurlsuffix: {{ $given.tokenurlsuffix | b64enc | quote }}
  {{- with $given.tlsKey }}
  tls.key: {{ . | b64enc | quote }}
  {{- end }}
{{- end }}
"""
DEFAULT_VALUES = {
    "operator": {
        "credentials": {
            "clientid": "",
            "clientsecret": "",
            "sm_url": "",
            "tokenurl": "",
            "tokenurlsuffix": "/oauth/token",
            "tlsKey": "",
            "asText": False,
        }
    }
}
CONFIGMAP_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: sap-btp-operator-config
  namespace: {{ .Release.Namespace }}
data:
  MANAGEMENT_NAMESPACE: {{ .Release.Namespace }}
"""


def operator_chart(root: Path) -> Path:
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: sap-btp-operator\nversion: 0.11.10\n")
    (chart / "values.yaml").write_text(yaml.safe_dump(DEFAULT_VALUES))
    (chart / "templates" / "secret.yml").write_text(SECRET_TEMPLATE)
    (chart / "templates" / "configmap.yml").write_text(CONFIGMAP_TEMPLATE)
    return chart


def overrides(root: Path, **credentials: object) -> Path:
    path = root / "overrides.yaml"
    path.write_text(yaml.safe_dump({"operator": {"credentials": credentials}}))
    return path


def hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def secret_of(out: Path) -> dict[str, object]:
    (secret,) = [d for d in yaml.safe_load_all((out / "apply" / "secret.yml").read_text()) if d]
    assert isinstance(secret, dict)
    return secret


def test_the_release_shape_of_the_operator_secret_is_written(tmp_path: Path, run_cli: RunCli) -> None:
    """Blank credentials, no client secret key, and the token path constant: exit 0, and the
    Secret is in apply/ as the chart made it."""
    out = tmp_path / "module-resources"
    result = run_cli("module-resources", "--chart", operator_chart(tmp_path), "--out", out)
    assert result.returncode == 0, result.stderr
    secret = secret_of(out)
    assert secret["data"] == {
        "clientid": "",
        "sm_url": "",
        "tokenurl": "",
        "tokenurlsuffix": base64.b64encode(b"/oauth/token").decode(),
    }


def test_the_constant_as_string_data_is_written(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "module-resources"
    chart = operator_chart(tmp_path)
    result = run_cli(
        "module-resources", "--chart", chart, "--values", overrides(tmp_path, asText=True), "--out", out
    )
    assert result.returncode == 0, result.stderr
    assert secret_of(out)["stringData"] == {"clientid": "", "tokenurlsuffix": "/oauth/token"}


REFUSED = [
    pytest.param({"clientsecret": "kP9-rT4w_Zq81mNv"}, ["data.clientsecret"], id="client-secret"),
    pytest.param({"sm_url": "https://service-manager.example.org"}, ["data.sm_url"], id="url"),
    pytest.param({"tokenurlsuffix": "/oauth/token?tenant=t7"}, ["data.tokenurlsuffix"], id="other-suffix"),
    pytest.param({"tokenurlsuffix": "/oauth/token\n"}, ["data.tokenurlsuffix"], id="suffix-and-newline"),
    pytest.param(
        {"asText": True, "tokenurlsuffix": "/OAUTH/token"}, ["stringData.tokenurlsuffix"], id="text"
    ),
    pytest.param({"asText": True, "clientid": "sb-operator!b1"}, ["stringData.clientid"], id="text-id"),
]


@pytest.mark.parametrize(("credentials", "fields"), REFUSED)
def test_a_value_in_the_operator_secret_is_refused_at_its_key(
    tmp_path: Path, run_cli: RunCli, credentials: dict[str, object], fields: list[str]
) -> None:
    chart = operator_chart(tmp_path)
    out = tmp_path / "module-resources"
    assert run_cli("module-resources", "--chart", chart, "--out", out).returncode == 0
    before = hashes(out)

    result = run_cli(
        "module-resources", "--chart", chart, "--values", overrides(tmp_path, **credentials), "--out", out
    )

    assert result.returncode == ExitCode.OUTPUT, result.stderr
    where = "sap-btp-operator/templates/secret.yml (Secret kyma-system/sap-btp-service-operator)"
    found = [line.strip() for line in result.stderr.splitlines() if line.strip().startswith(where)]
    assert [line.split(": ")[1] for line in found] == fields
    assert all("Secret with a value" in line for line in found)
    for value in credentials.values():
        if isinstance(value, str) and value.strip() not in (
            "",
            "/oauth/token",
        ):  # the message lists the constant
            assert value.strip() not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert hashes(out) == before


def test_a_private_key_in_the_operator_secret_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    pem = keys.pem_pkcs8()
    chart = operator_chart(tmp_path)
    out = tmp_path / "module-resources"
    result = run_cli(
        "module-resources", "--chart", chart, "--values", overrides(tmp_path, tlsKey=pem), "--out", out
    )
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert "(Secret kyma-system/sap-btp-service-operator): data.tls.key: Secret with a value" in result.stderr
    assert "data.tls.key: contains base64 of a PEM PRIVATE KEY" in result.stderr
    body = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
    encoded = base64.b64encode(pem.encode()).decode()
    for leaked in (body[:32], body[-32:], encoded[40:72]):
        assert leaked not in result.stdout + result.stderr
    assert not out.exists()
