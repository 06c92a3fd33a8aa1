"""CAP Operator parity (issue #20), one table per item, inputs written as the upstream docs write them.

Each row is a source as CAP Operator's documentation shows it (the Domain `cap-app-01-primary` in
namespace `cap-app-01` for `my.cluster.shoot.url.k8s.example.com`, the ClusterDomain
`common-external-domain`, the cert-manager issuer `my-cluster-issuer`, ...), rendered by the real
pipeline (schema validation, the CAP domain, the output guard), and the rendered objects are
checked field by field:

    Certificates          commonName only from `sme.sap.com/cert-manager-common-name`; issuer
                          ClusterIssuer `cluster-ca` unless `certConfig.certManager.issuerRef`;
                          Gardener's next to the Gateway, its secretRef into the ingress namespace
    credentialName        `<namespace>--<name>-gardener|cert-manager` as CAP Operator names it
                          (a ClusterDomain: the namespace CAP Operator ran in), on the Gateway
                          and on the Secret the Certificate fills
    client CA             `<credentialName>-cacert` with `ca.crt` in the ingress namespace; a
                          private key in its place is refused, by name, never shown
    ingress NetworkPolicy one per domain and application namespace, CAP Operator's selectors
    tenant Jobs           `sme.sap.com/workload-name` is the workload's own name
"""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from btp_gitops.generator.core.errors import CredentialInOutput, InvalidSpec
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.transforms.guards import assert_no_credentials
from tests.cap.conftest import CAP_APP, objects_of, render_result, write_documents

HOST = "my.cluster.shoot.url.k8s.example.com"
SELECTOR = {"app": "istio-ingressgateway", "istio": "ingressgateway"}


def _domain(
    annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:  # the docs' Domain example
    metadata: dict[str, Any] = {"namespace": "cap-app-01", "name": "cap-app-01-primary"}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "Domain",
        "metadata": metadata,
        "spec": {"domain": HOST, "ingressSelector": dict(SELECTOR), **spec},
    }


def _cluster_domain(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "common-external-domain"}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "ClusterDomain",
        "metadata": metadata,
        "spec": {"domain": "my.example.com", "ingressSelector": dict(SELECTOR), **spec},
    }


CERT_MANAGER = {"btp-gitops.io/certificate-manager": "cert-manager"}


def _render(tmp_path: Path, *documents: dict[str, Any]) -> dict[str, dict[str, Any]]:
    source = write_documents(tmp_path / "source", "cap.yaml", list(documents))
    return objects_of(render_result(source).files)


