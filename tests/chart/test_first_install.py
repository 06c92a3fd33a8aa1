"""A first `helm install` of charts/btp-gitops, with the real helm v3 and v4 CLIs.

Covered: the default values are refused by `helm lint`, `helm template` and `helm install` (against
the test kube-apiserver: no release and no object is left) with a message naming what to set
(`source.repo`, or `subscriptionServer.enabled=false`), because with them the subscription server
would crash-loop (it exits without a source repository); the same for the other values a process
cannot start with (a Prometheus URL without a repository, Git credentials that do not fit the
URL), by the schema and, with `--skip-schema-validation`, by the templates in sentences; both ways
out pass; the release workflow's `helm lint` lines pass; and the NOTES Helm prints after an install
name what was installed (release, namespace, components, the Deployments and Services of the
release's manifest), how to check it runs, and the callback URLs for the SaaS registry.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.chart.helm import (
    CHART,
    HELMS,
    MINIMAL,
    VARIANTS,
    helm,
    install,
    lint,
    notes,
    template,
)
from tests.conftest import ROOT
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.tools

README = (CHART / "README.md").read_text(encoding="utf-8")
SCHEMA_REFUSAL = "values don't meet the specifications of the schema"
# What the schema says of the default values: both ways out, by path.
DEFAULTS_REFUSED = (
    "- at '': 'anyOf' failed\n"
    "  - at '/source/repo': minLength: got 0, want 1\n"
    "  - at '/subscriptionServer/enabled': value must be false\n"
)
CONTROLLER_ONLY: dict[str, Any] = {"subscriptionServer": {"enabled": False}}
SSH_SOURCE = {"repo": "git@github.com:example/platform-sources.git"}
SSH_AUTH = {"auth": "ssh", "existingSecret": "btp-gitops-git"}
HTTPS_AUTH = {"auth": "https", "existingSecret": "btp-gitops-git"}


# --------------------------------------------------------------------------
# the defaults are refused, with what to set


@pytest.mark.parametrize("helm_cli", HELMS)
def test_helm_template_refuses_the_defaults(helm_cli: str) -> None:
    rendered = template(helm_cli)
    assert rendered.returncode != 0
    assert SCHEMA_REFUSAL in rendered.stderr
    assert DEFAULTS_REFUSED in rendered.stderr
    assert not rendered.stdout


@pytest.mark.parametrize("helm_cli", HELMS)
def test_helm_lint_refuses_the_defaults(helm_cli: str) -> None:
    linted = lint(helm_cli, {})
    assert linted.returncode != 0
    output = linted.stdout + linted.stderr
    assert "1 chart(s) failed" in output
    assert DEFAULTS_REFUSED in output


def test_the_readme_quotes_the_refusal_helm_prints() -> None:
    """The README's "What a first install must choose" shows the message as Helm prints it."""
    section = README.split("### What a first install must choose", 1)[1].split("\n## ", 1)[0]
    quoted = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert quoted is not None
    assert quoted[1] == DEFAULTS_REFUSED
    assert quoted[1] in template("helm4").stderr


@pytest.mark.parametrize("helm_cli", HELMS)
def test_without_the_schema_the_templates_refuse_the_defaults_in_a_sentence(helm_cli: str) -> None:
    rendered = template(helm_cli, extra=("--skip-schema-validation",))
    assert rendered.returncode != 0
    assert "source.repo: the subscription server (subscriptionServer.enabled, on by default) records" in (
        rendered.stderr
    )
    assert "Set source.repo to the repository the generator renders from" in rendered.stderr
    assert "or set subscriptionServer.enabled=false to install the controller alone" in rendered.stderr


