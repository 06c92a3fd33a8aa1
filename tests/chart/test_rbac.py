"""The chart's RBAC, asked of the real API server's RBAC authorizer (SubjectAccessReviews).

The all-features render's ServiceAccounts, ClusterRoles, Roles and their bindings are applied for
real (a unique release name, so the cluster-scoped roles of other tests are not touched) and the
authorizer is asked, as each ServiceAccount, whether it may do what its process does and whether
it may do chosen things it must not. Covered: the controller's cluster-wide rules (issue #10), its
leader election Lease (by name) and Events in the release namespace; the subscription server's
rules; and that the controller may get, list and delete every kind of the BTP operator module:
every apiVersion/kind in module-resources/apply/ and delete/to-delete.yml, read straight from
the files with the resource name the API server's discovery gives, and every kind the controller
itself derives from them or adds for the render (its `load_module_resources` and
`RENDER_ADDED_KINDS`). A module that starts shipping a new kind fails here until the chart has a
rule for it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from btp_gitops.controller.btp_operator.module_resources import RENDER_ADDED_KINDS, load_module_resources
from tests.chart.helm import ALL_ON, template
from tests.conftest import ROOT
from tests.support.dry_run import RenderedObject, ServedResources, create_namespace, object_path, request

pytestmark = [pytest.mark.kube, pytest.mark.tools, pytest.mark.crds]

MODULE_RESOURCES = ROOT / "module-resources"
RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
APPLY_QUERY = [("fieldManager", "btp-gitops-chart-test"), ("force", "true")]
ANY_NAMESPACE = "team-a"  # cluster-wide rules hold in every namespace
MODULE_NAMESPACE = "kyma-system"
ALL = ""  # a request across all namespaces, as a cluster-wide list or watch is


@dataclass(frozen=True)
class Release:
    namespace: str
    controller: str  # the controller's ServiceAccount (and role) name
    server: str
    lease: str


@dataclass(frozen=True)
class Ask:
    """One request: verb on group/resource[/subresource], in a namespace ('' = all or cluster), by name."""

    verb: str
    group: str
    resource: str
    namespace: str = ALL
    subresource: str = ""
    name: str = ""

    def __str__(self) -> str:
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" named {self.name}" if self.name else ""
        return f"{self.verb} {self.group or 'core'}/{resource}{where}{named}"


def asks(verbs: str, group: str, resources: str, namespace: str = ALL, subresource: str = "") -> list[Ask]:
    return [
        Ask(verb, group, resource, namespace, subresource)
        for resource in resources.split()
        for verb in verbs.split()
    ]


def allowed(api: k8s.ApiClient, account: str, namespace: str, ask: Ask) -> bool:
    attributes = k8s.V1ResourceAttributes(
        verb=ask.verb,
        group=ask.group,
        resource=ask.resource,
        subresource=ask.subresource or None,
        namespace=ask.namespace or None,
        name=ask.name or None,
    )
    review = k8s.V1SubjectAccessReview(
        spec=k8s.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{namespace}:{account}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"],
            resource_attributes=attributes,
        )
    )
    answer = k8s.AuthorizationV1Api(api).create_subject_access_review(review)
    assert answer.status is not None, f"no answer to {ask}"
    return bool(answer.status.allowed)


def apply(api: k8s.ApiClient, served: ServedResources, obj: RenderedObject) -> None:
    resource = served.lookup(obj.api_version, obj.kind)
    assert resource is not None
    reply = request(
        api,
        "PATCH",
        object_path(obj, resource),
        query=APPLY_QUERY,
        body=obj.text,
        content_type="application/apply-patch+yaml",
    )
    assert reply.status in (200, 201), f"{obj.describe()}: {reply.message()}"


@pytest.fixture(scope="module")
def release(chart_api: k8s.ApiClient) -> Iterator[Release]:
    name = f"rbac-{secrets.token_hex(3)}"
    namespace = f"chart-{name}"
    create_namespace(chart_api, namespace)
    documents = template("helm4", ALL_ON, namespace=namespace, release=name).documents()
    objects = [
        RenderedObject(body["kind"], text, body) for text, body in documents if body["kind"] in RBAC_KINDS
    ]
    served = ServedResources(chart_api)
    for obj in objects:
        apply(chart_api, served, obj)
    fullname = f"{name}-btp-gitops"
    result = Release(
        namespace, f"{fullname}-controller", f"{fullname}-subscription-server", f"{fullname}-controller"
    )
    # The RBAC authorizer reads roles through informers: wait until the new bindings count.
    deadline = time.monotonic() + 30
    probe = Ask("create", "batch", "jobs", ANY_NAMESPACE)
    while not allowed(chart_api, result.controller, namespace, probe):
        assert time.monotonic() < deadline, "the controller's ClusterRoleBinding never took effect"
        time.sleep(0.2)
    try:
        yield result
    finally:
        rbac = k8s.RbacAuthorizationV1Api(chart_api)
        for obj in objects:
            try:
                if obj.kind == "ClusterRole":
                    rbac.delete_cluster_role(obj.name)
                elif obj.kind == "ClusterRoleBinding":
                    rbac.delete_cluster_role_binding(obj.name)
            except ApiException as error:
                if error.status != 404:
                    raise
        k8s.CoreV1Api(chart_api).delete_namespace(namespace)


def refusals(api: k8s.ApiClient, release: Release, account: str, wanted: list[Ask]) -> list[str]:
    return [str(ask) for ask in wanted if not allowed(api, account, release.namespace, ask)]


def grants(api: k8s.ApiClient, release: Release, account: str, unwanted: list[Ask]) -> list[str]:
    return [str(ask) for ask in unwanted if allowed(api, account, release.namespace, ask)]


# --------------------------------------------------------------------------
# the controller


def controller_needs(release: Release) -> list[Ask]:
    return [
        *asks("get list watch update patch", "operator.kyma-project.io", "btpoperators"),
        *asks("get update patch", "operator.kyma-project.io", "btpoperators", MODULE_NAMESPACE, "status"),
        *asks(
            "get list watch delete patch update", "services.cloud.sap.com", "serviceinstances servicebindings"
        ),
        *asks(
            "get list watch update patch", "sme.sap.com", "capapplications capapplicationversions captenants"
        ),
        *asks("delete", "sme.sap.com", "captenants", ANY_NAMESPACE),
        *asks("get list delete", "sme.sap.com", "captenantoutputs", ANY_NAMESPACE),
        *[
            ask
            for resource in ("capapplications", "capapplicationversions", "captenants")
            for ask in asks("get update patch", "sme.sap.com", resource, ANY_NAMESPACE, "status")
        ],
        *asks("get list watch create delete", "batch", "jobs"),
        *asks("get list watch create update patch delete", "", "configmaps"),
        *asks("get list watch delete", "", "secrets"),
        *asks("get create patch", "", "events", ANY_NAMESPACE),
        *asks("get list watch", "", "namespaces"),
        *asks("get list watch delete", "apps", "deployments"),
        *asks(
            "get list delete",
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations validatingwebhookconfigurations",
        ),
        Ask("create", "coordination.k8s.io", "leases", release.namespace),
        Ask("get", "coordination.k8s.io", "leases", release.namespace, name=release.lease),
        Ask("update", "coordination.k8s.io", "leases", release.namespace, name=release.lease),
        *asks("get create patch", "", "events", release.namespace),
    ]


def controller_must_not(release: Release) -> list[Ask]:
    return [
        *asks("create update patch", "", "secrets", ANY_NAMESPACE),
        *asks("create update patch", "apps", "deployments", ANY_NAMESPACE),
        *asks("update patch", "batch", "jobs", ANY_NAMESPACE),
        *asks("create", "services.cloud.sap.com", "serviceinstances servicebindings", ANY_NAMESPACE),
        *asks("create delete", "operator.kyma-project.io", "btpoperators", MODULE_NAMESPACE),
        *asks("create delete", "sme.sap.com", "capapplications capapplicationversions", ANY_NAMESPACE),
        *asks("create", "sme.sap.com", "captenants", ANY_NAMESPACE),
        *asks("create update patch", "sme.sap.com", "captenantoutputs", ANY_NAMESPACE),
        *asks("create delete", "", "namespaces"),
        *asks("get list", "", "pods"),
        *asks("create", "", "pods", ANY_NAMESPACE, "exec"),
        *asks("create update escalate bind", "rbac.authorization.k8s.io", "clusterroles clusterrolebindings"),
        *asks("create update patch", "apiextensions.k8s.io", "customresourcedefinitions"),
        *asks("delete", "", "events", ANY_NAMESPACE),
        # The Lease: only its own, only in the release namespace.
        Ask("get", "coordination.k8s.io", "leases", release.namespace, name="someone-elses-lease"),
        Ask("update", "coordination.k8s.io", "leases", release.namespace, name="someone-elses-lease"),
        Ask("delete", "coordination.k8s.io", "leases", release.namespace, name=release.lease),
        Ask("create", "coordination.k8s.io", "leases", ANY_NAMESPACE),
        Ask("update", "coordination.k8s.io", "leases", "kube-system", name=release.lease),
    ]


def test_the_controller_may_do_what_it_does(chart_api: k8s.ApiClient, release: Release) -> None:
    missing = refusals(chart_api, release, release.controller, controller_needs(release))
    assert not missing, "the controller may not:\n" + "\n".join(missing)


def test_the_controller_may_do_nothing_else_asked(chart_api: k8s.ApiClient, release: Release) -> None:
    extra = grants(chart_api, release, release.controller, controller_must_not(release))
    assert not extra, "the controller may, but should not:\n" + "\n".join(extra)


# --------------------------------------------------------------------------
# the module's kinds


def module_kinds_in_the_files() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every document of apply/ (each file named as its template, `.yaml`
    or `.yml`) and delete/to-delete.yml."""
    apply_files = sorted(p for p in (MODULE_RESOURCES / "apply").iterdir() if p.suffix in (".yaml", ".yml"))
    assert len(apply_files) >= 8, f"the apply/ files of {MODULE_RESOURCES} are missing"
    files = [
        *apply_files,
        MODULE_RESOURCES / "delete" / "to-delete.yml",
    ]
    found = set()
    for path in files:
        for body in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if body is not None:
                found.add((str(body["apiVersion"]), str(body["kind"])))
    assert found, f"no objects under {MODULE_RESOURCES}"
    return sorted(found)


