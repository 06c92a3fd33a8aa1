"""import_btp_operator: BTP Manager's live objects -> btp-operator/btpoperator.yaml and
btp-operator/btpoperatorconfig.yaml, and never a credential."""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.migration import ImportResult, LiveObject, import_btp_operator
from tests.conftest import RunCli
from tests.migration.lifecycle_manager_objects import changed
from tests.migration.result_files import accounted_for, serialized, write_result

ORIGIN = "dumps/kyma-system.yaml"
# Values a Service Manager binding really has the shape of; none may appear in any output.
CREDENTIALS = {
    "clientid": "sb-8d3c0e1f-7a55-4a0b-b6f4-1c2d3e4f5a6b!b41733|service-manager!b1476",
    "clientsecret": "Zq9v7XrT2pL8mN4kW6yH3sJ1dF5gA0cE-secret-value",
    "sm_url": "https://service-manager.cfapps.eu10.hana.example.com",
    "tokenurl": "https://subaccount-1.authentication.eu10.hana.example.com",
    "xsappname": "b41733|service-manager!b1476-private-app-name",
}
CLUSTER_ID = "c8e5a2b4-3d1f-4e6a-9b7c-0f1e2d3c4b5a"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def btp_operator(name: str = "btpoperator", namespace: str = "kyma-system") -> LiveObject:
    """The BtpOperator as Lifecycle Manager created it (the module's default CR) and BTP Manager
    left it: its finalizer, Lifecycle Manager's module labels, a Ready status."""
    return LiveObject(
        {
            "apiVersion": "operator.kyma-project.io/v1alpha1",
            "kind": "BtpOperator",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a",
                "resourceVersion": "90412",
                "generation": 1,
                "labels": {
                    "operator.kyma-project.io/managed-by": "kyma",
                    "operator.kyma-project.io/watched-by": "kyma",
                    "app.kubernetes.io/part-of": "Kyma",
                    "team": "payments",
                },
                "finalizers": ["operator.kyma-project.io/btp-manager"],
            },
            "spec": {},
            "status": {
                "state": "Ready",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "ReconcileSucceeded",
                        "message": "Module reconciliation succeeded",
                        "lastTransitionTime": "2026-03-02T09:30:00Z",
                        "observedGeneration": 1,
                    }
                ],
            },
        },
        ORIGIN,
    )


def manager_secret(**settings: str) -> LiveObject:
    """`kyma-system/sap-btp-manager` as the environment broker creates it."""
    data = {key: _b64(value) for key, value in CREDENTIALS.items()}
    data["cluster_id"] = _b64(CLUSTER_ID)
    data.update({key: _b64(value) for key, value in settings.items()})
    return LiveObject(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": "sap-btp-manager",
                "namespace": "kyma-system",
                "labels": {"app.kubernetes.io/managed-by": "kcp-kyma-environment-broker"},
            },
            "data": data,
        },
        ORIGIN,
    )


def operator_configmap(**data: str) -> LiveObject:
    """`kyma-system/sap-btp-operator-config` as BTP Manager filled it."""
    values = {
        "CLUSTER_ID": CLUSTER_ID,
        "RELEASE_NAMESPACE": "kyma-system",
        "MANAGEMENT_NAMESPACE": "kyma-system",
        "ENABLE_LIMITED_CACHE": "true",
        **data,
    }
    return LiveObject(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "sap-btp-operator-config",
                "namespace": "kyma-system",
                "labels": {"app.kubernetes.io/managed-by": "btp-manager", "chart-version": "0.7.1"},
            },
            "data": values,
        },
        ORIGIN,
    )


def _body(result: ImportResult, path: str) -> dict[str, Any]:
    imported = next(f for f in result.files if f.path == path)
    return dict(imported.documents[0].body)


def _comment(result: ImportResult, path: str) -> str:
    imported = next(f for f in result.files if f.path == path)
    return "\n".join(imported.documents[0].comment)


def _reasons(result: ImportResult, described: str) -> list[str]:
    return [s.reason for s in result.skipped if s.object == described]


def _assert_no_credential(result: ImportResult) -> None:
    text = serialized(result)
    for key, value in CREDENTIALS.items():
        assert value not in text, key
        assert _b64(value) not in text, key
    assert "xsappname" not in text  # a key not BTP Manager's is not named either


