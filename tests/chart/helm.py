"""Rendering charts/btp-gitops with the real helm CLIs (v3 and v4), for the chart's tests.

Helm runs with its config, data and cache homes in a throw-away directory, so a test never reads
or writes the user's Helm setup. Values are passed as a file, exactly as a user passes them.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT
from tests.support.tools import tool_path

CHART = ROOT / "charts" / "btp-gitops"
RELEASE = "btp-gitops"
NAMESPACE = "btp-gitops-system"
HELMS = ("helm3", "helm4")

# Every optional feature on: Git over SSH, a source repo, Prometheus, ServiceMonitors, Istio with
# a rendered Gateway, and every scheduling value of the controller.
ALL_ON: dict[str, Any] = {
    "imagePullSecrets": [{"name": "registry-credentials"}],
    "source": {"repo": "git@github.com:example/platform-sources.git", "branch": "production"},
    "git": {"auth": "ssh", "existingSecret": "btp-gitops-git"},
    "controller": {
        "moduleResources": "/srv/module-resources",
        "prometheusUrl": "http://prometheus-operated.monitoring.svc:9090",
        "priorityClassName": "system-cluster-critical",
        "podAnnotations": {"example.com/team": "platform"},
        "podLabels": {"example.com/tier": "control"},
        "serviceAccount": {"annotations": {"example.com/owner": "platform"}},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}
        ],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "controller"}},
                        },
                    }
                ]
            }
        },
    },
    "subscriptionServer": {
        "podAnnotations": {"sidecar.istio.io/inject": "true"},
        "istio": {
            "enabled": True,
            "hosts": ["subscriptions.example.com"],
            "gateway": {"credentialName": "subscriptions-tls", "tlsMode": "OPTIONAL_MUTUAL"},
        },
    },
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "1m", "labels": {"release": "prometheus"}}},
}

_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Render:
    """One `helm template` run: its exit code, output and error text."""

    returncode: int
    stdout: str
    stderr: str

    def documents(self) -> list[tuple[str, dict[str, Any]]]:
        """Each rendered document as Helm wrote it, with the object it holds."""
        assert self.returncode == 0, f"helm template failed:\n{self.stderr}"
        found = []
        for text in _SEPARATOR.split(self.stdout):
            body = yaml.safe_load(text)
            if body is None:
                continue
            assert isinstance(body, dict) and "kind" in body, f"not an object:\n{text}"
            found.append((text.strip("\n") + "\n", body))
        return found

    def objects(self) -> list[dict[str, Any]]:
        return [body for _, body in self.documents()]


def helm(name: str, *args: str | Path, kubeconfig: Path | None = None) -> Render:
    """Run a helm CLI with isolated homes, against `kubeconfig`'s cluster or none."""
    with tempfile.TemporaryDirectory(prefix="helm-home-") as home:
        env = {key: value for key, value in os.environ.items() if not key.startswith("HELM_")}
        env.update(
            HELM_CONFIG_HOME=f"{home}/config",
            HELM_DATA_HOME=f"{home}/data",
            HELM_CACHE_HOME=f"{home}/cache",
            KUBECONFIG=str(kubeconfig or Path(home) / "no-cluster"),
        )
        result = subprocess.run(
            [str(tool_path(name)), *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
    return Render(result.returncode, result.stdout, result.stderr)


def template(
    name: str,
    values: dict[str, Any] | None = None,
    namespace: str = NAMESPACE,
    release: str = RELEASE,
    extra: tuple[str, ...] = (),
) -> Render:
    """`helm template <release> charts/btp-gitops -n <namespace> [-f values.yaml]`."""
    with tempfile.TemporaryDirectory(prefix="chart-values-") as directory:
        args: list[str | Path] = ["template", release, CHART, "--namespace", namespace]
        if values is not None:
            values_file = Path(directory) / "values.yaml"
            values_file.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
            args += ["--values", values_file]
        return helm(name, *args, *extra)


def lint(name: str, values: dict[str, Any]) -> Render:
    with tempfile.TemporaryDirectory(prefix="chart-values-") as directory:
        values_file = Path(directory) / "values.yaml"
        values_file.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
        return helm(name, "lint", CHART, "--values", values_file)


def install(
    name: str,
    values: dict[str, Any],
    release: str,
    namespace: str,
    kubeconfig: Path | None = None,
    extra: tuple[str, ...] = (),
) -> Render:
    """`helm install <release> charts/btp-gitops -n <namespace> -f values.yaml`, into the cluster
    of `kubeconfig` (none: `extra` must hold `--dry-run=client`)."""
    with tempfile.TemporaryDirectory(prefix="chart-values-") as directory:
        values_file = Path(directory) / "values.yaml"
        values_file.write_text(yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
        args = ["install", release, CHART, "--namespace", namespace, "--values", values_file, *extra]
        return helm(name, *args, kubeconfig=kubeconfig)


def notes(installed: Render) -> str:
    """The NOTES Helm printed after an install (the text after its `NOTES:` line)."""
    assert installed.returncode == 0, f"helm install failed:\n{installed.stderr}"
    _, marker, text = installed.stdout.partition("\nNOTES:\n")
    assert marker, f"no NOTES in:\n{installed.stdout}"
    return text


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` deep-merged over `base` (maps merge, everything else replaces), as Helm merges values."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"] == name]
    assert len(matches) == 1, f"{len(matches)} {kind} named {name}"
    return matches[0]


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


# Value sets whose renders the tests compare across Helm versions and dry-run in the API server;
# together they take every branch of the templates.
MINIMAL: dict[str, Any] = {"source": {"repo": "https://git.example.com/platform/sources.git"}}

VARIANTS: dict[str, dict[str, Any]] = {
    # the defaults and the one value a first install with the subscription server must set
    # (the defaults alone are refused: tests/chart/test_first_install.py)
    "minimal": MINIMAL,
    "all-on": ALL_ON,
    # also every tunable of the Git network operations and the HTTP stack off its default,
    # fractional seconds included
    "git-https-server-tls": {
        "source": {
            "repo": "https://git.example.com/platform/sources.git",
            "gitTimeout": 7.5,
            "gitProbeInterval": 45,
        },
        "git": {"auth": "https", "existingSecret": "btp-gitops-git"},
        "subscriptionServer": {
            "tls": {"existingSecret": "subscription-server-tls"},
            "limits": {
                "maxBodyBytes": 65536,
                "bodyTimeout": 2.5,
                "idleTimeout": 120,
                "maxConcurrent": 16,
                "maxQueued": 0,
            },
        },
        "metrics": {"serviceMonitor": {"enabled": True}},
    },
    "existing-gateway-one-replica": {
        "fullnameOverride": "gitops",
        "source": {"repo": "file:///srv/git/platform-sources.git", "branch": "release"},
        "image": {"tag": "0.1.0-rc.1", "pullPolicy": "Always"},
        "log": {"format": "text", "level": "debug"},
        "controller": {"replicas": 1, "leaderElection": {"enabled": False}},
        "subscriptionServer": {
            "service": {"port": 80},
            "istio": {
                "enabled": True,
                "hosts": ["subscriptions.example.com", "*.saas.example.com"],
                "gateway": {"existing": "istio-system/shared-gateway"},
            },
        },
    },
    "controller-only": {
        "controller": {"leaderElection": {"leaseName": "platform-lease"}},
        "subscriptionServer": {"enabled": False, "istio": {"enabled": True}},
        "metrics": {"serviceMonitor": {"enabled": True}},
    },
}
