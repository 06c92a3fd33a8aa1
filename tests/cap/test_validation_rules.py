"""Table tests: every render-time rule of CAP applications, versions and domains.

Each case starts from a valid source (a multi-tenant application, or a services-only one), breaks
one rule, renders through the real pipeline (schema validation first, then the CAP rules), and
expects exactly one problem, at the field to fix, with the message users see. A last test breaks
several rules in several documents and expects every problem in one report.
Nothing is faked: YAML files in a temporary directory, the real render pipeline.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.generator.core.errors import SchemaViolation
from tests.cap.conftest import render_result, write_documents
from tests.cap.rule_cases import (
    Docs,
    Edit,
    add_workload,
    annotate,
    chain,
    content,
    custom_job,
    edit_definition,
    multi_tenant,
    newer_version_with,
    problems_of,
    services_only,
    set_spec,
    steps,
    workload,
)

CA = "CAPApplication shop/shop"
CAV = "CAPApplicationVersion shop/shop-1"
CAV2 = "CAPApplicationVersion shop/shop-2"
DOM = "Domain shop/shop"

# (base, edit, object, field path, message)
CASES: list[Any] = [
    # --- CAPApplication
    pytest.param(
        multi_tenant,
        set_spec("app", btpAppName="Shop App!"),
        CA,
        "spec.btpAppName",
        "is the `app` label of every workload: at most 63 characters of A-Z, a-z, 0-9, '-', '_' and '.', beginning and ending with a letter or digit",
        id="btpAppName-label-value",
    ),
    pytest.param(
        multi_tenant,
        lambda d: d["app"]["spec"].pop("providerSubaccountId"),
        CA,
        "spec.providerSubaccountId",
        "required (or the deprecated globalAccountId): with btpAppName it identifies the application",
        id="account-required",
    ),
    pytest.param(
        multi_tenant,
        annotate("app", "btp-gitops.io/credentials", "plain"),
        CA,
        "metadata.annotations.btp-gitops.io/credentials",
        "must be one of 'vcap', 'service-bindings'",
        id="credentials-mode",
    ),
    pytest.param(
        multi_tenant,
        lambda d: d["app"]["spec"]["btp"]["services"].append(
            {"class": "xsuaa", "name": "uaa", "secret": "other"}
        ),
        CA,
        "spec.btp.services[2].name",
        "duplicate service name 'uaa'",
        id="service-names-unique",
    ),
    pytest.param(
        multi_tenant,
        set_spec(
            "app",
            domains={
                "primary": "legacy.example.com",
                "istioIngressGatewayLabels": [{"name": "istio", "value": "ingressgateway"}],
            },
        ),
        CA,
        "spec.domains",
        "domainRefs is set too: the deprecated domains are ignored; drop them",
        id="domainRefs-and-domains",
    ),
    pytest.param(
        multi_tenant,
        set_spec("app", domainRefs=[{"kind": "Domain", "name": "shop"}, {"kind": "Domain", "name": "shop"}]),
        CA,
        "spec.domainRefs[1]",
        "Domain shop is listed twice",
        id="domainRefs-unique",
    ),
    pytest.param(
        multi_tenant,
        set_spec(
            "app",
            domainRefs=[{"kind": "Domain", "name": "shop"}, {"kind": "ClusterDomain", "name": "public"}],
        ),
        CA,
        "spec.domainRefs[1].name",
        "no ClusterDomain public in the sources",
        id="domainRef-exists",
    ),
    pytest.param(
        multi_tenant,
        lambda d: d["app"]["spec"].pop("domainRefs"),
        CA,
        "spec.domainRefs",
        "a multi-tenant application needs a domain to serve its tenants on",
        id="multi-tenant-needs-domain",
    ),
    # --- CAPApplicationVersion: names
    pytest.param(
        multi_tenant,
        set_spec("version", capApplicationInstance="other"),
        CAV,
        "spec.capApplicationInstance",
        "no CAPApplication other in namespace shop in the sources",
        id="version-application-exists",
    ),
    pytest.param(
        multi_tenant,
        set_spec("version", version="1.0.0+build.5"),
        CAV,
        "spec.version",
        "'1.0.0+build.5' is the sme.sap.com/cav-version label of every workload: at most 63 characters of A-Z, a-z, 0-9, '-', '_' and '.' (no '+build' part)",
        id="version-label-value",
    ),
    pytest.param(
        multi_tenant,
        add_workload({"name": "srv", "deploymentDefinition": {"type": "Additional", "image": "a"}}),
        CAV,
        "spec.workloads[4].name",
        "duplicate workload name 'srv'",
        id="workload-names-unique",
    ),
    pytest.param(
        multi_tenant,
        add_workload(
            {
                "name": "a-very-long-workload-name-for-a-content-deployer-jobs",
                "deploymentDefinition": {"type": "Additional", "image": "a"},
            }
        ),
        CAV,
        "spec.workloads[4].name",
        "the Service name 'shop-1-a-very-long-workload-name-for-a-content-deployer-jobs-svc' would have 64 characters, more than 63: shorten the version's or the workload's name",
        id="service-name-length",
    ),
    pytest.param(
        multi_tenant,
        add_workload(
            {
                "name": "both",
                "deploymentDefinition": {"type": "Additional", "image": "a"},
                "jobDefinition": {"type": "Content", "image": "b"},
            }
        ),
        CAV,
        "spec.workloads[4]",
        "needs exactly one of deploymentDefinition and jobDefinition",
        id="one-definition",
    ),
    # --- ports and destinations
    pytest.param(
        multi_tenant,
        edit_definition(
            "srv",
            ports=[
                {"name": "http", "port": 4004, "routerDestinationName": "srv-api"},
                {"name": "http", "port": 4005},
            ],
        ),
        CAV,
        "spec.workloads[0].deploymentDefinition.ports[1].name",
        "duplicate port name http",
        id="port-names-unique",
    ),
    pytest.param(
        multi_tenant,
        edit_definition(
            "srv",
            ports=[
                {"name": "http", "port": 4004, "routerDestinationName": "srv-api"},
                {"name": "admin", "port": 4004},
            ],
        ),
        CAV,
        "spec.workloads[0].deploymentDefinition.ports[1].port",
        "duplicate port port 4004",
        id="port-numbers-unique",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("srv", ports=[{"name": "http", "port": 4004}]),
        CAV,
        "spec.workloads[0].deploymentDefinition.ports",
        "a CAP workload with ports needs a routerDestinationName on one of them (the Router's destination to it)",
        id="cap-ports-need-destination",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("router", ports=[{"name": "http", "port": 5000, "routerDestinationName": "self"}]),
        CAV,
        "spec.workloads[1].deploymentDefinition.ports[0].routerDestinationName",
        "a Router is no destination of its own",
        id="router-no-destination",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("router", env=[{"name": "destinations", "value": "{not json"}]),
        CAV,
        "spec.workloads[1].deploymentDefinition.env[0].value",
        "the Router's destinations must be a JSON array of objects with a name (btp-gitops sets their URLs)",
        id="router-destinations-json",
    ),
    # --- application mode
    pytest.param(
        multi_tenant,
        add_workload({"name": "srv2", "deploymentDefinition": {"type": "CAP", "image": "srv:1"}}),
        CAV,
        "spec.workloads",
        "a multi-tenant application needs exactly one CAP workload, found 2",
        id="one-cap",
    ),
    pytest.param(
        multi_tenant,
        lambda d: d["version"]["spec"]["workloads"].pop(1),
        CAV,
        "spec.workloads",
        "a multi-tenant application needs exactly one Router workload, found 0",
        id="one-router",
    ),
    pytest.param(
        multi_tenant,
        lambda d: d["version"]["spec"]["workloads"].pop(2),
        CAV,
        "spec.workloads",
        "a multi-tenant application needs a TenantOperation job workload (it provisions tenants)",
        id="tenant-operation-required",
    ),
    pytest.param(
        services_only,
        newer_version_with(
            {
                "name": "worker",
                "deploymentDefinition": {
                    "type": "Additional",
                    "image": "w:1",
                    "ports": [{"name": "http", "port": 8080}],
                },
            }
        ),
        CAV2,
        "spec.workloads[2].deploymentDefinition.type",
        "Additional: only Service deployments run in a services-only application (its CAPApplication has no spec.provider, and its first version only Service deployments and Content jobs)",
        id="services-only-service-deployments",
    ),
    pytest.param(
        services_only,
        add_workload({"name": "worker", "deploymentDefinition": {"type": "Service", "image": "w:1"}}),
        CAV,
        "spec.workloads[2].deploymentDefinition.ports",
        "required for a Service workload in a services-only application (its CAPApplication has no spec.provider, and its first version only Service deployments and Content jobs)",
        id="services-only-ports-required",
    ),
    pytest.param(
        services_only,
        newer_version_with({"name": "tenant", "jobDefinition": {"type": "TenantOperation", "image": "t:1"}}),
        CAV2,
        "spec.workloads[2].jobDefinition.type",
        "TenantOperation: there are no tenants in a services-only application (its CAPApplication has no spec.provider, and its first version only Service deployments and Content jobs)",
        id="services-only-no-tenant-jobs",
    ),
    pytest.param(
        services_only,
        set_spec("version", tenantOperations={"upgrade": []}),
        CAV,
        "spec.tenantOperations",
        "there are no tenants in a services-only application (its CAPApplication has no spec.provider, and its first version only Service deployments and Content jobs)",
        id="services-only-no-tenant-operations",
    ),
    # --- content jobs
    pytest.param(
        multi_tenant,
        add_workload(content("portal")),
        CAV,
        "spec.contentJobs",
        "2 Content jobs (content, portal) need contentJobs to order them",
        id="content-jobs-order-required",
    ),
    pytest.param(
        multi_tenant,
        chain(add_workload(content("portal")), set_spec("version", contentJobs=["portal"])),
        CAV,
        "spec.contentJobs",
        "must list every Content job; missing: content",
        id="content-jobs-all-listed",
    ),
    pytest.param(
        multi_tenant,
        set_spec("version", contentJobs=["content", "srv"]),
        CAV,
        "spec.contentJobs[1]",
        "'srv' is no Content job workload",
        id="content-jobs-are-content",
    ),
    pytest.param(
        multi_tenant,
        set_spec("version", contentJobs=["content", "content"]),
        CAV,
        "spec.contentJobs[1]",
        "'content' is listed twice",
        id="content-jobs-once",
    ),
    pytest.param(
        multi_tenant,
        lambda d: (
            d["version"]["spec"]["workloads"].extend(content(f"c{i}") for i in range(90)),
            d["version"]["spec"].update(contentJobs=["content", *(f"c{i}" for i in range(90))]),
        ),
        CAV,
        "spec.contentJobs",
        "at most 90 Content jobs can run in order",
        id="content-jobs-limit",
    ),
    # --- service exposures
    pytest.param(
        services_only,
        lambda d: d["version"]["spec"]["serviceExposures"].append(
            {"subDomain": "api", "routes": [{"workloadName": "api", "port": 4004}]}
        ),
        CAV,
        "spec.serviceExposures[1].subDomain",
        "duplicate subDomain 'api'",
        id="exposure-subdomains-unique",
    ),
    pytest.param(
        services_only,
        lambda d: d["version"]["spec"]["serviceExposures"][0]["routes"].append(
            {"workloadName": "content", "port": 4004, "path": "/c"}
        ),
        CAV,
        "spec.serviceExposures[0].routes[1].workloadName",
        "'content' is no deployment workload",
        id="exposure-routes-to-deployments",
    ),
    pytest.param(
        services_only,
        lambda d: d["version"]["spec"]["serviceExposures"][0]["routes"].append(
            {"workloadName": "api", "port": 9000, "path": "/x"}
        ),
        CAV,
        "spec.serviceExposures[0].routes[1].port",
        "api has no port 9000 (its ports: 4004)",
        id="exposure-port-exists",
    ),
    pytest.param(
        services_only,
        lambda d: d["version"]["spec"]["serviceExposures"][0]["routes"].append(
            {"workloadName": "api", "port": 4004, "path": "/"}
        ),
        CAV,
        "spec.serviceExposures[0].routes[1].path",
        "duplicate path '/'",
        id="exposure-paths-unique",
    ),
    pytest.param(
        services_only,
        lambda d: d["app"]["spec"].pop("domainRefs"),
        CAV,
        "spec.serviceExposures",
        "CAPApplication shop has no domain to expose them on",
        id="exposures-need-domain",
    ),
    pytest.param(
        services_only,
        lambda d: d.update(
            app2={
                **copy.deepcopy(d["app"]),
                "metadata": {"name": "shop2", "namespace": "shop"},
                "spec": {**copy.deepcopy(d["app"]["spec"]), "btpAppName": "shop2"},
            },
            version2={
                **copy.deepcopy(d["version"]),
                "metadata": {"name": "shop2-1", "namespace": "shop"},
                "spec": {**copy.deepcopy(d["version"]["spec"]), "capApplicationInstance": "shop2"},
            },
        ),
        "CAPApplicationVersion shop/shop2-1",
        "spec.serviceExposures[0].subDomain",
        "api.shop.example.com is also exposed by CAPApplication shop/shop",
        id="exposures-unique-per-domain",
    ),
    # --- tenant operations
    pytest.param(
        multi_tenant,
        add_workload(custom_job()),
        CAV,
        "spec.tenantOperations",
        "required to sequence the CustomTenantOperation jobs notify",
        id="custom-needs-tenant-operations",
    ),
    pytest.param(
        multi_tenant,
        chain(add_workload(custom_job()), set_spec("version", tenantOperations={"upgrade": steps("tenant")})),
        CAV,
        "spec.tenantOperations",
        "runs no step of notify: list them",
        id="tenant-operations-cover-all",
    ),
    pytest.param(
        multi_tenant,
        set_spec("version", tenantOperations={"provisioning": steps("tenant", "srv")}),
        CAV,
        "spec.tenantOperations.provisioning[1].workloadName",
        "'srv' is no TenantOperation or CustomTenantOperation job",
        id="steps-are-tenant-jobs",
    ),
    pytest.param(
        multi_tenant,
        set_spec("version", tenantOperations={"upgrade": steps("tenant", custom_continue=True)}),
        CAV,
        "spec.tenantOperations.upgrade[0].continueOnFailure",
        "only a CustomTenantOperation step may continue on failure",
        id="continue-only-custom",
    ),
    pytest.param(
        multi_tenant,
        chain(
            add_workload(custom_job()),
            set_spec(
                "version", tenantOperations={"upgrade": steps("tenant"), "deprovisioning": steps("notify")}
            ),
        ),
        CAV,
        "spec.tenantOperations.deprovisioning",
        "needs a TenantOperation step (it migrates the tenant)",
        id="phase-needs-tenant-operation",
    ),
    # --- containers
    pytest.param(
        multi_tenant,
        edit_definition("srv", env=[{"name": "CAPOP_APP_VERSION", "value": "x"}]),
        CAV,
        "spec.workloads[0].deploymentDefinition.env[0].name",
        "CAPOP_APP_VERSION is reserved: btp-gitops sets it, as CAP Operator did",
        id="reserved-app-version",
    ),
    pytest.param(
        multi_tenant,
        edit_definition(
            "content",
            initContainers=[
                {"name": "init", "image": "i", "env": [{"name": "VCAP_SERVICES", "value": "{}"}]}
            ],
        ),
        CAV,
        "spec.workloads[3].jobDefinition.initContainers[0].env[0].name",
        "VCAP_SERVICES is reserved: btp-gitops sets it, as CAP Operator did",
        id="reserved-vcap-in-init-container",
    ),
    pytest.param(
        multi_tenant,
        chain(
            annotate("app", "btp-gitops.io/credentials", "service-bindings"),
            edit_definition("srv", env=[{"name": "SERVICE_BINDING_ROOT", "value": "/b"}]),
        ),
        CAV,
        "spec.workloads[0].deploymentDefinition.env[0].name",
        "SERVICE_BINDING_ROOT is reserved: btp-gitops sets it, as CAP Operator did",
        id="reserved-binding-root",
    ),
    pytest.param(
        multi_tenant,
        lambda d: workload(d, "srv")["consumedBTPServices"].append("db"),
        CAV,
        "spec.workloads[0].consumedBTPServices[1]",
        "'db' is no service of the CAPApplication's spec.btp.services",
        id="consumed-services-exist",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("srv", restartPolicy="Never"),
        CAV,
        "spec.workloads[0].deploymentDefinition.restartPolicy",
        "a Deployment's pods restart Always",
        id="deployment-restart-policy",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("content", restartPolicy="Always"),
        CAV,
        "spec.workloads[3].jobDefinition.restartPolicy",
        "a Job's pods restart Never or OnFailure",
        id="job-restart-policy",
    ),
    pytest.param(
        multi_tenant,
        add_workload(
            {
                "name": "worker",
                "deploymentDefinition": {
                    "type": "Additional",
                    "image": "w",
                    "stickiness": {"hash": {"useSourceIp": True}},
                },
            }
        ),
        CAV,
        "spec.workloads[4].deploymentDefinition.stickiness",
        "needs ports: the workload has no Service",
        id="stickiness-needs-service",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("srv", monitoring={"scrapeConfig": {"port": "metrics"}}),
        CAV,
        "spec.workloads[0].deploymentDefinition.monitoring.scrapeConfig.port",
        "'metrics' names no port of srv (its ports: server-svc-port)",
        id="scrape-port-exists",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("srv", stickiness={"hash": {"useSourceIp": True, "httpHeaderName": "x-user"}}),
        CAV,
        "spec.workloads[0].deploymentDefinition.stickiness.hash",
        "takes exactly one of its fields",
        id="stickiness-one-hash",
    ),
    pytest.param(
        multi_tenant,
        edit_definition("srv", horizontalPodAutoscaler={"minReplicas": 5, "maxReplicas": 2}),
        CAV,
        "spec.workloads[0].deploymentDefinition.horizontalPodAutoscaler.minReplicas",
        "is more than maxReplicas",
        id="autoscaler-bounds",
    ),
    pytest.param(
        multi_tenant,
        chain(
            annotate("app", "btp-gitops.io/credentials", "service-bindings"),
            edit_definition("srv", volumes=[{"name": "binding-uaa", "emptyDir": {}}]),
        ),
        CAV,
        "spec.workloads[0].deploymentDefinition.volumes[0].name",
        "'binding-uaa' is the volume of a service binding: rename it",
        id="binding-volume-names",
    ),
    pytest.param(
        multi_tenant,
        lambda d: d.update(
            second={
                **copy.deepcopy(d["version"]),
                "metadata": {"name": "shop-2", "namespace": "shop"},
                "spec": {**copy.deepcopy(d["version"]["spec"]), "version": "1.0"},
            }
        ),
        "CAPApplicationVersion shop/shop-2",
        "spec.version",
        "1.0 is also the version of CAPApplicationVersion shop/shop-1 (SOURCE: document 3)",
        id="versions-unique",
    ),
    # --- domains
    pytest.param(
        multi_tenant,
        set_spec("domain", dnsMode="Wildcard"),
        DOM,
        "spec.dnsTarget",
        "required for dnsMode Wildcard: CAP Operator read it from the ingress gateway's Service, which a render cannot",
        id="dns-target-required",
    ),
    pytest.param(
        multi_tenant,
        set_spec("domain", dnsMode="Custom", dnsTarget="lb.example.com"),
        DOM,
        "spec.dnsTemplates",
        "required for dnsMode Custom",
        id="custom-needs-templates",
    ),
    pytest.param(
        multi_tenant,
        set_spec("domain", dnsTemplates=[{"name": "*.{{.domain}}", "target": "{{.dnsTarget}}"}]),
        DOM,
        "spec.dnsTemplates",
        "only used with dnsMode Custom",
        id="templates-only-custom",
    ),
    pytest.param(
        multi_tenant,
        set_spec(
            "domain",
            dnsMode="Custom",
            dnsTarget="lb.example.com",
            dnsTemplates=[{"name": '{{ printf "%s" .subDomain }}.{{.domain}}', "target": "{{.dnsTarget}}"}],
        ),
        DOM,
        "spec.dnsTemplates[0].name",
        "Go template: function 'printf' is not supported "
        "(supported: join, list, lower, replace, trim, trimPrefix, trimSuffix, upper)",
        id="templates-functions-by-name",
    ),
    pytest.param(
        multi_tenant,
        set_spec(
            "domain",
            dnsMode="Custom",
            dnsTarget="lb.example.com",
            dnsTemplates=[{"name": "*.{{.domain}}", "target": "{{.subDomain}}.lb.example.com"}],
        ),
        DOM,
        "spec.dnsTemplates[0].target",
        "uses {{.subDomain}}, which only a name with {{.subDomain}} sets",
        id="subdomain-target-needs-subdomain-name",
    ),
    pytest.param(
        multi_tenant,
        annotate("domain", "btp-gitops.io/certificate-manager", "vault"),
        DOM,
        "metadata.annotations.btp-gitops.io/certificate-manager",
        "must be one of 'gardener', 'cert-manager'",
        id="certificate-manager-choice",
    ),
    pytest.param(
        multi_tenant,
        annotate("domain", "btp-gitops.io/dns-manager", "kubernets"),
        DOM,
        "metadata.annotations.btp-gitops.io/dns-manager",
        "must be one of 'gardener', 'kubernetes' (did you mean \"kubernetes\"?)",
        id="dns-manager-choice",
    ),
    pytest.param(
        multi_tenant,
        chain(
            annotate("domain", "btp-gitops.io/certificate-manager", "gardener"),
            set_spec("domain", certConfig={"certManager": {"issuerRef": {"name": "ca"}}}),
        ),
        DOM,
        "spec.certConfig.certManager",
        "configures cert-manager, but btp-gitops.io/certificate-manager chooses gardener",
        id="cert-manager-config-needs-cert-manager",
    ),
    pytest.param(
        multi_tenant,
        annotate("domain", "btp-gitops.io/ingress-namespace", "Istio_System"),
        DOM,
        "metadata.annotations.btp-gitops.io/ingress-namespace",
        "must be a namespace name",
        id="ingress-namespace",
    ),
    pytest.param(
        multi_tenant,
        lambda d: d.update(
            other={**copy.deepcopy(d["domain"]), "metadata": {"name": "other", "namespace": "shop"}}
        ),
        "Domain shop/other",
        "spec.domain",
        "shop.example.com is also the domain of Domain shop/shop (SOURCE: document 2)",
        id="domain-hosts-unique",
    ),
    pytest.param(
        multi_tenant,
        lambda d: (
            d["app"]["spec"].pop("domainRefs"),
            d["app"]["spec"].update(
                domains={
                    "primary": "shop.example.org",
                    "secondary": ["shared.example.org"],
                    "istioIngressGatewayLabels": [{"name": "istio", "value": "ingressgateway"}],
                }
            ),
            d.update(
                app2={
                    **copy.deepcopy(d["app"]),
                    "metadata": {"name": "shop2", "namespace": "shop"},
                    "spec": {
                        **copy.deepcopy(d["app"]["spec"]),
                        "btpAppName": "shop2",
                        # A provider subdomain of its own: shared.example.org serves one tenant per subdomain.
                        "provider": {**d["app"]["spec"]["provider"], "subDomain": "shop2-provider"},
                        "domains": {
                            "primary": "shop2.example.org",
                            "secondary": ["shared.example.org"],
                            "istioIngressGatewayLabels": [{"name": "app", "value": "gw"}],
                        },
                    },
                }
            ),
        ),
        "CAPApplication shop/shop2",
        "spec.domains.istioIngressGatewayLabels",
        "differ from those CAPApplication shop/shop gives the shared secondary domain shared.example.org",
        id="shared-secondary-same-ingress",
    ),
]


@pytest.mark.parametrize(("base", "edit", "object_ref", "field_path", "message"), CASES)
def test_rule(
    tmp_path: Path, base: Callable[[], Docs], edit: Edit, object_ref: str, field_path: str, message: str
) -> None:
    docs = base()
    assert problems_of(tmp_path / "valid", copy.deepcopy(docs)) == [], "the base sources must be valid"
    edit(docs)

    problems = problems_of(tmp_path / "broken", docs)

    source = str(tmp_path / "broken" / "source" / "sources.yaml")
    found = [(p.object_ref, p.field_path, p.message.replace(source, "SOURCE")) for p in problems]
    assert found == [(object_ref, field_path, message)]
    assert all(p.file == source and p.document for p in problems)


def test_every_broken_rule_of_every_document_is_reported_at_once(tmp_path: Path) -> None:
    docs = multi_tenant()
    docs["app"]["spec"]["btpAppName"] = "Shop App!"
    docs["version"]["spec"]["version"] = "1.0.0+build"
    docs["version"]["spec"]["workloads"][0]["consumedBTPServices"] = ["db"]
    docs["domain"]["spec"]["dnsMode"] = "Subdomain"

    problems = problems_of(tmp_path, docs)

    assert [(p.object_ref, p.field_path) for p in problems] == [
        (CA, "spec.btpAppName"),
        (DOM, "spec.dnsTarget"),
        (CAV, "spec.version"),
        (CAV, "spec.workloads[0].consumedBTPServices[0]"),
    ]


def test_schema_violations_come_before_the_rules(tmp_path: Path) -> None:
    """Shapes are the schema's job: a wrong type is reported with the file and field path."""
    docs = multi_tenant()
    docs["version"]["spec"]["workloads"][1]["deploymentDefinition"]["env"] = [{"name": "PORT", "value": 4000}]
    source = write_documents(tmp_path / "source", "sources.yaml", list(docs.values()))
    with pytest.raises(SchemaViolation) as raised:
        render_result(source)
    assert [(p.object_ref, p.field_path, p.message) for p in raised.value.problems] == [
        (CAV, "spec.workloads[1].deploymentDefinition.env[0].value", "must be of type string, got integer")
    ]
