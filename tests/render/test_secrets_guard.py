"""No credential and no private key leaves for Git, whatever the encoding and wherever it sits.

Each case puts a Secret with data or a private key (generated now, never committed:
tests/support/keys.py) into a source the way a careless or hostile contributor would: inside a
`kind: List` or a `*List` of a Kyma module's raw manifests, as a ConfigMap's `binaryData`, in an
annotation, in a CAP workload's env entry or annotation, in a module's default CR. Each is tried
through the installed CLI on every Git output path: `render --out` (into a repository that
already holds a file), `render --stdout`, and `diff` in text, markdown and json. Each must exit 5,
name the object and the field, write nothing into the repository, and show the key in none of
stdout, stderr or any file: no 32-character slice of what was planted appears anywhere.

Also: what a diff shows of an old tree someone committed keys (and a Secret inside a List) into
by hand is masked in every format; certificates and public keys (caBundles, trust stores) are rendered, not refused; and a
schema error about a 4 KB private key, or a 4 KB plain value, shows at most a short prefix.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import EXAMPLES, ROOT, RunCli
from tests.support import keys

SLICE = 32


def needles(planted: str) -> list[str]:
    """Slices of a planted value that no output may contain (the armour lines aside: saying what
    kind of key was found is the point of the error)."""
    body = "".join(line for line in planted.splitlines() if not line.startswith("-----"))
    text = body if len(body) > SLICE else planted
    step = max(1, (len(text) - SLICE) // 8)
    return [text[i : i + SLICE] for i in range(0, len(text) - SLICE + 1, step)]


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --- sources -----------------------------------------------------------------------------------


def kyma_source(tmp: Path, extra: dict[str, Any] | list[dict[str, Any]]) -> Path:
    """examples/kyma-modules with one more document among greeter 1.0.0's raw manifests."""
    source = tmp / "kyma"
    shutil.copytree(EXAMPLES / "kyma-modules", source)
    documents = extra if isinstance(extra, list) else [extra]
    (source / ".modules" / "greeter" / "1.0.0" / "planted.yaml").write_text(yaml.safe_dump_all(documents))
    return source


