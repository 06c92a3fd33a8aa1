"""charts/btp-gitops rendered by the real helm v3 and v4 CLIs (`helm template`).

Covered: both Helm versions render the same objects for every value variant (tests/chart/helm.py),
and the minimal (defaults and a source repository) and all-features renders of each version are
reviewed YAML snapshots; which objects each variant renders; the processes' arguments, exactly the `btp-gitops controller` and
`btp-gitops subscription-server` flags (a renamed flag fails here) and accepted by the real
argument parser of the CLI; the Git credential wiring (SSH mount and GIT_SSH_COMMAND,
HTTPS env from secretKeyRef and git's env config) and that no Secret or credential is rendered;
security contexts, probes, emptyDirs and scheduling values; Services, ServiceMonitors and
Deployments selecting each other by labels and port names; the leader election Role; the Istio
Gateway and VirtualService routing the callback prefixes only; TLS on the subscription server.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from btp_gitops import __version__
from btp_gitops.generator.cli import build_parser
from tests.chart.helm import (
    ALL_ON,
    CHART,
    HELMS,
    MINIMAL,
    NAMESPACE,
    VARIANTS,
    container,
    find,
    merged,
    template,
)

pytestmark = pytest.mark.tools

# The flags of the two commands (issue #10): the chart may pass nothing else.
CONTROLLER_FLAGS = frozenset(
    {
        "--namespace",
        "--leader-elect",
        "--no-leader-elect",
        "--lease-name",
        "--probe-address",
        "--source-repo",
        "--source-branch",
        "--workdir",
        "--git-timeout",
        "--git-probe-interval",
        "--module-resources",
        "--prometheus-url",
        "--cleanup-interval",
        "--hard-delete-timeout",
        "--log-format",
        "--log-level",
    }
)
SUBSCRIPTION_SERVER_FLAGS = frozenset(
    {
        "--address",
        "--tls-cert",
        "--tls-key",
        "--source-repo",
        "--source-branch",
        "--workdir",
        "--git-timeout",
        "--git-probe-interval",
        "--callback-timeout-ms",
        "--max-body-bytes",
        "--body-timeout",
        "--idle-timeout",
        "--max-concurrent",
        "--max-queued",
        "--log-format",
        "--log-level",
    }
)
COMMAND_FLAGS = {"controller": CONTROLLER_FLAGS, "subscription-server": SUBSCRIPTION_SERVER_FLAGS}

CONTROLLER = "btp-gitops-controller"
SERVER = "btp-gitops-subscription-server"
SSH_COMMAND = (
    "ssh -i /etc/btp-gitops/git/ssh-privatekey -o IdentitiesOnly=yes "
    "-o UserKnownHostsFile=/etc/btp-gitops/git/known_hosts"
)
CREDENTIAL_HELPER = "!f() { echo username=$GIT_USERNAME; echo password=$GIT_PASSWORD; }; f"


def render(variant: str, helm: str = "helm3") -> list[dict[str, Any]]:
    return template(helm, VARIANTS[variant]).objects()


def inventory(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(obj["kind"], obj["metadata"]["name"]) for obj in objects}


def env_of(deployment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in container(deployment)["env"]}


# --------------------------------------------------------------------------
# Helm 3 and Helm 4


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_helm3_and_helm4_render_the_same_objects(variant: str) -> None:
    helm3, helm4 = (template(helm, VARIANTS[variant]).objects() for helm in HELMS)
    assert helm3 == helm4
    assert helm3, "nothing rendered"


@pytest.mark.parametrize("variant", ["minimal", "all-on"])
@pytest.mark.parametrize("helm", HELMS)
def test_render_snapshot(helm: str, variant: str, yaml_snapshot: Any) -> None:
    rendered = template(helm, VARIANTS[variant])
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stdout == yaml_snapshot


def test_the_render_is_deterministic() -> None:
    assert template("helm4", ALL_ON).stdout == template("helm4", ALL_ON).stdout


# --------------------------------------------------------------------------
# what is rendered

MINIMAL_INVENTORY = {
    ("ServiceAccount", CONTROLLER),
    ("Deployment", CONTROLLER),
    ("Service", CONTROLLER),
    ("ClusterRole", CONTROLLER),
    ("ClusterRoleBinding", CONTROLLER),
    ("Role", CONTROLLER),
    ("RoleBinding", CONTROLLER),
    ("ServiceAccount", SERVER),
    ("Deployment", SERVER),
    ("Service", SERVER),
    ("ClusterRole", SERVER),
    ("ClusterRoleBinding", SERVER),
}


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ("minimal", MINIMAL_INVENTORY),
        (
            "all-on",
            MINIMAL_INVENTORY
            | {
                ("ServiceMonitor", CONTROLLER),
                ("ServiceMonitor", SERVER),
                ("Gateway", SERVER),
                ("VirtualService", SERVER),
            },
        ),
        (
            "existing-gateway-one-replica",
            {(kind, name.replace("btp-gitops", "gitops")) for kind, name in MINIMAL_INVENTORY}
            | {("VirtualService", "gitops-subscription-server")},
        ),
        (
            "controller-only",
            {(kind, name) for kind, name in MINIMAL_INVENTORY if name == CONTROLLER}
            | {("ServiceMonitor", CONTROLLER)},
        ),
    ],
)
def test_objects_of_a_variant(variant: str, expected: set[tuple[str, str]]) -> None:
    objects = render(variant)
    assert inventory(objects) == expected
    assert len(objects) == len(expected), "an object is rendered twice"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_object_has_the_standard_labels_and_namespace(variant: str) -> None:
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding"}
    for obj in render(variant):
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == "btp-gitops"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/part-of"] == "btp-gitops"
        assert labels["app.kubernetes.io/version"] == __version__
        assert labels["helm.sh/chart"] == f"btp-gitops-{__version__}"
        assert labels["app.kubernetes.io/component"] in ("controller", "subscription-server")
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in obj["metadata"]
        else:
            assert obj["metadata"]["namespace"] == NAMESPACE


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert chart["appVersion"] == __version__
    assert "controller" in chart["description"]
    assert "later" not in chart["description"]


def test_image_tag_defaults_to_the_app_version() -> None:
    default = find(render("minimal"), "Deployment", CONTROLLER)
    pinned = find(render("existing-gateway-one-replica"), "Deployment", "gitops-controller")
    assert container(default)["image"] == f"ghcr.io/btp-gitops/btp-gitops:{__version__}"
    assert (container(default)["imagePullPolicy"], container(pinned)["imagePullPolicy"]) == (
        "IfNotPresent",
        "Always",
    )
    assert container(pinned)["image"] == "ghcr.io/btp-gitops/btp-gitops:0.1.0-rc.1"


# --------------------------------------------------------------------------
# the processes' arguments

ALL_ON_CONTROLLER_ARGS = [
    "controller",
    f"--namespace={NAMESPACE}",
    "--leader-elect",
    "--lease-name=btp-gitops-controller",
    "--probe-address=0.0.0.0:8081",
    "--source-repo=git@github.com:example/platform-sources.git",
    "--source-branch=production",
    "--workdir=/var/lib/btp-gitops/source",
    "--git-timeout=30",
    "--git-probe-interval=10",
    "--module-resources=/srv/module-resources",
    "--prometheus-url=http://prometheus-operated.monitoring.svc:9090",
    "--cleanup-interval=600",
    "--hard-delete-timeout=1200",
    "--log-format=json",
    "--log-level=info",
]
ALL_ON_SERVER_ARGS = [
    "subscription-server",
    "--address=0.0.0.0:8080",
    "--source-repo=git@github.com:example/platform-sources.git",
    "--source-branch=production",
    "--workdir=/var/lib/btp-gitops/source",
    "--git-timeout=30",
    "--git-probe-interval=10",
    "--callback-timeout-ms=900000",
    "--max-body-bytes=1048576",
    "--body-timeout=30",
    "--idle-timeout=15",
    "--max-concurrent=128",
    "--max-queued=1024",
    "--log-format=json",
    "--log-level=info",
]


def test_arguments_with_every_feature_on() -> None:
    objects = render("all-on")
    for name, expected in ((CONTROLLER, ALL_ON_CONTROLLER_ARGS), (SERVER, ALL_ON_SERVER_ARGS)):
        process = container(find(objects, "Deployment", name))
        assert process["command"] == ["btp-gitops"]
        assert process["args"] == expected


def test_arguments_of_the_other_branches() -> None:
    default = render("minimal")
    assert container(find(default, "Deployment", CONTROLLER))["args"] == [
        "controller",
        f"--namespace={NAMESPACE}",
        "--leader-elect",
        "--lease-name=btp-gitops-controller",
        "--probe-address=0.0.0.0:8081",
        "--source-repo=https://git.example.com/platform/sources.git",
        "--source-branch=main",
        "--workdir=/var/lib/btp-gitops/source",
        "--git-timeout=30",
        "--git-probe-interval=10",
        "--cleanup-interval=600",
        "--hard-delete-timeout=1200",
        "--log-format=json",
        "--log-level=info",
    ]
    one_replica = render("existing-gateway-one-replica")
    args = container(find(one_replica, "Deployment", "gitops-controller"))["args"]
    assert "--no-leader-elect" in args and "--leader-elect" not in args
    assert "--lease-name=gitops-controller" in args
    assert args[-2:] == ["--log-format=text", "--log-level=debug"]
    assert (
        "--lease-name=platform-lease"
        in container(find(render("controller-only"), "Deployment", CONTROLLER))["args"]
    )
    tls = container(find(render("git-https-server-tls"), "Deployment", SERVER))["args"]
    assert tls[:4] == [
        "subscription-server",
        "--address=0.0.0.0:8080",
        "--tls-cert=/etc/btp-gitops/tls/tls.crt",
        "--tls-key=/etc/btp-gitops/tls/tls.key",
    ]


def flags_of(args: list[str]) -> list[str]:
    return [arg.split("=", 1)[0] for arg in args[1:]]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_only_the_commands_flags_are_passed_each_once(variant: str) -> None:
    for obj in render(variant):
        if obj["kind"] != "Deployment":
            continue
        args = container(obj)["args"]
        command, flags = args[0], flags_of(args)
        assert all(arg.startswith("--") for arg in args[1:]), args
        unknown = sorted(set(flags) - COMMAND_FLAGS[command])
        assert not unknown, f"{command} has no flags {unknown}"
        assert len(flags) == len(set(flags)), f"a flag is repeated: {args}"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_cli_accepts_the_arguments(variant: str) -> None:
    """The chart's arguments go through the real `btp-gitops` argument parser: an unknown flag or a
    value it refuses (a log level it lacks, a malformed address) exits with status 2."""
    parser = build_parser()
    for obj in render(variant):
        if obj["kind"] != "Deployment":
            continue
        args = container(obj)["args"]
        try:
            parsed = parser.parse_args(args)
        except SystemExit as error:
            pytest.fail(f"btp-gitops refuses {args}: exit {error.code}")
        if args[0] == "controller":
            assert parsed.namespace == NAMESPACE
            assert parsed.probe_address == ("0.0.0.0", 8081)
        else:
            assert parsed.address == ("0.0.0.0", 8080)
        assert str(parsed.workdir) == "/var/lib/btp-gitops/source"


def test_git_and_http_limits_reach_both_processes_as_given() -> None:
    """Values off their defaults (fractional seconds, a queue of 0) arrive unchanged in the real
    argument parser: numbers are not reformatted (no `7.5` becoming `7` or `1.048576e+06`)."""
    parser = build_parser()
    objects = render("git-https-server-tls")
    server = parser.parse_args(container(find(objects, "Deployment", SERVER))["args"])
    controller = parser.parse_args(container(find(objects, "Deployment", CONTROLLER))["args"])
    for parsed in (server, controller):
        assert (parsed.git_timeout, parsed.git_probe_interval) == (7.5, 45.0)
    assert (
        server.max_body_bytes,
        server.body_timeout,
        server.idle_timeout,
        server.max_concurrent,
        server.max_queued,
    ) == (65536, 2.5, 120.0, 16, 0)


def test_the_defaults_of_the_values_are_the_defaults_of_the_cli() -> None:
    """The default render passes exactly what the CLI would assume without the flags, so an
    install with default values behaves as documented for the CLI."""
    parser = build_parser()
    objects = render("minimal")
    git = ("git_timeout", "git_probe_interval")
    http_limits = ("max_concurrent", "max_queued")
    compared = {
        CONTROLLER: ("controller", (*git, "cleanup_interval", "hard_delete_timeout")),
        SERVER: (
            "subscription-server",
            (*git, "callback_timeout_ms", "max_body_bytes", "body_timeout", "idle_timeout", *http_limits),
        ),
    }
    for name, (command, keys) in compared.items():
        rendered = vars(parser.parse_args(container(find(objects, "Deployment", name))["args"]))
        cli = vars(parser.parse_args([command]))
        for key in keys:
            assert rendered[key] == cli[key], f"{command}: {key} {rendered[key]!r} != {cli[key]!r}"


# --------------------------------------------------------------------------
# Git credentials: referenced, never rendered


def test_ssh_credentials_are_mounted_from_the_secret() -> None:
    objects = render("all-on")
    for name in (CONTROLLER, SERVER):
        deployment = find(objects, "Deployment", name)
        env = env_of(deployment)
        assert env["GIT_SSH_COMMAND"] == {"name": "GIT_SSH_COMMAND", "value": SSH_COMMAND}
        assert not {"GIT_USERNAME", "GIT_PASSWORD", "GIT_CONFIG_COUNT"} & env.keys()
        mounts = {mount["name"]: mount for mount in container(deployment)["volumeMounts"]}
        assert mounts["git-ssh"] == {"name": "git-ssh", "mountPath": "/etc/btp-gitops/git", "readOnly": True}
        volumes = {volume["name"]: volume for volume in deployment["spec"]["template"]["spec"]["volumes"]}
        assert volumes["git-ssh"]["secret"] == {
            "secretName": "btp-gitops-git",
            "defaultMode": 0o440,
            "items": [
                {"key": "ssh-privatekey", "path": "ssh-privatekey"},
                {"key": "known_hosts", "path": "known_hosts"},
            ],
        }


def test_https_credentials_come_from_the_secret_through_a_credential_helper() -> None:
    objects = render("git-https-server-tls")
    for name in (CONTROLLER, SERVER):
        deployment = find(objects, "Deployment", name)
        env = env_of(deployment)
        for variable, key in (("GIT_USERNAME", "username"), ("GIT_PASSWORD", "password")):
            assert env[variable] == {
                "name": variable,
                "valueFrom": {"secretKeyRef": {"name": "btp-gitops-git", "key": key}},
            }
        assert env["GIT_CONFIG_COUNT"]["value"] == "1"
        assert env["GIT_CONFIG_KEY_0"]["value"] == "credential.helper"
        assert env["GIT_CONFIG_VALUE_0"]["value"] == CREDENTIAL_HELPER
        assert "GIT_SSH_COMMAND" not in env
        assert "git-ssh" not in {
            volume["name"] for volume in deployment["spec"]["template"]["spec"]["volumes"]
        }


def test_without_git_auth_nothing_is_mounted_or_set() -> None:
    for name in (CONTROLLER, SERVER):
        deployment = find(render("minimal"), "Deployment", name)
        assert set(env_of(deployment)) == {"POD_NAMESPACE", "POD_NAME", "HOME"}
        assert [volume["name"] for volume in deployment["spec"]["template"]["spec"]["volumes"]] == [
            "workdir",
            "tmp",
        ]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_secret_and_no_inline_credential_is_rendered(variant: str) -> None:
    objects = render(variant)
    assert not [obj for obj in objects if obj["kind"] == "Secret"]
    text = yaml.safe_dump_all(objects)
    assert "PRIVATE KEY" not in text
    for obj in objects:
        if obj["kind"] == "Deployment":
            for entry in container(obj)["env"]:
                if entry["name"] in ("GIT_USERNAME", "GIT_PASSWORD"):
                    assert "value" not in entry


# --------------------------------------------------------------------------
# Pods


@pytest.mark.parametrize("name", [CONTROLLER, SERVER])
def test_pods_are_locked_down(name: str) -> None:
    deployment = find(render("minimal"), "Deployment", name)
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 2
    assert pod["serviceAccountName"] == name
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container(deployment)["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert volumes["workdir"] == {"name": "workdir", "emptyDir": {}}
    assert volumes["tmp"] == {"name": "tmp", "emptyDir": {}}
    mounts = {mount["mountPath"] for mount in container(deployment)["volumeMounts"]}
    assert {"/var/lib/btp-gitops", "/tmp"} <= mounts
    env = env_of(deployment)
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


@pytest.mark.parametrize(
    ("variant", "name", "port", "scheme"),
    [
        ("minimal", CONTROLLER, "metrics", None),
        ("minimal", SERVER, 8080, "HTTP"),
        ("git-https-server-tls", SERVER, 8080, "HTTPS"),
    ],
)
def test_probes(variant: str, name: str, port: str | int, scheme: str | None) -> None:
    process = container(find(render(variant), "Deployment", name))
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        expected = {"path": path, "port": port} | ({"scheme": scheme} if scheme else {})
        assert process[probe]["httpGet"] == expected


def test_scheduling_values_reach_the_controller_pods() -> None:
    deployment = find(render("all-on"), "Deployment", CONTROLLER)
    template_ = deployment["spec"]["template"]
    controller = ALL_ON["controller"]
    for key in ("nodeSelector", "tolerations", "affinity", "priorityClassName"):
        assert template_["spec"][key] == controller[key]
    assert template_["metadata"]["annotations"] == controller["podAnnotations"]
    assert template_["metadata"]["labels"]["example.com/tier"] == "control"
    assert template_["spec"]["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert container(deployment)["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"memory": "512Mi"},
    }
    account = find(render("all-on"), "ServiceAccount", CONTROLLER)
    assert account["metadata"]["annotations"] == {"example.com/owner": "platform"}


def test_pod_labels_cannot_override_the_selector_labels() -> None:
    values = {"controller": {"podLabels": {"app.kubernetes.io/component": "other", "team": "a"}}}
    deployment = find(template("helm3", merged(MINIMAL, values)).objects(), "Deployment", CONTROLLER)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == "controller"
    assert labels["team"] == "a"


# --------------------------------------------------------------------------
# Services, ServiceMonitors and Deployments fit together


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_services_select_their_pods_by_port_name(variant: str) -> None:
    objects = render(variant)
    deployments = [obj for obj in objects if obj["kind"] == "Deployment"]
    services = [obj for obj in objects if obj["kind"] == "Service"]
    assert services, f"the {variant} variant renders no Service"
    for service in services:
        selected = [
            deployment
            for deployment in deployments
            if _selects(service["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"])
        ]
        assert len(selected) == 1, (
            f"Service {service['metadata']['name']} selects {len(selected)} Deployments"
        )
        assert service["metadata"]["name"] == selected[0]["metadata"]["name"]
        ports = {port["name"] for port in container(selected[0])["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports
    for deployment in deployments:
        assert deployment["spec"]["selector"]["matchLabels"].items() <= (
            deployment["spec"]["template"]["metadata"]["labels"].items()
        )


@pytest.mark.parametrize("variant", ["all-on", "git-https-server-tls", "controller-only"])
def test_service_monitors_scrape_metrics_of_one_service_each(variant: str) -> None:
    objects = render(variant)
    services = [obj for obj in objects if obj["kind"] == "Service"]
    monitors = [obj for obj in objects if obj["kind"] == "ServiceMonitor"]
    assert len(monitors) == len(services)
    for monitor in monitors:
        selected = [
            service
            for service in services
            if _selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
        ]
        assert [service["metadata"]["name"] for service in selected] == [monitor["metadata"]["name"]]
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["path"] == "/metrics"
        assert endpoint["port"] in {port["name"] for port in selected[0]["spec"]["ports"]}
    if variant == "all-on":
        for monitor in monitors:
            assert monitor["metadata"]["labels"]["release"] == "prometheus"
            assert monitor["spec"]["endpoints"][0]["interval"] == "1m"


def test_service_ports() -> None:
    objects = render("minimal")
    assert find(objects, "Service", CONTROLLER)["spec"]["ports"] == [
        {"name": "metrics", "port": 8081, "targetPort": "metrics", "protocol": "TCP"}
    ]
    assert find(objects, "Service", SERVER)["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]
    assert container(find(objects, "Deployment", SERVER))["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP"}
    ]


def test_tls_on_the_subscription_server() -> None:
    objects = render("git-https-server-tls")
    deployment = find(objects, "Deployment", SERVER)
    volumes = {volume["name"]: volume for volume in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "subscription-server-tls"
    assert {"name": "tls", "mountPath": "/etc/btp-gitops/tls", "readOnly": True} in container(deployment)[
        "volumeMounts"
    ]
    assert find(objects, "Service", SERVER)["spec"]["ports"][0]["name"] == "https"
    endpoint = find(objects, "ServiceMonitor", SERVER)["spec"]["endpoints"][0]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {
        "serverName": f"{SERVER}.{NAMESPACE}.svc",
        "ca": {"secret": {"name": "subscription-server-tls", "key": "ca.crt"}},
    }


# --------------------------------------------------------------------------
# RBAC in the release namespace


def test_the_lease_role_names_the_lease() -> None:
    role = find(render("minimal"), "Role", CONTROLLER)
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["btp-gitops-controller"],
            "verbs": ["get", "update"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "create", "patch"]},
    ]
    binding = find(render("minimal"), "RoleBinding", CONTROLLER)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": NAMESPACE}]


def test_without_leader_election_no_lease_is_granted() -> None:
    role = find(render("existing-gateway-one-replica"), "Role", "gitops-controller")
    assert [rule["resources"] for rule in role["rules"]] == [["events"]]


# --------------------------------------------------------------------------
# Istio


def test_the_gateway_serves_https_for_the_hosts() -> None:
    gateway = find(render("all-on"), "Gateway", SERVER)
    assert gateway["apiVersion"] == "networking.istio.io/v1"
    assert gateway["spec"] == {
        "selector": {"istio": "ingressgateway"},
        "servers": [
            {
                "port": {"number": 443, "name": "https", "protocol": "HTTPS"},
                "tls": {"mode": "OPTIONAL_MUTUAL", "credentialName": "subscriptions-tls"},
                "hosts": [f"{NAMESPACE}/subscriptions.example.com"],
            }
        ],
    }


@pytest.mark.parametrize(
    ("variant", "name", "gateway", "hosts", "port"),
    [
        ("all-on", SERVER, f"{NAMESPACE}/{SERVER}", ["subscriptions.example.com"], 8080),
        (
            "existing-gateway-one-replica",
            "gitops-subscription-server",
            "istio-system/shared-gateway",
            ["subscriptions.example.com", "*.saas.example.com"],
            80,
        ),
    ],
)
def test_the_virtual_service_routes_the_callback_prefixes_only(
    variant: str, name: str, gateway: str, hosts: list[str], port: int
) -> None:
    objects = render(variant)
    service = find(objects, "Service", name)
    virtual_service = find(objects, "VirtualService", name)
    assert virtual_service["spec"]["hosts"] == hosts
    assert virtual_service["spec"]["gateways"] == [gateway]
    (route,) = virtual_service["spec"]["http"]
    assert route["match"] == [
        {"uri": {"prefix": "/provision/"}},
        {"uri": {"prefix": "/sms/provision/"}},
        {"uri": {"prefix": "/dependencies/"}},
    ]
    assert route["route"] == [
        {
            "destination": {
                "host": f"{name}.{NAMESPACE}.svc.cluster.local",
                "port": {"number": port},
            }
        }
    ]
    assert service["spec"]["ports"][0]["port"] == port
