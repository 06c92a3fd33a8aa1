"""The cutover plan proven on a real kube-apiserver (issue 35): what `diff --against-cluster` says
a render does to the objects an operator left is what the API server does when the render is
applied.

The live objects are laid out as CAP Operator leaves them for the example application (written
here from what its code and documentation show, tests/support/cap_workloads.py: its identity
labels and controller reference on each version, one version edited after its creation
(generation 3), Deployments whose selector and pod labels are its whole label set with the
version's `sme.sap.com/owner-generation`, VCAP Secrets `<cav>-<workload>-gen` read by `envFrom`,
owner references to the application and its versions, finalizers, generateName'd tenant Jobs,
DNSEntries and Certificates, the version's ingress NetworkPolicy `<cav>--in`), in a namespace of
this test's own. The example's sources, moved to that namespace, with the versions as `btp-gitops
import` reads them back from the live ones (the generation CAP Operator's Deployments hold, which
keeps their immutable selectors), are rendered by `btp-gitops render`; `btp-gitops diff
--against-cluster` plans the cutover; then every rendered file is
server-side applied with dryRun=All and force, as Argo CD and Flux apply: every object the plan
adopts is accepted in place (same uid), every object it creates or recreates under a new name is
created, every object it recreates in place is refused as immutable, and what it leaves behind is
exactly what was laid out and not rendered.

A second group holds each immutable-field rule against the same server, both ways.
"""

from __future__ import annotations

import copy
import functools
import json
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from btp_gitops.generator.core.errors import ClusterUnreachable
from btp_gitops.generator.core.objects import ObjectKey, object_key
from btp_gitops.generator.io.live_lookup import LiveLookup, LookupLimits
from btp_gitops.generator.migration.plan import Outcome, RenderedObject, plan_cutover
from tests.conftest import EXAMPLES, RunCli
from tests.support import keys
from tests.support.cap_workloads import collection_path, create, lay_out
from tests.support.crds import load_crds, our_crd_files, third_party_crd_files
from tests.support.dry_run import (
    APPLY_QUERY,
    CLUSTER,
    Reply,
    ServedResources,
    create_namespace,
    install_crds_the_output_uses,
    namespaces_used,
    object_path,
    render,
    rendered_objects,
    request,
)
from tests.support.dry_run import RenderedObject as RenderedFile
from tests.support.kubeapi import KubeAPI, install_crds

pytestmark = [pytest.mark.kube, pytest.mark.crds]

GENERATION_ANNOTATION = "btp-gitops.io/cap-operator-generation"


@pytest.fixture(scope="module")
def api(kube_api: KubeAPI) -> Iterator[k8s.ApiClient]:
    with kube_api.api_client() as client:
        install_crds(client, load_crds([*our_crd_files(), *third_party_crd_files()]), timeout=120)
        yield client


# --- applying a rendered file as Argo CD and Flux do --------------------------------------------------


def apply_dry_run(client: k8s.ApiClient, served: ServedResources, item: RenderedFile) -> Reply:
    resource = served.lookup(item.api_version, item.kind)
    assert resource is not None, item.describe()
    return request(
        client,
        "PATCH",
        object_path(item, resource),
        query=APPLY_QUERY,
        body=item.text,
        content_type="application/apply-patch+yaml",
    )


# --- the test ------------------------------------------------------------------------------------


@pytest.fixture
def cutover_namespace(api: k8s.ApiClient) -> str:
    name = f"cutover-{secrets.token_hex(3)}"
    create_namespace(api, name)
    return name


def moved_sources(target: Path, namespace: str) -> Path:
    shutil.copytree(EXAMPLES / "cap-app", target)
    for path in target.rglob("*.yaml"):
        path.write_text(path.read_text().replace("namespace: bookshop", f"namespace: {namespace}"))
    return target


