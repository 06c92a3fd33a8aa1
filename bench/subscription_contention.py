"""Benchmark: the subscription server while other writers push to the same Git remote (issue #18).

    .venv/bin/python -m bench.subscription_contention [--requests 1000] [--clients 50] [--pairs 500]
                                                      [--competitor-rate 5] [--repeat 3]
                                                      [--only competitor|replicas] [--output json]

Setup (not timed), as bench/subscriptions.py: a real etcd + kube-apiserver with the application's
binding Secrets (namespace `bookshop`), the local HTTPS token issuer, a bare Git remote on disk
seeded with examples/cap-app under apps/bookshop/. Each run gets a fresh remote and fresh
`btp-gitops subscription-server` processes (the real CLI, production defaults, listening on
127.0.0.1, a clone each).

Clients follow the client retry of docs/subscription-server.md: the same request again when there
was no answer (connection refused, reset, closed) or a 503, after its `Retry-After` (no answer:
after 0.5 s), on the next replica, for at most 120 s; any other answer is final. Latency is from
the first attempt to the final answer; a request "fails" when its final answer is not the 202 it
should be. Tokens are signed before the clock starts.

(a) competitor: --requests subscribes (distinct tenants) from --clients keep-alive client threads
to one server, while a competing writer (a thread here with a clone of its own: fetch, reset,
append a line to competitor.txt, commit, push; on a rejection it fetches and tries again) commits
--competitor-rate times a second to the same branch. Reported: requests failing after the retry
(goal 0), retries, p50/p90/p99/max latency, the competitor's commits and whether every one is in
the final history (competitor.txt holds exactly its lines, in order), the records in the final
tree (none lost, none duplicated), CPU seconds (server processes with their Git children; this
process with the competitor's Git) and wall time. Baseline, same run, same sizes: the same server
without the competitor.

(b) replicas: two server processes and a controller-side writer in its own process, --pairs
subscribe/unsubscribe pairs from --clients clients: tenant n subscribes on replica n % 2 and, after
its 202, unsubscribes on the other replica. The real controller records an outcome only after a
provisioning Job ran (CAP operator's Jobs, which do not exist here), so the writer uses the
controller's own Git-writing path for outcomes instead: `SourceRepo` (production settings, its own
clone) applying `controller.records.record_operation_outcome` (provisioning on bookshop-1-1-0
succeeded), the change and the message the tenant-operations reconciler submits, for each tenant
as soon as its subscribe got its 202 (the worst case: the outcome races the unsubscribe of the
same record). Reported: wrong answers (a 404 for a recorded tenant, "resource created" for an
existing one, anything not 202), latency, the final tree (every tenant once, marked for
deprovisioning, its outcome recorded; the seeded records untouched), CPU and wall. Baseline, same
run: one replica and no outcome writer, same pairs.

Each configuration runs --repeat times (fresh remote and servers each time); the table shows the
median of the runs for times and CPU, the sum over runs for failures and losses.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.contention_results import (
    Run,
    check_tree,
    competitor_lines,
    goal_met,
    print_text,
    summary_of,
)
from bench.subscription_setup import (
    NAMESPACE_NAME,
    ROOT,
    Environment,
    Tenant,
    git,
    log,
    make_tenants,
    process_cpu,
    saas_body,
    seed_remote,
    set_up,
    wait_ready,
)

CLI = Path(sys.executable).parent / "btp-gitops"
RETRY_BUDGET = 120.0  # seconds a client keeps retrying one request
NO_ANSWER_PAUSE = 0.5  # seconds before retrying a request that got no answer
CLIENT_TIMEOUT = 180.0
MAX_COMPETITOR_ATTEMPTS = 50
VERSION = "bookshop-1-1-0"  # examples/cap-app's newest CAPApplicationVersion
CREATED = "resource created successfully"
UPDATED = "resource exists"
DELETED = "resource deleted successfully"


# --- servers -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Server:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path


@contextlib.contextmanager
def servers(env: Environment, remote: Path, work: Path, count: int) -> Iterator[list[Server]]:
    """`count` `btp-gitops subscription-server` processes on `remote`, ready; stopped with SIGTERM."""
    started: list[Server] = []
    try:
        for index in range(count):
            name = "ab"[index]
            with contextlib.closing(socket.socket()) as probe:
                probe.bind(("127.0.0.1", 0))
                port = int(probe.getsockname()[1])
            log_path = work / f"replica-{name}.log"
            args = [
                str(CLI), "subscription-server", "--kubeconfig", str(env.kubeconfig),
                "--source-repo", str(remote), "--workdir", str(work / f"clone-{name}"),
                "--address", f"127.0.0.1:{port}", "--jwks-ca-file", str(env.jwks_ca_file),
            ]  # fmt: skip
            with log_path.open("w") as stderr:
                process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr)
            started.append(Server(name, port, process, log_path))
        for server in started:
            wait_ready(server.port)
        yield started
    finally:
        for server in started:
            if server.process.poll() is None:
                server.process.send_signal(signal.SIGTERM)
        for server in started:
            try:
                server.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()


# --- clients with the documented retry ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    tenant: Tenant
    replica: int  # the replica the first attempt goes to
    token: str
    callback: str


@dataclass(slots=True)
class Answer:
    status: int  # 0: no answer within the retry budget
    message: str
    attempts: int
    seconds: float  # first attempt to final answer


class Connections:
    """One keep-alive connection per replica for one client thread, reopened after an error."""

    def __init__(self, ports: Sequence[int]) -> None:
        self._ports = ports
        self._open: dict[int, http.client.HTTPConnection] = {}

    def exchange(self, replica: int, call: Call) -> tuple[int, str | None, bytes]:
        connection = self._open.get(replica)
        if connection is None:
            connection = http.client.HTTPConnection("127.0.0.1", self._ports[replica], timeout=CLIENT_TIMEOUT)
            self._open[replica] = connection
        headers = {
            "Authorization": f"Bearer {call.token}",
            "Content-Type": "application/json",
            "STATUS_CALLBACK": call.callback,
        }
        try:
            connection.request(
                call.method, f"/provision/tenants/{call.tenant.tenant_id}", saas_body(call.tenant), headers
            )
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException):
            self.close(replica)
            raise
        if response.will_close:
            self.close(replica)
        return response.status, response.getheader("Retry-After"), body

    def close(self, replica: int) -> None:
        connection = self._open.pop(replica, None)
        if connection is not None:
            connection.close()

    def close_all(self) -> None:
        for replica in list(self._open):
            self.close(replica)


def send_with_retry(connections: Connections, replicas: int, call: Call) -> Answer:
    """docs/subscription-server.md, "Client retry": no answer or 503 -> the same request again,
    after Retry-After (or a short pause), on the next replica; any other answer is final."""
    started = time.perf_counter()
    attempt = 0
    while True:
        replica = (call.replica + attempt) % replicas
        attempt += 1
        try:
            status, retry_after, body = connections.exchange(replica, call)
        except (OSError, http.client.HTTPException):
            status, pause = 0, NO_ANSWER_PAUSE
        else:
            if status != 503:
                return Answer(status, _message(body), attempt, time.perf_counter() - started)
            pause = float(retry_after) if retry_after else NO_ANSWER_PAUSE
        if time.perf_counter() - started + pause > RETRY_BUDGET:
            return Answer(status, "gave up", attempt, time.perf_counter() - started)
        time.sleep(pause)


def _message(body: bytes) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        return body[:80].decode("utf-8", "replace")
    if isinstance(parsed, dict):
        return str(parsed.get("message") or parsed.get("error") or "")
    return ""


Job = list[Call]  # calls one client makes in order (a subscribe, then its unsubscribe)


def run_jobs(
    ports: Sequence[int],
    jobs: list[Job],
    clients: int,
    on_answer: Callable[[Call, Answer], None] | None = None,
    budget: float = float("inf"),
) -> list[list[Answer]]:
    """Each client thread takes the next job from a shared queue and makes its calls in order;
    all start together. The answers, per job; no answers for a job not started within `budget`
    seconds of the start (a run that crawls ends in bounded time, its unsent jobs reported)."""
    work: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(jobs)):
        work.put(index)
    results: list[list[Answer] | None] = [None] * len(jobs)
    start = threading.Barrier(clients)

    def client() -> None:
        connections = Connections(ports)
        start.wait()
        ends = time.perf_counter() + budget
        try:
            while time.perf_counter() < ends:
                try:
                    index = work.get_nowait()
                except queue.Empty:
                    return
                answers = []
                for call in jobs[index]:
                    answer = send_with_retry(connections, len(ports), call)
                    answers.append(answer)
                    if on_answer is not None:
                        on_answer(call, answer)
                    if answer.status != 202:
                        break  # the next call of the job makes no sense without this one
                results[index] = answers
        finally:
            connections.close_all()

    threads = [threading.Thread(target=client, name=f"client-{i}", daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if not work.empty() and budget == float("inf"):
        raise RuntimeError("jobs were left (a client thread died)")
    return [r if r is not None else [] for r in results]


def subscribe_call(tenant: Tenant, replica: int, sign: Callable[[], str]) -> Call:
    return Call(
        "PUT", tenant, replica, sign(), f"/saas-manager/v1/subscription-callback/{uuid.uuid4()}/result"
    )


def unsubscribe_call(tenant: Tenant, replica: int, sign: Callable[[], str]) -> Call:
    return Call(
        "DELETE", tenant, replica, sign(), f"/saas-manager/v1/subscription-callback/{uuid.uuid4()}/result"
    )


# --- the competing writer ----------------------------------------------------------------------------


class Competitor:
    """Another writer on the branch: every 1/rate s a commit appending one line to competitor.txt,
    pushed; a rejected push is fetched, applied again on the new head and pushed again, so each of
    its commits lands (in `pushed`, in order). `rejections` counts the pushes it lost."""

    def __init__(self, remote: Path, clone: Path, rate: float) -> None:
        git(clone.parent, "clone", "--quiet", str(remote), str(clone))
        self._clone = clone
        self._period = 1.0 / rate
        self.pushed: list[str] = []
        self.rejections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="competitor", daemon=True)
        self.started = 0.0
        self.stopped = 0.0
        self.error: Exception | None = None

    def __enter__(self) -> Competitor:
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.stopped = time.perf_counter()
        if self.error is not None:
            raise RuntimeError(f"the competing writer failed: {self.error}") from self.error

    def _commit(self, line: str) -> None:
        git(self._clone, "fetch", "--quiet", "origin")
        git(self._clone, "reset", "--quiet", "--hard", "origin/main")
        with (self._clone / "competitor.txt").open("a") as file:
            file.write(line + "\n")
        git(self._clone, "add", "competitor.txt")
        git(self._clone, "commit", "--quiet", "-m", f"Competitor: {line}")

    def _loop(self) -> None:
        try:
            self._run()
        except Exception as error:  # reported by __exit__: a dead competitor would flatter the run
            self.error = error

    def _run(self) -> None:
        number = 0
        next_tick = time.perf_counter()
        while not self._stop.is_set():
            line = f"competitor-{number}"
            for _ in range(MAX_COMPETITOR_ATTEMPTS):
                self._commit(line)
                try:
                    git(self._clone, "push", "--quiet", "origin", "HEAD:refs/heads/main")
                    break
                except RuntimeError:
                    self.rejections += 1  # another writer got there first: fetch and try again
            else:
                raise RuntimeError(f"{line} was rejected {MAX_COMPETITOR_ATTEMPTS} times in a row")
            self.pushed.append(line)
            number += 1
            next_tick += self._period
            self._stop.wait(max(0.0, next_tick - time.perf_counter()))

    @property
    def rate(self) -> float:
        return len(self.pushed) / max(self.stopped - self.started, 1e-9)


# --- the controller-side outcome writer, in its own process ------------------------------------------


def outcome_writer(config: dict[str, str]) -> None:
    """The process that records outcomes as the controller does: tenant names on stdin, one per
    line; at EOF it waits for every push and prints {"recorded": n, "failed": [...], "attempts": n}."""
    from btp_gitops.controller.app import configure_logging  # noqa: PLC0415 (the writer process only)
    from btp_gitops.controller.gitstore import RepoSettings, SourceRepo  # noqa: PLC0415
    from btp_gitops.controller.records import OperationOutcome, record_operation_outcome  # noqa: PLC0415
    from btp_gitops.generator.domains.cap import TenantOperation  # noqa: PLC0415

    configure_logging("json", "info")
    repo = SourceRepo(RepoSettings(url=config["remote"], workdir=Path(config["workdir"])))
    repo.start()
    outcome = OperationOutcome(TenantOperation.PROVISIONING, VERSION, True)
    pending: dict[str, concurrent.futures.Future[Any]] = {}
    attempts = 0

    def submit(name: str) -> None:
        nonlocal attempts
        attempts += 1
        message = f"Tenant {NAMESPACE_NAME}/{name}: provisioning on {VERSION} succeeded"
        pending[name] = repo.submit(record_operation_outcome(NAMESPACE_NAME, name, outcome), message)

    try:
        for line in sys.stdin:
            if line.strip():
                submit(line.strip())
        failed: list[str] = []
        recorded = 0
        tries = dict.fromkeys(pending, 1)
        while pending:
            name, future = next(iter(pending.items()))
            try:
                future.result(timeout=300)
                recorded += 1
                del pending[name]
            except Exception as error:  # the reconciler retries a failed write later
                if tries[name] >= 5:
                    failed.append(f"{name}: {type(error).__name__}: {error}")
                    del pending[name]
                else:
                    tries[name] += 1
                    submit(name)
        print(json.dumps({"recorded": recorded, "failed": failed, "attempts": attempts}), flush=True)
    finally:
        repo.stop()


class OutcomeWriter:
    def __init__(self, remote: Path, workdir: Path, log_path: Path) -> None:
        config = json.dumps({"remote": str(remote), "workdir": str(workdir)})
        with log_path.open("w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bench.subscription_contention", "--outcome-writer", config],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self._lock = threading.Lock()
        self.log_path = log_path

    def record(self, tenant: Tenant) -> None:
        assert self.process.stdin is not None
        with self._lock:
            self.process.stdin.write(tenant.record_name + "\n")
            self.process.stdin.flush()

    def finish(self) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        line = self.process.stdout.readline()
        self.process.wait(timeout=300)
        if not line:
            raise RuntimeError(f"the outcome writer ended without a summary; see {self.log_path}")
        summary: dict[str, Any] = json.loads(line)
        return summary


# --- one run -----------------------------------------------------------------------------------------


def _cpu_here() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _children_cpu(pids: Sequence[int]) -> float:
    return sum(process_cpu(pid) for pid in pids)


def run_competitor(env: Environment, work: Path, args: argparse.Namespace, contended: bool) -> Run:
    remote, seed = seed_remote(work)
    tenants = make_tenants(args.requests, f"competitor-{work.name}")
    jobs = [[subscribe_call(tenant, 0, env.sign)] for tenant in tenants]
    with servers(env, remote, work, 1) as started:
        pids = [s.process.pid for s in started]
        competitor = Competitor(remote, work / "competitor", args.competitor_rate) if contended else None
        cpu_before, here_before = _children_cpu(pids), _cpu_here()
        begin = time.perf_counter()
        with competitor if competitor is not None else contextlib.nullcontext():
            results = run_jobs([s.port for s in started], jobs, args.clients, budget=args.budget)
            wall = time.perf_counter() - begin
        cpu_servers, cpu_here = _children_cpu(pids) - cpu_before, _cpu_here() - here_before
    sent = [(t, job[0]) for t, job in zip(tenants, results, strict=True) if job]
    answers = [a for _, a in sent]
    wrong = [f"{t.record_name}: {a.status} {a.message}" for t, a in sent if a.status != 202]
    acknowledged = {t.tenant_id for t, a in sent if a.status == 202}

    def expect(tenant: Tenant, record: dict[str, Any]) -> str | None:
        return None if record["spec"].get("subDomain") == tenant.sub_domain else "wrong subdomain"

    run = Run(
        requests=len(answers),
        not_sent=len(tenants) - len(answers),
        failed=len(wrong),
        wrong_examples=wrong[:5],
        retried=sum(a.attempts > 1 for a in answers),
        latencies=sorted(a.seconds for a in answers),
        wall=wall,
        cpu_servers=cpu_servers,
        cpu_here=cpu_here,
        commits=int(git(remote, "rev-list", "--count", f"{seed}..refs/heads/main")),
        tree=check_tree(remote, seed, tenants, acknowledged, expect),
    )
    if competitor is not None:
        run.competitor_commits = len(competitor.pushed)
        run.competitor_kept = competitor_lines(remote) == competitor.pushed
        run.competitor_rate = competitor.rate
        run.competitor_rejections = competitor.rejections
    return run


def judge_pairs(
    tenants: list[Tenant], results: list[list[Answer]]
) -> tuple[list[str], set[str], set[str], int]:
    """(wrong answers, tenant ids subscribed with 202, unsubscribed with 202, requests not sent).
    Right: 202 "created" to the subscribe ("resource exists" too when an earlier attempt got no
    answer and may have landed), 202 "deleted" to the unsubscribe (a 404 means a replica did not
    know a tenant another one recorded)."""
    wrong = []
    acknowledged: set[str] = set()  # subscribe answered 202
    unsubscribed: set[str] = set()  # unsubscribe answered 202
    not_sent = 0
    for tenant, answers in zip(tenants, results, strict=True):
        if not answers:
            not_sent += 2
            continue
        if answers[0].status == 202:
            acknowledged.add(tenant.tenant_id)
        if len(answers) > 1 and answers[1].status == 202:
            unsubscribed.add(tenant.tenant_id)
        steps = ("subscribe", "unsubscribe")
        for step, answer in zip(steps, answers, strict=False):
            if step == "subscribe":
                allowed = {CREATED, UPDATED} if answer.attempts > 1 else {CREATED}
            else:
                allowed = {DELETED}
            if answer.status != 202 or answer.message not in allowed:
                wrong.append(f"{tenant.record_name} {step}: {answer.status} {answer.message!r}")
        if len(answers) < 2:
            not_sent += 1  # its subscribe failed (counted above): nothing to unsubscribe
    return wrong, acknowledged, unsubscribed, not_sent


def run_replicas(env: Environment, work: Path, args: argparse.Namespace, contended: bool) -> Run:
    remote, seed = seed_remote(work)
    tenants = make_tenants(args.pairs, f"pairs-{work.name}")
    count = 2 if contended else 1
    jobs = [
        [subscribe_call(t, n % count, env.sign), unsubscribe_call(t, (n + 1) % count, env.sign)]
        for n, t in enumerate(tenants)
    ]
    writer = (
        OutcomeWriter(remote, work / "outcome-writer", work / "outcome-writer.log") if contended else None
    )

    def on_answer(call: Call, answer: Answer) -> None:
        if call.method == "PUT" and answer.status == 202 and writer is not None:
            writer.record(call.tenant)  # as the controller would once the tenant is provisioned

    try:
        with servers(env, remote, work, count) as started:
            pids = [s.process.pid for s in started]
            cpu_before, here_before = _children_cpu(pids), _cpu_here()
            begin = time.perf_counter()
            results = run_jobs([s.port for s in started], jobs, args.clients, on_answer, args.budget)
            wall = time.perf_counter() - begin
            cpu_servers = _children_cpu(pids) - cpu_before
            reaped_before = _cpu_here()
            summary: dict[str, Any] = writer.finish() if writer is not None else {"recorded": 0, "failed": []}
            cpu_writer = _cpu_here() - reaped_before  # the writer's CPU lands here once it is reaped
            cpu_here = reaped_before - here_before
    finally:
        if writer is not None and writer.process.poll() is None:
            writer.process.kill()
            writer.process.wait()
    wrong, acknowledged, unsubscribed, not_sent = judge_pairs(tenants, results)
    flat = [a for answers in results for a in answers]

    def expect(tenant: Tenant, record: dict[str, Any]) -> str | None:
        annotations = record["metadata"].get("annotations") or {}
        if tenant.tenant_id in unsubscribed and annotations.get("btp-gitops.io/deprovision") != "true":
            return "unsubscribed (202) but not marked for deprovisioning"
        if record["spec"].get("subDomain") != tenant.sub_domain:
            return "wrong subdomain"
        if writer is not None:
            status = record.get("status") or {}
            done = status.get("lastCompletedOperation") or {}
            if (
                done.get("operation") != "provisioning"
                or status.get("currentCAPApplicationVersionInstance") != VERSION
            ):
                return f"outcome not recorded: status {status}"
        return None

    return Run(
        requests=len(flat),
        not_sent=not_sent,
        failed=len(wrong),
        wrong_examples=wrong[:5],
        retried=sum(a.attempts > 1 for a in flat),
        latencies=sorted(a.seconds for a in flat),
        wall=wall,
        cpu_servers=cpu_servers,
        cpu_here=cpu_here,
        commits=int(git(remote, "rev-list", "--count", f"{seed}..refs/heads/main")),
        tree=check_tree(remote, seed, tenants, acknowledged, expect),
        outcomes_recorded=int(summary["recorded"]),
        outcome_failures=list(summary["failed"]),
        cpu_writer=cpu_writer,
    )


# --- measuring ---------------------------------------------------------------------------------------


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(args: argparse.Namespace, work: Path, stack: contextlib.ExitStack) -> dict[str, Any]:
    env = set_up(work, stack)
    report: dict[str, Any] = {
        "repeat": args.repeat,
        "clients": args.clients,
        "competitor_rate": args.competitor_rate,
        "pairs": args.pairs,
        "loadavg": {"before": _loadavg()},
    }
    scenarios: list[tuple[str, Callable[[Environment, Path, argparse.Namespace, bool], Run]]] = []
    if args.only in (None, "competitor"):
        scenarios.append(("competitor", run_competitor))
    if args.only in (None, "replicas"):
        scenarios.append(("replicas", run_replicas))
    for name, runner in scenarios:
        runs: dict[bool, list[Run]] = {True: [], False: []}
        for repeat in range(args.repeat):
            for contended in (True, False):  # interleaved, so a change of the machine's load hits both
                label = f"{name}-{'contended' if contended else 'baseline'}-{repeat}"
                directory = work / label  # seed_remote creates it
                log(f"{label}: running")
                run = runner(env, directory, args, contended)
                log(f"{label}: {run.wall:.1f} s, {run.failed} failed, {run.retried} retried")
                runs[contended].append(run)
        report[name] = {"contended": summary_of(runs[True]), "baseline": summary_of(runs[False])}
    report["loadavg"]["after"] = _loadavg()
    report["goal_met"] = goal_met(report)
    return report


def positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def positive_rate(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive rate, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=positive, default=1000, help="(a): subscribes")
    parser.add_argument("--clients", type=positive, default=50)
    parser.add_argument("--competitor-rate", type=positive_rate, default=5.0, help="(a): commits per second")
    parser.add_argument("--pairs", type=positive, default=500, help="(b): subscribe/unsubscribe pairs")
    parser.add_argument("--repeat", type=positive, default=3, help="runs per configuration (median)")
    parser.add_argument(
        "--budget",
        type=positive_rate,
        default=900.0,
        help="seconds per run after which clients start no new request (the rest: not sent)",
    )
    parser.add_argument("--only", choices=("competitor", "replicas"), help="run one scenario")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    parser.add_argument("--outcome-writer", help=argparse.SUPPRESS)  # the writer process (internal)
    args = parser.parse_args(argv)
    if args.outcome_writer:
        outcome_writer(json.loads(args.outcome_writer))
        return 0
    args.clients = min(args.clients, args.requests, args.pairs)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    with (
        tempfile.TemporaryDirectory(prefix="bench-contention-") as directory,
        contextlib.ExitStack() as stack,
    ):
        report = measure(args, Path(directory), stack)
    if args.output == "json":
        print(json.dumps(report, indent=2))
    else:
        print_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
