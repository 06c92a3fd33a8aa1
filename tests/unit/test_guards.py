"""Unit tests of `generator.transforms.guards`: nothing secret is written to Git.

Covered: `assert_no_credentials` raises CredentialInOutput (exit code 5) listing every Secret with
`data` or `stringData` (by origin, object and field path, inside Lists too) and every serialized
file holding a PEM private key (RSA, EC, PKCS#8, encrypted, OpenSSH, PGP blocks), sorted by file
name; it passes for Secrets without data (absent or empty), for certificates and public keys, and
for other kinds with data. Every other encoding is in tests/unit/test_keys.py, and through the
CLI in tests/render/test_secrets_guard.py.

Nothing is faked: the guard runs on Manifests and file texts as the render pipeline passes them.
"""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.errors import CredentialInOutput
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.transforms.guards import (
    assert_no_credentials,
    assert_no_private_key_in_text,
    credential_problems,
    object_problems,
)
from tests.unit.helpers import manifests

MESSAGE = (
    "refusing to write credentials into the rendered repo: credentials must be referenced "
    "(ExternalSecret) and certificates issued in-cluster (cert-manager)"
)


@pytest.mark.parametrize(
    ("secret", "field"),
    [
        pytest.param("data: {clientsecret: c2VjcmV0}", "data", id="data"),
        pytest.param("stringData: {clientsecret: secret}", "stringData", id="stringData"),
        pytest.param("data: {}\nstringData: {a: b}", "stringData", id="empty-data-but-stringData"),
    ],
)
def test_secret_with_data_is_refused(secret: str, field: str) -> None:
    found = manifests(
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s, namespace: kyma-system}}\n{secret}\n",
        origin="chart/templates/secret.yaml",
    )
    with pytest.raises(CredentialInOutput) as caught:
        assert_no_credentials(found, {"secret-s.yaml": "apiVersion: v1\nkind: Secret\n"})
    error = caught.value
    assert error.exit_code == ExitCode.OUTPUT
    assert error.lines() == [
        MESSAGE,
        f"  chart/templates/secret.yaml (Secret kyma-system/s): {field}: Secret with data",
    ]


@pytest.mark.parametrize(
    ("pem", "what"),
    [
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "RSA PRIVATE KEY"),
        ("-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----", "EC PRIVATE KEY"),
        ("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", "PRIVATE KEY"),
        (
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----",
            "ENCRYPTED PRIVATE KEY",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----",
            "OPENSSH PRIVATE KEY",
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOY\n-----END PGP PRIVATE KEY BLOCK-----",
            "PGP PRIVATE KEY BLOCK",
        ),
    ],
    ids=["rsa", "ec", "pkcs8", "encrypted", "openssh", "pgp"],
)
def test_private_key_in_any_serialized_file_is_refused(pem: str, what: str) -> None:
    indented = "\n".join(f"    {line}" for line in pem.splitlines())
    files = {
        "kustomization.yaml": "resources: []\n",
        "configmap-tls.yaml": f"apiVersion: v1\nkind: ConfigMap\ndata:\n  key.pem: |\n{indented}\n",
    }
    with pytest.raises(CredentialInOutput) as caught:
        assert_no_credentials([], files)
    assert caught.value.lines() == [MESSAGE, f"  configmap-tls.yaml: contains a PEM {what}"]


def test_secrets_inside_lists_at_any_depth_and_keys_in_any_string_are_refused() -> None:
    """What kustomize and Argo CD expand: v1/List, *List kinds, nested wrappers."""
    found = manifests(
        """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: SecretList
  items:
  - {apiVersion: v1, kind: Secret, metadata: {name: deep, namespace: n}, stringData: {k: v}}
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
    namespace: n
    annotations: {note: "-----BEGIN OPENSSH PRIVATE KEY-----"}
  data: {k: v}
""",
        origin="module/list.yaml",
    )
    with pytest.raises(CredentialInOutput) as caught:
        assert_no_credentials(found, {})
    assert caught.value.lines() == [
        MESSAGE,
        "  module/list.yaml (Secret n/deep): items[0].items[0].stringData: Secret with data (inside a list)",
        "  module/list.yaml (ConfigMap n/cm): items[1].metadata.annotations.note: contains a PEM OPENSSH PRIVATE KEY",
    ]