def cap_source(tmp: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """examples/cap-services-only with its current version edited."""
    source = tmp / "cap"
    shutil.copytree(EXAMPLES / "cap-services-only", source)
    path = source / "version-2.3.0.yaml"
    body = yaml.safe_load(path.read_text())
    edit(body)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return source


def config_map(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


def env_entry(value: str) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        definition = body["spec"]["workloads"][0]["deploymentDefinition"]
        definition["env"] = [{"name": "PLAIN", "value": "fine"}, {"name": "SIGNING_KEY", "value": value}]

    return edit


def workload_annotation(value: str) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        body["spec"]["workloads"][1]["annotations"] = {"example.com/deploy-key": value}

    return edit


@dataclass(frozen=True)
class Case:
    id: str
    planted: str  # what must not appear in any output
    source: Callable[[Path], Path]
    reported: str  # a fragment of the error line: the field and what was found


def _cases() -> list[Case]:
    secret_value = base64.b64encode(b"planted-secret-canary-value-0123456789").decode()
    pem_rsa, pem_ec, pem_pkcs8 = keys.pem_rsa(), keys.pem_ec(), keys.pem_pkcs8()
    encrypted, openssh, putty = keys.pem_encrypted_pkcs8(), keys.openssh(), keys.putty()
    der_pkcs8, der_pkcs1 = keys.b64(keys.der_pkcs8()), keys.b64(keys.der_pkcs1())
    der_sec1_hex = keys.der_sec1().hex()
    b64_pem, b64_b64_pem = keys.b64(pem_ec), keys.b64(keys.b64(pem_pkcs8))
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "leaked"},
        "data": {"password": secret_value},
    }
    return [
        Case(
            "secret-in-v1-list",
            secret_value,
            lambda tmp: kyma_source(tmp, {"apiVersion": "v1", "kind": "List", "items": [secret]}),
            "(Secret leaked): items[0].data: Secret with data (inside a list)",
        ),
        Case(
            "secret-stringdata-in-secretlist-in-list",
            "planted-stringdata-canary-0123456789",
            lambda tmp: kyma_source(
                tmp,
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [
                        {
                            "apiVersion": "v1",
                            "kind": "SecretList",
                            "items": [
                                {
                                    "apiVersion": "v1",
                                    "kind": "Secret",
                                    "metadata": {"name": "nested"},
                                    "stringData": {"token": "planted-stringdata-canary-0123456789"},
                                }
                            ],
                        }
                    ],
                },
            ),
            "items[0].items[0].stringData: Secret with data (inside a list)",
        ),
        Case(
            "configmap-binarydata-base64-pem-ec",
            b64_pem,
            lambda tmp: kyma_source(tmp, config_map("tls", binaryData={"tls.key": b64_pem})),
            "binaryData.tls.key: contains base64 of a PEM EC PRIVATE KEY",
        ),
        Case(
            "configmap-data-pem-rsa-in-list",
            pem_rsa,
            lambda tmp: kyma_source(
                tmp, {"apiVersion": "v1", "kind": "List", "items": [config_map("tls", data={"k": pem_rsa})]}
            ),
            "(ConfigMap tls): items[0].data.k: contains a PEM RSA PRIVATE KEY",
        ),
        Case(
            "annotation-openssh",
            openssh,
            lambda tmp: kyma_source(
                tmp, config_map("ssh", metadata={"name": "ssh", "annotations": {"example.com/key": openssh}})
            ),
            "metadata.annotations.example.com/key: contains a PEM OPENSSH PRIVATE KEY",
        ),
        Case(
            "annotation-base64-der-pkcs1",
            der_pkcs1,
            lambda tmp: kyma_source(
                tmp,
                config_map("rsa", metadata={"name": "rsa", "annotations": {"example.com/key": der_pkcs1}}),
            ),
            "contains base64 of a DER PKCS#1 RSA private key",
        ),
        Case(
            "configmap-data-encrypted-pkcs8",
            encrypted,
            lambda tmp: kyma_source(tmp, config_map("enc", data={"key.pem": encrypted})),
            "data.key.pem: contains a PEM ENCRYPTED PRIVATE KEY",
        ),
        Case(
            "configmap-data-hex-der-sec1",
            der_sec1_hex,
            lambda tmp: kyma_source(tmp, config_map("hex", data={"key.hex": der_sec1_hex})),
            "contains hex of a DER SEC1 EC private key",
        ),
        Case(
            "cap-env-base64-der-pkcs8",
            der_pkcs8,
            lambda tmp: cap_source(tmp, env_entry(der_pkcs8)),
            "contains base64 of a DER PKCS#8 private key (RSA)",
        ),
        Case(
            "cap-env-putty",
            putty,
            lambda tmp: cap_source(tmp, env_entry(putty)),
            "contains a PuTTY private key file",
        ),
        Case(
            "cap-env-bearer-base64-of-base64-pem",
            b64_b64_pem,
            lambda tmp: cap_source(tmp, env_entry(f"Bearer {b64_b64_pem}")),
            "contains base64 of base64 of a PEM PRIVATE KEY",
        ),
        Case(
            "cap-workload-annotation-pkcs8-pem",
            pem_pkcs8,
            lambda tmp: cap_source(tmp, workload_annotation(pem_pkcs8)),
            "contains a PEM PRIVATE KEY",
        ),
    ]


CASES = _cases()


