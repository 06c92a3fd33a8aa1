"""Subscribe, unsubscribe and dependencies over HTTP, end to end: the real server on loopback, binding
Secrets and the subscription's cluster objects in the real API server, tenant records pushed to a
bare Git remote on disk. Faked: XSUAA (local issuer of signed tokens) and the SaaS registry (its
credentials point at a local peer; nothing calls it here).

Covers: the 202 only after the record is on the remote, the subscription context Secret and the
pending-callback ConfigMap; a repeated subscribe (same record, updated); the provider tenant's
record name; unsubscribe marking the record and opening a deprovisioning callback; 404 for unknown
applications (only to callers valid for some application) and unknown tenants; 409 for services-only
applications; 503 with the callback withdrawn when the push fails; the subscription manager's routes;
dependencies; 50 concurrent subscriptions.
"""

from __future__ import annotations

import base64
import concurrent.futures
import datetime as dt
import json
import stat
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.controller.clients.cluster_side import (
    CONTEXT_KEY,
    Operation,
    callback_names,
    pending_callback_name,
)
from btp_gitops.controller.kube import CONFIG_MAP
from btp_gitops.controller.records import consumer_tenant_name
from tests.controller.subscription.conftest import (
    APP,
    DEPENDENCY_XSAPPNAME,
    PARTNER_DOMAIN,
    PROVIDER_SUBACCOUNT,
    PROVIDER_TENANT,
    SERVICES_ONLY_APP,
    SUBSCRIPTION_DOMAIN,
    BusyWriter,
    Running,
    ServerFactory,
    SmsPki,
    SourcesFactory,
    bearer,
    rfc3339_parse,
    run_git,
    saas_payload,
    sms_payload,
    xfcc,
)
from tests.controller.subscription.peers import TokenFactory

pytestmark = pytest.mark.kube

TENANT = "2b7c9d1e-3f4a-4b5c-8d6e-7f8091a2b3c4"
CALLBACK = "/saas-manager/v1/subscription-callback/1234/result"


def record_path(tenant_id: str) -> str:
    return f"apps/{APP}/tenants/{consumer_tenant_name(APP, tenant_id)}.yaml"


def record_on_remote(running: Running, tenant_id: str) -> dict[str, Any] | None:
    text = running.sources.show(record_path(tenant_id))
    return yaml.safe_load(text) if text is not None else None


def decoded(secret: dict[str, object], key: str) -> str:
    data = secret["data"]
    assert isinstance(data, dict)
    return base64.b64decode(data[key]).decode()


def test_subscribe_records_the_tenant_before_answering_202(running: Running, tokens: TokenFactory) -> None:
    payload = saas_payload(TENANT, "acme")
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)

    answer = running.client.send("PUT", f"/provision/tenants/{TENANT}", payload, bearer(tokens()))

    name = consumer_tenant_name(APP, TENANT)
    assert answer.status == 202, answer.body
    assert answer.json == {
        "message": "resource created successfully",
        "tenant": name,
        "subscriptionUrl": f"https://acme.{SUBSCRIPTION_DOMAIN}",
    }
    record = record_on_remote(running, TENANT)  # read right after the 202: it must be there already
    assert record == {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenant",
        "metadata": {
            "name": name,
            "namespace": running.namespace,
            "labels": {"sme.sap.com/subscription-guid": f"guid-{TENANT}"},
            "annotations": {
                "sme.sap.com/subscription-guid": f"guid-{TENANT}",
                "sme.sap.com/subscription-context-secret": f"{name}-subscription-context",
                "sme.sap.com/global-account-id": payload["globalAccountGUID"],
            },
        },
        "spec": {"capApplicationInstance": APP, "subDomain": "acme", "tenantId": TENANT},
    }
    secret = running.secret(f"{name}-subscription-context")
    assert secret is not None
    assert json.loads(decoded(secret, CONTEXT_KEY)) == payload
    assert secret["metadata"]["labels"]["sme.sap.com/btp-tenant-id"] == TENANT
    config_map = running.config_map(pending_callback_name(name, Operation.PROVISIONING))
    assert config_map is not None
    assert config_map["metadata"]["labels"] == {
        "btp-gitops.io/pending-callback": "true",
        "sme.sap.com/btp-tenant-id": TENANT,
        "app.kubernetes.io/managed-by": "btp-gitops",
    }
    data = dict(config_map["data"])
    deadline = rfc3339_parse(data.pop("deadline"))
    opened_at = dt.datetime.fromisoformat(data.pop("openedAt"))
    assert before <= opened_at <= dt.datetime.now(dt.UTC)
    assert data == {
        "operation": "provisioning",
        "tenantName": name,
        "tenantId": TENANT,
        "subDomain": "acme",
        "callbackPath": CALLBACK,
        "appUrl": f"https://acme.{SUBSCRIPTION_DOMAIN}",
        "application": APP,
        "subscriptionType": "SaaS",
    }
    # callbackTimeoutMillis of the binding's appUrls: 300000
    assert before + dt.timedelta(minutes=5) <= deadline <= dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)