def _of_kind(objects: dict[str, dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects.values() if obj["kind"] == kind]


def _one(objects: dict[str, dict[str, Any]], kind: str) -> dict[str, Any]:
    found = _of_kind(objects, kind)
    assert len(found) == 1, [o["metadata"]["name"] for o in found]
    return found[0]


# --- 1. cert-manager and Gardener Certificates ------------------------------------------------------

CLUSTER_CA = {"name": "cluster-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}


@pytest.mark.parametrize(
    ("source", "api_version", "namespace", "name", "spec"),
    [
        pytest.param(
            _domain(CERT_MANAGER),
            "cert-manager.io/v1",
            "istio-system",
            "cap-app-01--cap-app-01-primary",
            {
                "dnsNames": [f"*.{HOST}"],
                "secretName": "cap-app-01--cap-app-01-primary-cert-manager",
                "issuerRef": CLUSTER_CA,
            },
            id="cert-manager, no certConfig: no commonName, ClusterIssuer cluster-ca",
        ),
        pytest.param(
            _domain({**CERT_MANAGER, "sme.sap.com/cert-manager-common-name": HOST}),
            "cert-manager.io/v1",
            "istio-system",
            "cap-app-01--cap-app-01-primary",
            {
                "dnsNames": [f"*.{HOST}"],
                "secretName": "cap-app-01--cap-app-01-primary-cert-manager",
                "commonName": HOST,
                "issuerRef": CLUSTER_CA,
            },
            id="cert-manager, common-name annotation: its value",
        ),
        pytest.param(
            _domain(
                certConfig={
                    "certManager": {
                        "issuerRef": {
                            "name": "my-cluster-issuer",
                            "kind": "ClusterIssuer",
                            "group": "cert-manager.io",
                        }
                    }
                }
            ),
            "cert-manager.io/v1",
            "istio-system",
            "cap-app-01--cap-app-01-primary",
            {
                "dnsNames": [f"*.{HOST}"],
                "secretName": "cap-app-01--cap-app-01-primary-cert-manager",
                "issuerRef": {
                    "name": "my-cluster-issuer",
                    "kind": "ClusterIssuer",
                    "group": "cert-manager.io",
                },
            },
            id="the docs' issuerRef (chooses cert-manager by itself)",
        ),
        pytest.param(
            _domain(certConfig={"certManager": {"issuerRef": {"name": "my-issuer"}}}),
            "cert-manager.io/v1",
            "istio-system",
            "cap-app-01--cap-app-01-primary",
            {
                "dnsNames": [f"*.{HOST}"],
                "secretName": "cap-app-01--cap-app-01-primary-cert-manager",
                "issuerRef": {"name": "my-issuer", "kind": "Issuer", "group": "cert-manager.io"},
            },
            id="issuerRef with a name only: kind Issuer, group cert-manager.io",
        ),
        pytest.param(
            _cluster_domain({**CERT_MANAGER, "btp-gitops.io/ingress-namespace": "istio-ingress"}),
            "cert-manager.io/v1",
            "istio-ingress",
            "cap-operator-system--common-external-domain",
            {
                "dnsNames": ["*.my.example.com"],
                "secretName": "cap-operator-system--common-external-domain-cert-manager",
                "issuerRef": CLUSTER_CA,
            },
            id="ClusterDomain, cert-manager, another ingress namespace",
        ),
        pytest.param(
            _domain({"sme.sap.com/cert-manager-common-name": HOST}),
            "cert.gardener.cloud/v1alpha1",
            "cap-app-01",
            "cap-app-01--cap-app-01-primary",
            {
                "dnsNames": [f"*.{HOST}"],
                "secretRef": {"name": "cap-app-01--cap-app-01-primary-gardener", "namespace": "istio-system"},
            },
            id="Gardener: in the Domain's namespace, secretRef to the ingress namespace, no commonName",
        ),
        pytest.param(
            _cluster_domain(),
            "cert.gardener.cloud/v1alpha1",
            "istio-system",
            "cap-operator-system--common-external-domain",
            {
                "dnsNames": ["*.my.example.com"],
                "secretRef": {
                    "name": "cap-operator-system--common-external-domain-gardener",
                    "namespace": "istio-system",
                },
            },
            id="ClusterDomain, Gardener",
        ),
    ],
)
def test_certificates(
    tmp_path: Path, source: dict[str, Any], api_version: str, namespace: str, name: str, spec: dict[str, Any]
) -> None:
    certificate = _one(_render(tmp_path, source), "Certificate")
    assert certificate["apiVersion"] == api_version
    assert (certificate["metadata"]["namespace"], certificate["metadata"]["name"]) == (namespace, name)
    assert certificate["spec"] == spec


def test_a_common_name_longer_than_a_certificate_takes_is_refused(tmp_path: Path) -> None:
    long_name = "a" * 60 + ".example.com"
    source = write_documents(
        tmp_path / "source",
        "cap.yaml",
        [_domain({**CERT_MANAGER, "sme.sap.com/cert-manager-common-name": long_name})],
    )
    with pytest.raises(InvalidSpec) as raised:
        render_result(source)
    [problem] = raised.value.problems
    assert problem.field_path == "metadata.annotations.sme.sap.com/cert-manager-common-name"
    assert problem.object_ref == "Domain cap-app-01/cap-app-01-primary"
    assert "at most 64" in problem.message


# --- 2. Gateway credentialName ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "gateway_namespace", "credential", "secret"),
    [
        pytest.param(
            _domain(),
            "cap-app-01",
            "cap-app-01--cap-app-01-primary-gardener",
            ("secretRef", "name"),
            id="Domain, Gardener",
        ),
        pytest.param(
            _domain(CERT_MANAGER),
            "cap-app-01",
            "cap-app-01--cap-app-01-primary-cert-manager",
            ("secretName",),
            id="Domain, cert-manager",
        ),
        pytest.param(
            _cluster_domain(),
            "istio-system",
            "cap-operator-system--common-external-domain-gardener",
            ("secretRef", "name"),
            id="ClusterDomain, Gardener: CAP Operator's default namespace",
        ),
        pytest.param(
            _cluster_domain(CERT_MANAGER),
            "istio-system",
            "cap-operator-system--common-external-domain-cert-manager",
            ("secretName",),
            id="ClusterDomain, cert-manager: CAP Operator's default namespace",
        ),
        pytest.param(
            _cluster_domain({"btp-gitops.io/cap-operator-namespace": "cap-op"}),
            "istio-system",
            "cap-op--common-external-domain-gardener",
            ("secretRef", "name"),
            id="ClusterDomain, Gardener: CAP Operator ran in another namespace",
        ),
        pytest.param(
            _cluster_domain({**CERT_MANAGER, "btp-gitops.io/cap-operator-namespace": "cap-op"}),
            "istio-system",
            "cap-op--common-external-domain-cert-manager",
            ("secretName",),
            id="ClusterDomain, cert-manager: CAP Operator ran in another namespace",
        ),
    ],
)
def test_credential_names_carry_the_certificate_managers_suffix(
    tmp_path: Path, source: dict[str, Any], gateway_namespace: str, credential: str, secret: tuple[str, ...]
) -> None:
    objects = _render(tmp_path, source)
    gateway = _one(objects, "Gateway")
    assert gateway["metadata"]["namespace"] == gateway_namespace
    [server] = gateway["spec"]["servers"]
    assert server["tls"] == {"mode": "SIMPLE", "credentialName": credential}
    # the Secret the Certificate fills is the one the Gateway reads
    filled: Any = _one(objects, "Certificate")["spec"]
    for key in secret:
        filled = filled[key]
    assert filled == credential


# --- 4. certConfig.additionalCACertificate ------------------------------------------------------------


def _ca_pem(common_name: str) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        .not_valid_after(dt.datetime(2036, 1, 1, tzinfo=dt.UTC))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


def _private_key_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.mark.parametrize(
    ("kind", "tls_mode", "certificates", "manager", "name", "namespace"),
    [
        pytest.param(
            "ClusterDomain",
            "Mutual",
            1,
            {},
            "cap-operator-system--cap-example-domain-gardener-cacert",
            "istio-system",
            id="the docs' ClusterDomain, Mutual",
        ),
        pytest.param(
            "Domain",
            "OptionalMutual",
            2,
            CERT_MANAGER,
            "cap-app-01--cap-example-domain-cert-manager-cacert",
            "istio-system",
            id="Domain, OptionalMutual, cert-manager, two CAs",
        ),
        pytest.param(
            "Domain",
            "Mutual",
            1,
            {"btp-gitops.io/ingress-namespace": "istio-ingress"},
            "cap-app-01--cap-example-domain-gardener-cacert",
            "istio-ingress",
            id="Domain, another ingress namespace",
        ),
    ],
)
def test_the_client_ca_becomes_the_secret_istio_reads(
    tmp_path: Path,
    kind: str,
    tls_mode: str,
    certificates: int,
    manager: dict[str, str],
    name: str,
    namespace: str,
) -> None:
    bundle = "".join(_ca_pem(f"client CA {n}") for n in range(certificates))
    metadata: dict[str, Any] = {"name": "cap-example-domain", "annotations": manager}
    if kind == "Domain":
        metadata["namespace"] = "cap-app-01"
    source = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": {
            "domain": "myapp.example.com",
            "ingressSelector": dict(SELECTOR),
            "tlsMode": tls_mode,
            "certConfig": {"additionalCACertificate": bundle},
        },
    }
    objects = _render(tmp_path, source)
    secret = _one(objects, "Secret")
    assert (secret["metadata"]["namespace"], secret["metadata"]["name"]) == (namespace, name)
    assert secret["type"] == "Opaque"
    assert list(secret["data"]) == ["ca.crt"]
    assert base64.b64decode(secret["data"]["ca.crt"]).decode() == bundle
    # Istio reads `<credentialName>-cacert` beside the Gateway's credential
    [server] = _one(objects, "Gateway")["spec"]["servers"]
    assert f"{server['tls']['credentialName']}-cacert" == name
    assert server["tls"]["mode"] == {"Mutual": "MUTUAL", "OptionalMutual": "OPTIONAL_MUTUAL"}[tls_mode]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("key", id="a private key instead of the CA"),
        pytest.param("ca+key", id="the CA followed by its private key"),
        pytest.param("not pem", id="no PEM at all"),
    ],
)
def test_anything_but_certificates_in_the_client_ca_is_refused_without_showing_it(
    tmp_path: Path, text: str
) -> None:
    key = _private_key_pem()
    value = {"key": key, "ca+key": _ca_pem("client CA") + key, "not pem": "client CA of example.com"}[text]
    source = write_documents(
        tmp_path / "source",
        "cap.yaml",
        [_domain(tlsMode="Mutual", certConfig={"additionalCACertificate": value})],
    )
    with pytest.raises(InvalidSpec) as raised:
        render_result(source)
    [problem] = raised.value.problems
    assert problem.field_path == "spec.certConfig.additionalCACertificate"
    assert problem.object_ref == "Domain cap-app-01/cap-app-01-primary"
    assert "PRIVATE KEY" not in str(raised.value) + problem.message


