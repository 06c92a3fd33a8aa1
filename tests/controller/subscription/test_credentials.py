"""Reading XSUAA / SaaS registry / subscription manager credentials from binding Secrets in the real
API server, in each shape a binding Secret has (`.metadata` service-binding format with text, json
and container properties; a `credentials` JSON key; flat keys), the choice of the primary XSUAA,
callback timeouts from appUrls, dependencies, and errors that name the Secret and field but never a
value. Nothing is faked.
"""

from __future__ import annotations

import json

import pytest

from btp_gitops.controller.clients.credentials import (
    CredentialReader,
    CredentialsUnavailable,
    ServiceNotBound,
    saas_callback_timeout,
    sms_callback_timeout,
)
from btp_gitops.controller.clients.targets import AppTarget, ServiceRef
from btp_gitops.controller.kube import SECRET, KubeClient
from tests.controller.subscription.conftest import SecretWatch, string_secret

pytestmark = pytest.mark.kube


def app_with(namespace: str, *services: ServiceRef, annotations: dict[str, str] | None = None) -> AppTarget:
    return AppTarget(namespace, "shop", "shop", "sub", "hash", services, annotations or {})


def test_metadata_format_with_text_json_and_renamed_properties(kube: KubeClient, kube_namespace: str) -> None:
    metadata = {
        "credentialProperties": [
            {"name": "xsappname", "format": "text"},
            {"name": "uaadomain", "sourceName": "domain", "format": "text"},
            {"name": "clientid", "format": "text"},
            {"name": "extra", "format": "json"},
            {"name": "absent", "format": "text"},
        ],
        "metaDataProperties": [{"name": "plan", "format": "text"}],
    }
    data = {
        ".metadata": json.dumps(metadata),
        "xsappname": "shop!t1",
        "domain": "uaa.example.com",
        "clientid": "sb-shop!t1",
        "extra": '{"a": [1]}',
        "plan": "broker",
    }
    kube.create(SECRET, string_secret("uaa", kube_namespace, data), kube_namespace)
    reader = CredentialReader(kube)
    app = app_with(kube_namespace, ServiceRef("uaa", "uaa", "xsuaa"))

    assert reader.binding(app, app.services[0]) == {
        "xsappname": "shop!t1",
        "uaadomain": "uaa.example.com",
        "clientid": "sb-shop!t1",
        "extra": {"a": [1]},
    }
    xsuaa = reader.xsuaa(app)
    assert (xsuaa.xsappname, xsuaa.uaadomain, xsuaa.clientid, xsuaa.url) == (
        "shop!t1",
        "uaa.example.com",
        "sb-shop!t1",
        "",
    )


def test_metadata_container_property_is_the_whole_credentials(kube: KubeClient, kube_namespace: str) -> None:
    metadata = {"credentialProperties": [{"name": "credentials", "format": "json", "container": True}]}
    data = {
        ".metadata": json.dumps(metadata),
        "credentials": json.dumps({"xsappname": "x!t1", "uaadomain": "d"}),
    }
    kube.create(SECRET, string_secret("uaa", kube_namespace, data), kube_namespace)
    app = app_with(kube_namespace, ServiceRef("uaa", "uaa", "xsuaa"))

    assert CredentialReader(kube).binding(app, app.services[0]) == {"xsappname": "x!t1", "uaadomain": "d"}


def test_flat_keys(kube: KubeClient, kube_namespace: str) -> None:
    data = {"xsappname": "flat!t1", "uaadomain": "d", "appUrls": '{"callbackTimeoutMillis": 5000}'}
    kube.create(SECRET, string_secret("flat", kube_namespace, data), kube_namespace)
    app = app_with(kube_namespace, ServiceRef("uaa", "flat", "xsuaa"))

    assert CredentialReader(kube).binding(app, app.services[0]) == data