def test_subscribing_again_updates_the_same_record(running: Running, tokens: TokenFactory) -> None:
    first = running.client.send(
        "PUT", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "acme"), bearer(tokens())
    )
    again = saas_payload(TENANT, "acme-renamed", subscriptionParams={"subscriptionDomain": PARTNER_DOMAIN})
    second = running.client.send("PUT", f"/provision/tenants/{TENANT}", again, bearer(tokens()))

    assert (first.status, second.status) == (202, 202)
    assert second.json["message"] == "resource exists"
    assert second.json["subscriptionUrl"] == f"https://acme-renamed.{PARTNER_DOMAIN}"
    record = record_on_remote(running, TENANT)
    assert record is not None and record["spec"] == {
        "capApplicationInstance": APP,
        "subDomain": "acme-renamed",
        "tenantId": TENANT,
    }
    name = consumer_tenant_name(APP, TENANT)
    secret = running.secret(f"{name}-subscription-context")
    assert secret is not None and json.loads(decoded(secret, CONTEXT_KEY)) == again


def test_the_provider_tenant_gets_the_provider_record(running: Running, tokens: TokenFactory) -> None:
    payload = saas_payload(PROVIDER_TENANT, "bookshop-provider")

    answer = running.client.send("PUT", f"/provision/tenants/{PROVIDER_TENANT}", payload, bearer(tokens()))

    assert answer.status == 202, answer.body
    assert answer.json["tenant"] == f"{APP}-provider"
    assert running.sources.show(f"apps/{APP}/tenants/{APP}-provider.yaml") is not None


def test_the_provider_tenant_may_subscribe_with_another_subdomain(
    running: Running, tokens: TokenFactory
) -> None:
    """The provider's record wins over `spec.provider.subDomain` (CAP Operator serves the CAPTenant's
    subdomain): it is recorded, and then that subdomain is taken for other tenants."""
    payload = saas_payload(PROVIDER_TENANT, "elsewhere")

    answer = running.client.send("PUT", f"/provision/tenants/{PROVIDER_TENANT}", payload, bearer(tokens()))

    assert answer.status == 202, answer.body
    record = yaml.safe_load(running.sources.show(f"apps/{APP}/tenants/{APP}-provider.yaml") or "")
    assert record["spec"]["subDomain"] == "elsewhere"
    head = running.sources.head()
    taken = running.client.send(
        "PUT", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "elsewhere"), bearer(tokens())
    )
    assert taken.status == 409
    assert running.sources.head() == head


def test_a_services_only_application_has_no_tenants(running: Running, tokens: TokenFactory) -> None:
    payload = saas_payload(TENANT, "acme", subscriptionAppName=SERVICES_ONLY_APP)
    head = running.sources.head()

    answer = running.client.send("PUT", f"/provision/tenants/{TENANT}", payload, bearer(tokens()))

    assert answer.status == 409
    assert answer.json == {
        "error": f"CAPApplication {running.namespace}/{SERVICES_ONLY_APP} is services-only: it has no tenants"
    }
    assert running.sources.head() == head


def test_without_status_callback_no_callback_is_opened(running: Running, tokens: TokenFactory) -> None:
    answer = running.client.send(
        "PUT", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "acme"), bearer(tokens(), callback=None)
    )

    assert answer.status == 202
    assert record_on_remote(running, TENANT) is not None
    assert all(running.config_map(n) is None for n in callback_names(consumer_tenant_name(APP, TENANT)))