def import_versions(run_cli: RunCli, kube_api: KubeAPI, ns: str, sources: Path, out: Path) -> None:
    """`btp-gitops import` of the live objects; its version files replace the sources' (each is
    the source as written, and the annotation with the version's live generation)."""
    result = run_cli(
        "import", "--kubeconfig", kube_api.kubeconfig, "--namespace", ns, "--out", out, "-o", "json"
    )
    assert result.returncode == 0, result.stderr
    for written in sorted(sources.glob("version-*.yaml")):
        imported = (out / f"cap/{ns}/bookshop/{written.name}").read_text()
        (before,) = [d for d in yaml.safe_load_all(written.read_text()) if d]
        (after,) = [d for d in yaml.safe_load_all(imported) if d]
        generation = "3" if before["spec"]["version"] == "1.0.0" else "1"
        before["metadata"]["annotations"] = {GENERATION_ANNOTATION: generation}
        assert after == before, written.name
        written.write_text(imported)


def plan_through_the_cli(run_cli: RunCli, kube_api: KubeAPI, sources: Path) -> dict[str, Any]:
    result = run_cli(
        "diff",
        sources,
        "--cluster",
        CLUSTER,
        "--against-cluster",
        "--kubeconfig",
        kube_api.kubeconfig,
        "-o",
        "json",
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    plan: dict[str, Any] = json.loads(result.stdout)
    return plan


def live_uid(client: k8s.ApiClient, served: ServedResources, item: RenderedFile) -> str | None:
    resource = served.lookup(item.api_version, item.kind)
    assert resource is not None
    reply = request(client, "GET", object_path(item, resource))
    return str(reply.body["metadata"]["uid"]) if reply.status == 200 else None


def check_against_dry_run(
    client: k8s.ApiClient,
    served: ServedResources,
    files: list[RenderedFile],
    plan: dict[str, Any],
    laid_out: set[ObjectKey],
    there_before: frozenset[str] = frozenset(),
) -> None:
    """Every rendered object does, on a server-side dry-run apply, what the plan says; what the
    plan leaves behind is what was laid out and not rendered (or was there before the layout)."""
    entries = {entry["object"]: entry for entry in plan["objects"] if entry["outcome"] != "left-behind"}
    left_behind = {entry["object"] for entry in plan["objects"] if entry["outcome"] == "left-behind"}
    surprises = []
    for item in files:
        key = object_key(item.body)
        entry = entries.pop(key.describe())
        uid = live_uid(client, served, item)
        reply = apply_dry_run(client, served, item)
        outcome = entry["outcome"]
        if outcome == "adopted":
            if reply.status != 200 or uid is None or reply.body["metadata"]["uid"] != uid:
                surprises.append(f"{key.describe()}: adopted, but the server answered {reply.message()}")
        elif outcome == "created" or entry["replaces"]:
            if reply.status != 201:
                surprises.append(f"{key.describe()}: {outcome}, but the server answered {reply.message()}")
        elif reply.status != 422:
            surprises.append(
                f"{key.describe()}: recreated ({entry['reason']}), but the server answered {reply.status}"
            )
    assert not surprises, "\n".join(surprises)
    assert not entries, f"planned but not rendered: {sorted(entries)}"
    rendered_keys = {object_key(item.body) for item in files}
    expected = {key.describe() for key in laid_out if key not in rendered_keys}
    assert expected <= left_behind, sorted(expected - left_behind)
    assert left_behind - expected <= there_before, sorted(left_behind - expected - there_before)


def test_the_plan_says_what_a_server_side_apply_does(
    api: k8s.ApiClient, kube_api: KubeAPI, run_cli: RunCli, cutover_namespace: str, tmp_path: Path
) -> None:
    sources = moved_sources(tmp_path / "sources", cutover_namespace)
    files = rendered_objects(render(sources, tmp_path / "repo"))
    served = ServedResources(api)
    install_crds_the_output_uses(api, served, files)
    for namespace in sorted(namespaces_used(files, served)):
        create_namespace(api, namespace)
    live = lay_out(api, served, files, cutover_namespace)
    import_versions(run_cli, kube_api, cutover_namespace, sources, tmp_path / "imported")
    files = rendered_objects(render(sources, tmp_path / "repo-imported"))

    plan = plan_through_the_cli(run_cli, kube_api, sources)
    check_against_dry_run(api, served, files, plan, {key for key in live})

    # What the layout makes certain, by name.
    by_object = {entry["object"]: entry for entry in plan["objects"]}
    ns = cutover_namespace
    # Every Deployment CAP Operator made keeps its selector (the imported versions' generation):
    # adopted in place, a rolling update at most, and the dry run above kept each one's uid.
    deployments = [e for e in plan["objects"] if e["object"].startswith(f"Deployment {ns}/")]
    assert len(deployments) == 5
    for entry in deployments:
        assert (entry["outcome"], entry["operator"]) == ("adopted", "CAP Operator"), entry
        assert "spec.selector" not in entry["changes"], entry
        assert not entry["consequence"] or "rolling update" in entry["consequence"], entry
    service = by_object[f"Service {ns}/bookshop-1-1-0-srv-svc"]
    assert (service["outcome"], service["changes"]) == ("adopted", ["spec.selector"])
    content = by_object[f"Job {ns}/bookshop-1-1-0-content"]
    assert (content["outcome"], content["changes"]) == ("recreated", ["spec.template"])
    assert content["consequence"].startswith("the Job runs again")
    dns = [
        e
        for e in plan["objects"]
        if e["object"].startswith(f"DNSEntry {ns}/") and e["outcome"] == "recreated"
    ]
    assert dns and all(
        e["replaces"].startswith(f"DNSEntry {ns}/") and "generateName" in e["reason"] for e in dns
    )
    network_policy = by_object[f"NetworkPolicy {ns}/bookshop-1-1-0--in"]
    assert "the garbage collector never removes it" in network_policy["action"]
    assert by_object[f"CAPTenant {ns}/acme"]["outcome"] == "adopted"
    assert plan["summary"]["recreated"] >= 3 and plan["summary"]["leftBehind"] >= 6
    assert "cutover-secret-value" not in json.dumps(plan)

    text = run_cli(
        "diff",
        sources,
        "--cluster",
        CLUSTER,
        "--against-cluster",
        "--kubeconfig",
        kube_api.kubeconfig,
        "--exit-code",
    )
    assert text.returncode == 1, text.stderr
    assert text.stdout.startswith(f"btp-gitops diff: clusters/{CLUSTER} against cluster (kubeconfig ")
    assert f"! Job {ns}/bookshop-1-1-0-content (recreated, made by CAP Operator)" in text.stdout
    assert "cutover-secret-value" not in text.stdout


def test_a_certificate_whose_tls_secret_names_it_owner_is_deleted_orphaning_the_secret(
    api: k8s.ApiClient, kube_api: KubeAPI, run_cli: RunCli, cutover_namespace: str, tmp_path: Path
) -> None:
    """CAP Operator's cert-manager Certificate (generateName'd) and the TLS Secret cert-manager
    wrote with `--enable-certificate-owner-ref`, as the API server stores them: the plan tells
    to delete the old Certificate once the render's is ready, with `--cascade=orphan`, because
    the render's Certificate takes that Secret over and the garbage collector follows the
    reference (no controller-manager runs here; the reference is read back from the server)."""
    sources = moved_sources(tmp_path / "sources", cutover_namespace)
    domains = sources / "domains.yaml"
    documents = [d for d in yaml.safe_load_all(domains.read_text()) if d]
    (own,) = [d for d in documents if d["kind"] == "Domain" and d["metadata"]["name"] == "bookshop"]
    own["metadata"]["annotations"] = {"btp-gitops.io/certificate-manager": "cert-manager"}
    domains.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    files = rendered_objects(render(sources, tmp_path / "repo"))
    served = ServedResources(api)
    install_crds_the_output_uses(api, served, files)
    for namespace in sorted(namespaces_used(files, served)):
        create_namespace(api, namespace)
    (rendered,) = [
        f
        for f in files
        if (f.api_version, f.kind) == ("cert-manager.io/v1", "Certificate") and cutover_namespace in f.name
    ]
    old = copy.deepcopy(rendered.body)
    old["metadata"]["generateName"] = f"{cutover_namespace}-"
    del old["metadata"]["name"]
    old = create(api, served, old)
    secret_name = rendered.body["spec"]["secretName"]
    ingress = str(rendered.namespace)
    core = k8s.CoreV1Api(api)
    reference = k8s.V1OwnerReference(
        api_version="cert-manager.io/v1",
        kind="Certificate",
        name=old["metadata"]["name"],
        uid=old["metadata"]["uid"],
        controller=True,
        block_owner_deletion=True,
    )
    core.create_namespaced_secret(
        ingress,
        k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(name=secret_name, owner_references=[reference]),
            type="kubernetes.io/tls",
            string_data={"tls.crt": "cutover-secret-value", "tls.key": "cutover-secret-value"},
        ),
    )
    try:
        plan = plan_through_the_cli(run_cli, kube_api, sources)
    finally:
        core.delete_namespaced_secret(secret_name, ingress)
        request(api, "DELETE", f"{collection_path(served, old)}/{old['metadata']['name']}")
    by_object = {entry["object"]: entry for entry in plan["objects"]}
    left = by_object[f"Certificate {ingress}/{old['metadata']['name']}"]
    assert left["outcome"] == "left-behind"
    assert left["action"].startswith(f"replaced by {rendered.name}: delete it once {rendered.name} is ready")
    assert f"Secret {ingress}/{secret_name}, which the cutover keeps, names it as owner" in left["action"]
    assert "`kubectl delete --cascade=orphan`" in left["action"]
    assert by_object[f"Certificate {ingress}/{rendered.name}"]["replaces"] == left["object"]
    assert "cutover-secret-value" not in json.dumps(plan)


