"""controller.records: CAPTenant records edited in a real Git repository holding a copy of
examples/cap-app, through controller.gitstore (a bare remote on disk, the controller's clone beside
it), and the edited trees rendered by the real pipeline (`render_cluster`).

Covers: the index of a tree (applications by identity hash, tenants, versions) and that it sees a
file rewritten in place; subscribe (new consumer and provider records, updates, re-subscribe),
unsubscribe (also of an unknown tenant), every operation outcome, removing records and versions
(whole files and single documents of multi-document files, comments kept), idempotence of every
edit, refusals (unknown or services-only application, a provider's wrong subdomain, unreadable
tree), tenant naming, and that the render picks the records up: a new subscription gets its
provisioning Job, a recorded deprovisioning makes the tenant disappear. Nothing is faked.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from btp_gitops.controller.errors import PermanentError, UnreadableSource
from btp_gitops.controller.gitstore import CommitOutcome, RepoSettings, SourceRepo, TreeChange
from btp_gitops.controller.records import (
    DocumentRef,
    OperationOutcome,
    SourceIndex,
    SubdomainTaken,
    Subscription,
    consumer_tenant_name,
    record_operation_outcome,
    remove_document,
    remove_tenant_record,
    remove_version,
    subscribe_tenant,
    unsubscribe_tenant,
)
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.domains.cap.identity import app_identifier_hash, sha1_hex
from btp_gitops.generator.domains.cap.model import CAP_APPLICATION, Application, TenantOperation
from btp_gitops.generator.domains.cap.tenants.model import (
    CAP_TENANT,
    CompletedOperation,
    TenantState,
    TenantStatus,
)
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import render_cluster
from tests.conftest import EXAMPLES

EXAMPLE = EXAMPLES / "cap-app"
NAMESPACE = "bookshop"
APP = "bookshop"
PROVIDER_TENANT_ID = "6f5e4d3c-2b1a-4098-b7c6-d5e4f3a2b1c0"
ACME_ID = "2b7c9d1e-3f4a-4b5c-8d6e-7f8091a2b3c4"
GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
INITECH_ID = "4c3d2e1f-0a9b-4c8d-a7e6-f5d4c3b2a190"
NEW_ID = "1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b"
IDENTITY = {
    "GIT_AUTHOR_NAME": "seed",
    "GIT_AUTHOR_EMAIL": "seed@example.com",
    "GIT_COMMITTER_NAME": "seed",
    "GIT_COMMITTER_EMAIL": "seed@example.com",
}


def run_git(directory: Path, *args: str) -> str:
    return str(git.Git(directory).execute(["git", *args], env=IDENTITY))


def seed_remote(tmp_path: Path, files: Path) -> Path:
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = tmp_path / "seed"
    shutil.copytree(files, seed)
    run_git(seed, "init", "--quiet", "--initial-branch=main")
    run_git(seed, "add", "--all")
    run_git(seed, "commit", "--quiet", "-m", "cap-app example")
    run_git(seed, "push", "--quiet", str(bare), "HEAD:refs/heads/main")
    return bare


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return seed_remote(tmp_path, EXAMPLE)


@pytest.fixture
def repo(remote: Path, tmp_path: Path) -> Iterator[SourceRepo]:
    source = SourceRepo(RepoSettings(url=str(remote), workdir=tmp_path / "work", batch_window=0.0))
    source.start()
    yield source
    source.stop()


def apply(repo: SourceRepo, change: TreeChange) -> CommitOutcome:
    return repo.apply(change, "test edit", timeout=60)


def text_at(repo: SourceRepo, relative: str) -> str | None:
    """A file as the remote's newest commit holds it (None when absent)."""

    def read(tree: Path) -> str | None:
        path = tree / relative
        return path.read_text() if path.exists() else None

    return repo.read(read)


def index_of(repo: SourceRepo) -> SourceIndex:
    return repo.read(SourceIndex.of_tree)


def subscription(tenant_id: str = NEW_ID, sub_domain: str = "newco", **fields: str) -> Subscription:
    values = {
        "namespace": NAMESPACE,
        "application": APP,
        "tenant_id": tenant_id,
        "sub_domain": sub_domain,
        "subscription_guid": "0f1e2d3c-4b5a-4968-8776-655443322110",
        "global_account_id": "ga-5e6f7a8b",
        "subscription_context_secret": "newco-subscription-context",
    }
    values.update(fields)
    return Subscription(**values)


NEW_NAME = consumer_tenant_name(APP, NEW_ID)
NEW_RECORD = f"tenants/{NEW_NAME}.yaml"


# --- the index -----------------------------------------------------------------------------------


