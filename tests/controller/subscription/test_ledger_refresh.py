"""How the Git ledger refreshes its index from the remote, without a cluster: fetches shared by the
callers waiting for them, at most one per interval, failures reported to whoever waited for them;
and, on a real bare remote with two ledgers (two replicas), a miss answered only after a fetch and
a hit answered from an index no older than `max_staleness`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from btp_gitops.controller.gitstore import RepoSettings, SourceRepo
from btp_gitops.controller.subscription.git_ledger import GitTenantLedger, _Refresher
from btp_gitops.controller.subscription.ledger import SubscriptionEntry
from btp_gitops.generator.core import GitError
from tests.controller.subscription.conftest import APP_HASH, application_documents, bare_remote

NAMESPACE = "shop"
TENANT = "3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d"


class CountingFetch:
    """A fetch that records when each call started and can be held until released."""

    def __init__(self) -> None:
        self.started: list[float] = []
        self.release = threading.Event()
        self.release.set()
        self.failure: Exception | None = None

    def __call__(self) -> None:
        self.started.append(time.monotonic())
        self.release.wait(10)
        if self.failure is not None:
            raise self.failure


def test_callers_waiting_together_share_fetches() -> None:
    fetch = CountingFetch()
    refresher = _Refresher(fetch, min_interval=0.0)
    fetch.release.clear()
    first = threading.Thread(target=refresher.refresh, args=(time.monotonic(),))
    first.start()
    while not fetch.started:
        time.sleep(0.001)
    # Asked while a fetch runs: it started before them, so they need one more, and share it.
    asked = time.monotonic()
    others = [threading.Thread(target=refresher.refresh, args=(asked,)) for _ in range(20)]
    for thread in others:
        thread.start()
    time.sleep(0.1)
    fetch.release.set()
    for thread in [first, *others]:
        thread.join(10)
        assert not thread.is_alive()
    assert len(fetch.started) == 2
    assert fetch.started[1] >= asked
    assert asked <= refresher.fresh_as_of <= fetch.started[1]


def test_a_fetch_started_since_the_question_is_enough() -> None:
    fetch = CountingFetch()
    refresher = _Refresher(fetch, min_interval=0.0)
    asked = time.monotonic()
    refresher.refresh(asked)
    refresher.refresh(asked)  # the first fetch started after `asked`
    refresher.refresh(asked - 60)
    assert len(fetch.started) == 1
    refresher.refresh(time.monotonic())
    assert len(fetch.started) == 2


def test_fetches_start_at_most_once_per_interval() -> None:
    fetch = CountingFetch()
    refresher = _Refresher(fetch, min_interval=0.2)
    for _ in range(4):
        refresher.refresh(time.monotonic())
    gaps = [later - earlier for earlier, later in zip(fetch.started, fetch.started[1:], strict=False)]
    assert len(fetch.started) == 4
    assert all(gap >= 0.2 for gap in gaps), gaps


def test_a_failed_fetch_fails_its_waiters_and_the_next_question_fetches_again() -> None:
    fetch = CountingFetch()
    fetch.failure = GitError("cannot fetch branch main from the remote")
    refresher = _Refresher(fetch, min_interval=0.0)
    fetch.release.clear()
    asked = time.monotonic()
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            refresher.refresh(asked)
        except GitError as error:
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(5)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    fetch.release.set()
    for thread in threads:
        thread.join(10)
    assert len(errors) == 5 and len(fetch.started) == 1  # one failed fetch, reported to all
    assert refresher.fresh_as_of == float("-inf")
    fetch.failure = None
    refresher.refresh(time.monotonic())
    assert len(fetch.started) == 2 and fetch.started[0] < refresher.fresh_as_of <= fetch.started[1]


def test_a_failure_is_not_served_to_a_question_asked_after_it_ended() -> None:
    """A lookup bounded by staleness asks for a fetch since a moment before the failed one started;
    it must fetch again (the remote may be back: readiness saw it), not get the old error."""
    fetch = CountingFetch()
    fetch.failure = GitError("cannot fetch branch main from the remote")
    refresher = _Refresher(fetch, min_interval=0.0)
    reaching_back = time.monotonic()
    with pytest.raises(GitError):
        refresher.refresh(reaching_back)
    fetch.failure = None
    refresher.refresh(reaching_back)
    assert len(fetch.started) == 2 and fetch.started[0] < refresher.fresh_as_of <= fetch.started[1]


# --- two ledgers (two replicas) on one bare remote ------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return bare_remote(tmp_path, {f"apps/{NAMESPACE}/capapplication.yaml": application_documents(NAMESPACE)})


@pytest.fixture
def repos(remote: Path, tmp_path: Path) -> Iterator[tuple[SourceRepo, SourceRepo]]:
    started = []
    for name in ("a", "b"):
        repo = SourceRepo(RepoSettings(url=str(remote), workdir=tmp_path / f"clone-{name}", batch_window=0.0))
        repo.start()
        started.append(repo)
    yield started[0], started[1]
    for repo in started:
        repo.stop()


def _entry(ledger: GitTenantLedger, sub_domain: str) -> SubscriptionEntry:
    app = ledger.find_application(APP_HASH)
    assert app is not None
    return SubscriptionEntry(app, TENANT, sub_domain, "guid", "account", "context")


def test_a_miss_fetches_and_a_hit_is_at_most_max_staleness_old(
    repos: tuple[SourceRepo, SourceRepo],
) -> None:
    repo_a, repo_b = repos
    clock = Clock()
    a = GitTenantLedger(repo_a, record_timeout=30)
    b = GitTenantLedger(repo_b, record_timeout=30, min_refresh_interval=0.0, max_staleness=2.0, clock=clock)
    app = b.find_application(APP_HASH)
    assert app is not None and b.find_tenant(app, TENANT) is None
    fetched = repo_b.head

    a.record_subscription(_entry(a, "first"))
    clock.now += 0.01
    # Unknown to B's index, which is of the seed commit: B fetches before it answers.
    found = b.find_tenant(app, TENANT)
    assert found is not None and found.sub_domain == "first"
    assert repo_b.head != fetched

    a.record_subscription(_entry(a, "second"))
    clock.now += 1.9  # within max_staleness of B's last fetch: the hit may be stale
    found = b.find_tenant(app, TENANT)
    assert found is not None and found.sub_domain == "first"
    assert b.subdomain_holder(app, "first", "another-tenant") == found.name
    clock.now += 0.2  # beyond it: B fetches first
    found = b.find_tenant(app, TENANT)
    assert found is not None and found.sub_domain == "second"
    assert repo_b.head == repo_a.head


def test_the_remote_head_is_read_without_a_fetch(repos: tuple[SourceRepo, SourceRepo]) -> None:
    repo_a, repo_b = repos
    assert repo_b.remote_head() == repo_b.head and repo_b.has_commit(repo_b.head)
    a = GitTenantLedger(repo_a, record_timeout=30)
    a.record_subscription(_entry(a, "first"))
    # B sees A's commit on the remote, but neither holds it nor moved to it.
    assert repo_b.remote_head() == repo_a.head != repo_b.head
    assert not repo_b.has_commit(repo_a.head)
    assert repo_a.has_commit(repo_a.head)
