"""The values of charts/btp-gitops: what the schema refuses, what the templates refuse, the docs.

Covered: values.schema.json is strict (additionalProperties false at the top and in every object
of the chart's own, a description on every property); the defaults and the other values a
process cannot start with are tests/chart/test_first_install.py's; the real helm v3
and v4 CLIs refuse unknown keys and wrong types (`helm template` and `helm lint`) with a message
naming the value's path, and refuse combinations the templates check (Git auth without a Secret,
Istio without hosts or a TLS credential, server TLS behind Istio, several replicas without leader
election); every key of values.yaml is a row of the chart README's values table, and every row a
key of values.yaml.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.chart.helm import CHART, HELMS, MINIMAL, lint, merged, template

SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
README = (CHART / "README.md").read_text(encoding="utf-8")


def documented_keys(values: dict[str, Any], schema: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Dotted paths of values.yaml down to the chart's own objects; Kubernetes objects passed
    through as a whole (resources, affinity, security contexts, maps) are one key each."""
    for key, value in values.items():
        path = f"{prefix}{key}"
        node = schema["properties"][key]
        if isinstance(value, dict) and "properties" in node:
            yield from documented_keys(value, node, f"{path}.")
        else:
            yield path


def schema_objects(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object node of the schema that declares properties (the chart's own objects)."""
    if "properties" in schema:
        yield path or "(top)", schema
        for key, node in schema["properties"].items():
            yield from schema_objects(node, f"{path}.{key}" if path else key)


def readme_table_keys() -> list[str]:
    section = README.split("## Values", 1)[1]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


# --------------------------------------------------------------------------
# the schema itself


def test_every_object_of_the_schema_is_closed_and_described() -> None:
    objects = dict(schema_objects(SCHEMA))
    assert {"(top)", "image", "git", "controller", "subscriptionServer", "metrics"} <= objects.keys()
    for path, node in objects.items():
        assert node.get("additionalProperties") is False, f"{path} accepts unknown keys"
        for key, child in node["properties"].items():
            assert child.get("description"), f"{path}.{key} has no description"


def test_the_schema_describes_exactly_the_keys_of_values_yaml() -> None:
    def keys(values: dict[str, Any], schema: dict[str, Any], prefix: str = "") -> Iterator[str]:
        for key, node in schema["properties"].items():
            yield f"{prefix}{key}"
            if "properties" in node:
                yield from keys(values.get(key) or {}, node, f"{prefix}{key}.")

    def value_keys(values: dict[str, Any], schema: dict[str, Any], prefix: str = "") -> Iterator[str]:
        for key, value in values.items():
            yield f"{prefix}{key}"
            node = schema["properties"].get(key, {})
            if isinstance(value, dict) and "properties" in node:
                yield from value_keys(value, node, f"{prefix}{key}.")

    assert sorted(value_keys(VALUES, SCHEMA)) == sorted(keys(VALUES, SCHEMA))


# --------------------------------------------------------------------------
# helm refuses what the schema refuses

REFUSED_BY_SCHEMA = [
    pytest.param({"replicas": 2}, "additional properties 'replicas' not allowed", id="unknown-top-level-key"),
    pytest.param(
        {"controller": {"replica": 3}},
        "at '/controller': additional properties 'replica'",
        id="misspelled-key",
    ),
    pytest.param(
        {"subscriptionServer": {"istio": {"gateway": {"selectr": {"istio": "x"}}}}},
        "at '/subscriptionServer/istio/gateway': additional properties 'selectr'",
        id="unknown-nested-key",
    ),
    pytest.param(
        {"controller": {"replicas": "two"}}, "at '/controller/replicas'", id="string-for-an-integer"
    ),
    pytest.param(
        {"controller": {"cleanupInterval": 1.5}},
        "at '/controller/cleanupInterval'",
        id="float-for-an-integer",
    ),
    pytest.param(
        {"subscriptionServer": {"enabled": "yes"}},
        "at '/subscriptionServer/enabled'",
        id="string-for-a-boolean",
    ),
    pytest.param({"git": {"auth": "token"}}, "at '/git/auth'", id="unknown-git-auth"),
    pytest.param({"log": {"level": "trace"}}, "at '/log/level'", id="log-level-the-cli-lacks"),
    pytest.param({"git": {"auth": "ssh"}}, "at '/git/existingSecret'", id="ssh-without-a-secret"),
    pytest.param(
        {"source": {"repo": "github.com/example/sources"}}, "at '/source/repo'", id="repo-not-a-url"
    ),
    pytest.param(
        {"subscriptionServer": {"istio": {"gateway": {"existing": "shared-gateway"}}}},
        "at '/subscriptionServer/istio/gateway/existing'",
        id="gateway-without-namespace",
    ),
    pytest.param(
        {"metrics": {"serviceMonitor": {"interval": "30 seconds"}}},
        "at '/metrics/serviceMonitor/interval'",
        id="interval-not-a-duration",
    ),
    pytest.param(
        {"controller": {"nodeSelector": {"zone": 1}}},
        "at '/controller/nodeSelector/zone'",
        id="label-not-a-string",
    ),
    pytest.param(
        {"imagePullSecrets": ["registry"]}, "at '/imagePullSecrets/0'", id="pull-secret-not-an-object"
    ),
    pytest.param({"source": {"gitTimeout": 0}}, "at '/source/gitTimeout'", id="git-timeout-zero"),
    pytest.param(
        {"source": {"gitProbeInterval": "10s"}},
        "at '/source/gitProbeInterval'",
        id="probe-interval-a-duration",
    ),
    pytest.param(
        {"subscriptionServer": {"limits": {"maxBodyBytes": 0}}},
        "at '/subscriptionServer/limits/maxBodyBytes'",
        id="body-limit-zero",
    ),
    pytest.param(
        {"subscriptionServer": {"limits": {"maxBodyBytes": "1Mi"}}},
        "at '/subscriptionServer/limits/maxBodyBytes'",
        id="body-limit-a-quantity",
    ),
    pytest.param(
        {"subscriptionServer": {"limits": {"bodyTimeout": -1}}},
        "at '/subscriptionServer/limits/bodyTimeout'",
        id="body-timeout-negative",
    ),
    pytest.param(
        {"subscriptionServer": {"limits": {"idleTimeout": 0}}},
        "at '/subscriptionServer/limits/idleTimeout'",
        id="idle-timeout-zero",
    ),
    pytest.param(
        {"subscriptionServer": {"limits": {"maxConcurrent": 1.5}}},
        "at '/subscriptionServer/limits/maxConcurrent'",
        id="concurrency-fractional",
    ),
    pytest.param(
        {"subscriptionServer": {"limits": {"maxQueued": -1}}},
        "at '/subscriptionServer/limits/maxQueued'",
        id="queue-negative",
    ),
    pytest.param(
        {"subscriptionServer": {"limits": {"maxBody": 10}}},
        "at '/subscriptionServer/limits': additional properties 'maxBody'",
        id="unknown-limit",
    ),
    pytest.param(
        {"controller": {"moduleResources": "module-resources"}},
        "at '/controller/moduleResources'",
        id="module-resources-not-absolute",
    ),
]


@pytest.mark.tools
@pytest.mark.parametrize("helm", HELMS)
@pytest.mark.parametrize(("values", "message"), REFUSED_BY_SCHEMA)
def test_helm_template_refuses_values_the_schema_refuses(
    helm: str, values: dict[str, Any], message: str
) -> None:
    rendered = template(helm, merged(MINIMAL, values))
    assert rendered.returncode != 0
    assert "values don't meet the specifications of the schema" in rendered.stderr
    assert message in rendered.stderr


@pytest.mark.tools
@pytest.mark.parametrize("helm", HELMS)
def test_helm_lint_refuses_an_unknown_key(helm: str) -> None:
    result = lint(helm, {"controller": {"replica": 3}})
    assert result.returncode != 0
    assert "additional properties 'replica' not allowed" in result.stdout + result.stderr


REFUSED_BY_TEMPLATES = [
    pytest.param(
        {"subscriptionServer": {"istio": {"enabled": True, "gateway": {"credentialName": "tls"}}}},
        "subscriptionServer.istio.hosts: name at least one host",
        id="istio-without-hosts",
    ),
    pytest.param(
        {"subscriptionServer": {"istio": {"enabled": True, "hosts": ["subscriptions.example.com"]}}},
        "subscriptionServer.istio.gateway.credentialName: the rendered Gateway serves HTTPS",
        id="gateway-without-credential",
    ),
    pytest.param(
        {
            "subscriptionServer": {
                "tls": {"existingSecret": "server-tls"},
                "istio": {
                    "enabled": True,
                    "hosts": ["subscriptions.example.com"],
                    "gateway": {"existing": "istio-system/shared"},
                },
            }
        },
        "subscriptionServer.tls.existingSecret and subscriptionServer.istio.enabled exclude each other",
        id="server-tls-behind-istio",
    ),
    pytest.param(
        {"controller": {"leaderElection": {"enabled": False}}},
        "controller.replicas: without leader election",
        id="two-replicas-without-leader-election",
    ),
]


@pytest.mark.tools
@pytest.mark.parametrize("helm", HELMS)
@pytest.mark.parametrize(("values", "message"), REFUSED_BY_TEMPLATES)
def test_helm_template_refuses_combinations(helm: str, values: dict[str, Any], message: str) -> None:
    rendered = template(helm, merged(MINIMAL, values))  # past the schema's check of source.repo
    assert rendered.returncode != 0
    assert message in rendered.stderr


@pytest.mark.tools
@pytest.mark.parametrize("helm", HELMS)
def test_git_auth_without_a_secret_is_refused_even_without_the_schema(helm: str) -> None:
    """The template checks it too, for `--skip-schema-validation`."""
    with_schema_skipped = template(helm, {"git": {"auth": "https"}}, extra=("--skip-schema-validation",))
    assert with_schema_skipped.returncode != 0
    assert "git.existingSecret: git.auth is https" in with_schema_skipped.stderr


# --------------------------------------------------------------------------
# the README documents every value


def test_every_value_is_a_row_of_the_readme_table() -> None:
    rows = readme_table_keys()
    keys = list(documented_keys(VALUES, SCHEMA))
    assert not sorted(set(keys) - set(rows)), "values.yaml keys missing from the README table"
    assert not sorted(set(rows) - set(keys)), "README rows that are no key of values.yaml"
    assert len(rows) == len(set(rows)), "a README row is repeated"
    assert rows == keys, "the README table is not in the order of values.yaml"


def test_the_readme_documents_both_git_secret_formats() -> None:
    section = README.split("## Git credentials", 1)[1].split("\n## ", 1)[0]
    for key in ("ssh-privatekey", "known_hosts", "username", "password", "git.existingSecret"):
        assert f"`{key}`" in section
