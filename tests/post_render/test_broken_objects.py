"""Structurally broken objects on the post-render stream: refused with exit 3, never handed to Helm.

Each row is one object of the stream with a field of the wrong shape; the CLI must name the
document, its line and Source, and the field path, and write nothing on stdout.
"""

from __future__ import annotations

import pytest

from tests.post_render.conftest import PostRender

HEAD = "---\n# Source: sap-btp-operator/templates/broken.yaml\n"
CHART_LABEL = "    helm.sh/chart: sap-btp-operator-1.2.3\n"


@pytest.mark.parametrize(
    ("body", "where", "expected"),
    [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 42\n",
            "ConfigMap 42, line 1",
            "metadata.name: must be a string, not an integer",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: ns\n",
            "ConfigMap ns/, line 1",
            "metadata.name: required field is missing",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: [name, x]\n",
            "line 1",
            "metadata: every object needs metadata",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: [a]\n",
            "ConfigMap ['a']/x, line 1",
            "metadata.namespace: must be a string, not a list",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: [a, b]\n",
            "ConfigMap x, line 1",
            "metadata.labels: must be a mapping of strings to strings",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    helm.sh/chart: 5\n",
            "ConfigMap x, line 1",
            "metadata.labels.helm.sh/chart: must be a string, not an integer",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    1: a\n",
            "ConfigMap x, line 1",
            "metadata.labels: keys must be non-empty strings, found 1",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    a: {b: c}\n",
            "ConfigMap x, line 1",
            "metadata.annotations.a: must be a string, not a mapping",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    a: null\n",
            "ConfigMap x, line 1",
            "metadata.annotations.a: must be a string, not null",
        ),
        (
            "apiVersion: v1\nkind: 7\nmetadata:\n  name: x\n",
            "7 x, line 1",
            "kind: required field is missing",
        ),
        (
            "apiVersion: [v1]\nkind: ConfigMap\nmetadata:\n  name: x\n",
            "ConfigMap x, line 1",
            "apiVersion: required field is missing",
        ),
        (
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
            f"metadata:\n  name: x\n  labels:\n{CHART_LABEL}webhooks:\n- oops\n",
            "ValidatingWebhookConfiguration x, line 1",
            "webhooks[0]: must be a mapping, not str",
        ),
        (
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
            f"metadata:\n  name: x\n  labels:\n{CHART_LABEL}webhooks: {{a: b}}\n",
            "MutatingWebhookConfiguration x, line 1",
            "webhooks: must be a list, not a mapping",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  replicas: 3\n",
            "ConfigMap x, line 1",
            "data.replicas: must be a string, not an integer",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\nbinaryData:\n  a b: eA==\n",
            "ConfigMap x, line 1",
            "binaryData: key 'a b' must be at most 253 of A-Z, a-z, 0-9, '-', '_' and '.', and not '.' or '..'",
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nstringData:\n  ..: x\n",
            "Secret x, line 1",
            "stringData: key '..' must be at most 253 of A-Z, a-z, 0-9, '-', '_' and '.', and not '.' or '..'",
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ndata: [a]\n",
            "Secret x, line 1",
            "data: must be a mapping of strings to strings, not a list",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    bad key!: a\n",
            "ConfigMap x, line 1",
            "metadata.labels: label key 'bad key!' is not a qualified name: an optional DNS-1123 "
            "subdomain and '/', then at most 63 of A-Z, a-z, 0-9, '-', '_' and '.', starting and "
            "ending with a letter or digit",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    tier: gold plated\n",
            "ConfigMap x, line 1",
            "metadata.labels.tier: label value 'gold plated' must be empty or at most 63 of A-Z, a-z, "
            "0-9, '-', '_' and '.', starting and ending with a letter or digit",
        ),
    ],
    ids=[
        "name-int",
        "name-missing",
        "metadata-list",
        "namespace-list",
        "labels-list",
        "chart-label-int",
        "label-key-int",
        "annotation-map",
        "annotation-null",
        "kind-int",
        "apiversion-list",
        "webhook-string",
        "webhooks-map",
        "configmap-integer-value",
        "binarydata-key-space",
        "secret-key-dotdot",
        "secret-data-list",
        "label-key-syntax",
        "label-value-syntax",
    ],
)
def test_broken_object_is_refused(post_render_cli: PostRender, body: str, where: str, expected: str) -> None:
    result = post_render_cli(HEAD + body, "--chart-version", "1.2.3")
    assert result.returncode == 3, result.stderr
    assert result.stdout == ""
    line = where.replace("line 1", "line 2, Source: sap-btp-operator/templates/broken.yaml")
    assert result.stderr == (
        f"error: the manifest stream is not valid post-renderer input\n  <stdin>: document 1 ({line}): {expected}\n"
    )


def test_a_list_item_is_checked_like_an_object(post_render_cli: PostRender) -> None:
    stream = (
        HEAD
        + "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: 5}\n"
    )
    result = post_render_cli(stream, "--chart-version", "1.2.3")
    assert result.returncode == 3, result.stderr
    assert result.stderr.endswith(
        "List item 0, line 2, Source: sap-btp-operator/templates/broken.yaml): "
        "metadata.name: must be a string, not an integer\n"
    )


def test_configmap_data_kubernetes_takes_passes(post_render_cli: PostRender) -> None:
    """Null reads as empty for the API server; dotted keys and empty values are keys and values."""
    stream = HEAD + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a.b_c-1:\n  .env: ''\n"
    result = post_render_cli(stream, "--chart-version", "1.2.3")
    assert result.returncode == 0, result.stderr
    assert "a.b_c-1: null" in result.stdout


def test_the_operator_configmap_with_a_plain_integer_key_is_transformed(post_render_cli: PostRender) -> None:
    """`2: x` and `on: y` are read as an integer and a boolean key; the API server's YAML reader
    (as Helm's and kubectl's) stores them as "2" and "true", so they pass, and the operator's
    ConfigMap is still transformed and hashed (this was an internal error, exit 70)."""
    stream = (
        HEAD
        + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sap-btp-operator-config\n"
        + f"  labels:\n{CHART_LABEL}data:\n  2: x\n  on: y\n  CLUSTER_ID: c1\n"
    )
    result = post_render_cli(stream, "--chart-version", "1.2.3")
    assert result.returncode == 0, result.stderr
    assert "  2: x\n" in result.stdout and "CLUSTER_ID: c1" in result.stdout
    assert "kyma-project.io/module: btp-operator" in result.stdout


def test_generate_name_and_null_labels_pass(post_render_cli: PostRender) -> None:
    stream = HEAD + "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: cleanup-\n  labels:\n"
    result = post_render_cli(stream, "--chart-version", "1.2.3")
    assert result.returncode == 0, result.stderr
    assert "generateName: cleanup-" in result.stdout