def test_the_primary_xsuaa(kube: KubeClient, kube_namespace: str) -> None:
    for name in ("first", "second"):
        body = {"credentials": json.dumps({"xsappname": f"{name}!t1"})}
        kube.create(SECRET, string_secret(name, kube_namespace, body), kube_namespace)
    services = (ServiceRef("uaa-1", "first", "xsuaa"), ServiceRef("uaa-2", "second", "xsuaa"))
    reader = CredentialReader(kube)

    assert reader.xsuaa(app_with(kube_namespace, *services)).xsappname == "first!t1"
    named = app_with(kube_namespace, *services, annotations={"sme.sap.com/primary-xsuaa": "uaa-2"})
    assert reader.xsuaa(named).xsappname == "second!t1"
    wrong = app_with(kube_namespace, *services, annotations={"sme.sap.com/primary-xsuaa": "uaa-9"})
    with pytest.raises(ServiceNotBound, match="names 'uaa-9', which is no service of class xsuaa"):
        reader.xsuaa(wrong)
    with pytest.raises(ServiceNotBound, match="has no service of class saas-registry"):
        reader.saas_registry(named)


def test_unusable_secrets_name_the_secret_never_a_value(
    kube: KubeClient, kube_namespace: str, secrets_never_logged: SecretWatch
) -> None:
    hidden = "s3cr3t-value-not-json"
    secrets_never_logged.values.append(hidden)
    kube.create(SECRET, string_secret("broken", kube_namespace, {"credentials": hidden}), kube_namespace)
    kube.create(
        SECRET,
        string_secret("incomplete", kube_namespace, {"credentials": '{"uaadomain": "d"}'}),
        kube_namespace,
    )
    reader = CredentialReader(kube)

    errors = []
    for service in (
        ServiceRef("gone", "no-such-secret", "xsuaa"),
        ServiceRef("broken", "broken", "xsuaa"),
        ServiceRef("incomplete", "incomplete", "xsuaa"),
    ):
        with pytest.raises(CredentialsUnavailable) as raised:
            reader.xsuaa(app_with(kube_namespace, service))
        errors.append(raised.value.message)

    assert errors == [
        f"Secret {kube_namespace}/no-such-secret of service gone does not exist",
        f"Secret {kube_namespace}/broken: key credentials is not valid JSON",
        f"Secret {kube_namespace}/incomplete: the credentials have no xsappname",
    ]
    secrets_never_logged.assert_absent("\n".join(errors), "the errors")


def test_dependencies_skip_services_without_an_xsappname(
    kube: KubeClient, kube_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    kube.create(
        SECRET, string_secret("a", kube_namespace, {"credentials": '{"xsappname": "a!b1"}'}), kube_namespace
    )
    kube.create(SECRET, string_secret("b", kube_namespace, {"credentials": '{"url": "x"}'}), kube_namespace)
    kube.create(
        SECRET, string_secret("c", kube_namespace, {"credentials": '{"xsappname": "c!b3"}'}), kube_namespace
    )
    app = app_with(
        kube_namespace,
        ServiceRef("a", "a", "destination"),  # Auto: a destination is a dependency
        ServiceRef("b", "b", "connectivity", subscription_dependency="Always"),
        ServiceRef("c", "c", "html5-apps-repo"),  # Auto: not one
    )

    assert CredentialReader(kube).dependency_xsappnames(app) == ["a!b1"]
    assert "service b of" in caplog.text and "its credentials have no xsappname" in caplog.text


@pytest.mark.parametrize(
    ("app_urls", "timeout"),
    [
        ('{"callbackTimeoutMillis": 300000}', 300000),
        ({"callbackTimeoutMillis": "60000"}, 60000),
        ('{"callbackTimeoutMillis": -1}', None),
        ('{"callbackTimeoutMillis": true}', None),
        ("not json", None),
        (None, None),
    ],
)
def test_saas_callback_timeout(app_urls: object, timeout: int | None) -> None:
    assert saas_callback_timeout(app_urls) == timeout


def test_sms_callback_timeout() -> None:
    assert sms_callback_timeout('{"subscriptionCallbacks": {"async": {"timeoutInMillis": 900}}}') == 900
    assert sms_callback_timeout({"subscriptionCallbacks": {}}) is None
