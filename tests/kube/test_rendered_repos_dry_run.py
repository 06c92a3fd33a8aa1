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
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.conftest import CHART, CLI, EXAMPLES, ROOT
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = pytest.mark.kube

FIELD_MANAGER = "btp-gitops"
CLUSTER = "dry-run"
APPLY_QUERY = [
    ("dryRun", "All"),
    ("fieldManager", FIELD_MANAGER),
    ("fieldValidation", "Strict"),
    # Argo CD and Flux apply server-side with force; a field another test's manager owns in
    # the shared API server must not turn into a conflict here.
    ("force", "true"),
]


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
        spec["chart"]["path"] = str(CHART)
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
# the rendered repo


@dataclass(frozen=True)
class RenderedObject:
    """One rendered file: its text as written and the object it holds."""

    path: str  # relative to the repo, for messages
    text: str
    body: dict[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.body["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        namespace = self.body["metadata"].get("namespace")
        return str(namespace) if namespace else None

    def describe(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.path} ({self.kind} {where})"


def render(source: Path, out: Path) -> Path:
    """Run the installed CLI as a user would; return the cluster directory it wrote."""
    result = subprocess.run(
        [str(CLI), "render", str(source), "--out", str(out), "--cluster", CLUSTER],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, f"render of {source} failed:\n{result.stderr}"
    return out / "clusters" / CLUSTER


def rendered_objects(repo: Path) -> list[RenderedObject]:
    """Every object file of every app (kustomization.yaml files are kustomize's, not objects)."""
    objects = []
    for path in sorted(repo.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        text = path.read_text(encoding="utf-8")
        docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
        # The layout writes one object per file; the file is sent to the server as it is.
        assert len(docs) == 1, f"{path}: {len(docs)} documents, expected one object per file"
        objects.append(RenderedObject(path.relative_to(repo.parent.parent).as_posix(), text, docs[0]))
    return objects


# --------------------------------------------------------------------------
# the API server


@dataclass(frozen=True)
class ServedResource:
    plural: str
    namespaced: bool


class ServedResources:
    """What the API server serves, by apiVersion and kind (its discovery documents, cached)."""

    def __init__(self, client: k8s.ApiClient) -> None:
        self._client = client
        self._by_group_version: dict[str, dict[str, ServedResource]] = {}

    def lookup(self, api_version: str, kind: str) -> ServedResource | None:
        if api_version not in self._by_group_version:
            self._by_group_version[api_version] = self._discover(api_version)
        return self._by_group_version[api_version].get(kind)

    def forget(self, api_version: str) -> None:
        self._by_group_version.pop(api_version, None)

    def _discover(self, api_version: str) -> dict[str, ServedResource]:
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        reply = request(self._client, "GET", path)
        if reply.status == 404:
            return {}
        assert reply.status == 200, f"discovery of {path}: {reply.message()}"
        return {
            resource["kind"]: ServedResource(resource["name"], resource["namespaced"])
            for resource in reply.body["resources"]
            if "/" not in resource["name"]  # subresources such as deployments/scale
        }


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]

    def message(self) -> str:
        """The server's reason and message of a refusal (a Status object)."""
        return f"HTTP {self.status} {self.body.get('reason', '')}: {self.body.get('message', self.body)}"


def request(
    client: k8s.ApiClient,
    method: str,
    path: str,
    query: list[tuple[str, str]] | None = None,
    body: str | None = None,
    content_type: str = "application/json",
) -> Reply:
    """One raw API request. A str body is sent as it is, so the server parses the file's bytes."""
    serialized = client.param_serialize(
        method,
        path,
        query_params=query or [],
        header_params={"Accept": "application/json", "Content-Type": content_type},
        body=body,
    )
    raw = client.call_api(*serialized, _request_timeout=60).response  # the urllib3 response
    try:
        data: bytes = raw.data
    finally:
        raw.release_conn()
    try:
        parsed = json.loads(data)
    except ValueError:
        parsed = {"message": data.decode(errors="replace")}
    return Reply(raw.status, parsed)


def object_path(obj: RenderedObject, resource: ServedResource) -> str:
    group_version = "/api/v1" if obj.api_version == "v1" else f"/apis/{obj.api_version}"
    scope = f"/namespaces/{obj.namespace}" if resource.namespaced else ""
    return f"{group_version}{scope}/{resource.plural}/{obj.name}"


def dry_run_apply(client: k8s.ApiClient, served: ServedResources, obj: RenderedObject) -> str | None:
    """Server-side apply of the file in dry-run mode: None when accepted, else why not."""
    resource = served.lookup(obj.api_version, obj.kind)
    if resource is None:
        return f"the API server does not serve {obj.kind} in {obj.api_version} (no CRD installed for it)"
    if resource.namespaced and obj.namespace is None:
        return "namespaced kind without metadata.namespace"
    reply = request(
        client,
        "PATCH",
        object_path(obj, resource),
        query=APPLY_QUERY,
        body=obj.text,
        content_type="application/apply-patch+yaml",
    )
    if reply.status not in (200, 201):
        return reply.message()
    applied = reply.body
    if (applied.get("kind"), applied.get("metadata", {}).get("name")) != (obj.kind, obj.name):
        return f"the server answered with another object: {json.dumps(applied)[:200]}"
    # Strict validation does not cover everything: under an object schema without properties,
    # server-side apply prunes unknown fields silently. A GitOps tool would then never converge.
    pruned = dropped_fields(_without_status(obj.body), applied)
    if pruned:
        return f"accepted, but the server dropped {', '.join(pruned)}"
    return None


def _without_status(body: dict[str, Any]) -> dict[str, Any]:
    # The main endpoint ignores status by design; controllers write it through /status.
    return {key: value for key, value in body.items() if key != "status"}


def dropped_fields(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Field paths present in ``sent`` but missing from ``stored``. Values may differ (the server
    normalises quantities and adds defaults); only keys that vanished count. Nulls are left out:
    in an apply they mean "no opinion"."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        dropped = []
        for key, value in sent.items():
            if value is None:
                continue
            if key not in stored:
                dropped.append(f"{path}.{key}")
            else:
                dropped += dropped_fields(value, stored[key], f"{path}.{key}")
        return dropped
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        return [
            found
            for index, (item, kept) in enumerate(zip(sent, stored, strict=True))
            for found in dropped_fields(item, kept, f"{path}[{index}]")
        ]
    return []


def create_namespace(client: k8s.ApiClient, name: str) -> None:
    """Create the namespace unless it exists (other tests may share it)."""
    body = k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name))
    try:
        k8s.CoreV1Api(client).create_namespace(body=body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def namespaces_used(objects: list[RenderedObject], served: ServedResources) -> set[str]:
    """Namespaces of the namespaced objects, and those the output itself declares."""
    used = {obj.name for obj in objects if obj.api_version == "v1" and obj.kind == "Namespace"}
    for obj in objects:
        resource = served.lookup(obj.api_version, obj.kind)
        if resource is not None and resource.namespaced and obj.namespace:
            used.add(obj.namespace)
    return used


def install_crds_the_output_uses(
    client: k8s.ApiClient, served: ServedResources, objects: list[RenderedObject]
) -> None:
    """Install (for real) the rendered CRDs whose kinds other rendered objects are: a dry run of
    a CRD does not create it, so its custom resources could not be checked otherwise."""
    rendered_crds = [obj.body for obj in objects if obj.kind == "CustomResourceDefinition"]
    kinds_used = {(obj.api_version.rpartition("/")[0], obj.kind) for obj in objects}
    needed = [
        crd for crd in rendered_crds if (crd["spec"]["group"], crd["spec"]["names"]["kind"]) in kinds_used
    ]
    if not needed:
        return
    install_crds(client, needed, timeout=60)
    for crd in needed:
        for version in crd["spec"]["versions"]:
            served.forget(f"{crd['spec']['group']}/{version['name']}")


def refusals(client: k8s.ApiClient, repo: Path) -> list[str]:
    """Prepare the cluster for one rendered repo, dry-run apply all of it, list what was refused."""
    objects = rendered_objects(repo)
    assert objects, f"nothing rendered under {repo}"
    served = ServedResources(client)
    install_crds_the_output_uses(client, served, objects)
    for namespace in sorted(namespaces_used(objects, served)):
        create_namespace(client, namespace)
    found = []
    for obj in objects:
        reason = dry_run_apply(client, served, obj)
        if reason is not None:
            found.append(f"{obj.describe()}: {reason}")
    return found


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
