"""post-render on the streams real Helm 3 and Helm 4 hand over, through the installed CLI.

Object by object: order kept, Source comments (Helm 3) and filename annotations (Helm 4) kept,
hooks untouched, module labels and namespace set, webhook certificates from cert-manager. Both
outputs are also snapshots, reviewed like code.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.streams.helm import FILENAME_ANNOTATION, read_helm_stream
from tests.conftest import CLI
from tests.post_render.conftest import HelmHome, PostRender, _template_args, run_helm

pytestmark = pytest.mark.tools

MODULE_LABELS = {
    "app.kubernetes.io/managed-by": "btp-manager",
    "chart-version": "0.1.0",
    "kyma-project.io/module": "btp-operator",
}
CLUSTER_SCOPED = {
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}


def identities(text: str) -> list[tuple[str, str]]:
    return [(d.body["kind"], d.body["metadata"]["name"]) for d in read_helm_stream(text).documents]


def objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def hook_annotations(obj: dict[str, Any]) -> dict[str, str]:
    annotations = obj["metadata"].get("annotations") or {}
    return {k: v for k, v in annotations.items() if k.startswith("helm.sh/hook")}


def assert_module_transforms(output: list[dict[str, Any]]) -> None:
    for obj in output:
        labels = obj["metadata"].get("labels", {})
        assert MODULE_LABELS.items() <= labels.items(), obj["metadata"]["name"]
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"]["namespace"] == "kyma-system", obj["metadata"]["name"]
    deployment = next(o for o in output if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["metadata"]["labels"]["kyma-project.io/module"] == "btp-operator"
    configurations = [o for o in output if o["kind"].endswith("WebhookConfiguration")]
    assert sorted(o["kind"] for o in configurations) == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    for webhooks in configurations:
        assert webhooks["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
            "kyma-system/sap-btp-operator-webhook-cert"
        )
        assert webhooks["webhooks"], webhooks["metadata"]["name"]
        assert all("caBundle" not in w["clientConfig"] for w in webhooks["webhooks"])
    certificate = next(o for o in output if o["kind"] == "Certificate" and not o["spec"].get("isCA"))
    assert certificate["spec"]["secretName"] == "webhook-server-cert"
    assert certificate["spec"]["dnsNames"] == [
        "sap-btp-operator-webhook-service.kyma-system.svc",
        "sap-btp-operator-webhook-service.kyma-system",
    ]


def test_helm3_stream_keeps_order_and_source_comments(
    helm3_stream: str, post_render_cli: PostRender, yaml_snapshot: Any
) -> None:
    result = post_render_cli(helm3_stream)
    assert result.returncode == 0, result.stderr
    before, after = identities(helm3_stream), identities(result.stdout)
    assert after[: len(before)] == before
    assert [kind for kind, _ in after[len(before) :]] == ["Issuer", "Certificate", "Issuer", "Certificate"]
    sources = [d.source for d in read_helm_stream(result.stdout).documents]
    assert sources[: len(before)] == [d.source for d in read_helm_stream(helm3_stream).documents]
    assert all(s and s.startswith("sap-btp-operator/templates/") for s in sources[: len(before)])
    assert set(sources[len(before) :]) == {"btp-gitops/certificates"}
    assert_module_transforms(objects(result.stdout))
    assert result.stdout == yaml_snapshot


def test_helm4_stream_keeps_filenames_and_hooks(
    helm4_stream: str, post_render_cli: PostRender, yaml_snapshot: Any
) -> None:
    result = post_render_cli(helm4_stream)
    assert result.returncode == 0, result.stderr
    before, after = objects(helm4_stream), objects(result.stdout)
    assert "# Source:" not in helm4_stream
    assert all(FILENAME_ANNOTATION in o["metadata"]["annotations"] for o in after)
    for original, rendered in zip(before, after, strict=False):
        assert (
            rendered["metadata"]["annotations"][FILENAME_ANNOTATION]
            == (original["metadata"]["annotations"][FILENAME_ANNOTATION])
        )
        assert hook_annotations(rendered) == hook_annotations(original)
    hooks = [o for o in after if hook_annotations(o)]
    assert [h["metadata"]["name"] for h in hooks] == ["sap-btp-operator-pre-delete-cleanup"]
    assert hook_annotations(hooks[0])["helm.sh/hook"] == "pre-delete"
    assert_module_transforms(after)
    assert result.stdout == yaml_snapshot


def test_helm4_runs_the_shipped_plugin(helm_home: HelmHome) -> None:
    """`helm template --post-renderer btp-gitops` with helm-plugin/ installed: Helm 4 files it back."""
    result = run_helm("helm4", helm_home, *_template_args("btp-gitops"))
    assert result.returncode == 0, result.stderr
    output = objects(result.stdout)
    assert FILENAME_ANNOTATION not in result.stdout  # Helm 4 strips its annotation again
    assert "# Source: btp-gitops/templates/post-render.yaml" in result.stdout
    assert {o["kind"] for o in output} >= {"Certificate", "Issuer", "Deployment"}
    assert_module_transforms([o for o in output if not hook_annotations(o)])


def test_helm3_runs_the_cli_as_post_renderer(helm_home: HelmHome, tmp_path: Path) -> None:
    """Helm 3: the executable and one --post-renderer-args per argument."""
    credentials = tmp_path / "credentials.yaml"
    credentials.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "sap-btp-manager", "namespace": "kyma-system"},
                "stringData": {
                    "clientid": "id-1",
                    "clientsecret": "s3cr3t-value",
                    "sm_url": "https://sm.example.com",
                    "tokenurl": "https://auth.example.com",
                    "cluster_id": "cluster-from-secret",
                },
            }
        )
    )
    args = _template_args(
        str(CLI),
        "--post-renderer-args",
        "post-render",
        "--post-renderer-args",
        f"--credentials={credentials}",
    )
    result = run_helm("helm3", helm_home, *args)
    assert result.returncode == 0, result.stderr
    output = objects(result.stdout)
    secret = next(
        o for o in output if o["kind"] == "Secret" and o["metadata"]["name"] == "sap-btp-service-operator"
    )
    assert base64.b64decode(secret["data"]["clientsecret"]) == b"s3cr3t-value"
    config = next(o for o in output if o["kind"] == "ConfigMap")
    assert config["data"]["CLUSTER_ID"] == "cluster-from-secret"
    assert "s3cr3t-value" not in result.stderr
    # Helm 3 prints hooks without post-rendering them: the module transforms reach everything else.
    assert [o["kind"] for o in output if hook_annotations(o)] == ["Job"]
    assert_module_transforms([o for o in output if not hook_annotations(o)])


def test_helm4_hooks_alone_get_no_module_objects(helm4_stream: str, post_render_cli: PostRender) -> None:
    """Helm 4's `separate` strategy post-renders hooks on their own: nothing may be added to them."""
    hooks_only = "---\n".join(yaml.safe_dump(o) for o in objects(helm4_stream) if hook_annotations(o))
    result = post_render_cli(hooks_only)
    assert result.returncode == 0, result.stderr
    output = objects(result.stdout)
    assert [o["kind"] for o in output] == ["Job"]
    assert hook_annotations(output[0]) == hook_annotations(objects(hooks_only)[0])