def _secret(**data: str) -> Manifest:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "gw-cacert", "namespace": "istio-system"},
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }
    return Manifest(body, "rendered")


def test_the_output_guard_passes_public_certificates_and_still_refuses_a_key() -> None:
    ca = _ca_pem("client CA")
    passing = _secret(**{"ca.crt": ca})
    assert_no_credentials([passing], {"secret.yaml": yaml.safe_dump(passing.body)})

    for refused in (
        _secret(**{"ca.crt": _private_key_pem()}),
        _secret(**{"ca.crt": ca + _private_key_pem()}),
        _secret(**{"ca.crt": ca, "token": "s3cr3t-value"}),
    ):
        with pytest.raises(CredentialInOutput) as raised:
            assert_no_credentials([refused], {"secret.yaml": yaml.safe_dump(refused.body)})
        messages = [problem.message for problem in raised.value.problems]
        assert "Secret with data" in messages
        assert "s3cr3t" not in str(raised.value) and "PRIVATE KEY-----" not in str(raised.value)
    with pytest.raises(CredentialInOutput) as raised:
        key_text = _secret(**{"ca.crt": _private_key_pem()})
        assert_no_credentials([key_text], {"secret.yaml": yaml.safe_dump(key_text.body)})
    assert any("private key" in problem.message.lower() for problem in raised.value.problems)


