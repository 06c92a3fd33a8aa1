"""Server-side dry-run of a rendered repo against the test API server, object by object.

Each rendered file is sent as written by server-side apply with `dryRun=All`,
`fieldValidation=Strict` and force (as Argo CD and Flux apply); fields the server would silently
drop are reported too. Used by the dry-run tests of every domain and of the wiring.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.conftest import CLI, ROOT
from tests.support.kubeapi import install_crds

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
            wait_until_served(
                served, f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"]
            )


def wait_until_served(served: ServedResources, api_version: str, kind: str, timeout: float = 30.0) -> None:
    """Established is not yet served: discovery of a new group-version catches up a moment later."""
    deadline = time.monotonic() + timeout
    while True:
        served.forget(api_version)
        if served.lookup(api_version, kind) is not None:
            return
        assert time.monotonic() < deadline, f"{api_version} {kind} not served after {timeout}s"
        time.sleep(0.1)


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