def assert_nothing_leaked(planted: str, *texts: str) -> None:
    for needle in needles(planted):
        for text in texts:
            assert needle not in text, f"planted value leaked: {needle!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_git_output_path_refuses_and_shows_nothing(case: Case, tmp_path: Path, run_cli: RunCli) -> None:
    source = case.source(tmp_path)
    repo = tmp_path / "gitops"
    repo.mkdir()
    (repo / "README.md").write_text("a repository someone already uses\n")
    before = tree_hashes(repo)

    runs = {
        "render --out": run_cli("render", source, "--out", repo, cwd=ROOT),
        "render --stdout": run_cli("render", source, "--stdout", cwd=ROOT),
        **{
            f"diff --output {output}": run_cli(
                # --new-cluster: the repository holds no render yet; the guard is what is tested.
                "diff",
                source,
                "--against",
                repo,
                "--new-cluster",
                "--output",
                output,
                cwd=ROOT,
            )
            for output in ("text", "markdown", "json")
        },
    }

    for mode, result in runs.items():
        assert result.returncode == ExitCode.OUTPUT, (mode, result.stderr)
        assert "Traceback" not in result.stderr, mode
        assert "refusing to write credentials into the rendered repo" in result.stderr, mode
        assert case.reported in result.stderr, (mode, result.stderr)
        if mode.endswith("json"):  # the error as a document on stdout (docs/errors.md), nothing more
            error = json.loads(result.stdout)
            assert (error["exitCode"], error["error"]["type"]) == (ExitCode.OUTPUT, "CredentialInOutput")
        else:
            assert result.stdout == "", mode
        assert_nothing_leaked(case.planted, result.stdout, result.stderr)
    assert tree_hashes(repo) == before
    assert not (repo / "clusters").exists()


def test_diff_masks_keys_someone_committed_into_the_old_tree(tmp_path: Path, run_cli: RunCli) -> None:
    """The rendered side is guarded; the tree compared with may hold anything. Every key in it,
    in any encoding and any object or file, is masked in all three formats."""
    pem, openssh, putty = keys.pem_ec(), keys.openssh(), keys.putty()
    der = keys.b64(keys.der_pkcs8_ed25519())
    b64_pem = keys.b64(keys.pem_rsa())
    app = tmp_path / "gitops" / "clusters" / "default" / "kyma-greeter"
    app.mkdir(parents=True)
    committed = config_map(
        "committed",
        metadata={"name": "committed", "namespace": "kyma-system", "annotations": {"k": openssh}},
        data={"key.pem": pem, "env": f"KEY={der}"},
        binaryData={"tls.key": b64_pem},
    )
    (app / "configmap-committed.yaml").write_text(yaml.safe_dump(committed))
    (app / "notes.txt").write_text(f"deploy key:\n{putty}")
    (app / "broken.yaml").write_text(f"key: [unclosed\n{pem}")
    canary = base64.b64encode(b"hand-committed-password-canary").decode()
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"name": "listed", "namespace": "kyma-system"},
        "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"p": canary}}],
    }
    (app / "list-listed.yaml").write_text(yaml.safe_dump(listed))

    for output in ("text", "markdown", "json"):
        result = run_cli(
            "diff",
            EXAMPLES / "kyma-modules",
            "--against",
            tmp_path / "gitops",
            "--new-cluster",  # a tree written by hand, not by render
            "--output",
            output,
            cwd=ROOT,
        )
        assert result.returncode == 0, result.stderr
        assert "configmap-committed.yaml" in result.stdout
        assert "<masked" in result.stdout
        for planted in (pem, openssh, putty, der, b64_pem):
            assert_nothing_leaked(planted, result.stdout, result.stderr)
        assert "list-listed.yaml" in result.stdout
        assert canary not in result.stdout + result.stderr
        assert "PRIVATE KEY-----" not in result.stdout


def public_material_source(tmp: Path) -> Path:
    certificate, public_pem = keys.certificate_pem(), keys.public_key_pem()
    public_der, ssh_public = keys.b64(keys.public_key_der()), keys.openssh_public_key()
    return kyma_source(
        tmp,
        [
            config_map(
                "trust",
                metadata={"name": "trust", "annotations": {"example.com/signer": public_pem}},
                data={"ca.crt": certificate, "authorized_keys": ssh_public, "spki": public_der},
                binaryData={"ca.der": keys.b64(keys.certificate_pem())},
            ),
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "greeter"},
                "webhooks": [
                    {
                        "name": "greeter.example.com",
                        "admissionReviewVersions": ["v1"],
                        "sideEffects": "None",
                        "clientConfig": {
                            "caBundle": keys.b64(certificate),
                            "service": {"name": "greeter", "namespace": "kyma-system"},
                        },
                    }
                ],
            },
        ],
    )