def module_asks(group: str, plural: str, namespaced: bool) -> list[Ask]:
    # Deprovisioning lists each kind across the cluster; a namespaced object is deleted in its namespace.
    return [
        Ask("get", group, plural, MODULE_NAMESPACE if namespaced else ALL),
        Ask("list", group, plural, ALL),
        Ask("delete", group, plural, MODULE_NAMESPACE if namespaced else ALL),
    ]


def test_every_kind_of_module_resources_may_be_removed(chart_api: k8s.ApiClient, release: Release) -> None:
    served = ServedResources(chart_api)
    wanted: list[Ask] = []
    for api_version, kind in module_kinds_in_the_files():
        resource = served.lookup(api_version, kind)
        assert resource is not None, (
            f"module-resources holds {kind} ({api_version}), which the test API server does not serve: "
            "install the CRDs of its family in tests/chart/conftest.py"
        )
        wanted += module_asks(api_version.rpartition("/")[0], resource.plural, resource.namespaced)
    missing = refusals(chart_api, release, release.controller, wanted)
    assert not missing, "module-resources kinds the ClusterRole does not cover:\n" + "\n".join(missing)


def test_every_kind_the_controller_removes_for_the_module_may_be_removed(
    chart_api: k8s.ApiClient, release: Release
) -> None:
    module = load_module_resources(Path(MODULE_RESOURCES))
    kinds = {*module.kinds, *RENDER_ADDED_KINDS}
    wanted = [
        ask
        for kind in sorted(kinds, key=str)
        for ask in module_asks(kind.group, kind.plural, kind.namespaced)
    ]
    missing = refusals(chart_api, release, release.controller, wanted)
    assert not missing, "kinds the controller deletes that the ClusterRole does not cover:\n" + "\n".join(
        missing
    )


