"""Error messages never echo a key, a token or more than a short prefix of a long value.

`generator.core.redact` is applied where every message is made (Problem, BtpGitopsError, Note),
so these tests build messages the way any code would, and one goes through the real CLI: a chart
whose template fails quoting a private key from its values (Helm's own error text).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from btp_gitops.generator.core.errors import ChartRenderFailed, Problem, SchemaViolation
from btp_gitops.generator.core.redact import redact, shown
from btp_gitops.generator.core.report import Level, Note
from tests.conftest import EXAMPLES, ROOT, RunCli
from tests.support import keys

JWT = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0ZW5hbnQtYWRtaW4ifQ.c2lnbmF0dXJlLWJ5dGVzLWhlcmU"


def test_keys_tokens_and_long_values_are_replaced_in_any_message() -> None:
    pem, der = keys.pem_rsa(), keys.b64(keys.der_pkcs8())
    message = (
        f"value {pem!r} is wrong; token {JWT}; password Xk9vQ2RsLmVwYmFzZTY0dG9rZW5zZWNyZXQx; der {der}; "
        f"'{'y' * 500}' is too long"
    )
    redacted = redact(message)
    assert redacted == (
        "value '<redacted: PEM RSA PRIVATE KEY>\\n' is wrong; token <redacted: token, 95 characters>; "
        "password <redacted: 36 characters>; der <redacted: base64 of a DER PKCS#8 private key (RSA)>; "
        f"'{'y' * 24}...' (500 characters) is too long"
    )


def test_ordinary_messages_are_left_alone() -> None:
    for message in (
        "spec.modules[2].channel: must be one of 'regular', 'fast', got 'slow'",
        "/Users/JohnDoe/projects/gitops2/sources/app.yaml: document 1: the module's name is 'abc'",
        "commit 0123456789abcdef0123456789abcdef01234567, image digest sha256:" + "ab" * 32,
    ):
        assert redact(message) == message


def test_shown_quotes_a_short_prefix_and_never_a_key_or_token() -> None:
    assert shown("fast") == "'fast'"
    assert shown("v" * 4096) == f"'{'v' * 23}... (4096 characters)"
    assert shown(keys.openssh()) == "<redacted: PEM OPENSSH PRIVATE KEY>"
    assert shown(keys.b64(keys.putty())) == "<redacted: base64 of a PuTTY private key file>"
    assert shown(JWT) == "<redacted: 95 characters>"


def test_problems_errors_and_notes_are_redacted_when_made() -> None:
    pem = keys.pem_ec().strip()
    problem = Problem(
        file="s.yaml", message=f"got {pem}", object_ref=f"ConfigMap n/{'m' * 300}", field_path="x"
    )
    error = SchemaViolation(f"invalid: {pem}", [problem])
    note = Note(Level.WARNING, "Reason", "subject", f"pinned {keys.b64(keys.der_sec1())}")
    shown_text = "\n".join([*error.lines(), note.message, str(error)])
    assert "PRIVATE KEY-----" not in shown_text
    assert "<redacted: PEM EC PRIVATE KEY>" in error.lines()[0]
    assert problem.object_ref == f"ConfigMap n/{'m' * 22}... (302 characters)"
    assert note.message == "pinned <redacted: base64 of a DER SEC1 EC private key>"
    failed = ChartRenderFailed(f"chart failed: execution error: bad value {pem}")
    assert failed.message == "chart failed: execution error: bad value <redacted: PEM EC PRIVATE KEY>"


def test_a_helm_error_quoting_a_key_from_the_values_does_not_print_it(
    tmp_path: Path, run_cli: RunCli
) -> None:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: leaky\nversion: 0.1.0\n")
    (chart / "templates" / "fail.yaml").write_text('{{ fail (printf "bad value %s" .Values.leak) }}\n')
    source = tmp_path / "source"
    shutil.copytree(EXAMPLES / "btp-operator", source)
    config_path = source / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_path.read_text())
    pem = keys.pem_pkcs8()
    config["spec"]["chart"] = {"path": str(chart), "values": {"leak": pem}}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    result = run_cli("render", source, "--stdout", "--allow-path", chart, cwd=ROOT)

    assert result.returncode == 4, result.stderr
    assert "bad value <redacted: PEM PRIVATE KEY>" in result.stderr
    body = "".join(pem.splitlines()[1:-1])
    for start in range(0, len(body) - 32, 32):
        assert body[start : start + 32] not in result.stderr
