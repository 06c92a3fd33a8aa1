"""CAP Operator's objects for examples/cap-app laid out on the test kube-apiserver, as it leaves them.

Written here from what its code and documentation show: its identity labels and controller
reference on each version, one version edited after its creation (generation 3), Deployments
whose selector and pod labels are its whole label set with the version's
`sme.sap.com/owner-generation`, VCAP Secrets `<cav>-<workload>-gen` read by `envFrom`, owner
references to the application and its versions, finalizers, a generateName'd tenant Job,
DNSEntries and Certificates, the version's ingress NetworkPolicy `<cav>--in`. Shared by the
cutover plan's test (tests/kube/test_cutover_plan.py) and the migration benchmark
(bench/migration.py).
"""

from __future__ import annotations

import concurrent.futures
import copy
import hashlib
from collections.abc import Sequence
from typing import Any

from kubernetes import client as k8s

from btp_gitops.generator.core.objects import ObjectKey, object_key
from tests.support.dry_run import RenderedObject as RenderedFile
from tests.support.dry_run import ServedResources, request

CAP = "sme.sap.com/"
OPERATOR_MANAGER = "cap-operator"


def collection_path(served: ServedResources, body: dict[str, Any]) -> str:
    resource = served.lookup(body["apiVersion"], body["kind"])
    assert resource is not None, f"{body['kind']} is not served"
    base = "/api/v1" if body["apiVersion"] == "v1" else f"/apis/{body['apiVersion']}"
    scope = f"/namespaces/{body['metadata']['namespace']}" if resource.namespaced else ""
    return f"{base}{scope}/{resource.plural}"


def create(client: k8s.ApiClient, served: ServedResources, body: dict[str, Any]) -> dict[str, Any]:
    """A plain create (an Update-type field manager, as client-go controllers write)."""
    reply = request(
        client,
        "POST",
        collection_path(served, body),
        query=[("fieldManager", OPERATOR_MANAGER)],
        body=body,  # type: ignore[arg-type]
    )
    assert reply.status == 201, f"{body['kind']} {body['metadata']}: {reply.message()}"
    return reply.body