def test_certificates_and_public_keys_are_rendered_not_refused(tmp_path: Path, run_cli: RunCli) -> None:
    source = public_material_source(tmp_path)
    result = run_cli("render", source, "--out", tmp_path / "gitops", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    written = "".join(p.read_text() for p in (tmp_path / "gitops").rglob("*.yaml"))
    assert "-----BEGIN CERTIFICATE-----" in written
    assert "-----BEGIN PUBLIC KEY-----" in written
    assert keys.b64(keys.public_key_der()) in written
    assert keys.b64(keys.certificate_pem()) in written

    streamed = run_cli("render", source, "--stdout", cwd=ROOT)
    assert streamed.returncode == 0, streamed.stderr
    assert "-----BEGIN CERTIFICATE-----" in streamed.stdout


def schema_error(run_cli: RunCli, tmp: Path, version: str) -> subprocess.CompletedProcess[str]:
    def edit(body: dict[str, Any]) -> None:
        body["spec"]["version"] = version

    return run_cli("render", cap_source(tmp, edit), "--stdout", cwd=ROOT)


def test_a_schema_error_about_a_4kb_private_key_does_not_print_it(tmp_path: Path, run_cli: RunCli) -> None:
    pem = keys.pem_rsa()
    planted = pem + "#" * (4096 - len(pem))
    result = schema_error(run_cli, tmp_path, planted)
    assert result.returncode == ExitCode.INPUT
    (line,) = [line for line in result.stderr.splitlines() if "spec.version" in line]
    assert "does not match" in line
    assert "<redacted: PEM RSA PRIVATE KEY>" in line
    assert "PRIVATE KEY-----" not in result.stderr
    assert "#" * 25 not in result.stderr
    assert_nothing_leaked(pem, result.stdout, result.stderr)


def test_a_schema_error_about_a_4kb_value_shows_a_short_prefix(tmp_path: Path, run_cli: RunCli) -> None:
    result = schema_error(run_cli, tmp_path, "release-" + "x" * 4088)
    assert result.returncode == ExitCode.INPUT
    (line,) = [line for line in result.stderr.splitlines() if "spec.version" in line]
    assert "spec.version: 'release-xxxxxxxxxxxxxxx... (4096 characters) does not match" in line
    assert "x" * 25 not in result.stderr


def test_module_resources_refuses_a_secret_value_or_a_key_and_keeps_placeholders(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The module-resources artifact is committed too. BTP Manager's format ships the operator's
    Secret with empty values (filled in the cluster): that placeholder passes; a value does not,
    nor a private key in any object."""
    der = keys.b64(keys.der_pkcs8_ed25519())
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: module\nversion: 0.1.0\n")
    placeholder = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "p"}, "data": {"clientid": ""}}
    (chart / "templates" / "placeholder.yaml").write_text(yaml.safe_dump(placeholder))
    out = tmp_path / "module-resources"
    assert run_cli("module-resources", "--chart", chart, "--out", out, cwd=ROOT).returncode == 0
    before = tree_hashes(out)

    valued = {**placeholder, "metadata": {"name": "v"}, "data": {"clientsecret": "c2VjcmV0LXZhbHVlLTAx"}}
    (chart / "templates" / "valued.yaml").write_text(yaml.safe_dump(valued))
    (chart / "templates" / "key.yaml").write_text(yaml.safe_dump(config_map("k", binaryData={"id": der})))
    result = run_cli("module-resources", "--chart", chart, "--out", out, cwd=ROOT)

    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert "(Secret v): data.clientsecret: Secret with a value" in result.stderr
    assert (
        "(ConfigMap k): binaryData.id: contains base64 of a DER PKCS#8 private key (Ed25519)" in result.stderr
    )
    assert "(Secret p)" not in result.stderr
    assert_nothing_leaked(der, result.stdout, result.stderr)
    assert "c2VjcmV0LXZhbHVlLTAx" not in result.stdout + result.stderr
    assert tree_hashes(out) == before