# --- BTP Manager's and Lifecycle Manager's objects -----------------------------------------------------


@pytest.fixture
def created_for_real(api: k8s.ApiClient) -> Iterator[list[tuple[str, str]]]:
    """(path, what) of every object a test created in a namespace others use: deleted afterwards, so
    that the objects of the next test module's dry runs meet what they expect."""
    made: list[tuple[str, str]] = []
    yield made
    for path, what in reversed(made):
        reply = request(api, "DELETE", path)
        assert reply.status in (200, 202, 404), f"{what}: {reply.message()}"


def create_shared(
    client: k8s.ApiClient, served: ServedResources, body: dict[str, Any], made: list[tuple[str, str]]
) -> dict[str, Any] | None:
    """Create unless it exists (another test may have installed it for real): None then."""
    reply = request(
        client,
        "POST",
        collection_path(served, body),
        query=[("fieldManager", "operator")],
        body=body,  # type: ignore[arg-type]
    )
    if reply.status == 409:
        return None
    assert reply.status == 201, f"{body['kind']} {body['metadata'].get('name')}: {reply.message()}"
    made.append((f"{collection_path(served, body)}/{reply.body['metadata']['name']}", body["kind"]))
    return reply.body


BTP_MANAGER_LABELS = {"app.kubernetes.io/managed-by": "btp-manager", "kyma-project.io/module": "btp-operator"}
KYMA_LABELS = {"operator.kyma-project.io/managed-by": "kyma", "app.kubernetes.io/part-of": "Kyma"}
# BTP Manager manages its webhook certificates itself; the render has cert-manager issue them.
CERT_MANAGER_ONLY = {"Certificate", "Issuer", "ExternalSecret", "SecretStore"}