def test_the_index_finds_the_application_by_its_identity_hash_and_its_tenants(repo: SourceRepo) -> None:
    index = index_of(repo)

    body = yaml.safe_load((EXAMPLE / "capapplication.yaml").read_text())
    model = Application.from_source(SourceDocument("capapplication.yaml", 1, body, EXAMPLE))
    app = index.application_by_identifier(app_identifier_hash(model))
    assert app is not None
    assert app == index.application(NAMESPACE, APP)
    assert app.identifier_hash == sha1_hex("0d3e5f6a-1b2c-4d5e-8f90-a1b2c3d4e5f6", "bookshop")
    assert (app.path, app.btp_app_name, app.provider_sub_domain, app.provider_tenant_id) == (
        Path("capapplication.yaml"),
        "bookshop",
        "bookshop-provider",
        PROVIDER_TENANT_ID,
    )
    assert [(s.name, s.secret, s.service_class) for s in app.services][:2] == [
        ("bookshop-uaa", "bookshop-uaa-binding", "xsuaa"),
        ("bookshop-registry", "bookshop-registry-binding", "saas-registry"),
    ]
    assert index.application_by_identifier(sha1_hex("other", "bookshop")) is None
    assert [t.name for t in index.tenants_of(NAMESPACE, APP)] == ["acme", "globex", "initech"]
    initech = index.tenant(NAMESPACE, APP, INITECH_ID)
    assert initech is not None and initech == index.tenant_named(NAMESPACE, "initech")
    assert initech.path == Path("tenants/initech.yaml")
    assert initech.marked_for_deprovisioning
    assert initech.status == TenantStatus(
        state=TenantState.READY,
        current_instance="bookshop-1-1-0",
        previous_instances=("bookshop-1-0-0",),
        last_completed=CompletedOperation(TenantOperation.UPGRADE, "bookshop-1-1-0"),
    )
    version = index.version_named(NAMESPACE, "bookshop-1-0-0")
    assert version is not None and (version.path, version.version) == (Path("version-1.0.0.yaml"), "1.0.0")