# --------------------------------------------------------------------------
# the subscription server


def test_the_subscription_server_may_do_what_it_does(chart_api: k8s.ApiClient, release: Release) -> None:
    wanted = [
        *asks("get list create update patch", "", "secrets", ANY_NAMESPACE),
        *asks("get list create update patch delete", "", "configmaps", ANY_NAMESPACE),
        *asks("get list", "sme.sap.com", "capapplications", ANY_NAMESPACE),
    ]
    missing = refusals(chart_api, release, release.server, wanted)
    assert not missing, "the subscription server may not:\n" + "\n".join(missing)


def test_the_subscription_server_may_do_nothing_else_asked(
    chart_api: k8s.ApiClient, release: Release
) -> None:
    unwanted = [
        *asks("delete watch", "", "secrets", ANY_NAMESPACE),
        *asks("create update patch delete watch", "sme.sap.com", "capapplications", ANY_NAMESPACE),
        *asks("get list", "sme.sap.com", "captenants capapplicationversions", ANY_NAMESPACE),
        *asks("create delete", "batch", "jobs", ANY_NAMESPACE),
        *asks("get create update", "coordination.k8s.io", "leases", release.namespace),
        *asks("create", "", "events", ANY_NAMESPACE),
        *asks("get list", "", "namespaces pods"),
        *asks("delete", "services.cloud.sap.com", "serviceinstances servicebindings", ANY_NAMESPACE),
    ]
    extra = grants(chart_api, release, release.server, unwanted)
    assert not extra, "the subscription server may, but should not:\n" + "\n".join(extra)