def as_btp_manager_left_it(files: list[RenderedFile]) -> list[dict[str, Any]]:
    """BTP Manager's objects: the chart's (it applies them from its module-resources), its own
    webhook certificate Secrets and the operator's credentials Secret, the webhooks with the CA
    injected into them, an older operator image."""
    objects = []
    for item in files:
        if item.path.split("/")[-2] != "btp-operator" or item.kind in CERT_MANAGER_ONLY:
            continue
        name = item.name
        if name.startswith("btp-gitops-") or item.kind in ("BtpOperator", "CustomResourceDefinition"):
            continue  # the render's own credentials reader; the module request; shared CRDs
        body = copy.deepcopy(item.body)
        metadata = body["metadata"]
        metadata.setdefault("labels", {}).update(BTP_MANAGER_LABELS)
        metadata.get("annotations", {}).pop("cert-manager.io/inject-ca-from", None)
        if item.kind == "Deployment":
            for container in body["spec"]["template"]["spec"]["containers"]:
                container["image"] = "europe-docker.pkg.dev/kyma-project/prod/sap-btp-service-operator:0.6.0"
        if item.kind.endswith("WebhookConfiguration"):
            for webhook in body.get("webhooks", []):
                webhook["clientConfig"]["caBundle"] = "Y2EtYnVuZGxlLWJ5LWJ0cC1tYW5hZ2Vy"
        objects.append(body)
    for secret in ("ca-server-cert", "webhook-server-cert", "sap-btp-service-operator"):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": "kyma-system", "labels": dict(BTP_MANAGER_LABELS)},
                "stringData": {
                    "tls.key": keys.pem_rsa(),
                    "clientsecret": "btp-manager-secret-value",
                },
            }
        )
    return objects