def test_the_index_holds_the_documents_its_records_were_read_from(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    # A second file naming the same tenant: the record's own file's document is the one returned.
    twin = yaml.safe_load((tree / "tenants" / "acme.yaml").read_text())
    twin["spec"]["subDomain"] = "acme-twin"
    (tree / "tenants" / "zz-twin.yaml").write_text(yaml.safe_dump(twin))
    index = SourceIndex.of_tree(tree)

    acme = index.tenant_named(NAMESPACE, "acme")
    assert acme is not None and acme.path == Path("tenants/acme.yaml")
    document = index.document(acme.path, CAP_TENANT, NAMESPACE, "acme")
    assert document.body["spec"]["subDomain"] == acme.sub_domain != "acme-twin"
    twin_document = index.document(Path("tenants/zz-twin.yaml"), CAP_TENANT, NAMESPACE, "acme")
    assert twin_document.body["spec"]["subDomain"] == "acme-twin"
    kinds = [d.kind for d in index.documents_of_namespace(NAMESPACE)]
    assert kinds.count("CAPApplication") == 1 and kinds.count("CAPTenant") == 4
    assert index.documents_of_namespace("elsewhere") == []
    with pytest.raises(UnreadableSource, match=r"CAPTenant bookshop/acme is not in tenants/globex\.yaml"):
        index.document(Path("tenants/globex.yaml"), CAP_TENANT, NAMESPACE, "acme")


def test_the_index_sees_a_file_rewritten_in_place_at_once(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    record = tree / "tenants" / "globex.yaml"
    text = record.read_text()
    record.write_text(text)
    assert SourceIndex.of_tree(tree).tenant_named(NAMESPACE, "globex") is not None

    # Written again at once with the same size: its times may well be the same, its bytes are not.
    record.write_text(text.replace("name: globex", "name: globey"))

    index = SourceIndex.of_tree(tree)
    assert index.tenant_named(NAMESPACE, "globex") is None
    assert index.tenant_named(NAMESPACE, "globey") is not None


def test_the_index_passes_over_what_a_render_passes_over_in_a_source_directory(tmp_path: Path) -> None:
    """A kustomization, Helm values and other kinds beside the records do not make the tree
    unreadable (on main: "not a Kubernetes object"): the controller reads what a render reads."""
    plain, tree = tmp_path / "plain", tmp_path / "tree"
    shutil.copytree(EXAMPLE, plain)
    shutil.copytree(EXAMPLE, tree)
    (tree / "kustomization.yaml").write_text("resources:\n  - capapplication.yaml\n")
    (tree / "values.yaml").write_text("replicaCount: 2\n")
    (tree / "tenants" / "wiring.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels: {bad key: x}\n"
    )

    index = SourceIndex.of_tree(tree)

    index.check_readable()
    assert _index_view(index) == _index_view(SourceIndex.of_tree(plain))


def test_an_unreadable_tree_refuses_edits_and_fails_only_that_change(repo: SourceRepo) -> None:
    def break_a_record(tree: Path) -> str:
        (tree / "tenants" / "broken.yaml").write_text("kind: CAPTenant\nkind: twice\n")
        return "broken record"

    apply(repo, break_a_record)

    with pytest.raises(PermanentError, match=r"unreadable CAP documents: .*broken.yaml.*duplicate key"):
        apply(repo, subscribe_tenant(subscription()))
    assert text_at(repo, NEW_RECORD) is None


# --- subscribe and unsubscribe ---------------------------------------------------------------------


def test_a_new_subscription_writes_a_record_in_the_generators_style(repo: SourceRepo) -> None:
    outcome = apply(repo, subscribe_tenant(subscription()))

    assert outcome.commit is not None
    assert outcome.summary == f"CAPTenant bookshop/{NEW_NAME}: tenant {NEW_ID} subscribed (subdomain newco)"
    assert text_at(repo, NEW_RECORD) == (
        "apiVersion: sme.sap.com/v1alpha1\n"
        "kind: CAPTenant\n"
        "metadata:\n"
        f"  name: {NEW_NAME}\n"
        "  namespace: bookshop\n"
        "  annotations:\n"
        "    sme.sap.com/global-account-id: ga-5e6f7a8b\n"
        "    sme.sap.com/subscription-context-secret: newco-subscription-context\n"
        "    sme.sap.com/subscription-guid: 0f1e2d3c-4b5a-4968-8776-655443322110\n"
        "  labels:\n"
        "    sme.sap.com/subscription-guid: 0f1e2d3c-4b5a-4968-8776-655443322110\n"
        "spec:\n"
        "  capApplicationInstance: bookshop\n"
        "  subDomain: newco\n"
        f"  tenantId: {NEW_ID}\n"
    )
    recorded = index_of(repo).tenant(NAMESPACE, APP, NEW_ID)
    assert recorded is not None
    assert (recorded.name, recorded.sub_domain, recorded.status) == (NEW_NAME, "newco", TenantStatus())

    again = apply(repo, subscribe_tenant(subscription()))
    assert again.commit is None


def test_a_subscription_of_a_recorded_tenant_updates_it_and_keeps_its_status_and_comments(
    repo: SourceRepo,
) -> None:
    before = text_at(repo, "tenants/acme.yaml") or ""

    apply(repo, subscribe_tenant(subscription(ACME_ID, "acme-renamed", subscription_context_secret="")))

    after = text_at(repo, "tenants/acme.yaml") or ""
    head_comment = before[: before.index("apiVersion:")]
    assert after.startswith(head_comment)
    record = yaml.safe_load(after)
    assert record["spec"]["subDomain"] == "acme-renamed"
    assert record["metadata"]["labels"] == {
        "sme.sap.com/subscription-guid": "0f1e2d3c-4b5a-4968-8776-655443322110"
    }
    assert record["metadata"]["annotations"] == {
        "sme.sap.com/subscription-context-secret": "acme-subscription-context",
        "sme.sap.com/global-account-id": "ga-5e6f7a8b",
        "sme.sap.com/subscription-guid": "0f1e2d3c-4b5a-4968-8776-655443322110",
    }
    assert record["status"] == yaml.safe_load(before)["status"]
    assert index_of(repo).tenant_named(NAMESPACE, f"{APP}-consumer-{sha1_hex(ACME_ID)[:8]}") is None


def test_a_resubscribe_clears_the_deprovisioning_mark(repo: SourceRepo) -> None:
    outcome = apply(repo, subscribe_tenant(subscription(INITECH_ID, "initech")))

    assert (
        outcome.summary
        == f"CAPTenant bookshop/initech: tenant {INITECH_ID} subscribed again (subdomain initech)"
    )
    record = yaml.safe_load(text_at(repo, "tenants/initech.yaml") or "")
    assert "btp-gitops.io/deprovision" not in record["metadata"]["annotations"]
    assert record["status"]["currentCAPApplicationVersionInstance"] == "bookshop-1-1-0"


def test_the_provider_tenant_is_recorded_under_its_operator_name(repo: SourceRepo) -> None:
    apply(repo, subscribe_tenant(subscription(PROVIDER_TENANT_ID, "bookshop-provider")))

    provider = index_of(repo).tenant(NAMESPACE, APP, PROVIDER_TENANT_ID)
    assert provider is not None
    assert (provider.name, provider.path) == ("bookshop-provider", Path("tenants/bookshop-provider.yaml"))


def test_the_provider_tenant_may_move_to_another_subdomain(repo: SourceRepo) -> None:
    """As CAP Operator serves the provider CAPTenant's subDomain once it exists (the render follows
    the record), the provider may subscribe with another subdomain than `spec.provider`'s; the one
    it left is then free, and the one it took is not."""
    while_derived = subscribe_tenant(subscription(sub_domain="bookshop-provider"))
    apply(repo, subscribe_tenant(subscription(PROVIDER_TENANT_ID, "bookshop-shop")))

    provider = index_of(repo).tenant(NAMESPACE, APP, PROVIDER_TENANT_ID)
    assert provider is not None
    assert (provider.name, provider.sub_domain) == ("bookshop-provider", "bookshop-shop")
    with pytest.raises(
        SubdomainTaken, match="subdomain bookshop-shop is taken by CAPTenant bookshop/bookshop-provider"
    ):
        apply(repo, subscribe_tenant(subscription(sub_domain="bookshop-shop")))
    apply(repo, while_derived)
    newco = index_of(repo).tenant(NAMESPACE, APP, NEW_ID)
    assert newco is not None and newco.sub_domain == "bookshop-provider"


def test_an_application_without_provider_but_tenant_workloads_takes_subscriptions(tmp_path: Path) -> None:
    """Without `spec.provider` an application is services-only only when its first version has
    nothing but Service deployments and Content jobs (the render's rule); the example's versions
    have a router and a CAP backend, so its consumers subscribe as before."""
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    app_file = tree / "capapplication.yaml"
    app = yaml.safe_load(app_file.read_text())
    del app["spec"]["provider"]
    app_file.write_text(yaml.safe_dump(app))
    record = SourceIndex.of_tree(tree).application(NAMESPACE, APP)
    assert record is not None and not record.has_provider

    assert not SourceIndex.of_tree(tree).services_only(record)
    subscribe_tenant(subscription())(tree)
    assert (tree / NEW_RECORD).exists()


def test_subscriptions_to_unknown_or_services_only_applications_are_refused(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    shutil.copytree(EXAMPLES / "cap-services-only", tree / "services-only")
    index = SourceIndex.of_tree(tree)
    services_only = next(a for a in index.applications if index.services_only(a))

    with pytest.raises(PermanentError, match="no CAPApplication bookshop/nowhere"):
        subscribe_tenant(subscription(application="nowhere"))(tree)
    with pytest.raises(PermanentError, match="is services-only: it has no tenants"):
        subscribe_tenant(subscription(namespace=services_only.namespace, application=services_only.name))(
            tree
        )
    with pytest.raises(PermanentError, match="not a valid label value"):
        subscribe_tenant(subscription(subscription_guid="not a label"))(tree)
    with pytest.raises(PermanentError, match=r"would not be a valid record: spec.subDomain"):
        subscribe_tenant(subscription(sub_domain="Not_A_Subdomain"))(tree)
    with pytest.raises(PermanentError, match="subdomain acme is taken by CAPTenant bookshop/acme"):
        subscribe_tenant(subscription(sub_domain="acme"))(tree)
    with pytest.raises(
        PermanentError, match="subdomain bookshop-provider is CAPApplication bookshop/bookshop's"
    ):
        subscribe_tenant(subscription(sub_domain="bookshop-provider"))(tree)
    assert not (tree / NEW_RECORD).exists()


def test_unsubscribe_marks_the_record_once_and_ignores_unknown_tenants(repo: SourceRepo) -> None:
    head = repo.head

    unknown = apply(repo, unsubscribe_tenant(NAMESPACE, APP, "no-such-tenant"))
    assert unknown.commit is None and repo.head == head

    marked = apply(repo, unsubscribe_tenant(NAMESPACE, APP, GLOBEX_ID))
    assert (
        marked.summary == f"CAPTenant bookshop/globex: tenant {GLOBEX_ID} unsubscribed, to be deprovisioned"
    )
    record = yaml.safe_load(text_at(repo, "tenants/globex.yaml") or "")
    assert record["metadata"]["annotations"]["btp-gitops.io/deprovision"] == "true"
    assert index_of(repo).tenant_named(NAMESPACE, "globex").marked_for_deprovisioning  # type: ignore[union-attr]

    assert apply(repo, unsubscribe_tenant(NAMESPACE, APP, GLOBEX_ID)).commit is None


# --- operation outcomes ----------------------------------------------------------------------------


def status_of(repo: SourceRepo, name: str) -> dict[str, Any]:
    record = yaml.safe_load(text_at(repo, f"tenants/{name}.yaml") or "")
    return dict(record.get("status") or {})


def outcome(operation: TenantOperation, version: str, succeeded: bool = True) -> OperationOutcome:
    return OperationOutcome(operation, version, succeeded)


def test_a_completed_provisioning_makes_the_tenant_ready_once(repo: SourceRepo) -> None:
    done = outcome(TenantOperation.PROVISIONING, "bookshop-1-1-0")

    recorded = apply(repo, record_operation_outcome(NAMESPACE, "globex", done))

    assert recorded.summary == "CAPTenant bookshop/globex: provisioning on bookshop-1-1-0 succeeded"
    assert status_of(repo, "globex") == {
        "state": "Ready",
        "currentCAPApplicationVersionInstance": "bookshop-1-1-0",
        "lastCompletedOperation": {
            "operation": "provisioning",
            "capApplicationVersionInstance": "bookshop-1-1-0",
        },
    }
    assert apply(repo, record_operation_outcome(NAMESPACE, "globex", done)).commit is None
    late_failure = outcome(TenantOperation.PROVISIONING, "bookshop-1-1-0", succeeded=False)
    assert apply(repo, record_operation_outcome(NAMESPACE, "globex", late_failure)).commit is None


def test_a_completed_upgrade_moves_the_current_version_to_the_previous_ones(repo: SourceRepo) -> None:
    apply(
        repo, record_operation_outcome(NAMESPACE, "acme", outcome(TenantOperation.UPGRADE, "bookshop-1-1-0"))
    )

    assert status_of(repo, "acme") == {
        "state": "Ready",
        "currentCAPApplicationVersionInstance": "bookshop-1-1-0",
        "previousCAPApplicationVersions": ["bookshop-1-0-0"],
        "lastCompletedOperation": {"operation": "upgrade", "capApplicationVersionInstance": "bookshop-1-1-0"},
    }


@pytest.mark.parametrize(
    ("earlier", "kept"),
    [
        pytest.param(8, 9, id="below CAP Operator's bound: the whole history"),
        pytest.param(9, 10, id="at the bound: the whole history"),
        pytest.param(10, 10, id="past the bound: the oldest goes"),
    ],
)
def test_the_version_history_is_bounded_as_cap_operator_bounds_it(
    repo: SourceRepo, earlier: int, kept: int
) -> None:
    """CAP Operator appends the version a tenant leaves to its history and, past ten entries (its
    default MAX_TENANT_VERSION_HISTORY), drops the oldest; every entry keeps version-affinity routes."""
    history = [f"bookshop-0-{n}-0" for n in range(earlier)]

    def seed(tree: Path) -> str:
        path = tree / "tenants" / "acme.yaml"
        record = yaml.safe_load(path.read_text())
        record["status"]["previousCAPApplicationVersions"] = history
        path.write_text(yaml.safe_dump(record, sort_keys=False))
        return "seed a history"

    apply(repo, seed)
    apply(
        repo, record_operation_outcome(NAMESPACE, "acme", outcome(TenantOperation.UPGRADE, "bookshop-1-1-0"))
    )

    previous = status_of(repo, "acme")["previousCAPApplicationVersions"]
    assert previous == [*history, "bookshop-1-0-0"][-kept:]
    assert status_of(repo, "acme")["currentCAPApplicationVersionInstance"] == "bookshop-1-1-0"


def test_failures_set_the_error_state_and_nothing_else(repo: SourceRepo) -> None:
    acme_before = status_of(repo, "acme")

    apply(
        repo,
        record_operation_outcome(
            NAMESPACE, "acme", outcome(TenantOperation.UPGRADE, "bookshop-1-1-0", False)
        ),
    )
    apply(
        repo,
        record_operation_outcome(
            NAMESPACE, "globex", outcome(TenantOperation.PROVISIONING, "bookshop-1-1-0", False)
        ),
    )

    assert status_of(repo, "acme") == {**acme_before, "state": "UpgradeError"}
    assert status_of(repo, "globex") == {"state": "ProvisioningError"}


def test_a_deprovisioning_failure_holds_the_tenant_in_deleting_and_its_success_retires_it(
    repo: SourceRepo,
) -> None:
    initech_before = status_of(repo, "initech")
    failed = outcome(TenantOperation.DEPROVISIONING, "bookshop-1-1-0", False)

    apply(repo, record_operation_outcome(NAMESPACE, "initech", failed))
    assert status_of(repo, "initech") == {**initech_before, "state": "Deleting"}
    late_success = outcome(TenantOperation.UPGRADE, "bookshop-1-1-0")
    assert apply(repo, record_operation_outcome(NAMESPACE, "initech", late_success)).commit is None

    apply(
        repo,
        record_operation_outcome(
            NAMESPACE, "initech", outcome(TenantOperation.DEPROVISIONING, "bookshop-1-1-0")
        ),
    )
    expected = dict(initech_before)
    del expected["state"]
    expected["lastCompletedOperation"] = {
        "operation": "deprovisioning",
        "capApplicationVersionInstance": "bookshop-1-1-0",
    }
    assert status_of(repo, "initech") == expected


def test_the_provider_tenant_gets_its_record_with_its_first_outcome(repo: SourceRepo) -> None:
    apply(
        repo,
        record_operation_outcome(
            NAMESPACE, "bookshop-provider", outcome(TenantOperation.PROVISIONING, "bookshop-1-1-0")
        ),
    )

    provider = yaml.safe_load(text_at(repo, "tenants/bookshop-provider.yaml") or "")
    assert provider["spec"] == {
        "capApplicationInstance": "bookshop",
        "subDomain": "bookshop-provider",
        "tenantId": PROVIDER_TENANT_ID,
    }
    assert provider["status"]["state"] == "Ready"


def test_an_outcome_for_an_unknown_tenant_is_refused(repo: SourceRepo) -> None:
    with pytest.raises(PermanentError, match="no record of CAPTenant bookshop/nobody"):
        apply(repo, record_operation_outcome(NAMESPACE, "nobody", outcome(TenantOperation.PROVISIONING, "x")))


# --- removing records and versions -----------------------------------------------------------------


def test_removing_a_record_deletes_its_file_once(repo: SourceRepo) -> None:
    removed = apply(repo, remove_tenant_record(NAMESPACE, "initech"))

    assert removed.summary == f"CAPTenant bookshop/initech: record removed (tenant {INITECH_ID})"
    assert text_at(repo, "tenants/initech.yaml") is None
    assert apply(repo, remove_tenant_record(NAMESPACE, "initech")).commit is None


def test_a_guarded_removal_keeps_a_record_that_is_not_deprovisioned(repo: SourceRepo) -> None:
    assert apply(repo, remove_tenant_record(NAMESPACE, "initech", only_if_deprovisioned=True)).commit is None
    apply(
        repo,
        record_operation_outcome(
            NAMESPACE, "initech", outcome(TenantOperation.DEPROVISIONING, "bookshop-1-1-0")
        ),
    )

    assert (
        apply(repo, remove_tenant_record(NAMESPACE, "initech", only_if_deprovisioned=True)).commit is not None
    )
    assert text_at(repo, "tenants/initech.yaml") is None


def multi_document_tree(tmp_path: Path) -> Path:
    """examples/cap-app with both versions in one file and two tenants in another, with comments."""
    files = tmp_path / "files"
    shutil.copytree(EXAMPLE, files)
    versions = [(files / name).read_text() for name in ("version-1.0.0.yaml", "version-1.1.0.yaml")]
    (files / "versions.yaml").write_text(f"{versions[0]}---\n{versions[1]}")
    tenants = [(files / "tenants" / f"{name}.yaml").read_text() for name in ("acme", "globex")]
    (files / "tenants" / "pair.yaml").write_text(f"{tenants[0]}--- # globex follows\n{tenants[1]}# the end\n")
    for path in ("version-1.0.0.yaml", "version-1.1.0.yaml", "tenants/acme.yaml", "tenants/globex.yaml"):
        (files / path).unlink()
    return files


@pytest.fixture
def multi_repo(tmp_path: Path) -> Iterator[SourceRepo]:
    remote = seed_remote(tmp_path, multi_document_tree(tmp_path))
    source = SourceRepo(RepoSettings(url=str(remote), workdir=tmp_path / "work", batch_window=0.0))
    source.start()
    yield source
    source.stop()


def test_a_document_of_a_multi_document_file_is_edited_or_removed_alone(multi_repo: SourceRepo) -> None:
    acme = (EXAMPLE / "tenants" / "acme.yaml").read_text()
    globex = (EXAMPLE / "tenants" / "globex.yaml").read_text()

    apply(multi_repo, unsubscribe_tenant(NAMESPACE, APP, GLOBEX_ID))
    edited = text_at(multi_repo, "tenants/pair.yaml") or ""
    assert edited.startswith(f"{acme}--- # globex follows\n# A tenant that just subscribed")
    assert edited.endswith("  tenantId: 9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d\n# the end\n")
    assert "btp-gitops.io/deprovision: 'true'" in edited

    apply(multi_repo, remove_tenant_record(NAMESPACE, "acme"))
    remaining = text_at(multi_repo, "tenants/pair.yaml") or ""
    assert remaining == edited.removeprefix(acme)
    assert [t.name for t in index_of(multi_repo).tenants] == ["initech", "globex"]
    assert "btp-gitops.io/deprovision" not in globex

    apply(multi_repo, remove_tenant_record(NAMESPACE, "globex"))
    assert text_at(multi_repo, "tenants/pair.yaml") is None


def test_removing_a_version_from_a_multi_document_file_keeps_the_others(multi_repo: SourceRepo) -> None:
    newer = (EXAMPLE / "version-1.1.0.yaml").read_text()

    removed = apply(multi_repo, remove_version(NAMESPACE, "bookshop-1-0-0"))

    assert removed.summary == "CAPApplicationVersion bookshop/bookshop-1-0-0: removed (version 1.0.0)"
    assert text_at(multi_repo, "versions.yaml") == f"---\n{newer}"
    assert apply(multi_repo, remove_version(NAMESPACE, "bookshop-1-0-0")).commit is None


def test_removing_a_version_alone_in_its_file_deletes_the_file(repo: SourceRepo) -> None:
    apply(repo, remove_version(NAMESPACE, "bookshop-1-0-0"))
    assert text_at(repo, "version-1.0.0.yaml") is None
    assert [v.name for v in index_of(repo).versions] == ["bookshop-1-1-0"]


# --- the one editor: documents of a file, and files it cannot cut into documents -------------------


def test_removing_a_document_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    domain = "# the shared domain\napiVersion: sme.sap.com/v1alpha1\nkind: Domain\nmetadata:\n  name: shop\n  namespace: shop\n"
    path.write_text(
        "# the application\napiVersion: sme.sap.com/v1alpha1\nkind: CAPApplication\n"
        "metadata:\n  name: shop\n  namespace: shop\n---\n" + domain
    )
    with pytest.raises(PermanentError, match=r"CAPApplication shop/other is not in app\.yaml"):
        remove_document(tmp_path, DocumentRef(Path("app.yaml"), CAP_APPLICATION, "shop", "other"))

    remove_document(tmp_path, DocumentRef(Path("app.yaml"), CAP_APPLICATION, "shop", "shop"))

    assert path.read_text() == "---\n" + domain
    assert [d["kind"] for d in yaml.safe_load_all(path.read_text()) if d] == ["Domain"]


@pytest.mark.parametrize(
    "change",
    [
        unsubscribe_tenant(NAMESPACE, APP, ACME_ID),
        record_operation_outcome(NAMESPACE, "acme", outcome(TenantOperation.UPGRADE, "bookshop-1-1-0")),
        remove_tenant_record(NAMESPACE, "acme"),
    ],
    ids=["edit", "outcome", "removal"],
)
def test_a_file_its_separators_do_not_cut_into_documents_is_refused_not_rewritten(
    tmp_path: Path, change: TreeChange
) -> None:
    """One policy for every edit: rewriting such a file from its parsed documents would drop its
    comments (and here its directive), so it is refused and left byte for byte."""
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    record = tree / "tenants" / "acme.yaml"
    text = "%YAML 1.1\n---\n# acme signed the enterprise contract\n" + record.read_text()
    record.write_text(text)

    with pytest.raises(UnreadableSource, match=r"tenants/acme.yaml: .*not separated by plain '---' lines"):
        change(tree)
    assert record.read_text() == text


# --- what the render makes of the records ----------------------------------------------------------


def rendered_tenant_jobs(remote: Path, tmp_path: Path, name: str) -> list[str] | None:
    """The operation types of the Jobs the tenant's app renders from a fresh clone of the remote;
    None when the tenant has no app."""
    clone = tmp_path / f"render-{run_git(remote, 'rev-parse', 'main')[:12]}"
    run_git(tmp_path, "clone", "--quiet", str(remote), str(clone))
    result = render_cluster((clone,), "demo", EmbeddedHelm(), load_schema_registry())
    apps = {app.app: app for app in result.apps}
    app = apps.get(f"cap-tenant.{NAMESPACE}.{name}")
    if app is None:
        return None
    return sorted(
        m.body["metadata"]["labels"]["sme.sap.com/tenant-operation-type"]
        for m in app.manifests
        if m.body["kind"] == "Job"
    )


def test_the_render_provisions_a_new_subscription_and_drops_a_deprovisioned_tenant(
    repo: SourceRepo, remote: Path, tmp_path: Path
) -> None:
    assert rendered_tenant_jobs(remote, tmp_path, NEW_NAME) is None

    apply(repo, subscribe_tenant(subscription()))
    assert rendered_tenant_jobs(remote, tmp_path, NEW_NAME) == ["provisioning"]

    apply(
        repo,
        record_operation_outcome(
            NAMESPACE, NEW_NAME, outcome(TenantOperation.PROVISIONING, "bookshop-1-1-0")
        ),
    )
    assert rendered_tenant_jobs(remote, tmp_path, NEW_NAME) == []

    apply(repo, unsubscribe_tenant(NAMESPACE, APP, NEW_ID))
    assert rendered_tenant_jobs(remote, tmp_path, NEW_NAME) == ["deprovisioning"]

    apply(
        repo,
        record_operation_outcome(
            NAMESPACE, NEW_NAME, outcome(TenantOperation.DEPROVISIONING, "bookshop-1-1-0")
        ),
    )
    assert rendered_tenant_jobs(remote, tmp_path, NEW_NAME) is None


def _index_view(index: SourceIndex) -> dict[str, Any]:
    """Everything an index answers about the example's namespace and application."""
    tenants = index.tenants
    app = index.application(NAMESPACE, APP)
    return {
        "applications": index.applications,
        "tenants": tenants,
        "versions": index.versions,
        "documents": [(path, document.body) for path, document in index.documents],
        "app": app,
        "app by hash": index.application_by_identifier(app.identifier_hash) if app else None,
        "by id": {t.tenant_id: index.tenant(t.namespace, t.application, t.tenant_id) for t in tenants},
        "by name": {t.name: index.tenant_named(t.namespace, t.name) for t in tenants},
        "of app": index.tenants_of(NAMESPACE, APP),
        "by subdomain": {
            t.sub_domain: index.tenants_with_subdomain(NAMESPACE, APP, t.sub_domain) for t in tenants
        },
        "versions of app": index.versions_of(NAMESPACE, APP),
        "namespace": [document.body for document in index.documents_of_namespace(NAMESPACE)],
    }


def _tenant_file(tree: Path, relative: str, name: str, tenant_id: str, sub_domain: str) -> None:
    body = yaml.safe_load((EXAMPLE / "tenants" / "acme.yaml").read_text())
    body["metadata"]["name"] = name
    body["spec"]["tenantId"] = tenant_id
    body["spec"]["subDomain"] = sub_domain
    (tree / relative).write_text(yaml.safe_dump(body))


def test_an_index_made_from_the_one_before_answers_as_one_made_anew(tmp_path: Path) -> None:
    """`of_tree(tree, previous)` (the subscription server indexes each new commit so) answers
    exactly as `of_tree(tree)`, whatever the files did in between (new, rewritten, removed, a
    second record of a name ahead of the first in path order, an unreadable file and its repair),
    and leaves the index it was made from as it was: readers may be holding it."""
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    first = SourceIndex.of_tree(tree)
    first_view = _index_view(first)

    _tenant_file(tree, "tenants/newco.yaml", "newco", NEW_ID, "newco")
    globex = tree / "tenants" / "globex.yaml"
    globex.write_text(globex.read_text().replace("subDomain: globex", "subDomain: globex-moved"))
    (tree / "tenants" / "initech.yaml").unlink()
    _tenant_file(tree, "tenants/aa-acme-twin.yaml", "acme", ACME_ID, "acme-twin")

    second = SourceIndex.of_tree(tree, first)
    assert _index_view(second) == _index_view(SourceIndex.of_tree(tree))
    assert _index_view(first) == first_view
    twin = second.tenant_named(NAMESPACE, "acme")
    assert twin is not None and twin.path == Path("tenants/aa-acme-twin.yaml")  # first in path order
    assert [t.sub_domain for t in second.tenants_with_subdomain(NAMESPACE, APP, "globex-moved")] == [
        "globex-moved"
    ]
    assert second.tenant(NAMESPACE, APP, INITECH_ID) is None
    # The records of the files that did not change are the very ones of the index before.
    assert second.application(NAMESPACE, APP) is first.application(NAMESPACE, APP)

    broken = tree / "tenants" / "broken.yaml"
    broken.write_text("kind: [unclosed\n")
    with pytest.raises(UnreadableSource) as derived:
        SourceIndex.of_tree(tree, second)
    with pytest.raises(UnreadableSource) as anew:
        SourceIndex.of_tree(tree)
    assert derived.value.message == anew.value.message

    broken.unlink()
    (tree / "tenants" / "aa-acme-twin.yaml").unlink()
    third = SourceIndex.of_tree(tree, second)
    assert _index_view(third) == _index_view(SourceIndex.of_tree(tree))
    acme = third.tenant_named(NAMESPACE, "acme")
    assert acme is not None and acme.path == Path("tenants/acme.yaml")
    assert _index_view(first) == first_view