# --- 5. the ingress NetworkPolicy, one per domain ----------------------------------------------------

VERSION = {
    "apiVersion": "sme.sap.com/v1alpha1",
    "kind": "CAPApplicationVersion",
    "spec": {
        "version": "1.0.0",
        "workloads": [
            {
                "name": "api",
                "deploymentDefinition": {
                    "type": "Service",
                    "image": "api",
                    "ports": [{"name": "http", "port": 8080}],
                },
            }
        ],
        "serviceExposures": [{"subDomain": "api", "routes": [{"workloadName": "api", "port": 8080}]}],
    },
}


def _services_app(namespace: str, name: str, refs: list[dict[str, str]]) -> list[dict[str, Any]]:
    application = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPApplication",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {
            "btpAppName": name,
            "globalAccountId": "2dddd48d-b45f-45a5-b861-a80872a0c8a8",
            "providerSubaccountId": "c9d7c9f0-4e0b-4d9c-9d3a-0b2a6e8a1b2c",
            "domainRefs": refs,
            "btp": {"services": []},
        },
    }
    version = {
        **VERSION,
        "metadata": {"namespace": namespace, "name": f"{name}-1"},
        "spec": {
            **VERSION["spec"],
            "capApplicationInstance": name,
            "serviceExposures": [{"subDomain": name, "routes": [{"workloadName": "api", "port": 8080}]}],
        },
    }
    return [application, version]