def as_lifecycle_manager_left_it(files: list[RenderedFile]) -> list[dict[str, Any]]:
    """A module's resources as Lifecycle Manager applied them (its labels), at the module's older
    version: another image, and a Service that the new version no longer has."""
    objects = []
    for item in files:
        if item.path.split("/")[-2] != "kyma-greeter" or item.kind in ("CustomResourceDefinition", "Greeter"):
            continue
        body = copy.deepcopy(item.body)
        body["metadata"].setdefault("labels", {}).update(KYMA_LABELS)
        if item.kind == "Deployment":
            for container in body["spec"]["template"]["spec"]["containers"]:
                container["image"] = container["image"].replace(":1.0.0", ":0.9.0")
        objects.append(body)
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "greeter-metrics", "namespace": "kyma-system", "labels": dict(KYMA_LABELS)},
            "spec": {"selector": {"app.kubernetes.io/name": "greeter-operator"}, "ports": [{"port": 8080}]},
        }
    )
    return objects


def test_the_plan_for_btp_manager_and_lifecycle_manager_objects(
    api: k8s.ApiClient,
    kube_api: KubeAPI,
    run_cli: RunCli,
    created_for_real: list[tuple[str, str]],
    tmp_path: Path,
) -> None:
    sources = tmp_path / "sources"
    shutil.copytree(EXAMPLES / "btp-operator", sources / "btp-operator")
    shutil.copytree(EXAMPLES / "kyma-modules", sources / "kyma-modules")
    files = rendered_objects(render(sources, tmp_path / "repo"))
    served = ServedResources(api)
    install_crds_the_output_uses(api, served, files)
    for namespace in sorted(namespaces_used(files, served)):
        create_namespace(api, namespace)
    there_before = frozenset(
        entry["object"]
        for entry in plan_through_the_cli(run_cli, kube_api, sources)["objects"]
        if entry["outcome"] == "left-behind"
    )
    laid_out = set()
    for body in [*as_btp_manager_left_it(files), *as_lifecycle_manager_left_it(files)]:
        created = create_shared(api, served, body, created_for_real)
        if created is not None:
            laid_out.add(object_key(created))
    assert laid_out, "every object was there already"

    plan = plan_through_the_cli(run_cli, kube_api, sources)
    check_against_dry_run(api, served, files, plan, laid_out, there_before)
    by_object = {entry["object"]: entry for entry in plan["objects"]}
    manager = by_object["Deployment kyma-system/sap-btp-operator-controller-manager"]
    assert (manager["outcome"], manager["operator"]) == ("adopted", "BTP Manager")
    assert "spec.template" in manager["changes"] and "rolling update" in manager["consequence"]
    webhook_secret = by_object["Secret kyma-system/webhook-server-cert"]
    assert webhook_secret["outcome"] == "left-behind"
    assert webhook_secret["action"].startswith("the render's Certificate ")
    credentials = by_object["Secret kyma-system/sap-btp-service-operator"]
    assert "ExternalSecret sap-btp-service-operator writes a Secret of this name" in credentials["action"]
    greeter = by_object["Deployment kyma-system/greeter-operator"]
    assert (greeter["outcome"], greeter["operator"], greeter["app"]) == (
        "adopted",
        "Lifecycle Manager",
        "kyma-greeter",
    )
    metrics = by_object["Service kyma-system/greeter-metrics"]
    assert (metrics["outcome"], metrics["operator"]) == ("left-behind", "Lifecycle Manager")
    # The same plan on a second run, and no Secret value or private key in any format.
    assert plan_through_the_cli(run_cli, kube_api, sources) == plan
    for output in ("text", "markdown", "json", "yaml"):
        result = run_cli(
            "diff",
            sources,
            "--cluster",
            CLUSTER,
            "--against-cluster",
            "--kubeconfig",
            kube_api.kubeconfig,
            "-o",
            output,
        )
        assert result.returncode == 0, result.stderr
        assert "Secret kyma-system/ca-server-cert" in result.stdout
        for value in ("btp-manager-secret-value", "PRIVATE KEY", "Y2EtYnVuZGxlLWJ5LWJ0cC1tYW5hZ2Vy"):
            assert value not in result.stdout + result.stderr, (output, value)