def test_a_callback_path_with_a_host_is_refused(running: Running, tokens: TokenFactory) -> None:
    answer = running.client.send(
        "PUT",
        f"/provision/tenants/{TENANT}",
        saas_payload(TENANT, "acme"),
        bearer(tokens(), callback="//evil.example.com/x"),
    )

    assert answer.status == 400
    assert answer.json["error"].startswith("STATUS_CALLBACK: ")
    assert record_on_remote(running, TENANT) is None


def test_unsubscribe_marks_the_record_and_opens_a_deprovisioning_callback(
    running: Running, tokens: TokenFactory
) -> None:
    payload = saas_payload(TENANT, "acme")
    assert running.client.send("PUT", f"/provision/tenants/{TENANT}", payload, bearer(tokens())).status == 202

    answer = running.client.send(
        "DELETE",
        f"/provision/tenants/{TENANT}",
        payload,
        bearer(tokens(), callback="/saas-manager/v1/subscription-callback/99/result"),
    )

    name = consumer_tenant_name(APP, TENANT)
    assert answer.status == 202, answer.body
    assert answer.json == {"message": "resource deleted successfully", "tenant": name}
    record = record_on_remote(running, TENANT)
    assert record is not None
    assert record["metadata"]["annotations"]["btp-gitops.io/deprovision"] == "true"
    config_map = running.config_map(pending_callback_name(name, Operation.DEPROVISIONING))
    assert config_map is not None
    assert config_map["data"]["operation"] == "deprovisioning"
    assert config_map["data"]["callbackPath"] == "/saas-manager/v1/subscription-callback/99/result"
    assert config_map["data"]["subDomain"] == "acme"

    repeated = running.client.send("DELETE", f"/provision/tenants/{TENANT}", payload, bearer(tokens()))
    assert repeated.status == 202


def test_unsubscribing_an_unknown_tenant_is_404(running: Running, tokens: TokenFactory) -> None:
    head = running.sources.head()

    answer = running.client.send(
        "DELETE", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "acme"), bearer(tokens())
    )

    assert answer.status == 404
    assert answer.json == {"error": "the application has no tenant with this id"}
    assert running.sources.head() == head
    assert all(running.config_map(n) is None for n in callback_names(consumer_tenant_name(APP, TENANT)))


def test_an_unknown_application_is_404_for_a_caller_valid_for_another_one(
    running: Running, tokens: TokenFactory
) -> None:
    payload = saas_payload(TENANT, "acme", subscriptionAppName="no-such-app")

    answer = running.client.send("PUT", f"/provision/tenants/{TENANT}", payload, bearer(tokens()))

    assert answer.status == 404
    assert answer.json == {"error": "no application is registered for this provider subaccount and app name"}


def test_an_unknown_application_is_401_for_anyone_else(running: Running, tokens: TokenFactory) -> None:
    payload = saas_payload(TENANT, "acme", subscriptionAppName="no-such-app")
    foreign = tokens(claims={"aud": ["someone-else"], "cid": "someone-else", "client_id": "someone-else"})

    answer = running.client.send("PUT", f"/provision/tenants/{TENANT}", payload, bearer(foreign))

    assert answer.status == 401
    assert answer.json == {"error": "the caller could not be authenticated"}


def test_an_application_added_to_git_after_start_is_found(
    running: Running, tokens: TokenFactory, tmp_path: Path
) -> None:
    clone = tmp_path / "someone-else"
    run_git(tmp_path, "clone", "--quiet", str(running.sources.remote), str(clone))
    document = yaml.safe_load_all((clone / f"apps/{APP}/capapplication.yaml").read_text())
    moved = next(iter(document))
    moved["metadata"]["name"] = "bookshop-two"
    moved["spec"]["btpAppName"] = "bookshop-two"
    (clone / "apps/two").mkdir(parents=True)
    (clone / "apps/two/capapplication.yaml").write_text(yaml.safe_dump(moved))
    run_git(clone, "add", "--all")
    run_git(clone, "commit", "--quiet", "-m", "another application")
    run_git(clone, "push", "--quiet", "origin", "HEAD:refs/heads/main")

    payload = saas_payload(TENANT, "acme", subscriptionAppName="bookshop-two")
    answer = running.client.send("PUT", f"/provision/tenants/{TENANT}", payload, bearer(tokens()))

    assert answer.status == 202, answer.body
    assert running.sources.show(f"apps/two/tenants/{consumer_tenant_name('bookshop-two', TENANT)}.yaml")