EXPECTED_POLICY_SPEC = {
    "podSelector": {
        "matchLabels": {"sme.sap.com/category": "Workload", "sme.sap.com/exposed-workload": "true"}
    },
    "policyTypes": ["Ingress"],
    "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": SELECTOR}}]}],
}


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        pytest.param(
            [
                _domain(),
                *_services_app(
                    "cap-app-01", "cap-app-01", [{"kind": "Domain", "name": "cap-app-01-primary"}]
                ),
            ],
            {
                (
                    "cap-domain.cap-app-01.cap-app-01-primary",
                    "cap-app-01",
                    "domain--cap-app-01-primary--ingress",
                )
            },
            id="a Domain and its application",
        ),
        pytest.param(
            [
                _cluster_domain(),
                *_services_app("shop", "shop", [{"kind": "ClusterDomain", "name": "common-external-domain"}]),
                *_services_app(
                    "shop", "books", [{"kind": "ClusterDomain", "name": "common-external-domain"}]
                ),
                *_services_app("blog", "blog", [{"kind": "ClusterDomain", "name": "common-external-domain"}]),
            ],
            {
                (
                    "cap-clusterdomain.common-external-domain",
                    "blog",
                    "clusterdomain--common-external-domain--ingress",
                ),
                (
                    "cap-clusterdomain.common-external-domain",
                    "shop",
                    "clusterdomain--common-external-domain--ingress",
                ),
            },
            id="a ClusterDomain: one per application namespace, not per application",
        ),
        pytest.param(
            [
                _domain(),
                _cluster_domain(),
                *_services_app(
                    "cap-app-01",
                    "cap-app-01",
                    [
                        {"kind": "Domain", "name": "cap-app-01-primary"},
                        {"kind": "ClusterDomain", "name": "common-external-domain"},
                    ],
                ),
            ],
            {
                (
                    "cap-domain.cap-app-01.cap-app-01-primary",
                    "cap-app-01",
                    "domain--cap-app-01-primary--ingress",
                ),
                (
                    "cap-clusterdomain.common-external-domain",
                    "cap-app-01",
                    "clusterdomain--common-external-domain--ingress",
                ),
            },
            id="an application on two domains: one from each",
        ),
        pytest.param([_cluster_domain()], set(), id="a domain no application uses: none"),
    ],
)
def test_one_ingress_network_policy_per_domain_and_namespace(
    tmp_path: Path, documents: list[dict[str, Any]], expected: set[tuple[str, str, str]]
) -> None:
    objects = _render(tmp_path, *documents)
    policies = {path: obj for path, obj in objects.items() if obj["kind"] == "NetworkPolicy"}
    from_ingress = {
        (path.split("/")[0], obj["metadata"]["namespace"], obj["metadata"]["name"])
        for path, obj in policies.items()
        if obj["metadata"]["name"].endswith("--ingress")
    }
    assert from_ingress == expected
    versions = {
        (d["metadata"]["namespace"], d["metadata"]["name"])
        for d in documents
        if d["kind"] == "CAPApplicationVersion"
    }
    for policy in policies.values():
        if policy["metadata"]["name"].endswith("--ingress"):
            assert policy["spec"] == EXPECTED_POLICY_SPEC
            assert "sme.sap.com/owner-identifier-hash" in policy["metadata"]["labels"]
    # each version keeps only CAP Operator's policy within the version (no Cluster ports here)
    within = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in policies.values()}
    assert within - {(namespace, name) for _, namespace, name in expected} == versions


# --- 3. tenant operation Jobs: sme.sap.com/workload-name ------------------------------------------


def test_tenant_operation_jobs_carry_the_workloads_own_name() -> None:
    objects = objects_of(render_result(CAP_APP).files)
    jobs = [
        o
        for o in objects.values()
        if o["kind"] == "Job" and "sme.sap.com/tenant-operation-type" in o["metadata"]["labels"]
    ]
    table = sorted(
        (
            job["metadata"]["labels"]["sme.sap.com/tenant-operation-type"],
            job["metadata"]["labels"]["sme.sap.com/workload-name"],
            job["spec"]["template"]["metadata"]["labels"]["sme.sap.com/workload-name"],
            job["spec"]["template"]["spec"]["containers"][0]["name"],
        )
        for job in jobs
    )
    assert table, "the example has tenants with pending operations"
    for _operation, on_job, on_pod, container in table:
        # the container is named after the workload (`mtx`), and so are both labels
        assert on_job == on_pod == container
    # the version's own workloads keep CAP Operator's composed `<cav>-<workload>`
    deployments = [o for o in objects.values() if o["kind"] == "Deployment"]
    assert deployments
    for deployment in deployments:
        labels = deployment["metadata"]["labels"]
        assert labels["sme.sap.com/workload-name"] == deployment["metadata"]["name"]


def test_a_cap_operator_namespace_that_is_no_namespace_name_is_refused(tmp_path: Path) -> None:
    source = write_documents(
        tmp_path / "source",
        "cap.yaml",
        [_cluster_domain({"btp-gitops.io/cap-operator-namespace": "CAP_Operator"})],
    )
    with pytest.raises(InvalidSpec) as raised:
        render_result(source)
    [problem] = raised.value.problems
    assert problem.field_path == "metadata.annotations.btp-gitops.io/cap-operator-namespace"
    assert problem.object_ref == "ClusterDomain common-external-domain"
    assert problem.message == "must be a namespace name"