# --- each immutable-field rule against the server, both ways -----------------------------------------


def _meta(name: str, ns: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": ns, **extra} if ns else {"name": name, **extra}


def deployment(name: str, ns: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, ns),
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {"containers": [{"name": "c", "image": "i:1"}]},
            },
        },
    }


def stateful_set(name: str, ns: str, service: str) -> dict[str, Any]:
    body = deployment(name, ns, {"app": name})
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = service
    return body


def job(name: str, ns: str, command: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(name, ns),
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "i:1", "command": [command]}],
                }
            }
        },
    }


def service(name: str, ns: str, cluster_ip: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"name": "http", "port": 80}]}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, ns), "spec": spec}


def service_of_type(name: str, ns: str, kind: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind}
    if kind == "ExternalName":
        spec["externalName"] = "shop.example.com"
    else:
        spec["ports"] = [{"name": "http", "port": 80}]
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, ns), "spec": spec}


def claim(name: str, ns: str, storage_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(name, ns),
        "spec": {
            "storageClassName": storage_class,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def frozen(kind: str, name: str, ns: str, value: str) -> dict[str, Any]:
    field = {"Secret": "stringData", "ConfigMap": "data"}[kind]
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": _meta(name, ns),
        "immutable": True,
        field: {"k": value},
    }


def binding(name: str, ns: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(name, ns),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
    }


def definition(name: str, _: str, scope: str) -> dict[str, Any]:
    group = f"{name}.cutover.example.com"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


RULE_CASES = [
    # (make, the live argument, the rendered argument, outcome)
    (deployment, {"app": "a", "tier": "web"}, {"app": "a", "tier": "web"}, Outcome.ADOPTED),
    (deployment, {"app": "a", "tier": "web"}, {"app": "a"}, Outcome.RECREATED),
    (stateful_set, "db", "db", Outcome.ADOPTED),
    (stateful_set, "db", "db-headless", Outcome.RECREATED),
    (job, "migrate", "migrate", Outcome.ADOPTED),
    (job, "migrate", "seed", Outcome.RECREATED),
    (service, None, None, Outcome.ADOPTED),
    (service, None, "None", Outcome.RECREATED),
    # The API server drops a cluster IP itself when the type changes to ExternalName, and
    # allocates one the other way: a change of type is made in place.
    (service_of_type, "ClusterIP", "ExternalName", Outcome.ADOPTED),
    (service_of_type, "ExternalName", "ClusterIP", Outcome.ADOPTED),
    (claim, "fast", "fast", Outcome.ADOPTED),
    (claim, "fast", "slow", Outcome.RECREATED),
    (functools.partial(frozen, "Secret"), "one", "one", Outcome.ADOPTED),
    (functools.partial(frozen, "Secret"), "one", "two", Outcome.RECREATED),
    (functools.partial(frozen, "ConfigMap"), "one", "one", Outcome.ADOPTED),
    (functools.partial(frozen, "ConfigMap"), "one", "two", Outcome.RECREATED),
    (binding, "reader", "reader", Outcome.ADOPTED),
    (binding, "reader", "writer", Outcome.RECREATED),
    (definition, "Namespaced", "Namespaced", Outcome.ADOPTED),
    (definition, "Namespaced", "Cluster", Outcome.RECREATED),
]


def _case_id(case: tuple[Any, ...]) -> str:
    make, _, rendered, outcome = case
    name = getattr(make, "__name__", None) or make.args[0].lower()  # type: ignore[attr-defined]
    return f"{name}-{rendered}-{outcome.value}"


@pytest.mark.parametrize("case", RULE_CASES, ids=[_case_id(case) for case in RULE_CASES])
def test_each_immutable_rule_is_the_servers(
    api: k8s.ApiClient, kube_api: KubeAPI, cutover_namespace: str, case: tuple[Any, ...]
) -> None:
    make, live_argument, rendered_argument, outcome = case
    name = f"rule-{secrets.token_hex(3)}"
    served = ServedResources(api)
    created = create(api, served, make(name, cutover_namespace, live_argument))
    body = make(name, cutover_namespace, rendered_argument)
    key = object_key(body)
    text = json.dumps(body)  # JSON is YAML: the file as a render would send it
    with LiveLookup(str(kube_api.kubeconfig)) as lookup:
        found = lookup.get(body["apiVersion"], key)
        assert found is not None
        plan = plan_cutover("demo", lookup.where(), [RenderedObject("app", "f.yaml", body)], {key: found})
    (entry,) = plan.entries
    assert entry.outcome is outcome, entry
    reply = apply_dry_run(api, served, RenderedFile("f.yaml", text, body))
    if outcome is Outcome.ADOPTED:
        assert reply.status == 200, reply.message()
        assert reply.body["metadata"]["uid"] == created["metadata"]["uid"]
    else:
        assert reply.status == 422, reply.message()
        assert entry.reason and entry.consequence


def test_the_reader_refuses_an_answer_over_its_bound_and_never_writes(
    api: k8s.ApiClient, kube_api: KubeAPI, cutover_namespace: str
) -> None:
    served = ServedResources(api)
    big = create(
        api,
        served,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "big", "namespace": cutover_namespace},
            "data": {"blob": "x" * 200_000},
        },
    )
    key = object_key(big)
    with LiveLookup(str(kube_api.kubeconfig), limits=LookupLimits(max_answer_bytes=64 * 1024)) as lookup:
        with pytest.raises(ClusterUnreachable) as raised:
            lookup.get("v1", key)
        assert raised.value.lines() == [
            f"cannot read ConfigMap {cutover_namespace}/big",
            f"  {lookup.where()}: the answer is over 65,536 bytes: refused",
        ]
        with pytest.raises(ClusterUnreachable):
            lookup.list("v1", "ConfigMap", cutover_namespace)
    with LiveLookup(str(kube_api.kubeconfig)) as lookup:
        found = lookup.get("v1", key)
        assert found is not None and found.body["metadata"]["uid"] == big["metadata"]["uid"]
        assert lookup.get("v1", key._replace(name="absent")) is None
        assert (
            lookup.get("example.com/v1", ObjectKey("example.com", "Nothing", cutover_namespace, "x")) is None
        )
    reread = request(api, "GET", f"/api/v1/namespaces/{cutover_namespace}/configmaps/big")
    assert reread.body["metadata"]["resourceVersion"] == big["metadata"]["resourceVersion"]
