"""Every rendered repo is accepted by a real kube-apiserver (issue #7, item 3).

Sources: every directory under examples/ (found on the filesystem, so new examples are covered
without touching this file) and variants of the BTP operator example that take the other
branches of its config (certificate and credential options, namespaces, chart values). Each is
rendered by the real `btp-gitops render` CLI. The API server has our CRDs
(charts/btp-gitops/crds) and every pinned third-party CRD family (scripts/fetch-crds.sh)
installed; the namespaces the output uses are created for real; then every rendered file is sent
as it is written, by server-side apply with dryRun=All, fieldValidation=Strict and field manager
`btp-gitops`, and must be accepted with no field dropped (server-side apply prunes fields of an
object schema without properties instead of refusing them). Rendered CRDs whose kinds the render
also uses are installed first. A second group of tests shows the same request refusing an object
with a misspelled field, a wrong type, a pruned field or a duplicate key, so acceptance is not
vacuous.

Nothing is faked: kube-apiserver + etcd are the real binaries started by tests/support/kubeapi.py,
the CRDs are the projects' own files, fetched from their Go modules by version and checksum.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.conftest import CHART, EXAMPLES
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.dry_run import (
    CLUSTER,
    RenderedObject,
    ServedResources,
    create_namespace,
    dry_run_apply,
    namespaces_used,
    refusals,
    render,
    rendered_objects,
)
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = [pytest.mark.kube, pytest.mark.crds]

# --------------------------------------------------------------------------
# sources


@dataclass(frozen=True)
class ConfigVariant:
    """The BTP operator example with its BtpOperatorConfig spec changed."""

    name: str
    spec: dict[str, Any] = field(default_factory=dict)
    unset: tuple[str, ...] = ()  # spec keys removed, so that their defaults apply

    def write(self, target: Path) -> Path:
        shutil.copytree(EXAMPLES / "btp-operator", target)
        config_path = target / "btpoperatorconfig.yaml"
        config = yaml.safe_load(config_path.read_text())
        spec = config["spec"]
        # The example's chart path is relative to the example directory, which a copy leaves.
        spec.setdefault("chart", {})["path"] = str(CHART)
        for key in self.unset:
            del spec[key]
        spec.update(self.spec)
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        return target


CONFIG_VARIANTS = (
    ConfigVariant("certificates-mode-defaults", unset=("certificates",)),
    ConfigVariant(
        "given-issuer",
        spec={
            "certificates": {
                "mode": "cert-manager",
                "issuerRef": {"name": "platform-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
            }
        },
    ),
    ConfigVariant("gardener-certificates", spec={"certificates": {"mode": "gardener"}}),
    ConfigVariant(
        "gardener-issuer-in-cluster",
        spec={
            "certificates": {
                "mode": "gardener",
                "issuerRef": {"name": "platform-ca", "namespace": "cert-issuers"},
            }
        },
    ),
    ConfigVariant(
        "gardener-default-cluster-issuer",
        spec={"certificates": {"mode": "gardener", "issuerRef": {"name": "garden"}}},
    ),
    ConfigVariant(
        "given-secret-store",
        spec={
            "credentials": {
                "sourceSecret": {"namespace": "platform-secrets", "name": "btp-service-manager"},
                "secretStoreRef": {"kind": "ClusterSecretStore", "name": "cluster-secrets"},
                "refreshInterval": "15m",
            }
        },
    ),
    ConfigVariant(
        "rendered-secret-store-other-source",
        spec={"credentials": {"sourceSecret": {"namespace": "platform-secrets", "name": "btp-sm"}}},
    ),
    ConfigVariant(
        "custom-credentials-namespace",
        spec={
            "clusterId": "cluster-42",
            "credentialsNamespace": "btp-creds",
            "enableLimitedCache": False,
            "images": {"manager": "registry.example.com/sap-btp-operator/controller:v1.2.3"},
        },
    ),
    ConfigVariant(
        # Chart values with credentials: the chart's Secret is replaced by an ExternalSecret.
        "chart-values-with-credentials",
        spec={
            "chart": {
                "path": str(CHART),
                "values": {
                    "manager": {
                        "replicas": 2,
                        "secret": {
                            "clientid": "sb-client-dry-run",
                            "clientsecret": "dry-run-value",
                            "sm_url": "https://service-manager.example.com",
                            "tokenurl": "https://subaccount.authentication.example.com",
                        },
                    }
                },
            }
        },
    ),
)


def example_dirs() -> list[Path]:
    return sorted(path for path in EXAMPLES.iterdir() if path.is_dir())


# --------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def crds() -> list[dict[str, Any]]:
    """Ours and every pinned third-party family."""
    return load_crds([*our_crd_files(), *third_party_crd_files()])


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI, crds: list[dict[str, Any]]) -> Iterator[k8s.ApiClient]:
    """A client of the session's API server with every CRD installed (once per module)."""
    with kube_api.api_client() as client:
        install_crds(client, crds, timeout=120)
        yield client


@pytest.fixture(scope="module")
def example_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render(EXAMPLES / "btp-operator", tmp_path_factory.mktemp("example-render"))


# --------------------------------------------------------------------------
# every render is accepted