# Values a process cannot start with, beyond the defaults: what the schema says, and the sentence
# of the templates (for --skip-schema-validation).
CANNOT_START = [
    pytest.param(
        {
            **CONTROLLER_ONLY,
            "controller": {"prometheusUrl": "http://prometheus-operated.monitoring.svc:9090"},
        },
        "- at '/source/repo': minLength: got 0, want 1\n"
        "    - at '/controller/prometheusUrl': maxLength: got 46, want 0\n",
        "controller.prometheusUrl: version cleanup commits to the source Git repository",
        id="prometheus-without-a-repository",
    ),
    pytest.param(
        {"source": SSH_SOURCE},
        "- at '/git/auth': value must be 'ssh'",
        "git.auth: source.repo git@github.com:example/platform-sources.git is an SSH URL",
        id="ssh-url-without-ssh-credentials",
    ),
    pytest.param(
        {"source": {"repo": "ssh://git@github.com/example/platform-sources.git"}, "git": HTTPS_AUTH},
        "- at '/git/auth': value must be 'ssh'",
        "git.auth: source.repo ssh://git@github.com/example/platform-sources.git is an SSH URL, and SSH "
        "needs a key and the server's host keys, which git.auth https does not give",
        id="ssh-url-with-https-credentials",
    ),
    pytest.param(
        {"source": {"repo": "https://github.com/example/platform-sources.git"}, "git": SSH_AUTH},
        "- at '/source/repo': 'https://github.com/example/platform-sources.git' does not match pattern",
        "git.auth: ssh credentials are used for SSH URLs only",
        id="https-url-with-ssh-credentials",
    ),
    pytest.param(
        {"source": {"repo": "file:///srv/git/platform-sources.git"}, "git": HTTPS_AUTH},
        "- at '/source/repo': 'file:///srv/git/platform-sources.git' does not match pattern '^$|^https?://'",
        "git.auth: https credentials are used for http(s) URLs only",
        id="file-url-with-https-credentials",
    ),
]


@pytest.mark.parametrize("helm_cli", HELMS)
@pytest.mark.parametrize(("values", "schema_says", "template_says"), CANNOT_START)
def test_values_a_process_cannot_start_with_are_refused(
    helm_cli: str, values: dict[str, Any], schema_says: str, template_says: str
) -> None:
    refused = template(helm_cli, values)
    assert refused.returncode != 0
    assert SCHEMA_REFUSAL in refused.stderr
    assert schema_says in refused.stderr
    linted = lint(helm_cli, values)
    assert linted.returncode != 0
    assert schema_says in linted.stdout + linted.stderr
    without_schema = template(helm_cli, values, extra=("--skip-schema-validation",))
    assert without_schema.returncode != 0
    assert template_says in without_schema.stderr


FIRST_INSTALLS = [
    pytest.param(MINIMAL, id="a-repository"),
    pytest.param(CONTROLLER_ONLY, id="the-controller-alone"),
    pytest.param({"source": SSH_SOURCE, "git": SSH_AUTH}, id="over-ssh"),
    pytest.param(
        {"source": {"repo": "https://github.com/example/platform-sources.git"}, "git": HTTPS_AUTH},
        id="over-https",
    ),
]


@pytest.mark.parametrize("helm_cli", HELMS)
@pytest.mark.parametrize("values", FIRST_INSTALLS)
def test_each_way_out_passes_lint_and_template(helm_cli: str, values: dict[str, Any]) -> None:
    linted = lint(helm_cli, values)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert template(helm_cli, values).returncode == 0


def release_workflow_lint_lines() -> list[list[str]]:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    return [line.split() for run in runs for line in run.splitlines() if line.strip().startswith("helm lint")]


@pytest.mark.parametrize("helm_cli", HELMS)
def test_the_release_workflow_lints_what_it_publishes(helm_cli: str) -> None:
    """The release job lints the chart before it pushes it: with the defaults refused, it lints
    the two ways a first install can go, and both pass."""
    lines = release_workflow_lint_lines()
    assert len(lines) == 2
    for line in lines:
        assert line[:3] == ["helm", "lint", "charts/btp-gitops"]
        linted = helm(helm_cli, "lint", ROOT / line[2], *line[3:])
        assert linted.returncode == 0, f"{' '.join(line)}:\n{linted.stdout}{linted.stderr}"


