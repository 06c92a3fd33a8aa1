"""controller.gitstore against a remote that misbehaves: real Git over HTTP on 127.0.0.1
(tests.support.git_http: `git http-backend` behind a server that can hang, close its port, or take a
push and withhold its answer).

Covers: a hung remote fails a change with GitTimeout naming the operation, within the timeout, with
the URL's credentials masked and no Git process left behind, and what queued behind it fails with
it; the remote health turns unreachable and, through the idle probe, reachable again once the remote
answers; a closed port likewise; a push whose answer is lost (timeout, dropped connection) after it
landed resolves as pushed; a push not landed while the branch stays where it started fails with
OutcomeUnknown (it could still land) and leaves nothing behind; one that can no longer land (the
branch moved on) is applied again on the new head; a push that may have landed while the remote
cannot be asked fails with OutcomeUnknown, and the change submitted again finds it landed and
changes nothing; probing a hung remote runs one Git process at a time; the probe server's /readyz
names an unreachable remote (503, Retry-After) and recovers; the --git-* flags of both commands
reach the writer. Nothing is faked.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from btp_gitops.controller.errors import GitTimeout, OutcomeUnknown
from btp_gitops.controller.gitstore import SourceRepo
from btp_gitops.controller.health import ProbeServer
from btp_gitops.controller.process import source_repo_from_args
from btp_gitops.generator.cli import build_parser
from btp_gitops.generator.core.errors import GitError
from tests.controller.test_gitstore import AppendLine, WriteFile, remote_head, run_git, settings_for
from tests.support.git_http import GitHttpRemote

TIMEOUT = 1.5
# A 1.5 s network timeout, and bounds of TIMEOUT + 3 s on the failures: a second worker's Git and
# HTTP servers competing for the cores made operations that must succeed time out (tests.support.parallel).
pytestmark = pytest.mark.serial
PASSWORD = "s3cret-password"


@pytest.fixture
def http_remote(tmp_path: Path) -> Iterator[GitHttpRemote]:
    root = tmp_path / "served"
    root.mkdir()
    bare = root / "remote.git"
    run_git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = tmp_path / "seed"
    run_git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    (seed / "README.md").write_text("source repository\n")
    run_git(seed, "add", "README.md")
    run_git(seed, "commit", "--quiet", "-m", "seed")
    run_git(seed, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    served = GitHttpRemote(root)
    yield served
    served.stop()


@pytest.fixture
def repo(http_remote: GitHttpRemote, tmp_path: Path) -> Iterator[SourceRepo]:
    url = http_remote.url(user_info=f"writer:{PASSWORD}")
    source = SourceRepo(settings_for(url, tmp_path / "work", network_timeout=TIMEOUT, probe_interval=0.2))
    source.start()
    yield source
    source.stop()


def bare(remote: GitHttpRemote) -> Path:
    return remote.root / "remote.git"


def git_processes_of(remote: GitHttpRemote) -> list[int]:
    """Processes whose command line names the remote's port (git, git-remote-http)."""
    marker = f"127.0.0.1:{remote.port}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in command and b"git" in command:
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_hung_remote_times_out_then_readiness_follows_it_back(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    repo.apply(WriteFile("before.txt", "1\n"), "before", timeout=30)
    assert repo.remote_health().reachable
    http_remote.hang()

    started = time.monotonic()
    with pytest.raises(GitTimeout) as raised:
        repo.apply(WriteFile("during.txt", "1\n"), "during", timeout=30)
    took = time.monotonic() - started

    assert TIMEOUT <= took < TIMEOUT + 3, took
    assert raised.value.operation == "fetch"
    assert PASSWORD not in raised.value.message and "***@127.0.0.1" in raised.value.message
    health = repo.remote_health()
    assert not health.reachable
    assert "did not answer" in health.problem and PASSWORD not in health.problem
    wait_for(lambda: not git_processes_of(http_remote), 5, "the timed-out Git processes to be gone")
    assert not (bare(http_remote) / "during.txt").exists()

    http_remote.serve()
    wait_for(lambda: repo.remote_health().reachable, 10, "the probe to find the remote again")
    outcome = repo.apply(WriteFile("after.txt", "1\n"), "after", timeout=30)
    assert outcome.commit == remote_head(bare(http_remote))


def test_changes_queued_behind_a_hung_remote_fail_with_it_not_one_timeout_later(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    http_remote.hang()
    started = time.monotonic()
    first = repo.submit(WriteFile("a.txt", "1\n"), "a")
    wait_for(lambda: http_remote.held >= 1, 10, "the first fetch to be held")
    second = repo.submit(WriteFile("b.txt", "1\n"), "b")

    with pytest.raises(GitTimeout):
        first.result(30)
    with pytest.raises(GitError) as raised:
        second.result(30)

    assert time.monotonic() - started < 1.5 * TIMEOUT
    assert "does not answer" in raised.value.message and PASSWORD not in raised.value.message


def test_a_closed_port_fails_fast_and_is_found_again(repo: SourceRepo, http_remote: GitHttpRemote) -> None:
    http_remote.close()
    started = time.monotonic()
    with pytest.raises(GitError) as raised:
        repo.apply(WriteFile("x.txt", "1\n"), "x", timeout=30)
    assert time.monotonic() - started < TIMEOUT + 1
    assert not isinstance(raised.value, GitTimeout)
    assert PASSWORD not in raised.value.message
    health = repo.remote_health()
    assert not health.reachable and "fetch failed" in health.problem and PASSWORD not in health.problem

    http_remote.reopen()
    wait_for(lambda: repo.remote_health().reachable, 10, "the probe to find the remote again")
    assert repo.apply(WriteFile("x.txt", "1\n"), "x", timeout=30).commit == remote_head(bare(http_remote))


def test_a_push_whose_answer_is_lost_after_it_landed_is_reported_pushed(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    http_remote.lose_push_ack()

    outcome = repo.apply(WriteFile("tenant.yaml", "recorded\n"), "record a tenant", timeout=30)

    assert http_remote.pushes_landed == 1
    assert outcome.commit is not None and outcome.commit == remote_head(bare(http_remote))
    assert outcome.summary == "write tenant.yaml"
    assert run_git(bare(http_remote), "show", "main:tenant.yaml") == "recorded"
    assert repo.remote_health().reachable  # the fetch that settled it got an answer
    http_remote.serve()
    assert repo.read(lambda tree: (tree / "tenant.yaml").read_text()) == "recorded\n"


def test_a_push_whose_connection_drops_after_it_landed_is_reported_pushed(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    http_remote.lose_push_ack()
    started = time.monotonic()
    future = repo.submit(WriteFile("tenant.yaml", "recorded\n"), "record a tenant")
    wait_for(lambda: http_remote.held == 1, 10, "the push to land and its answer to be held")
    http_remote.serve()  # the held answer is dropped: the connection closes without one

    outcome = future.result(30)

    assert time.monotonic() - started < TIMEOUT  # settled on the lost connection, no timeout
    assert (outcome.commit, outcome.attempts) == (remote_head(bare(http_remote)), 1)


def test_a_push_not_landed_while_the_branch_stays_is_unknown_and_the_retry_lands(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    before = remote_head(bare(http_remote))
    http_remote.hang_pushes()  # held before Git sees it: it has not landed, but could it still?

    with pytest.raises(OutcomeUnknown):
        repo.apply(WriteFile("tenant.yaml", "recorded\n"), "record a tenant", timeout=30)

    assert remote_head(bare(http_remote)) == before
    assert repo.remote_health().reachable  # the fetch after the push got its answer
    http_remote.serve()
    outcome = repo.apply(WriteFile("tenant.yaml", "recorded\n"), "record a tenant", timeout=30)
    assert outcome.commit == remote_head(bare(http_remote)) != before


def test_a_push_without_answer_that_can_no_longer_land_is_applied_again_on_the_new_head(
    repo: SourceRepo, http_remote: GitHttpRemote, tmp_path: Path
) -> None:
    http_remote.hang_pushes()
    future = repo.submit(AppendLine("shared.txt", "ours"), "ours")
    wait_for(lambda: http_remote.held == 1, 10, "our push to be held")
    # Another writer moves the branch on meanwhile: our held push (based on the old head) can
    # never land now, whatever the remote does with it.
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "--quiet", str(bare(http_remote)), str(other))
    (other / "shared.txt").write_text("theirs\n")
    run_git(other, "add", "shared.txt")
    run_git(other, "commit", "--quiet", "-m", "theirs")
    run_git(other, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    http_remote.serve(release=False)  # new requests are answered; the held push times out

    outcome = future.result(30)

    assert outcome.commit == remote_head(bare(http_remote))
    assert outcome.attempts == 2
    assert run_git(bare(http_remote), "show", "main:shared.txt").splitlines() == ["theirs", "ours"]


def test_a_push_that_may_have_landed_is_unknown_until_the_remote_answers(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    http_remote.lose_push_ack(hang_after=True)

    with pytest.raises(OutcomeUnknown):
        repo.apply(WriteFile("tenant.yaml", "recorded\n"), "record a tenant", timeout=30)

    assert http_remote.pushes_landed == 1
    landed = remote_head(bare(http_remote))
    assert run_git(bare(http_remote), "show", "main:tenant.yaml") == "recorded"
    assert not repo.remote_health().reachable
    http_remote.serve()
    # The caller's retry: the change finds itself on the remote and nothing is committed twice.
    again = repo.apply(WriteFile("tenant.yaml", "recorded\n"), "record a tenant", timeout=30)
    assert again.commit is None
    assert remote_head(bare(http_remote)) == landed
    assert repo.remote_health().reachable


def test_probing_a_hung_remote_runs_one_git_process_at_a_time(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    http_remote.hang()
    wait_for(lambda: not repo.remote_health().reachable, 10, "the probe to time out")
    seen = 0
    deadline = time.monotonic() + 3 * TIMEOUT
    while time.monotonic() < deadline:
        # git ls-remote and its git-remote-http helper: one probe, never a pile of them
        seen = max(seen, len(git_processes_of(http_remote)))
        time.sleep(0.05)
    assert 1 <= seen <= 2
    assert not repo.remote_health().reachable


@pytest.mark.parametrize("command", ["controller", "subscription-server"])
def test_the_git_flags_reach_the_writer(command: str, tmp_path: Path) -> None:
    common = [command, "--source-repo", "https://example.invalid/sources.git", "--workdir", str(tmp_path)]
    defaults = source_repo_from_args(build_parser().parse_args(common))
    assert defaults is not None
    assert (defaults.settings.network_timeout, defaults.settings.probe_interval) == (30.0, 10.0)
    given = build_parser().parse_args([*common, "--git-timeout", "7.5", "--git-probe-interval", "2"])
    chosen = source_repo_from_args(given)
    assert chosen is not None
    assert (chosen.settings.network_timeout, chosen.settings.probe_interval) == (7.5, 2.0)
    with pytest.raises(SystemExit):
        build_parser().parse_args([*common, "--git-timeout", "0"])


def test_the_probe_server_readyz_names_an_unreachable_remote(
    repo: SourceRepo, http_remote: GitHttpRemote
) -> None:
    probes = ProbeServer(
        "127.0.0.1",
        0,
        healthy=lambda: True,
        ready=lambda: True,
        registry=CollectorRegistry(),
        unready_reason=lambda: repo.remote_health().unready_reason(),
    )
    probes.start()
    try:

        def readyz() -> tuple[int, str | None, bytes]:
            connection = http.client.HTTPConnection("127.0.0.1", probes.port, timeout=10)
            try:
                connection.request("GET", "/readyz")
                answer = connection.getresponse()
                return answer.status, answer.getheader("Retry-After"), answer.read()
            finally:
                connection.close()

        assert readyz()[0] == 200
        http_remote.close()
        wait_for(lambda: readyz()[0] == 503, 10, "the probe to find the remote gone")
        status, retry_after, body = readyz()
        assert status == 503
        assert retry_after is not None and int(retry_after) >= 1
        reason = json.loads(body)["error"]
        assert reason.startswith("the source repository is unreachable: git ls-remote failed")
        assert PASSWORD not in reason
        http_remote.reopen()
        wait_for(lambda: readyz()[0] == 200, 10, "the probe to find the remote again")
    finally:
        probes.stop()