def test_a_failed_push_answers_503_and_withdraws_the_callback(
    server_factory: ServerFactory, sources_factory: SourcesFactory, tokens: TokenFactory
) -> None:
    sources = sources_factory(max_attempts=2, backoff_initial=0.01, backoff_max=0.02)
    hook = sources.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'frozen for maintenance' >&2\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    running = server_factory(sources)

    answer = running.client.send(
        "PUT", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "acme"), bearer(tokens())
    )

    assert answer.status == 503
    assert answer.json == {
        "error": "the request could not be completed now; try again later",
        "reason": "GitPushRejected",
    }
    assert answer.headers["Retry-After"]
    assert sources.show(record_path(TENANT)) is None
    assert all(running.config_map(n) is None for n in callback_names(consumer_tenant_name(APP, TENANT)))


def test_a_failed_push_restores_the_callback_it_replaced(
    server_factory: ServerFactory, sources_factory: SourcesFactory, tokens: TokenFactory
) -> None:
    sources = sources_factory(max_attempts=2, backoff_initial=0.01, backoff_max=0.02)
    running = server_factory(sources)
    name = consumer_tenant_name(APP, TENANT)
    assert (
        running.client.send(
            "PUT", f"/provision/tenants/{TENANT}", saas_payload(TENANT, "acme"), bearer(tokens())
        ).status
        == 202
    )
    hook = sources.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)

    answer = running.client.send(
        "DELETE",
        f"/provision/tenants/{TENANT}",
        saas_payload(TENANT, "acme"),
        bearer(tokens(), callback="/other/9/result"),
    )

    assert answer.status == 503
    config_map = running.config_map(pending_callback_name(name, Operation.PROVISIONING))
    assert config_map is not None
    assert (config_map["data"]["operation"], config_map["data"]["callbackPath"]) == ("provisioning", CALLBACK)


def test_subscription_manager_subscribe_and_unsubscribe(running: Running, sms_pki: SmsPki) -> None:
    headers = {"X-Forwarded-Client-Cert": xfcc(sms_pki.client), "STATUS_CALLBACK": "/sms/callback/7"}
    payload = sms_payload(TENANT, "acme", guid="sms-guid-1")

    subscribed = running.client.send("PUT", f"/sms/provision/tenants/{TENANT}", payload, headers)

    name = consumer_tenant_name(APP, TENANT)
    assert subscribed.status == 202, subscribed.body
    assert subscribed.json == {
        "message": "resource created successfully",
        "tenant": name,
        "applicationUrl": f"https://acme.{SUBSCRIPTION_DOMAIN}",
    }
    record = record_on_remote(running, TENANT)
    assert record is not None and record["metadata"]["labels"] == {
        "sme.sap.com/subscription-guid": "sms-guid-1"
    }
    config_map = running.config_map(pending_callback_name(name, Operation.PROVISIONING))
    assert config_map is not None and config_map["data"]["subscriptionType"] == "SMS"

    wrong_guid = running.client.send(
        "DELETE", f"/sms/provision/tenants/{TENANT}?subscriptionGUID=other", None, headers
    )
    unsubscribed = running.client.send(
        "DELETE", f"/sms/provision/tenants/{TENANT}?subscriptionGUID=sms-guid-1", None, headers
    )

    assert wrong_guid.status == 404
    assert unsubscribed.status == 202, unsubscribed.body
    marked = record_on_remote(running, TENANT)
    assert marked is not None and marked["metadata"]["annotations"]["btp-gitops.io/deprovision"] == "true"


def test_dependencies_list_the_xsappnames_of_dependency_services(
    running: Running, tokens: TokenFactory, sms_pki: SmsPki
) -> None:
    saas = running.client.send(
        "GET", f"/dependencies/{PROVIDER_SUBACCOUNT}/{APP}/", None, bearer(tokens(), None)
    )
    sms = running.client.send(
        "GET",
        f"/sms/dependencies/{PROVIDER_SUBACCOUNT}/{APP}/",
        None,
        {"X-Forwarded-Client-Cert": xfcc(sms_pki.client)},
    )
    unknown = running.client.send(
        "GET", f"/dependencies/{PROVIDER_SUBACCOUNT}/nope/", None, bearer(tokens(), None)
    )
    no_token = running.client.send("GET", f"/dependencies/{PROVIDER_SUBACCOUNT}/{APP}/")

    assert (saas.status, saas.json) == (200, [{"xsappname": DEPENDENCY_XSAPPNAME}])
    assert (sms.status, sms.json) == (200, [{"xsappname": DEPENDENCY_XSAPPNAME}])
    assert unknown.status == 404
    assert no_token.status == 401