# --------------------------------------------------------------------------
# helm install against the API server: refused with nothing left, NOTES after a real install


def release_objects(api: k8s.ApiClient, namespace: str) -> list[str]:
    apps = k8s.AppsV1Api(api)
    core = k8s.CoreV1Api(api)
    return [
        *(f"Deployment {d.metadata.name}" for d in apps.list_namespaced_deployment(namespace).items),
        *(f"Service {s.metadata.name}" for s in core.list_namespaced_service(namespace).items),
        *(
            f"ServiceAccount {a.metadata.name}"
            for a in core.list_namespaced_service_account(namespace).items
            if a.metadata.name != "default"
        ),
    ]


@pytest.mark.kube
@pytest.mark.crds
@pytest.mark.parametrize("helm_cli", HELMS)
def test_helm_install_refuses_the_defaults_and_installs_nothing(
    chart_api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str, helm_cli: str
) -> None:
    installed = install(helm_cli, {}, f"first-{helm_cli}", kube_namespace, kube_api.kubeconfig)
    assert installed.returncode != 0
    assert "INSTALLATION FAILED" in installed.stderr
    assert DEFAULTS_REFUSED in installed.stderr
    releases = helm(
        helm_cli, "list", "--namespace", kube_namespace, "--short", kubeconfig=kube_api.kubeconfig
    )
    assert (releases.returncode, releases.stdout) == (0, "")
    assert release_objects(chart_api, kube_namespace) == []


def manifest_names(kubeconfig: Path, helm_cli: str, release: str, namespace: str) -> dict[str, set[str]]:
    manifest = helm(helm_cli, "get", "manifest", release, "--namespace", namespace, kubeconfig=kubeconfig)
    assert manifest.returncode == 0, manifest.stderr
    names: dict[str, set[str]] = {}
    for body in yaml.safe_load_all(manifest.stdout):
        if body:
            names.setdefault(body["kind"], set()).add(body["metadata"]["name"])
    return names


@pytest.mark.kube
@pytest.mark.crds
@pytest.mark.parametrize("helm_cli", HELMS)
def test_the_notes_of_a_real_install_say_what_was_installed_and_what_next(
    chart_api: k8s.ApiClient, kube_api: KubeAPI, kube_namespace: str, helm_cli: str
) -> None:
    release = f"notes-{helm_cli}"
    values = {"source": SSH_SOURCE, "git": SSH_AUTH}
    installed = install(helm_cli, values, release, kube_namespace, kube_api.kubeconfig)
    try:
        text = notes(installed)
        names = manifest_names(kube_api.kubeconfig, helm_cli, release, kube_namespace)
        controller, server = f"{release}-btp-gitops-controller", f"{release}-btp-gitops-subscription-server"
        assert names["Deployment"] == {controller, server}
        assert names["Service"] == {controller, server}

        assert text.startswith(
            f"btp-gitops 0.1.0 is installed as release {release} in namespace {kube_namespace}."
        )
        assert (
            f"- Controller: Deployment {controller}, 2 replica(s), one leading on the Lease {kube_namespace}/{controller}."
            in text
        )
        assert f"Service {controller}.{kube_namespace}.svc port 8081 (/healthz, /readyz, /metrics)" in text
        assert f"- Subscription server: Deployment {server}, 2 replica(s)," in text
        assert f"Service {server}.{kube_namespace}.svc port 8080 (http), recording tenants into" in text
        assert "git@github.com:example/platform-sources.git (branch main)" in text
        # every command names objects of this release
        rollouts = re.findall(rf"kubectl -n {kube_namespace} rollout status deployment/(\S+)", text)
        assert sorted(rollouts) == sorted(names["Deployment"])
        assert f"kubectl -n {kube_namespace} logs deployment/{controller}" in text
        assert f"get lease {controller} -o jsonpath" in text
        deployed = {
            d.metadata.name for d in k8s.AppsV1Api(chart_api).list_namespaced_deployment(kube_namespace).items
        }
        assert set(rollouts) <= deployed
        # what to configure in the SaaS registry, on the routes the server serves
        assert "onSubscription:        https://HOST/provision/tenants/{tenantId}" in text
        assert "getDependencies:       https://HOST/dependencies/<provider subaccount id>/" in text
        assert "callbackTimeoutMillis: 900000" in text
        assert "url:   https://HOST/sms/provision/tenants/{app_tid}" in text
        again = helm(
            helm_cli, "get", "notes", release, "--namespace", kube_namespace, kubeconfig=kube_api.kubeconfig
        )
        assert again.returncode == 0 and text.strip() in again.stdout
    finally:
        uninstalled = helm(
            helm_cli, "uninstall", release, "--namespace", kube_namespace, kubeconfig=kube_api.kubeconfig
        )
        assert uninstalled.returncode == 0, uninstalled.stderr