def test_every_problem_is_reported_secrets_first_then_files_sorted() -> None:
    found = manifests(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: b, namespace: n}\ndata: {k: dg==}\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata: {name: empty, namespace: n}\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata: {name: a, namespace: n}\nstringData: {k: v}\n",
        origin="c/templates/s.yaml",
    )
    files = {
        "z.yaml": "-----BEGIN RSA PRIVATE KEY-----",
        "a.yaml": "-----BEGIN PRIVATE KEY-----",
        "m.yaml": "-----BEGIN CERTIFICATE-----",
    }
    with pytest.raises(CredentialInOutput) as caught:
        assert_no_credentials(found, files)
    assert caught.value.lines() == [
        MESSAGE,
        "  c/templates/s.yaml (Secret n/b): data: Secret with data",
        "  c/templates/s.yaml (Secret n/a): stringData: Secret with data",
        "  a.yaml: contains a PEM PRIVATE KEY",
        "  z.yaml: contains a PEM RSA PRIVATE KEY",
    ]


def test_secrets_without_data_certificates_and_other_kinds_pass() -> None:
    found = manifests(
        """\
apiVersion: v1
kind: Secret
metadata: {name: no-data, namespace: n}
type: kubernetes.io/tls
---
apiVersion: v1
kind: Secret
metadata: {name: empty-data, namespace: n}
data: {}
stringData: {}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: n}
data: {password-policy: strict}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: sap-btp-service-operator, namespace: n}
data: [{secretKey: k}]
"""
    )
    files = {
        "configmap-ca.yaml": "data:\n  ca.crt: |\n    -----BEGIN CERTIFICATE-----\n    MIIB\n",
        "configmap-pub.yaml": "data:\n  key.pub: |\n    -----BEGIN PUBLIC KEY-----\n    MIIB\n",
    }
    assert credential_problems(found, files) == []
    assert_no_credentials(found, files)  # raises CredentialInOutput on any finding


def test_empty_values_pass_only_as_placeholders() -> None:
    found = manifests(
        'apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: {a: "", b: null}\n'
    )
    assert credential_problems(found, {}, placeholders=True) == []
    assert [(p.object_ref, p.field_path, p.message) for p in credential_problems(found, {})] == [
        ("Secret n/s", "data", "Secret with data")
    ]


def test_data_that_is_not_a_map_is_refused_even_as_placeholders() -> None:
    found = manifests("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: c2VjcmV0\n")
    assert [(p.field_path, p.message) for p in credential_problems(found, {}, placeholders=True)] == [
        ("data", "Secret with data")
    ]


def test_object_problems_count_empty_values_unless_told_they_are_placeholders() -> None:
    (secret,) = manifests('apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: {a: ""}\n')
    assert [(p.field_path, p.message) for p in object_problems(secret)] == [("data", "Secret with data")]
    assert object_problems(secret, placeholders=True) == []


def test_keys_that_are_not_strings_are_walked_not_read_as_text() -> None:
    found = manifests(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\ndata: {1: one, true: yes}\n"
    )
    assert credential_problems(found, {}) == []


def test_a_private_key_as_a_map_key_is_refused_at_its_map() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "n"},
        "data": {pem: "x"},
    }
    problems = credential_problems([Manifest(body, "chart/templates/cm.yaml")], {})
    assert [(p.object_ref, p.field_path, p.message) for p in problems] == [
        ("ConfigMap n/c", "data", "a map key is a PEM RSA PRIVATE KEY")
    ]


def test_placeholders_are_allowed_only_when_asked_for() -> None:
    found = manifests('apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: {a: ""}\n')
    with pytest.raises(CredentialInOutput):
        assert_no_credentials(found, {"secret.yaml": "kind: Secret\n"})
    assert_no_credentials(found, {"secret.yaml": "kind: Secret\n"}, placeholders=True)


def test_a_document_that_is_not_a_map_has_no_secret() -> None:
    assert (
        credential_problems([Manifest(["a", "b"], "chart/templates/list.yaml")], {"list.yaml": "- a\n- b\n"})
        == []
    )


def test_a_report_showing_a_private_key_is_refused() -> None:
    pem = "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----"
    assert_no_private_key_in_text("the diff report", "no key here\n")
    with pytest.raises(CredentialInOutput) as caught:
        assert_no_private_key_in_text("the diff report", f"+ {pem}\n")
    assert caught.value.lines() == [
        "refusing to print the diff report: it would show a private key",
        "  the diff report: contains a PEM EC PRIVATE KEY",
    ]