def test_fifty_concurrent_subscriptions_are_all_recorded(running: Running, tokens: TokenFactory) -> None:
    tenants = [f"0000{i:04d}-aaaa-4bbb-8ccc-dddddddddddd" for i in range(50)]
    requests = [
        (t, saas_payload(t, f"tenant-{i}"), bearer(tokens(), f"/cb/{i}")) for i, t in enumerate(tenants)
    ]

    with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(
            pool.map(lambda r: running.client.send("PUT", f"/provision/tenants/{r[0]}", r[1], r[2]), requests)
        )

    assert [a.status for a in answers] == [202] * 50, [a.body for a in answers if a.status != 202]
    for tenant in tenants:
        assert running.sources.show(record_path(tenant)) is not None
    pending = running.kube.list(
        CONFIG_MAP, running.namespace, label_selector="btp-gitops.io/pending-callback=true"
    )
    assert len(pending) == 50


def test_two_replicas_and_a_competing_pusher_lose_and_duplicate_no_tenant(
    running: Running,
    server_factory: ServerFactory,
    tokens: TokenFactory,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two subscription-server replicas (each its own clone of the same remote) answer 60
    concurrent subscriptions between them while a third writer pushes to the branch every 0.2 to
    0.4 s (a busy CI job; tests/controller/test_gitstore.py races a writer against every batch of
    the Git writer alone): every tenant is recorded exactly once, and so is every one of its commits."""
    from btp_gitops.controller.gitstore import RepoSettings, SourceRepo  # noqa: PLC0415 (only this test)
    from btp_gitops.controller.subscription.git_ledger import GitTenantLedger  # noqa: PLC0415
    from tests.controller.subscription.conftest import Sources  # noqa: PLC0415

    remote = running.sources.remote
    second_repo = SourceRepo(RepoSettings(url=str(remote), workdir=tmp_path / "replica-2", batch_window=0.02))
    second_repo.start()
    try:
        second = server_factory(Sources(remote, second_repo, GitTenantLedger(second_repo, record_timeout=60)))
        replicas = [running, second]
        tenants = [f"0001{i:04d}-aaaa-4bbb-8ccc-dddddddddddd" for i in range(60)]
        # Each replica fetches the issuer's token keys once before the burst: a fetch that times out
        # under CI load would answer every request 503 for the failure's memory (test_bearer_auth covers
        # that), which is not what this test is about.
        for replica in replicas:
            deadline = time.monotonic() + 150
            while True:
                warm = replica.client.send(
                    "GET", f"/dependencies/{PROVIDER_SUBACCOUNT}/{APP}/", None, bearer(tokens(), None)
                )
                if warm.status != 503 or time.monotonic() > deadline:
                    break
                time.sleep(2)
            assert warm.status == 200, warm.body

        def subscribe(item: tuple[int, str]) -> tuple[int, bytes]:
            i, tenant = item
            replica = replicas[i % 2]
            answer = replica.client.send(
                "PUT",
                f"/provision/tenants/{tenant}",
                saas_payload(tenant, f"rep-{i}"),
                bearer(tokens(), f"/cb/{i}"),
            )
            return answer.status, answer.body

        with (
            BusyWriter(remote, tmp_path / "other") as competitor,
            concurrent.futures.ThreadPoolExecutor(max_workers=30) as pool,
        ):
            statuses = list(pool.map(subscribe, enumerate(tenants)))
        server_said = [r.getMessage() for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
        assert [status for status, _ in statuses] == [202] * len(tenants), (
            [b for s, b in statuses if s != 202][:3],
            server_said[:10],
        )
        assert competitor.pushed, "the competing writer never got a push through"
        clone = tmp_path / "check"
        run_git(tmp_path, "clone", "--quiet", str(remote), str(clone))
        recorded = sorted((clone / "apps" / APP / "tenants").glob("*.yaml"))
        ids = [yaml.safe_load(path.read_text())["spec"]["tenantId"] for path in recorded]
        assert sorted(ids) == sorted(tenants)  # each tenant once: none lost, none duplicated
        assert (clone / "competitor.txt").read_text().splitlines() == competitor.pushed
    finally:
        second_repo.stop()
