"""`GET /dependencies` and `/sms/dependencies` answer CAP Operator's list for the same bindings.

`spec.btp.services[].subscriptionDependency` takes CAP Operator's values: `Never` leaves a service
out, `Always` lists it, and `Auto` (also when the field is absent) lists it when its credentials
say `saasregistryenabled`, its class is destination or connectivity, or it is an auditlog of plan
`oauth2`; a listed service needs an xsappname (top level, else `uaa.xsappname`). Real server, real
API server holding the binding Secrets in their three shapes, the application in a Git remote.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.controller.kube import SECRET, KubeClient
from tests.conftest import EXAMPLES, RunCli
from tests.controller.subscription.conftest import (
    APP,
    DEPENDENCY_XSAPPNAME,
    PROVIDER_SUBACCOUNT,
    ServerFactory,
    SmsPki,
    SourcesFactory,
    application_documents,
    bearer,
    string_secret,
    xfcc,
)
from tests.controller.subscription.peers import TokenFactory

# name: (class, subscriptionDependency (None: absent), the binding Secret's data)
EXTRA_SERVICES: dict[str, tuple[str, str | None, dict[str, str]]] = {
    "connectivity": ("connectivity", None, {"credentials": json.dumps({"xsappname": "connectivity!b17"})}),
    "auditlog-oauth2": (
        "auditlog",
        "Auto",
        {
            "xsappname": "auditlog!b3",
            "url": "https://auditlog.example.com",
            "plan": "oauth2",
            ".metadata": json.dumps(
                {
                    "credentialProperties": [{"name": "xsappname"}, {"name": "url"}],
                    "metaDataProperties": [{"name": "plan", "format": "text"}],
                }
            ),
        },
    ),
    "auditlog-standard": (
        "auditlog",
        None,
        {"credentials": json.dumps({"xsappname": "auditlog-standard!b4", "plan": "standard"})},
    ),
    "rules": ("business-rules", None, {"xsappname": "rules!b9", "saasregistryenabled": "true"}),
    "second-destination": ("destination", "Never", {"credentials": json.dumps({"xsappname": "dest2!b5"})}),
    "nested": ("workflow", "Always", {"credentials": json.dumps({"uaa": {"xsappname": "nested!b2"}})}),
    "nameless": ("workflow", "Always", {"credentials": json.dumps({"url": "https://wf.example.com"})}),
}
FORCED_HTML5 = "html5-not-a-dependency!b1"  # the conftest's html5-apps-repo binding, made Always


def application_with_dependencies(namespace: str) -> str:
    documents = list(yaml.safe_load_all(application_documents(namespace)))
    services: list[dict[str, Any]] = documents[0]["spec"]["btp"]["services"]
    for service in services:
        if service["class"] == "html5-apps-repo":
            service["subscriptionDependency"] = "Always"
    for name, (service_class, mode, _) in EXTRA_SERVICES.items():
        entry = {"class": service_class, "name": name, "secret": f"{name}-binding"}
        services.append(entry if mode is None else {**entry, "subscriptionDependency": mode})
    return yaml.safe_dump_all(documents, sort_keys=False)


@pytest.mark.kube
def test_the_dependencies_follow_cap_operators_rule(
    kube: KubeClient,
    kube_namespace: str,
    sources_factory: SourcesFactory,
    server_factory: ServerFactory,
    tokens: TokenFactory,
    sms_pki: SmsPki,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name, (_, _, data) in EXTRA_SERVICES.items():
        kube.create(SECRET, string_secret(f"{name}-binding", kube_namespace, data), kube_namespace)
    files = {f"apps/{APP}/capapplication.yaml": application_with_dependencies(kube_namespace)}
    running = server_factory(sources_factory(files))

    saas = running.client.send(
        "GET", f"/dependencies/{PROVIDER_SUBACCOUNT}/{APP}/", None, bearer(tokens(), None)
    )
    sms = running.client.send(
        "GET",
        f"/sms/dependencies/{PROVIDER_SUBACCOUNT}/{APP}/",
        None,
        {"X-Forwarded-Client-Cert": xfcc(sms_pki.client)},
    )

    expected = [
        {"xsappname": xsappname}
        for xsappname in (
            DEPENDENCY_XSAPPNAME,  # destination, field absent: Auto
            FORCED_HTML5,  # Always
            "connectivity!b17",  # Auto by class
            "auditlog!b3",  # Auto: an auditlog of plan oauth2 (the binding's metadata)
            "rules!b9",  # Auto: saasregistryenabled
            "nested!b2",  # Always, uaa.xsappname
        )
    ]
    assert (saas.status, saas.json) == (200, expected)
    assert (sms.status, sms.json) == (200, expected)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("service nameless of" in w and "no xsappname" in w for w in warnings)


@pytest.mark.parametrize(
    ("value", "returncode"),
    [("Always", 0), ("Auto", 0), ("Never", 0), (True, 3), ("always", 3)],
    ids=["Always", "Auto", "Never", "a boolean", "lowercase"],
)
def test_render_takes_cap_operators_values_only(
    value: object, returncode: int, run_cli: RunCli, tmp_path: Path
) -> None:
    """The schema (and the CRD made from it) admit CAP Operator's three values, nothing else."""
    source = tmp_path / "source"
    shutil.copytree(EXAMPLES / "cap-app", source)
    app = yaml.safe_load((source / "capapplication.yaml").read_text())
    app["spec"]["btp"]["services"][3]["subscriptionDependency"] = value
    (source / "capapplication.yaml").write_text(yaml.safe_dump(app, sort_keys=False))

    result = run_cli("render", source, "--out", tmp_path / "repo", "--cluster", "c1")

    assert result.returncode == returncode, result.stderr
    if returncode:
        assert "spec.btp.services[3].subscriptionDependency" in result.stderr