@pytest.mark.parametrize("example", example_dirs(), ids=lambda path: path.name)
def test_every_object_of_an_example_render_is_accepted(
    api: k8s.ApiClient, example: Path, tmp_path: Path
) -> None:
    repo = render(example, tmp_path / "repo")
    refused = refusals(api, repo)
    assert not refused, "refused by the API server:\n" + "\n".join(refused)


@pytest.mark.parametrize("variant", CONFIG_VARIANTS, ids=lambda variant: variant.name)
def test_every_object_of_a_config_variant_render_is_accepted(
    api: k8s.ApiClient, variant: ConfigVariant, tmp_path: Path
) -> None:
    repo = render(variant.write(tmp_path / "source"), tmp_path / "repo")
    refused = refusals(api, repo)
    assert not refused, "refused by the API server:\n" + "\n".join(refused)


def test_every_installed_crd_is_served(api: k8s.ApiClient, crds: list[dict[str, Any]]) -> None:
    """Each family's kinds are really there, in every version the CRD serves."""
    served = ServedResources(api)
    missing = []
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version["served"] and served.lookup(f"{group}/{version['name']}", kind) is None:
                missing.append(f"{kind} in {group}/{version['name']}")
    assert not missing


# --------------------------------------------------------------------------
# the same request refuses what is wrong


def _rename_key(mapping: dict[str, Any], old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


Edit = Callable[[dict[str, Any]], None]


def _edited(obj: RenderedObject, edit: Edit) -> RenderedObject:
    body = copy.deepcopy(obj.body)
    edit(body)
    return RenderedObject(obj.path, yaml.safe_dump(body, sort_keys=False), body)


BROKEN_OBJECTS = [
    pytest.param(
        "Deployment",
        lambda body: _rename_key(body["spec"], "replicas", "replica"),
        ".spec.replica: field not declared in schema",
        id="built-in-kind-misspelled-field",
    ),
    pytest.param(
        "Certificate",
        lambda body: _rename_key(body["spec"], "secretName", "secretname"),
        ".spec.secretname: field not declared in schema",
        id="cert-manager-misspelled-field",
    ),
    pytest.param(
        "ExternalSecret",
        lambda body: body["spec"].update(refreshInterval=60),
        ".spec.refreshInterval: expected string",
        id="external-secrets-wrong-type",
    ),
    pytest.param(
        "BtpOperator",
        lambda body: body.update(specs={}),
        ".specs: field not declared in schema",
        id="our-crd-misspelled-field",
    ),
    pytest.param(
        "BtpOperator",
        # BtpOperator.spec takes no fields; server-side apply prunes this without an error.
        lambda body: body.update(spec={"colour": "blue"}),
        "the server dropped .spec.colour",
        id="our-crd-pruned-field",
    ),
]


@pytest.mark.parametrize(("kind", "edit", "expected"), BROKEN_OBJECTS)
def test_a_broken_object_is_refused(
    api: k8s.ApiClient, example_repo: Path, kind: str, edit: Edit, expected: str
) -> None:
    objects = rendered_objects(example_repo)
    original = next(obj for obj in objects if obj.kind == kind)
    served = ServedResources(api)
    for namespace in namespaces_used(objects, served):
        create_namespace(api, namespace)
    assert dry_run_apply(api, served, original) is None

    reason = dry_run_apply(api, served, _edited(original, edit))

    assert reason is not None, f"{original.describe()} with {expected!r} was accepted"
    assert expected in reason


def test_a_duplicate_key_in_the_file_is_refused(api: k8s.ApiClient, example_repo: Path) -> None:
    """The file's own bytes reach the server: strict field validation sees YAML duplicates."""
    config_map = next(obj for obj in rendered_objects(example_repo) if obj.kind == "ConfigMap")
    create_namespace(api, config_map.namespace or "default")
    duplicated = RenderedObject(
        config_map.path, config_map.text + f"kind: {config_map.kind}\n", config_map.body
    )

    reason = dry_run_apply(api, ServedResources(api), duplicated)

    assert reason is not None
    assert 'key "kind" already set in map' in reason


def test_custom_resources_of_a_rendered_crd_are_checked_against_it(
    api: k8s.ApiClient, tmp_path: Path
) -> None:
    """A render may hold a CRD and objects of it (a module and its default CR): the CRD is
    installed first, so its objects are validated rather than reported as unknown kinds."""
    group = "dry-run.btp-gitops.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                            },
                        }
                    },
                }
            ],
        },
    }
    app = tmp_path / "clusters" / CLUSTER / "gadgets"
    app.mkdir(parents=True)
    (app / f"customresourcedefinition-gadgets.{group}.yaml").write_text(yaml.safe_dump(crd))
    for name, spec in (("good", {"size": 1}), ("bad", {"size": "large"})):
        gadget = {
            "apiVersion": f"{group}/v1",
            "kind": "Gadget",
            "metadata": {"name": name, "namespace": "gadgets"},
            "spec": spec,
        }
        (app / f"gadget-{name}.yaml").write_text(yaml.safe_dump(gadget))

    refused = refusals(api, tmp_path / "clusters" / CLUSTER)

    assert len(refused) == 1, refused
    assert refused[0].startswith(f"clusters/{CLUSTER}/gadgets/gadget-bad.yaml (Gadget gadgets/bad): HTTP ")
    assert ".spec.size: expected numeric" in refused[0]
