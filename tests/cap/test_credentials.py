"""Credentials of CAP workloads: wired in the cluster, never written to Git.

Covers: no value of any binding Secret an application consumes reaches the rendered repo (raw,
base64 or JSON-escaped), and a source holding such a Secret is refused with nothing written;
the VCAP_SERVICES template of the rendered ExternalSecret, run by Go's text/template with Sprig
(Helm's own engine, which external-secrets' template engine v2 also builds on) over the keys the
ExternalSecret extracts, gives exactly what CAP Operator built, for plain `credentials` Secrets
and for SAP service-binding Secrets with `.metadata`; the service-bindings mode mounts every
binding Secret and copies nothing. Real components: the installed CLI, the embedded Helm engine;
nothing is faked.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from btp_gitops.generator.charts.renderer import ChartRequest
from btp_gitops.generator.core.keys import is_certificate_bundle
from btp_gitops.generator.io.helm import EmbeddedHelm
from tests.cap.conftest import CAP_APP, CLUSTER, SERVICES_ONLY, RenderRepo, objects_of, render_files
from tests.conftest import ROOT, RunCli

UAA_METADATA = {
    "credentialProperties": [
        {"name": "clientid", "format": "text"},
        {"name": "clientsecret", "format": "text"},
        {"name": "url", "format": "text"},
        {"name": "uaadomain", "format": "text"},
        {"name": "tenantmode", "format": "text"},
        {"name": "subaccounts", "format": "json"},
    ],
    "metaDataProperties": [
        {"name": "instance_name", "format": "text"},
        {"name": "label", "format": "text"},
        {"name": "plan", "format": "text"},
        {"name": "tags", "format": "json"},
    ],
}

# The binding Secrets of the bookshop example, as the SAP BTP service operator writes them: the
# xsuaa one in the service-binding format (keys + .metadata), the others with a `credentials` key.
BINDING_SECRETS: dict[str, dict[str, str]] = {
    "bookshop-uaa-binding": {
        "clientid": "sb-bookshop!t4711",
        "clientsecret": "uaa-secret-5f1c9e0a-never-in-git",
        "url": "https://provider.authentication.example.com",
        "uaadomain": "authentication.example.com",
        "tenantmode": "shared",
        "subaccounts": '["0d3e5f6a", "9a8b7c6d"]',
        "instance_name": "bookshop-uaa-instance",
        "label": "xsuaa",
        "plan": "application",
        "tags": '["xsuaa", "uaa"]',
        ".metadata": json.dumps(UAA_METADATA),
    },
    "bookshop-service-manager-binding": {
        "credentials": json.dumps(
            {
                "clientid": "sm-client",
                "clientsecret": "sm-secret-77d2-never-in-git",
                "sm_url": "https://sm.example.com",
            }
        )
    },
    "bookshop-registry-binding": {
        "credentials": json.dumps(
            {
                "appName": "bookshop",
                "clientsecret": "registry-secret-0b1e-never-in-git",
                "saas_registry_url": "https://r.example.com",
            }
        )
    },
    "bookshop-destination-binding": {"credentials": json.dumps({"clientsecret": "destination-secret-aa01"})},
    "bookshop-html5-host-binding": {"credentials": json.dumps({"clientsecret": "html5-host-secret-bb02"})},
    "bookshop-html5-runtime-binding": {
        "credentials": json.dumps({"clientsecret": "html5-runtime-secret-cc03"})
    },
    "bookshop-portal-binding": {"credentials": json.dumps({"clientsecret": "portal-secret-dd04"})},
}


def secret_manifest(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "bookshop"},
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


def credential_values() -> set[str]:
    """Every value of every binding Secret that is a credential, and the parts of JSON ones."""
    values = set()
    for data in BINDING_SECRETS.values():
        for key, value in data.items():
            if key == ".metadata":
                continue
            values.add(value)
            parsed = json.loads(value) if value.startswith("{") else None
            if isinstance(parsed, dict):
                values |= {str(v) for v in parsed.values() if "secret" in str(v)}
    return {value for value in values if "secret" in value or value.startswith("sb-")}


def test_no_binding_secret_value_reaches_the_rendered_repo(tmp_path: Path, render_repo: RenderRepo) -> None:
    tree = render_repo(CAP_APP, tmp_path / "repo")
    text = b"\n".join(tree.values()).decode()

    for value in credential_values():
        for form in (value, base64.b64encode(value.encode()).decode(), json.dumps(value)[1:-1]):
            assert form not in text, f"a credential reached the repo: {form}"
    # The Secrets are named, never read: each is referenced by name only. The one Secret rendered
    # is the mTLS domain's client CA: public certificates and nothing else.
    objects = [
        yaml.safe_load(data)
        for path, data in tree.items()
        if path.endswith(".yaml") and not path.endswith("kustomization.yaml")
    ]
    secrets = [obj for obj in objects if obj["kind"] == "Secret"]
    assert [s["metadata"]["name"] for s in secrets] == ["bookshop--bookshop-partners-gardener-cacert"]
    assert all(
        is_certificate_bundle(base64.b64decode(value).decode())
        for secret in secrets
        for value in secret["data"].values()
    )
    for name in BINDING_SECRETS:
        assert name in text


def test_a_source_holding_a_binding_secret_is_refused_and_nothing_is_written(
    tmp_path: Path, run_cli: RunCli
) -> None:
    source = tmp_path / "source"
    shutil.copytree(CAP_APP, source)
    secrets = [secret_manifest(name, data) for name, data in BINDING_SECRETS.items()]
    (source / "bindings.yaml").write_text(yaml.safe_dump_all(secrets, sort_keys=False))

    result = run_cli("render", source, "--out", tmp_path / "repo", "--cluster", CLUSTER, cwd=ROOT)

    assert result.returncode == 3
    assert "Secret bookshop/bookshop-uaa-binding): apiVersion: unknown kind v1/Secret" in result.stderr
    assert not (tmp_path / "repo" / "clusters").exists()
    for value in credential_values():
        assert value not in result.stderr + result.stdout


# --- VCAP_SERVICES, assembled as external-secrets would -------------------------------------------


def extracted_keys(external_secret: dict[str, Any]) -> dict[str, str]:
    """What external-secrets hands the template: every key of each extracted Secret, rewritten."""
    data: dict[str, str] = {}
    for source in external_secret["spec"]["dataFrom"]:
        secret = BINDING_SECRETS[source["extract"]["key"]]
        rewrite = source["rewrite"][0]["regexp"]
        for key, value in secret.items():
            data[re.sub(rewrite["source"], rewrite["target"], key, count=1)] = value
    return data


def run_template(template: str, data: dict[str, str], tmp_path: Path) -> str:
    """Execute a Go template with Sprig over `data` as its `.`, in Helm's real Go engine."""
    chart = tmp_path / "template-chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: vcap\nversion: 0.1.0\n")
    (chart / "templates" / "vcap.txt").write_text("{{- with .Values.data -}}" + template + "{{- end -}}")
    rendered = EmbeddedHelm().render_chart(
        ChartRequest(chart=chart, release="vcap", namespace="bookshop", values={"data": data})
    )
    return rendered.templates["vcap/templates/vcap.txt"]