def test_the_module_request_and_its_settings_are_imported_as_the_example_lays_them_out() -> None:
    result = import_btp_operator(
        [
            btp_operator(),
            manager_secret(credentials_namespace="btp-credentials"),
            operator_configmap(ENABLE_LIMITED_CACHE="false"),
        ]
    )
    assert [f.path for f in result.files] == [
        "btp-operator/btpoperator.yaml",
        "btp-operator/btpoperatorconfig.yaml",
    ]
    assert _body(result, "btp-operator/btpoperator.yaml") == {
        "apiVersion": "operator.kyma-project.io/v1alpha1",
        "kind": "BtpOperator",
        "metadata": {
            "name": "btpoperator",
            "namespace": "kyma-system",
            "labels": {"app.kubernetes.io/part-of": "Kyma", "team": "payments"},
        },
    }
    assert _body(result, "btp-operator/btpoperatorconfig.yaml") == {
        "apiVersion": "btp-gitops.io/v1alpha1",
        "kind": "BtpOperatorConfig",
        "metadata": {"name": "btp-operator", "namespace": "kyma-system"},
        "spec": {
            "clusterId": CLUSTER_ID,
            "credentialsNamespace": "btp-credentials",
            "enableLimitedCache": False,
            "certificates": {"mode": "cert-manager"},
        },
    }
    assert result.skipped == ()
    comment = _comment(result, "btp-operator/btpoperator.yaml")
    assert "metadata.finalizers (operator.kyma-project.io/btp-manager)" in comment
    assert "BTP Manager's status (not a source): Ready." in comment
    settings = _comment(result, "btp-operator/btpoperatorconfig.yaml")
    assert "the environment broker's: it restores the Secret, keep it in the cluster" in settings
    assert "clientid, clientsecret, sm_url, tokenurl and 1 other key(s)" in settings
    _assert_no_credential(result)


def test_no_credential_is_written_whatever_the_secret_holds() -> None:
    # Credentials in stringData, a key no one knows, values that are not base64: none is shown.
    secret = manager_secret()
    secret.body["stringData"] = {
        "clientsecret": CREDENTIALS["clientsecret"],
        "extra": CREDENTIALS["xsappname"],
    }
    secret.body["data"]["sm_url"] = CREDENTIALS[
        "sm_url"
    ]  # not base64: BTP Manager never decodes it here either
    for objects in (
        [btp_operator(), secret],
        [btp_operator(), changed(secret, ("data", "cluster_id"), "%%%not-base64")],
        [btp_operator(), changed(secret, ("data", "cluster_id"), ...)],
        [btp_operator(), changed(secret, ("data",), CREDENTIALS["clientsecret"])],
        [btp_operator(), changed(secret, ("data", "credentials_namespace"), _b64("Not A Namespace"))],
    ):
        result = import_btp_operator(objects)
        _assert_no_credential(result)
        assert not accounted_for(objects, result)


def test_bad_settings_are_named_skips_and_nothing_is_half_written() -> None:
    cases = [
        (
            changed(manager_secret(), ("data", "cluster_id"), "%%%"),
            "data.cluster_id: not base64 of UTF-8 text",
        ),
        (changed(manager_secret(), ("data",), ["x"]), "data: not a map: a list"),
        (
            manager_secret(credentials_namespace="Bad_NS"),
            "data.credentials_namespace: 'Bad_NS' is not a DNS-1123 label",
        ),
    ]
    for secret, words in cases:
        result = import_btp_operator([btp_operator(), secret])
        assert any(words in r for r in _reasons(result, "Secret kyma-system/sap-btp-manager")), result.skipped
        # No cluster id, no BtpOperatorConfig: the BtpOperator is listed, not written alone.
        assert result.files == ()
        assert any(
            "no cluster id was read" in r for r in _reasons(result, "BtpOperator kyma-system/btpoperator")
        )


def test_the_operator_configmap_gives_the_cluster_id_when_the_secret_has_none() -> None:
    secret = changed(manager_secret(), ("data", "cluster_id"), ...)
    result = import_btp_operator([btp_operator(), secret, operator_configmap()])
    assert _body(result, "btp-operator/btpoperatorconfig.yaml")["spec"]["clusterId"] == CLUSTER_ID
    assert "The cluster id is the operator ConfigMap's" in _comment(
        result, "btp-operator/btpoperatorconfig.yaml"
    )
    alone = import_btp_operator([btp_operator(), operator_configmap()])
    assert _body(alone, "btp-operator/btpoperatorconfig.yaml")["spec"]["clusterId"] == CLUSTER_ID
    assert "Secret kyma-system/sap-btp-manager was not read" in _comment(
        alone, "btp-operator/btpoperatorconfig.yaml"
    )
    # Neither: nothing to write, each object read is listed with the reason.
    result = import_btp_operator([btp_operator(), secret])
    assert result.files == ()
    assert _reasons(result, "Secret kyma-system/sap-btp-manager") == [
        "holds no cluster id (data.cluster_id, data.CLUSTER_ID): no BtpOperatorConfig is written"
    ]
    assert import_btp_operator([btp_operator()]).files == ()


@pytest.mark.parametrize(
    ("name", "namespace"), [("btpoperator", "default"), ("my-btp", "kyma-system"), ("../btp", "kyma-system")]
)
def test_a_btpoperator_btp_manager_would_not_act_on_is_a_listed_skip(name: str, namespace: str) -> None:
    other = btp_operator(name, namespace)
    result = import_btp_operator([other, manager_secret()])
    assert [f.path for f in result.files] == ["btp-operator/btpoperatorconfig.yaml"]
    assert _reasons(result, f"BtpOperator {namespace}/{name}") == [
        "BTP Manager acts on kyma-system/btpoperator only (it reported this one WrongNamespaceOrName), "
        "and so does the render"
    ]