def dry_run_notes(kube_api: KubeAPI, namespace: str, values: dict[str, Any], helm_cli: str = "helm4") -> str:
    return notes(
        install(helm_cli, values, "btp-gitops", namespace, kube_api.kubeconfig, ("--dry-run=client",))
    )


@pytest.mark.kube
@pytest.mark.crds
@pytest.mark.usefixtures("chart_api")
def test_the_notes_of_the_controller_alone(kube_api: KubeAPI, kube_namespace: str) -> None:
    text = dry_run_notes(kube_api, kube_namespace, CONTROLLER_ONLY)
    assert "- Controller: Deployment btp-gitops-controller, 2 replica(s)" in text
    assert "the CAP Git reconcilers are off (no source.repo)" in text
    assert "- Subscription server: not installed (subscriptionServer.enabled=false)" in text
    assert "subscription-server" not in text
    assert "SaaS registry at it" not in text


@pytest.mark.kube
@pytest.mark.crds
@pytest.mark.usefixtures("chart_api")
def test_the_notes_with_istio_name_the_callback_host(kube_api: KubeAPI, kube_namespace: str) -> None:
    text = dry_run_notes(kube_api, kube_namespace, VARIANTS["all-on"], helm_cli="helm3")
    assert (
        "CAP tenant operations and status and version cleanup (Prometheus http://prometheus-operated" in text
    )
    assert "branch production" in text
    assert (
        "- Istio: VirtualService btp-gitops-subscription-server for subscriptions.example.com, through the Gateway"
        in text
    )
    assert (
        f"{kube_namespace}/btp-gitops-subscription-server (HTTPS with the Secret subscriptions-tls)" in text
    )
    assert "- ServiceMonitors: btp-gitops-controller, btp-gitops-subscription-server." in text
    assert "The callbacks reach the server at https://subscriptions.example.com." in text
    assert "onSubscription:        https://subscriptions.example.com/provision/tenants/{tenantId}" in text
    assert "HOST" not in text


@pytest.mark.kube
@pytest.mark.crds
@pytest.mark.usefixtures("chart_api")
def test_the_notes_of_the_other_branches(kube_api: KubeAPI, kube_namespace: str) -> None:
    one_replica = dry_run_notes(kube_api, kube_namespace, VARIANTS["existing-gateway-one-replica"])
    assert "- Controller: Deployment gitops-controller, 1 replica(s), without leader election." in one_replica
    assert "get lease" not in one_replica
    assert "through the Gateway istio-system/shared-gateway." in one_replica
    assert "Service gitops-subscription-server" in one_replica and "port 80 (http)" in one_replica
    tls = dry_run_notes(kube_api, kube_namespace, VARIANTS["git-https-server-tls"])
    assert "port 8080 (https)" in tls
    assert "expose\n  btp-gitops-subscription-server over HTTPS" in tls