def owner(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": body["metadata"]["name"],
        "uid": body["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def operator_labels(labels: dict[str, str]) -> dict[str, str]:
    """A Service selector with labels the render does not write there (Services' are mutable)."""
    return {
        **labels,
        f"{CAP}owner-generation": "1",
        f"{CAP}btp-app-identifier-hash": "f20cc8aeb2003b3abc33f7",
    }


def sha1(*parts: str) -> str:
    return hashlib.sha1("".join(parts).encode(), usedforsecurity=False).hexdigest()


def version_marks(application: dict[str, Any]) -> dict[str, str]:
    """The identity labels CAP Operator puts on a version it reconciles."""
    spec, metadata = application["spec"], application["metadata"]
    return {
        f"{CAP}btp-app-identifier-hash": sha1(spec["providerSubaccountId"], spec["btpAppName"]),
        f"{CAP}owner-identifier-hash": sha1(metadata["namespace"], metadata["name"]),
        f"{CAP}owner-generation": str(metadata["generation"]),
    }


def edit_spec_and_back(
    client: k8s.ApiClient, served: ServedResources, body: dict[str, Any]
) -> dict[str, Any]:
    """Change a version's spec and change it back, as a user may: its generation is 3 afterwards."""
    path = f"{collection_path(served, body)}/{body['metadata']['name']}"
    written = body["spec"]["registrySecrets"]
    for secrets_then in ([*written, "registry-pull-new"], written):
        reply = request(
            client,
            "PATCH",
            path,
            query=[("fieldManager", OPERATOR_MANAGER)],
            body={"spec": {"registrySecrets": secrets_then}},  # type: ignore[arg-type]
            content_type="application/merge-patch+json",
        )
        assert reply.status == 200, reply.message()
    assert reply.body["metadata"]["generation"] == 3
    return reply.body


def write_status(
    client: k8s.ApiClient, served: ServedResources, created: dict[str, Any], status: Any
) -> None:
    """A merge patch of /status, as a controller writes it (the create drops a status)."""
    path = f"{collection_path(served, created)}/{created['metadata']['name']}/status"
    reply = request(
        client,
        "PATCH",
        path,
        body={"status": status},  # type: ignore[arg-type]  # the client serializes a dict as JSON
        content_type="application/merge-patch+json",
    )
    assert reply.status == 200, f"{created['kind']} {created['metadata']['name']}: {reply.message()}"


def tenant_route(
    route: dict[str, Any], tenant: dict[str, Any], current: str | None, versions: dict[str, Any]
) -> dict[str, Any]:
    """A tenant's rendered VirtualService as CAP Operator keeps it: owned by the CAPTenant, its
    routes to the services of the version the tenant runs on (`current`, a version's name)."""
    route["metadata"]["ownerReferences"] = [owner(tenant)]
    for http in route["spec"].get("http", []) if current else []:
        for destination in (entry["destination"] for entry in http.get("route", [])):
            for name in versions:
                if destination["host"].startswith(f"{name}-"):
                    destination["host"] = f"{current}{destination['host'][len(name) :]}"
    return route


def lay_out(
    client: k8s.ApiClient,
    served: ServedResources,
    files: list[RenderedFile],
    ns: str,
    cap_objects: Sequence[dict[str, Any]] | None = None,
) -> dict[ObjectKey, dict[str, Any]]:
    """Create what CAP Operator leaves for the application; the created objects by identity.

    The CAP custom resources are the rendered ones with CAP Operator's finalizers and owner
    references, or `cap_objects` when given: CAP Operator's own, with their statuses
    (tests/migration/cap_operator.py), then each tenant's VirtualService routed to the version its
    status names; tenants and their routes are created by several threads at once (the benchmark
    lays out hundreds)."""
    live: dict[ObjectKey, dict[str, Any]] = {}
    mine = [item.body for item in files if item.namespace == ns]

    def keep(body: dict[str, Any]) -> dict[str, Any]:
        status = body.pop("status", None)
        created = create(client, served, body)
        if status:
            write_status(client, served, created, status)
        live[object_key(created)] = created
        return created

    def of_kind(kind: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(body) for body in mine if body["kind"] == kind]

    versions = {}
    if cap_objects is None:
        (application,) = of_kind("CAPApplication")
        application["metadata"]["finalizers"] = [f"{CAP}capapplication"]
        application = keep(application)
        for version in of_kind("CAPApplicationVersion"):
            version["metadata"].update(
                ownerReferences=[owner(application)],
                finalizers=[f"{CAP}capapplicationversion"],
                labels=version_marks(application),
            )
            created = keep(version)
            if created["spec"]["version"] == "1.0.0":
                created = edit_spec_and_back(client, served, created)
                live[object_key(created)] = created
            versions[version["metadata"]["name"]] = created
        for tenant in of_kind("CAPTenant"):
            tenant["metadata"].update(ownerReferences=[owner(application)], finalizers=[f"{CAP}captenant"])
            keep(tenant)
    else:
        given = [copy.deepcopy(body) for body in cap_objects]
        tenants = [body for body in given if body["kind"] == "CAPTenant"]
        for body in given:
            if body["kind"] != "CAPTenant":
                created = keep(body)
                if created["kind"] == "CAPApplicationVersion":
                    versions[created["metadata"]["name"]] = created
        current = {
            body["metadata"]["name"]: body.get("status", {}).get("currentCAPApplicationVersionInstance")
            for body in tenants
        }
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            made = {body["metadata"]["name"]: body for body in pool.map(keep, tenants)}
            # Each tenant's VirtualService, named after it and owned by it as CAP Operator keeps
            # them, routed to the version its status names (the render routes to the newest).
            routes = [
                tenant_route(
                    route, made[route["metadata"]["name"]], current[route["metadata"]["name"]], versions
                )
                for route in of_kind("VirtualService")
                if route["metadata"]["name"] in made
            ]
            list(pool.map(keep, routes))

    def version_of(body: dict[str, Any]) -> dict[str, Any]:
        identifier = body["metadata"]["annotations"][f"{CAP}owner-identifier"]
        return versions[identifier.partition(".")[2]]

    for deployment in of_kind("Deployment"):
        # CAP Operator's one label set, for the Deployment, its selector, its pods and their spread:
        # the workload's labels and its own keys (what the render writes on the pods of a version
        # without the annotation; tests/cap/test_adopted_selectors.py checks that against the
        # sources), and the generation of the version when it created the Deployment.
        generation = str(version_of(deployment)["metadata"]["generation"])
        labels = {
            **deployment["spec"]["template"]["metadata"]["labels"],
            f"{CAP}owner-generation": generation,
        }
        deployment["metadata"]["ownerReferences"] = [owner(version_of(deployment))]
        deployment["metadata"]["labels"] = labels
        deployment["spec"]["selector"] = {"matchLabels": labels}
        deployment["spec"]["template"]["metadata"]["labels"] = labels
        for constraint in deployment["spec"]["template"]["spec"].get("topologySpreadConstraints", []):
            constraint["labelSelector"] = {"matchLabels": labels}
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            # CAP Operator's VCAP_SERVICES Secret, where the render reads its ExternalSecret's.
            container["envFrom"] = [
                {"secretRef": {"name": f"{deployment['metadata']['name']}-gen", "optional": True}}
            ]
        keep(deployment)
        keep(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": f"{deployment['metadata']['name']}-gen",
                    "namespace": ns,
                    "labels": {f"{CAP}category": "Workload"},
                    "ownerReferences": [owner(version_of(deployment))],
                },
                "stringData": {
                    "VCAP_SERVICES": '{"xsuaa":[{"credentials":{"clientsecret":"cutover-secret-value"}}]}'
                },
            }
        )
    for service in of_kind("Service"):
        service["metadata"]["ownerReferences"] = [owner(version_of(service))]
        service["spec"]["selector"] = operator_labels(service["spec"]["selector"])
        keep(service)
    for job in of_kind("Job"):
        if job["metadata"]["labels"].get(f"{CAP}workload-type") != "Content":
            continue  # tenant operations: CAP Operator's are generateName'd, below
        job["metadata"]["ownerReferences"] = [owner(version_of(job))]
        for container in job["spec"]["template"]["spec"]["containers"]:
            container["envFrom"] = [{"secretRef": {"name": f"{job['metadata']['name']}-gen"}}]
        keep(job)
    # A provisioning Job CAP Operator ran for a tenant, named by generateName, owned by a
    # CAPTenantOperation (CAP Operator's kind, which a btp-gitops cluster does not serve).
    tenant_operation = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenantOperation",
        "name": "globex-provisioning-8kq2w",
        "uid": "0b1e5c7a-1d2e-4f3a-9b8c-7d6e5f4a3b2c",
        "controller": True,
    }
    keep(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "generateName": "globex-tenant-job-",
                "namespace": ns,
                "ownerReferences": [tenant_operation],
                "labels": {
                    "app": "bookshop",
                    f"{CAP}category": "Workload",
                    f"{CAP}tenant-operation-type": "provisioning",
                    f"{CAP}tenant-operation-step": "1",
                    f"{CAP}workload-name": "tenant-job",
                    f"{CAP}workload-type": "TenantOperation",
                },
            },
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "tenant-job", "image": "registry.example.com/bookshop/srv:1.0.0"}
                        ],
                    }
                }
            },
        }
    )
    # What a Domain made: its DNSEntry and Certificate by generateName.
    for kind in ("DNSEntry", "Certificate"):
        for body in of_kind(kind):
            body["metadata"]["generateName"] = f"{body['metadata'].pop('name').split('-')[0]}-"
            keep(body)
    # The version's ingress NetworkPolicy, which the render replaces by a domain's.
    (newest,) = [v for name, v in versions.items() if name.endswith("1-1-0")]
    keep(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {
                "name": f"{newest['metadata']['name']}--in",
                "namespace": ns,
                "ownerReferences": [owner(newest)],
            },
            "spec": {
                "podSelector": {"matchLabels": {"app": "bookshop", f"{CAP}exposed-workload": "true"}},
                "ingress": [
                    {
                        "from": [
                            {
                                "namespaceSelector": {},
                                "podSelector": {"matchLabels": {"istio": "ingressgateway"}},
                            }
                        ]
                    }
                ],
                "policyTypes": ["Ingress"],
            },
        }
    )
    return live