def test_settings_on_a_btpoperator_and_its_deletion_are_handled_not_dropped() -> None:
    request = changed(btp_operator(), ("spec", "retainInstances"), True)
    result = import_btp_operator([request, manager_secret()])
    assert "spec.retainInstances (BtpOperator has no settings)" in _comment(
        result, "btp-operator/btpoperator.yaml"
    )
    deleting = changed(btp_operator(), ("metadata", "deletionTimestamp"), "2026-03-04T00:00:00Z")
    result = import_btp_operator([deleting, manager_secret()])
    assert any("being deleted" in r for r in _reasons(result, "BtpOperator kyma-system/btpoperator"))
    typed = changed(btp_operator(), ("spec",), "on")
    result = import_btp_operator([typed, manager_secret()])
    assert _reasons(result, "BtpOperator kyma-system/btpoperator") == ["spec: not a map: a string"]


def test_any_input_order_gives_the_same_result() -> None:
    objects = [btp_operator(), manager_secret(), operator_configmap(), btp_operator("other", "default")]
    expected = import_btp_operator(objects)
    for seed in range(5):
        shuffled = list(objects)
        random.Random(seed).shuffle(shuffled)
        assert import_btp_operator(shuffled) == expected
    assert import_btp_operator([*objects, *objects]) == expected
    # Two Secrets that disagree: neither is taken, both are listed.
    other = LiveObject(manager_secret(cluster_id="0000").body, "cluster")
    result = import_btp_operator([btp_operator(), manager_secret(), other])
    assert result == import_btp_operator([other, btp_operator(), manager_secret()])
    assert len(_reasons(result, "Secret kyma-system/sap-btp-manager")) == 2
    _assert_no_credential(result)


def test_what_import_writes_renders_with_the_credentials_left_in_the_cluster(
    run_cli: RunCli, tmp_path: Path
) -> None:
    result = import_btp_operator([btp_operator(), manager_secret(), operator_configmap()])
    write_result(result, tmp_path / "sources")
    validated = run_cli("validate", tmp_path / "sources")
    assert validated.returncode == 0, validated.stderr
    out = tmp_path / "out"
    rendered = run_cli("render", tmp_path / "sources", "--out", out, "--cluster", "runtime")
    assert rendered.returncode == 0, rendered.stderr
    tree = "".join(p.read_text() for p in sorted(out.rglob("*")) if p.is_file())
    assert f"CLUSTER_ID: {CLUSTER_ID}" in tree
    assert "kind: ExternalSecret" in tree
    assert "key: sap-btp-manager" in tree  # the Secret the ExternalSecret reads in the cluster
    for value in CREDENTIALS.values():
        assert value not in tree
        assert _b64(value) not in tree


def _as_applied(body: dict[str, Any]) -> LiveObject:
    """A rendered object as the API server gives it back once Argo CD applied it."""
    applied = dict(body)
    metadata = dict(applied["metadata"])
    metadata.update(uid="6e5d4c3b-2a19-4807-b6f5-e4d3c2b1a098", resourceVersion="1207", generation=1)
    metadata["annotations"] = {
        **metadata.get("annotations", {}),
        "argocd.argoproj.io/tracking-id": "c1-btp-operator:operator.kyma-project.io/BtpOperator:kyma-system/btpoperator",
    }
    applied["metadata"] = metadata
    return LiveObject(applied, "cluster (context kind-c1)")


def test_sources_rendered_and_applied_import_back_to_the_same_sources(
    run_cli: RunCli, tmp_path: Path
) -> None:
    example = Path(__file__).parents[2] / "examples/btp-operator"
    out = tmp_path / "out"
    rendered = run_cli("render", example, "--out", out, "--cluster", "c1")
    assert rendered.returncode == 0, rendered.stderr
    app = out / "clusters/c1/btp-operator"
    live = [
        _as_applied(yaml.safe_load((app / name).read_text()))
        for name in ("btpoperator-btpoperator.yaml", "configmap-sap-btp-operator-config.yaml")
    ]
    [config] = yaml.safe_load_all((example / "btpoperatorconfig.yaml").read_text())
    # The Secret the user keeps in the cluster, as before the switch.
    secret = changed(manager_secret(), ("data", "cluster_id"), _b64(config["spec"]["clusterId"]))
    result = import_btp_operator([*live, secret])
    assert _body(result, "btp-operator/btpoperatorconfig.yaml") == config
    assert _body(result, "btp-operator/btpoperator.yaml") == yaml.safe_load(
        (example / "btpoperator.yaml").read_text()
    )
