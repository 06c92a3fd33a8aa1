"""The cutover plan's classification, pure: rendered objects against live ones, no cluster.

Each immutable-field rule is shown both ways (the change that forces a recreate, and the nearby
one the API server accepts in place); the live side carries what the API server adds (defaults,
generated labels), so "adopted" is judged as a server-side apply merges. The kube tests
(tests/kube/test_cutover_plan.py) hold the same rules against a real API server.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from btp_gitops.generator.core.errors import InputError
from btp_gitops.generator.core.objects import KubeObject, ObjectKey
from btp_gitops.generator.core.yamlio import dump_report
from btp_gitops.generator.migration import LiveObject
from btp_gitops.generator.migration.plan import (
    BTP_MANAGER,
    CAP_OPERATOR,
    LIFECYCLE_MANAGER,
    MAX_LIVE_OBJECT_BYTES,
    CutoverPlan,
    Outcome,
    RenderedObject,
    check_live,
    operator_of,
    plan_cutover,
)
from btp_gitops.generator.migration.plan_report import json_report, markdown_report, text_report
from tests.migration.plans import (
    APP,
    obj,
    only,
    plan,
)
from tests.support import keys

CAV_OWNER = {
    "apiVersion": "sme.sap.com/v1alpha1",
    "kind": "CAPApplicationVersion",
    "name": "bookshop-1",
    "uid": "5e64489b-0000-4000-8000-000000000001",
    "controller": True,
    "blockOwnerDeletion": True,
}


def deployment(selector: dict[str, str], image: str = "srv:1", **metadata: Any) -> KubeObject:
    return obj(
        "apps/v1",
        "Deployment",
        "bookshop-1-srv",
        metadata=metadata,
        spec={
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {"containers": [{"name": "srv", "image": image}]},
            },
        },
    )


# --- immutable fields, both ways -------------------------------------------------------------------

OPERATOR_SELECTOR = {
    "app": "bookshop",
    "sme.sap.com/category": "Workload",
    "sme.sap.com/workload-name": "bookshop-1-srv",
    "sme.sap.com/owner-generation": "1",
}


def with_defaults(body: KubeObject) -> KubeObject:
    """What the API server adds to a stored Deployment: defaults the render never writes."""
    stored = copy.deepcopy(body)
    stored["metadata"]["uid"] = "1b6d2c4e-0000-4000-8000-000000000002"
    stored["spec"]["replicas"] = 1
    stored["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] = "/dev/termination-log"
    stored["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    return stored


def test_a_deployment_with_the_same_selector_is_adopted_whatever_the_server_defaulted() -> None:
    rendered = deployment(OPERATOR_SELECTOR, team="a")
    live = with_defaults(deployment(OPERATOR_SELECTOR))
    entry = only(plan([rendered], [live]))
    assert entry.outcome is Outcome.ADOPTED
    assert entry.changes == ()


def test_a_selector_is_replaced_whole_so_a_smaller_one_is_a_change() -> None:
    # A LabelSelector is atomic in server-side apply: the render's two labels do not merge into
    # CAP Operator's five, they replace them, and a Deployment's selector is immutable.
    rendered = deployment({"sme.sap.com/workload-name": "bookshop-1-srv"})
    live = with_defaults(deployment(OPERATOR_SELECTOR))
    entry = only(plan([rendered], [live]))
    assert (entry.outcome, entry.changes) == (Outcome.RECREATED, ("spec.selector",))


def test_a_deployment_whose_selector_changes_is_recreated_with_the_outage_named() -> None:
    rendered = deployment({"sme.sap.com/workload-name": "bookshop-1-server"})
    live = with_defaults(deployment(OPERATOR_SELECTOR, ownerReferences=[CAV_OWNER]))
    entry = only(plan([rendered], [live]))
    assert entry.outcome is Outcome.RECREATED
    assert entry.changes == ("spec.selector",)
    assert "spec.selector would change" in entry.reason and "immutable" in entry.reason
    assert "pods are deleted" in entry.consequence
    assert entry.operator == CAP_OPERATOR


def test_an_adopted_deployment_names_the_fields_it_changes_and_the_rolling_update() -> None:
    rendered = deployment(OPERATOR_SELECTOR, image="srv:2")
    rendered["metadata"]["labels"] = {"team": "a"}
    live = with_defaults(deployment(OPERATOR_SELECTOR))
    entry = only(plan([rendered], [live]))
    assert (entry.outcome, entry.changes) == (Outcome.ADOPTED, ("metadata.labels", "spec.template"))
    assert "rolling update" in entry.consequence


def job(command: list[str], labels: dict[str, str] | None = None) -> KubeObject:
    return obj(
        "batch/v1",
        "Job",
        "bookshop-1-content",
        spec={
            "template": {
                "metadata": {"labels": labels or {"sme.sap.com/workload-name": "content"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "content", "image": "c:1", "command": command}],
                },
            }
        },
    )


def test_a_job_whose_template_changes_is_recreated_and_runs_again() -> None:
    live = job(["deploy"])
    entry = only(plan([job(["deploy", "--force"])], [live]))
    assert entry.outcome is Outcome.RECREATED
    assert entry.changes == ("spec.template",)
    assert "runs again" in entry.consequence


def test_a_job_the_server_labelled_and_defaulted_is_adopted() -> None:
    live = job(["deploy"], {"sme.sap.com/workload-name": "content", "batch.kubernetes.io/job-name": "x"})
    live["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}
    live["spec"]["backoffLimit"] = 6
    assert only(plan([job(["deploy"])], [live])).outcome is Outcome.ADOPTED


def service(cluster_ip: str | None) -> KubeObject:
    spec: dict[str, Any] = {"ports": [{"name": "http", "port": 80}], "type": "ClusterIP"}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    return obj("v1", "Service", "bookshop-1-srv-svc", spec=spec)


@pytest.mark.parametrize(
    ("rendered_ip", "outcome"),
    [
        ("None", Outcome.RECREATED),
        ("10.0.0.9", Outcome.RECREATED),
        (None, Outcome.ADOPTED),
        ("", Outcome.ADOPTED),
    ],
)
def test_a_service_cluster_ip_is_kept_or_the_service_recreated(
    rendered_ip: str | None, outcome: Outcome
) -> None:
    live = service("10.0.0.8")
    live["spec"]["clusterIPs"] = ["10.0.0.8"]
    entry = only(plan([service(rendered_ip)], [live]))
    assert entry.outcome is outcome
    if outcome is Outcome.RECREATED:
        assert entry.changes == ("spec.clusterIP",) and "new cluster IP" in entry.consequence


def claim(storage_class: str, size: str) -> KubeObject:
    return obj(
        "v1",
        "PersistentVolumeClaim",
        "cache",
        spec={
            "storageClassName": storage_class,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
        },
    )


@pytest.mark.parametrize(
    ("storage_class", "size", "changed"),
    [
        ("fast", "1Gi", None),
        ("fast", "2Gi", None),  # a claim can grow
        ("slow", "1Gi", "spec.storageClassName"),
        ("fast", "500Mi", "spec.resources.requests.storage"),
    ],
)
def test_a_volume_claim_keeps_its_class_and_never_shrinks(
    storage_class: str, size: str, changed: str | None
) -> None:
    entry = only(plan([claim(storage_class, size)], [claim("fast", "1Gi")]))
    if changed is None:
        assert entry.outcome is Outcome.ADOPTED
    else:
        assert (entry.outcome, entry.changes) == (Outcome.RECREATED, (changed,))
        assert "data is lost" in entry.consequence


def secret(immutable: bool | None, **values: Any) -> KubeObject:
    body = obj("v1", "Secret", "bookshop-ca", **values)
    if immutable is not None:
        body["immutable"] = immutable
    return body


def test_an_immutable_secret_with_other_data_is_recreated() -> None:
    live = secret(True, data={"ca.crt": "b2xk"})
    entry = only(plan([secret(True, stringData={"ca.crt": "new"})], [live]))
    assert (entry.outcome, entry.changes) == (Outcome.RECREATED, ("data",))
    assert "immutable: true" in entry.reason


def test_an_immutable_secret_with_the_same_data_is_adopted_also_as_string_data() -> None:
    live = secret(True, data={"ca.crt": "b2xk"})  # base64 of "old"
    assert only(plan([secret(True, stringData={"ca.crt": "old"})], [live])).outcome is Outcome.ADOPTED
    assert only(plan([secret(None, data={"ca.crt": "b2xk"})], [live])).outcome is Outcome.ADOPTED


def test_an_immutable_secret_cannot_become_mutable_but_a_mutable_one_changes_in_place() -> None:
    live = secret(True, data={"ca.crt": "b2xk"})
    entry = only(plan([secret(False, data={"ca.crt": "b2xk"})], [live]))
    assert (entry.outcome, entry.changes) == (Outcome.RECREATED, ("immutable",))
    changed = only(
        plan([secret(None, stringData={"ca.crt": "new"})], [secret(None, data={"ca.crt": "b2xk"})])
    )
    assert (changed.outcome, changed.changes) == (Outcome.ADOPTED, ("data",))


def test_an_immutable_config_map_keeps_its_data() -> None:
    live = obj("v1", "ConfigMap", "gate", immutable=True, data={"a": "1"})
    assert only(plan([obj("v1", "ConfigMap", "gate", data={"a": "1"})], [live])).outcome is Outcome.ADOPTED
    entry = only(plan([obj("v1", "ConfigMap", "gate", data={"a": "2"})], [live]))
    assert (entry.outcome, entry.changes) == (Outcome.RECREATED, ("data",))


def binding(role: str) -> KubeObject:
    return obj(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "reader",
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        subjects=[{"kind": "ServiceAccount", "name": "reader", "namespace": "shop"}],
    )


def test_a_binding_keeps_its_role() -> None:
    assert only(plan([binding("reader")], [binding("reader")])).outcome is Outcome.ADOPTED
    entry = only(plan([binding("writer")], [binding("reader")]))
    assert (entry.outcome, entry.changes) == (Outcome.RECREATED, ("roleRef",))


def crd(scope: str) -> KubeObject:
    return obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "widgets.example.com",
        namespace="",
        spec={"group": "example.com", "scope": scope, "names": {"kind": "Widget", "plural": "widgets"}},
    )


def test_a_definition_keeps_its_scope() -> None:
    assert only(plan([crd("Namespaced")], [crd("Namespaced")])).outcome is Outcome.ADOPTED
    entry = only(plan([crd("Cluster")], [crd("Namespaced")]))
    assert entry.outcome is Outcome.RECREATED and "every custom resource" in entry.consequence


def stateful_set(service_name: str) -> KubeObject:
    return obj(
        "apps/v1",
        "StatefulSet",
        "db",
        spec={"serviceName": service_name, "selector": {"matchLabels": {"a": "b"}}, "template": {}},
    )


def test_a_stateful_set_keeps_its_service_name() -> None:
    assert only(plan([stateful_set("db")], [stateful_set("db")])).outcome is Outcome.ADOPTED
    assert only(plan([stateful_set("db-headless")], [stateful_set("db")])).changes == ("spec.serviceName",)


# --- created, renamed, left behind ------------------------------------------------------------------


def dns_entry(name: str, dns_name: str, **metadata: Any) -> KubeObject:
    return obj(
        "dns.gardener.cloud/v1alpha1",
        "DNSEntry",
        name,
        metadata=metadata,
        spec={"dnsName": dns_name, "targets": ["ingress.example.com"]},
    )


def test_an_object_nothing_live_has_is_created() -> None:
    entry = only(plan([dns_entry("shop-1a2b", "*.shop.example.com")], []))
    assert (entry.outcome, entry.app) == (Outcome.CREATED, APP)


def test_a_generate_named_object_the_render_names_otherwise_is_recreated_and_the_old_one_left_behind() -> (
    None
):
    rendered = dns_entry("shop-1a2b", "*.shop.example.com")
    operators = dns_entry(
        "shop-x7k2p",
        "*.shop.example.com",
        generateName="shop-",
        labels={"sme.sap.com/owner-identifier-hash": "abc"},
        finalizers=["sme.sap.com/domain"],
    )
    result = plan([rendered], [], [operators])
    recreated, left = result.entries
    assert recreated.outcome is Outcome.RECREATED
    assert recreated.replaces == "DNSEntry shop/shop-x7k2p"
    assert (
        recreated.reason
        == "CAP Operator named it shop-x7k2p from generateName 'shop-'; the render names it shop-1a2b"
    )
    assert "provider may refuse" in recreated.consequence
    assert (left.outcome, left.subject, left.app) == (Outcome.LEFT_BEHIND, "DNSEntry shop/shop-x7k2p", APP)
    assert left.action.startswith("replaced by shop-1a2b: delete it once shop-1a2b is ready")
    assert "finalizer sme.sap.com/domain" in left.action


def test_two_operator_objects_with_one_role_pair_with_nothing() -> None:
    marker = {"labels": {"sme.sap.com/owner-identifier-hash": "abc"}}
    result = plan(
        [dns_entry("shop-1a2b", "*.shop.example.com")],
        [],
        [
            dns_entry("shop-a", "*.shop.example.com", **marker),
            dns_entry("shop-b", "*.shop.example.com", **marker),
        ],
    )
    assert [(e.outcome, e.subject) for e in result.entries] == [
        (Outcome.LEFT_BEHIND, "DNSEntry shop/shop-a"),
        (Outcome.LEFT_BEHIND, "DNSEntry shop/shop-b"),
        (Outcome.CREATED, "DNSEntry shop/shop-1a2b"),
    ]


def test_what_is_left_behind_says_whether_the_garbage_collector_removes_it() -> None:
    version = obj("sme.sap.com/v1alpha1", "CAPApplicationVersion", "bookshop-1", spec={"version": "1"})
    network_policy = obj(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "bookshop-1--in",
        metadata={"ownerReferences": [CAV_OWNER]},
        spec={"podSelector": {"matchLabels": {"x": "in"}}},
    )
    orphan_owner = {**CAV_OWNER, "kind": "CAPTenantOperation", "name": "acme-op"}
    tenant_job = obj(
        "batch/v1",
        "Job",
        "acme-provisioning-x7k2p",
        metadata={
            "ownerReferences": [orphan_owner],
            "labels": {"sme.sap.com/tenant-operation-type": "provisioning"},
        },
    )
    plain_job = obj("batch/v1", "Job", "old", metadata={"labels": {"sme.sap.com/category": "Workload"}})
    result = plan([version], [version], [network_policy, tenant_job, plain_job])
    actions = {e.subject: e.action for e in result.entries if e.outcome is Outcome.LEFT_BEHIND}
    assert "the garbage collector never removes it" in actions["NetworkPolicy shop/bookshop-1--in"]
    assert (
        "deletes it with its owner CAPTenantOperation acme-op" in actions["Job shop/acme-provisioning-x7k2p"]
    )
    assert "nothing runs it again" in actions["Job shop/old"]


def test_objects_without_an_operator_or_applied_by_a_gitops_tool_are_not_listed() -> None:
    unmarked = obj("v1", "ConfigMap", "user-data", data={"a": "1"})
    applied = obj(
        "v1",
        "ConfigMap",
        "from-git",
        metadata={
            "labels": {"sme.sap.com/category": "Workload"},
            "annotations": {"argocd.argoproj.io/tracking-id": "x"},
        },
    )
    assert plan([], [], [unmarked, applied]).entries == ()


@pytest.mark.parametrize(
    ("metadata", "operator"),
    [
        ({"labels": {"sme.sap.com/category": "Workload"}}, CAP_OPERATOR),
        ({"ownerReferences": [CAV_OWNER]}, CAP_OPERATOR),
        ({"labels": {"app.kubernetes.io/managed-by": "btp-manager"}}, BTP_MANAGER),
        ({"labels": {"operator.kyma-project.io/managed-by": "kyma"}}, LIFECYCLE_MANAGER),
        (
            {"ownerReferences": [{"apiVersion": "operator.kyma-project.io/v1beta2", "kind": "Manifest"}]},
            LIFECYCLE_MANAGER,
        ),
        ({"labels": {"app.kubernetes.io/managed-by": "helm"}}, ""),
        ({"labels": {"kustomize.toolkit.fluxcd.io/name": "x", "sme.sap.com/category": "Workload"}}, ""),
    ],
)
def test_each_operator_is_told_by_its_markers(metadata: dict[str, Any], operator: str) -> None:
    assert operator_of(obj("v1", "ConfigMap", "x", metadata=metadata)) == operator


# --- bad live objects ------------------------------------------------------------------------------


def test_a_live_object_without_metadata_is_refused_by_name() -> None:
    with pytest.raises(InputError) as raised:
        check_live(LiveObject({"apiVersion": "v1", "kind": "ConfigMap"}, "cluster (test)"))
    assert [p.render() for p in raised.value.problems] == [
        "cluster (test) (ConfigMap ): metadata: the object has no metadata"
    ]


def test_an_answer_that_is_no_object_is_refused() -> None:
    expected = ObjectKey("", "ConfigMap", "shop", "gate")
    with pytest.raises(InputError) as raised:
        check_live(LiveObject(["not", "an", "object"], "cluster (test)"), expected)  # type: ignore[arg-type]
    assert raised.value.lines() == [
        "the cluster answered with something that is not an object",
        "  cluster (test) (ConfigMap shop/gate): not an object",
    ]


def test_an_answer_for_another_object_is_refused() -> None:
    expected = ObjectKey("", "ConfigMap", "shop", "gate")
    with pytest.raises(InputError) as raised:
        check_live(LiveObject(obj("v1", "ConfigMap", "other"), "cluster (test)"), expected)
    assert "asked for ConfigMap shop/gate, the answer is ConfigMap shop/other" in raised.value.lines()[1]


def test_a_huge_live_object_is_refused_before_it_is_judged() -> None:
    huge = obj("v1", "ConfigMap", "gate", data={"blob": "x" * (MAX_LIVE_OBJECT_BYTES + 1)})
    with pytest.raises(InputError) as raised:
        plan([obj("v1", "ConfigMap", "gate", data={"blob": "y"})], [huge])
    assert "over the limit" in raised.value.lines()[1]
    with pytest.raises(InputError):
        plan([], [], [huge])  # listed objects too


# --- no value in any output; determinism -----------------------------------------------------------


def reports(result: CutoverPlan) -> dict[str, str]:
    return {
        "text": text_report(result),
        "markdown": markdown_report(result, 60_000),
        "json": json.dumps(json_report(result), sort_keys=True),
        "yaml": dump_report(json_report(result)),
    }


def test_no_secret_value_or_private_key_reaches_any_format() -> None:
    private_key = keys.pem_rsa()
    live_secret = secret(True, data={"tls.key": keys.b64(private_key), "password": keys.b64("hunter2-live")})
    rendered_secret = secret(True, stringData={"tls.key": private_key, "password": "hunter2-rendered"})
    left_secret = obj(
        "v1",
        "Secret",
        "bookshop-1-srv-gen",
        metadata={"labels": {"sme.sap.com/category": "Workload"}},
        data={"VCAP_SERVICES": keys.b64('{"xsuaa":[{"credentials":{"clientsecret":"s3cr3t-vcap"}}]}')},
    )
    result = plan([rendered_secret], [live_secret], [left_secret])
    assert [e.outcome for e in result.entries] == [Outcome.RECREATED, Outcome.LEFT_BEHIND]
    for output, text in reports(result).items():
        for value in (
            "hunter2",
            "s3cr3t-vcap",
            "PRIVATE KEY",
            keys.b64(private_key)[:40],
            keys.b64("hunter2-live"),
        ):
            assert value not in text, (output, value)


def test_the_plan_is_the_same_whatever_order_objects_come_in() -> None:
    rendered = [
        deployment(OPERATOR_SELECTOR),
        dns_entry("shop-1a2b", "*.shop.example.com"),
        service(None),
        job(["deploy"]),
        claim("fast", "1Gi"),
    ]
    live = [with_defaults(deployment(OPERATOR_SELECTOR)), service("10.0.0.8"), job(["other"])]
    owned = [
        dns_entry("shop-x7k2p", "*.shop.example.com", labels={"sme.sap.com/owner-identifier-hash": "a"}),
        obj("batch/v1", "Job", "old", metadata={"labels": {"sme.sap.com/category": "Workload"}}),
    ]
    first = reports(plan(rendered, live, owned))
    shuffler = random.Random(7)
    for _ in range(5):
        shuffler.shuffle(rendered)
        shuffler.shuffle(live)
        shuffler.shuffle(owned)
        assert reports(plan(rendered, live, [*owned, *owned])) == first
    summary = json_report(plan(rendered, live, owned))["summary"]
    assert summary == {"adopted": 2, "adoptedWithChanges": 0, "created": 1, "leftBehind": 2, "recreated": 2}


def test_the_text_report_counts_each_class_and_explains_each_recreate() -> None:
    result = plan(
        [dns_entry("shop-1a2b", "*.shop.example.com"), job(["new"])],
        [job(["old"])],
        [dns_entry("shop-x7k2p", "*.shop.example.com", labels={"sme.sap.com/owner-identifier-hash": "a"})],
    )
    assert text_report(result).splitlines() == [
        "btp-gitops diff: clusters/demo against cluster (test): 2 recreated, 1 left behind, 0 created, "
        "0 adopted (0 adopted with changes)",
        "",
        f"{APP}: 2 recreated, 1 left behind, 0 created, 0 adopted",
        "  ! DNSEntry shop/shop-1a2b (recreated, replaces DNSEntry shop/shop-x7k2p, made by CAP Operator)",
        "      why: CAP Operator named it shop-x7k2p; the render names it shop-1a2b",
        "      consequence: two entries for one DNS name until the old one is deleted: a provider may refuse one",
        "  ! Job shop/bookshop-1-content (recreated)",
        "      why: spec.template would change: a Job's selector and pod template are immutable",
        "      consequence: the Job runs again (new pods; the old run's pods and logs are deleted with it)",
        "  - DNSEntry shop/shop-x7k2p (left behind, made by CAP Operator)",
        "      to do: replaced by shop-1a2b: delete it once shop-1a2b is ready",
    ]


def test_markdown_stays_under_its_bound_and_says_what_it_left_out() -> None:
    rendered = [obj("v1", "ConfigMap", f"gate-{index:03}", data={"a": "1"}) for index in range(300)]
    text = markdown_report(plan(rendered, []), 2_000)
    assert len(text) <= 2_000
    assert "**0 recreated, 0 left behind, 300 created, 0 adopted" in text
    assert "Truncated to 2,000 characters" in text


def test_a_secret_a_rendered_certificate_or_external_secret_writes_is_taken_over_not_deleted() -> None:
    certificate = obj(
        "cert-manager.io/v1",
        "Certificate",
        "webhook-cert",
        namespace="kyma-system",
        spec={"secretName": "webhook-server-cert"},
    )
    external = obj(
        "external-secrets.io/v1",
        "ExternalSecret",
        "sap-btp-service-operator",
        namespace="kyma-system",
        spec={},
    )
    marker = {"labels": {"app.kubernetes.io/managed-by": "btp-manager"}}
    live_secrets = [
        obj("v1", "Secret", name, namespace="kyma-system", metadata=marker)
        for name in ("webhook-server-cert", "sap-btp-service-operator", "ca-server-cert")
    ]
    result = plan([certificate, external], [], live_secrets)
    actions = {e.subject: (e.operator, e.action) for e in result.entries if e.outcome is Outcome.LEFT_BEHIND}
    assert actions == {
        "Secret kyma-system/ca-server-cert": (
            BTP_MANAGER,
            "nothing rendered takes its place and nothing prunes it: delete it once the cutover is done",
        ),
        "Secret kyma-system/sap-btp-service-operator": (
            BTP_MANAGER,
            "the render's ExternalSecret sap-btp-service-operator writes a Secret of this name: delete this one "
            "when the ExternalSecret is applied, so that external-secrets creates it as its own",
        ),
        "Secret kyma-system/webhook-server-cert": (
            BTP_MANAGER,
            "the render's Certificate webhook-cert writes this Secret: the certificate is issued again into it "
            "(a new key); keep it until then",
        ),
    }


def test_what_is_left_behind_is_listed_under_its_owners_app_or_its_applications() -> None:
    version = obj("sme.sap.com/v1alpha1", "CAPApplicationVersion", "bookshop-1", spec={})
    labelled = {"labels": {"app": "bookshop"}}
    application_objects = [
        RenderedObject("cap.shop.bookshop", "a/v.yaml", version),
        RenderedObject("cap.shop.bookshop", "a/d.yaml", obj("apps/v1", "Deployment", "d", metadata=labelled)),
        RenderedObject("cap.shop.bookshop", "a/s.yaml", obj("v1", "Service", "s", metadata=labelled)),
        RenderedObject("cap-tenant.shop.acme", "t/j.yaml", obj("batch/v1", "Job", "j", metadata=labelled)),
        RenderedObject("cap-domain.shop.a", "d/n.yaml", obj("networking.k8s.io/v1", "NetworkPolicy", "n")),
    ]
    owned = [
        obj("v1", "Secret", "bookshop-1-srv-gen", metadata={"ownerReferences": [CAV_OWNER]}),
        obj(
            "v1",
            "Secret",
            "by-annotation",
            metadata={"annotations": {"sme.sap.com/owner-identifier": "shop.bookshop-1"}},
        ),
        obj(
            "batch/v1",
            "Job",
            "globex-tenant-job-x",
            metadata={"labels": {"app": "bookshop", "sme.sap.com/category": "W"}},
        ),
    ]
    result = plan_cutover("demo", "test", application_objects, {}, [LiveObject(o, "test") for o in owned])
    apps = {e.subject: e.app for e in result.entries if e.outcome is Outcome.LEFT_BEHIND}
    assert apps == {
        "Secret shop/bookshop-1-srv-gen": "cap.shop.bookshop",
        "Secret shop/by-annotation": "cap.shop.bookshop",
        "Job shop/globex-tenant-job-x": "cap.shop.bookshop",
    }


def test_an_object_of_a_kind_the_cluster_does_not_serve_says_so() -> None:
    widget = obj("example.com/v1", "Widget", "w")
    rendered = [RenderedObject(APP, "a/w.yaml", widget), RenderedObject(APP, "a/j.yaml", job(["x"]))]
    result = plan_cutover("demo", "test", rendered, {}, [], unserved={("example.com/v1", "Widget")})
    consequences = {e.subject: e.consequence for e in result.entries}
    assert consequences == {
        "Widget shop/w": "the cluster does not serve Widget in example.com/v1 yet: it can be applied once its "
        "CustomResourceDefinition is",
        "Job shop/bookshop-1-content": "the Job runs when it is applied",
    }


def test_list_items_keyed_by_a_map_are_compared_not_refused() -> None:
    # An Istio Gateway's servers carry `port` as a map: a merge key that is no hashable value.
    def gateway(protocol: str) -> KubeObject:
        server = {
            "hosts": ["./*.shop.example.com"],
            "port": {"name": "https", "number": 443, "protocol": protocol},
        }
        return obj("networking.istio.io/v1", "Gateway", "shop", spec={"servers": [server]})

    assert only(plan([gateway("HTTPS")], [gateway("HTTPS")])).outcome is Outcome.ADOPTED
    entry = only(plan([gateway("HTTP")], [gateway("HTTPS")]))
    assert (entry.outcome, entry.changes) == (Outcome.ADOPTED, ("spec.servers",))