def test_vcap_services_are_assembled_as_cap_operator_did(tmp_path: Path) -> None:
    objects = objects_of(render_files(CAP_APP))
    external_secret = objects["cap.bookshop.bookshop/externalsecret-bookshop-1-0-0-srv-vcap.yaml"]
    template = external_secret["spec"]["target"]["template"]["data"]["VCAP_SERVICES"]

    vcap = json.loads(run_template(template, extracted_keys(external_secret), tmp_path))

    assert vcap == {
        "xsuaa": [
            {
                "credentials": {
                    "clientid": "sb-bookshop!t4711",
                    "clientsecret": "uaa-secret-5f1c9e0a-never-in-git",
                    "url": "https://provider.authentication.example.com",
                    "uaadomain": "authentication.example.com",
                    "tenantmode": "shared",
                    "subaccounts": ["0d3e5f6a", "9a8b7c6d"],
                },
                "instance_name": "bookshop-uaa-instance",
                "label": "xsuaa",
                "name": "bookshop-uaa",
                "plan": "application",
                "tags": ["xsuaa", "uaa"],
            }
        ],
        "service-manager": [
            {
                "credentials": json.loads(BINDING_SECRETS["bookshop-service-manager-binding"]["credentials"]),
                "instance_name": "bookshop-service-manager",
                "label": "service-manager",
                "name": "bookshop-service-manager",
                "tags": ["service-manager"],
            }
        ],
        "saas-registry": [
            {
                "credentials": json.loads(BINDING_SECRETS["bookshop-registry-binding"]["credentials"]),
                "instance_name": "bookshop-registry",
                "label": "saas-registry",
                "name": "bookshop-registry",
                "tags": ["saas-registry"],
            }
        ],
    }


def test_services_of_one_class_share_its_list(tmp_path: Path) -> None:
    objects = objects_of(render_files(CAP_APP))
    external_secret = objects["cap.bookshop.bookshop/externalsecret-bookshop-1-0-0-approuter-vcap.yaml"]
    template = external_secret["spec"]["target"]["template"]["data"]["VCAP_SERVICES"]

    vcap = json.loads(run_template(template, extracted_keys(external_secret), tmp_path))

    assert sorted(vcap) == ["destination", "html5-apps-repo", "saas-registry", "xsuaa"]
    assert [entry["name"] for entry in vcap["html5-apps-repo"]] == ["bookshop-html5-runtime"]
    assert external_secret["spec"]["secretStoreRef"] == {
        "kind": "SecretStore",
        "name": "bookshop-binding-reader",
    }


def test_the_binding_reader_may_read_exactly_the_binding_secrets() -> None:
    objects = objects_of(render_files(CAP_APP))
    role = objects["cap.bookshop.bookshop/role-bookshop-binding-reader.yaml"]
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": sorted(BINDING_SECRETS),
            "verbs": ["get"],
        }
    ]
    store = objects["cap.bookshop.bookshop/secretstore-bookshop-binding-reader.yaml"]
    assert store["spec"]["provider"]["kubernetes"]["remoteNamespace"] == "bookshop"


def test_service_bindings_mode_mounts_each_binding_and_copies_nothing() -> None:
    objects = objects_of(render_files(SERVICES_ONLY))
    kinds = {obj["kind"] for obj in objects.values()}
    assert not kinds & {"ExternalSecret", "SecretStore", "Secret"}
    pod = objects["cap.catalog.catalog-api/deployment-catalog-api-2-3-0-api.yaml"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["env"][:2] == [
        {"name": "CAPOP_APP_VERSION", "value": "2.3.0"},
        {"name": "SERVICE_BINDING_ROOT", "value": "/bindings"},
    ]
    assert container["volumeMounts"] == [
        {"name": "binding-catalog-uaa", "mountPath": "/bindings/catalog-uaa", "readOnly": True},
        {"name": "binding-catalog-db", "mountPath": "/bindings/catalog-db", "readOnly": True},
    ]
    assert pod["volumes"] == [
        {"name": "binding-catalog-uaa", "secret": {"secretName": "catalog-uaa-binding"}},
        {"name": "binding-catalog-db", "secret": {"secretName": "catalog-db-binding"}},
    ]
