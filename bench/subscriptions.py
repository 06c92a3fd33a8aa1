"""Benchmark: 1,000 SaaS registry subscribe callbacks to the subscription server, against plain Git.

    .venv/bin/python -m bench.subscriptions [--requests 1000] [--clients 1000 50] [--runs 3]
                                            [--baseline 100] [--batch-window S] [--max-batch N]
                                            [--profile] [--cprofile DIR] [--output json]

Setup (not timed): a real etcd + kube-apiserver (tests/support/kubeapi.py) with the namespace
`bookshop` holding the application's xsuaa and saas-registry binding Secrets; a local HTTPS token
issuer (the XSUAA stand-in of tests/controller/subscription/peers.py: self-signed CA, `localhost`
certificate, RSA signing key); per run, a bare Git remote on disk seeded with examples/cap-app
under apps/bookshop/ (three tenant records already) and the subscription server in its own
process, wired as `btp-gitops subscription-server` wires it (kubeconfig client, `SourceRepo` with
a fresh clone, `GitTenantLedger`, production `RepoSettings` unless --batch-window / --max-batch
say otherwise), listening on 127.0.0.1. The SaaS registry itself is not needed: a subscribe only
opens the pending callback, which the controller sends later.

Run: --requests distinct tenants (own tenant id, subdomain and subscription GUID), each a
`PUT /provision/tenants/{id}` with a signed bearer token, the SaaS registry's JSON body and a
STATUS_CALLBACK header, sent by --clients threads over keep-alive connections (http.client), each
connected before the first request goes out. With as many clients as requests, every request
comes from a connection of its own, all open at once: 1,000 simultaneous clients. Latency is
from sending a request to having read its answer; a connection the server reset or refused is an
answer of its own (`error ...`). Tokens are signed before the clock starts (the registry holds
its token already). Each --clients value is one scenario, run --runs times (a fresh remote and
server each time).

Report, per run: requests/s (all requests over the time to the last answer), p50/p90/p99/max
latency, answers, commits the run added to the remote (`git rev-list --count`), the time from the
first request until the remote held every record (a 202 is sent only after the push carrying its
record, so this is the last 202 when all are 202), the remote's final tree (exactly N new tenant
files, each tenant id exactly once: none lost, none duplicated), CPU seconds of the server (with
its Git commands), kube-apiserver, etcd and the clients, and the load average before and after
(the machine may be shared). Then, per scenario, the median of the runs beside the baseline's.

Baseline, in the same run: the naive writer, one commit and one push per record with plain Git,
sequential, from a fresh clone of a remote seeded the same way, the record written by the same
`controller.records.subscribe_tenant` change. It runs on a sample (--baseline, default 100
tenants) and is extrapolated linearly to N, which flatters it (its per-record cost grows with the
tree); its CPU seconds are this process's and its Git commands'.

--profile adds where the server's time goes: wrappers in the server process around the real
methods (request handling, token check, kube-apiserver calls, ledger lookups, the wait for the
push, each Git command, SourceIndex.of_tree, the writer's batch cycle) and around the clone's lock,
summed per part; plus the changes per batch. Without it the server runs untouched. --cprofile DIR
runs cProfile in every thread the server process starts and writes, per run and thread role
(writer, request, event-loop), DIR/<run>/<role>.pstats and a text summary of the top functions
(cProfile slows the server down several times: use it for shares, not for figures).

Goals (issue #18): with as many clients as requests (1,000 simultaneous), no connection reset,
none lost or duplicated, every 202 and the last push within 12 s; with fewer clients (50), p99 to
the 202 at most 1 s. Every scenario: all N recorded, each exactly once.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import http.client
import io
import json
import os
import pstats
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from bench.subscription_report import (
    GOAL_P99_SECONDS,
    GOAL_SECONDS,
    BaselineResult,
    Report,
    print_summary,
    print_text,
)
from bench.subscription_setup import (
    APP,
    GLOBAL_ACCOUNT,
    NAMESPACE_NAME,
    ROOT,
    Environment,
    RemoteRecords,
    Tenant,
    child_pids_named,
    cluster_objects,
    cpu_snapshot,
    git,
    log,
    make_tenants,
    percentile,
    remote_records,
    saas_body,
    seed_remote,
    set_up,
    wait_ready,
)
from btp_gitops.controller.kube import KubeClient
from btp_gitops.controller.records import Subscription, subscribe_tenant

CLIENT_TIMEOUT = 180.0  # longer than the server's record_timeout (120 s): its answer, not ours


# --- the server, in its own process ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerConfig:
    kubeconfig: str
    remote: str
    workdir: str
    jwks_ca_file: str
    batch_window: float | None
    max_batch: int | None
    profile_file: str | None
    cprofile_dir: str | None = None


def serve(config: ServerConfig) -> None:
    """The server process: wired as `SubscriptionServerProcess.run` wires it; prints its port, serves
    until stdin closes (the parent ends the run or died), then stops as on SIGTERM."""
    from btp_gitops.controller.app import configure_logging  # noqa: PLC0415 (the server process only)
    from btp_gitops.controller.gitstore import RepoSettings, SourceRepo  # noqa: PLC0415
    from btp_gitops.controller.kube import load_api_client  # noqa: PLC0415
    from btp_gitops.controller.subscription.git_ledger import GitTenantLedger  # noqa: PLC0415
    from btp_gitops.controller.subscription.server import (  # noqa: PLC0415
        SubscriptionServerSettings,
        build_subscription_server,
    )

    configure_logging("json", "info")  # the production defaults; stderr goes to a log file
    timings = install_profile() if config.profile_file else None
    cprofiles = install_cprofile() if config.cprofile_dir else None
    tuning: dict[str, Any] = {}
    if config.batch_window is not None:
        tuning["batch_window"] = config.batch_window
    if config.max_batch is not None:
        tuning["max_batch"] = config.max_batch
    repo = SourceRepo(RepoSettings(url=config.remote, workdir=Path(config.workdir), **tuning))
    if timings is not None:
        repo._clone.lock = TimedLock(repo._clone.lock, timings)  # type: ignore[assignment]
    repo.start()
    settings = SubscriptionServerSettings(host="127.0.0.1", port=0, jwks_ca_file=config.jwks_ca_file)
    kube = KubeClient(load_api_client(config.kubeconfig))
    server = build_subscription_server(settings, kube, GitTenantLedger(repo))
    try:
        server.start()
        print(server.port, flush=True)
        sys.stdin.read()
    finally:
        server.stop()
        repo.stop()
        if timings is not None and config.profile_file:
            Path(config.profile_file).write_text(json.dumps(timings.export()))
        if cprofiles is not None and config.cprofile_dir:
            cprofiles.write(Path(config.cprofile_dir))


class Timings:
    """Wall time spent inside instrumented calls, per label, summed over threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, list[float]] = {}
        self.batch_sizes: list[int] = []

    def add(self, label: str, seconds: float) -> None:
        with self._lock:
            entry = self._data.setdefault(label, [0, 0.0])
            entry[0] += 1
            entry[1] += seconds

    def export(self) -> dict[str, Any]:
        with self._lock:
            return {"timings": dict(self._data), "batch_sizes": list(self.batch_sizes)}


class TimedLock:
    """The clone's lock (controller.gitstore's `Clone.lock`, taken by the writer's cycles and by
    every ledger read), timing how long each side waits for it and holds it (--profile only)."""

    def __init__(self, lock: threading.Lock, timings: Timings) -> None:
        self._lock = lock
        self._timings = timings
        self._acquired = 0.0

    def __enter__(self) -> TimedLock:
        started = time.perf_counter()
        self._lock.acquire()
        self._acquired = time.perf_counter()
        self._timings.add(f"{_role()}: waiting for the clone lock", self._acquired - started)
        return self

    def __exit__(self, *exc: object) -> None:
        held = time.perf_counter() - self._acquired
        self._lock.release()
        self._timings.add(f"{_role()}: holding the clone lock", held)


def _role() -> str:
    return "writer" if threading.current_thread().name.startswith("source-repo-writer") else "request"


class ThreadProfiles:
    """cProfile of every thread the server process starts, per role (--cprofile only): a
    profiler per thread (cProfile follows one thread), merged per role when written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._finished: dict[str, list[cProfile.Profile]] = {}

    def add(self, role: str, profile: cProfile.Profile) -> None:
        with self._lock:
            self._finished.setdefault(role, []).append(profile)

    def write(self, directory: Path) -> None:
        """Per role, `<role>.pstats` (for pstats / snakeviz) and `<role>.txt`: the top functions by
        own time and by cumulative time. Threads still running now are not included."""
        time.sleep(0.5)  # the request threads end once the pool is shut down
        directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            finished = {role: list(profiles) for role, profiles in self._finished.items()}
        for role, profiles in finished.items():
            stats = pstats.Stats(profiles[0])
            for profile in profiles[1:]:
                stats.add(profile)
            stats.dump_stats(str(directory / f"{role}.pstats"))
            text = io.StringIO()
            stats.stream = text  # type: ignore[attr-defined]
            print(f"{role}: {len(profiles)} threads", file=text)
            stats.sort_stats("tottime").print_stats(35)
            stats.sort_stats("cumulative").print_stats(45)
            (directory / f"{role}.txt").write_text(text.getvalue())


def _thread_role(name: str) -> str:
    for prefix, role in (
        ("source-repo-writer", "writer"),
        ("subscription-request", "request"),
        ("subscription-server", "event-loop"),
    ):
        if name.startswith(prefix):
            return role
    return "other"


def install_cprofile() -> ThreadProfiles:
    """Profile every thread started from now on with cProfile (--cprofile only)."""
    profiles = ThreadProfiles()
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profile = cProfile.Profile()
        profile.enable()
        try:
            original(self)
        finally:
            profile.disable()
            profiles.add(_thread_role(self.name), profile)

    threading.Thread.run = run  # type: ignore[method-assign]
    return profiles


def install_profile() -> Timings:
    """Time the parts of a subscribe and of the writer's cycle in the server process: each wrapper
    calls the real method and only adds up how long it took (--profile only)."""
    from btp_gitops.controller.gitstore import SourceRepo  # noqa: PLC0415
    from btp_gitops.controller.gitstore.apply import BatchApplier  # noqa: PLC0415
    from btp_gitops.controller.gitstore.pipeline import PushPipeline  # noqa: PLC0415
    from btp_gitops.controller.gitstore.runner import GitRunner  # noqa: PLC0415
    from btp_gitops.controller.records import SourceIndex  # noqa: PLC0415
    from btp_gitops.controller.subscription import git_ledger, server  # noqa: PLC0415
    from btp_gitops.controller.subscription.auth import TokenVerifier  # noqa: PLC0415

    timings = Timings()

    def wrap(owner: Any, name: str, label: Callable[[tuple[Any, ...]], str]) -> None:
        raw = owner.__dict__[name]
        is_class_method = isinstance(raw, classmethod)
        original = raw.__func__ if is_class_method else raw

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timings.add(label(args), time.perf_counter() - started)

        setattr(owner, name, classmethod(timed) if is_class_method else timed)

    def batch(args: tuple[Any, ...]) -> str:
        timings.batch_sizes.append(len(args[1]))
        return "writer: one batch (lock held: fetch, reset, apply, commit, push; the next applied meanwhile)"

    wrap(server, "handle", lambda a: "request: whole handler, in its worker thread")
    wrap(TokenVerifier, "verify", lambda a: "request: verify the bearer token")
    wrap(KubeClient, "_send", lambda a: f"request: kube-apiserver {a[1]}")
    wrap(SourceRepo, "read", lambda a: "request: ledger lookup (waits for the writer's lock)")
    wrap(git_ledger, "_build_snapshot", lambda a: "request: index a new head (SourceIndex + app)")
    wrap(git_ledger.GitTenantLedger, "_apply", lambda a: "request: wait for the push of its record")
    wrap(PushPipeline, "push_batch", batch)
    wrap(BatchApplier, "apply_all", lambda a: "writer: apply the batch's changes (subscribe_tenant)")
    wrap(SourceIndex, "of_tree", lambda a: f"{_role()}: SourceIndex.of_tree (walk + index)")
    wrap(GitRunner, "execute", lambda a: f"{_role()}: git {a[1]}")
    return timings


@contextlib.contextmanager
def running_server(config: ServerConfig, log_path: Path) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    argv = [sys.executable, "-m", "bench.subscriptions", "--serve", json.dumps(asdict(config))]
    with log_path.open("w") as log_file:
        process = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"the server did not start; its log:\n{_tail(log_path)}")
        yield int(line), process
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    stdin: IO[str] | None = process.stdin
    with contextlib.suppress(OSError):
        if stdin is not None:
            stdin.close()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return f"<cannot read {path}: {error}>"


# --- the clients -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prepared:
    tenant: Tenant
    path: str
    body: bytes
    headers: dict[str, str]


@dataclass(slots=True)
class Outcome:
    status: int  # 0: no answer (connection error)
    sent: float  # perf_counter
    answered: float
    error: str = ""

    @property
    def latency(self) -> float:
        return self.answered - self.sent


def prepare(tenants: list[Tenant], sign: Callable[[], str]) -> list[Prepared]:
    return [
        Prepared(
            tenant,
            f"/provision/tenants/{tenant.tenant_id}",
            saas_body(tenant),
            {
                "Authorization": f"Bearer {sign()}",
                "Content-Type": "application/json",
                "STATUS_CALLBACK": f"/saas-manager/v1/subscription-callback/{uuid.uuid4()}/result",
            },
        )
        for tenant in tenants
    ]


def run_clients(port: int, requests: list[Prepared], clients: int) -> list[Outcome]:
    """Each client thread takes the next request from a shared queue and sends it on its own
    keep-alive connection (a new one only when the server closed it); all start together."""
    work: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(requests)):
        work.put(index)
    outcomes: list[Outcome | None] = [None] * len(requests)
    start = threading.Barrier(clients)

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
        connection.connect()
        start.wait()
        while True:
            try:
                index = work.get_nowait()
            except queue.Empty:
                break
            request = requests[index]
            sent = time.perf_counter()
            try:
                connection.request("PUT", request.path, body=request.body, headers=request.headers)
                response = connection.getresponse()
                response.read()
                outcomes[index] = Outcome(response.status, sent, time.perf_counter())
                if response.will_close:
                    connection.close()
            except (OSError, http.client.HTTPException) as error:
                outcomes[index] = Outcome(0, sent, time.perf_counter(), type(error).__name__)
                connection.close()
        connection.close()

    threads = [threading.Thread(target=client, name=f"client-{i}", daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    missing = [i for i, o in enumerate(outcomes) if o is None]
    if missing:
        raise RuntimeError(f"{len(missing)} requests were never sent (a client thread died)")
    return [o for o in outcomes if o is not None]


# --- the baseline: plain Git, a commit and a push per record -----------------------------------------


def _own_and_children_cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def run_baseline(directory: Path, tenants: list[Tenant]) -> BaselineResult:
    remote, seed = seed_remote(directory)
    clone = directory / "clone"
    git(directory, "clone", "--quiet", str(remote), str(clone))
    cpu_before = _own_and_children_cpu()
    durations = []
    for tenant in tenants:
        started = time.perf_counter()
        change = subscribe_tenant(
            Subscription(
                namespace=NAMESPACE_NAME,
                application=APP,
                tenant_id=tenant.tenant_id,
                sub_domain=tenant.sub_domain,
                subscription_guid=tenant.subscription_guid,
                global_account_id=GLOBAL_ACCOUNT,
                subscription_context_secret=f"{tenant.record_name}-subscription-context",
            )
        )
        if change(clone) is None:
            raise RuntimeError(f"the baseline's change for {tenant.tenant_id} changed nothing")
        git(clone, "add", "--all")
        git(clone, "commit", "--quiet", "--no-verify", "-m", f"Subscribe tenant {tenant.tenant_id}")
        git(clone, "push", "--quiet", "origin", "HEAD:refs/heads/main")
        durations.append(time.perf_counter() - started)
    cpu = _own_and_children_cpu() - cpu_before
    quarter = max(1, len(durations) // 4)
    records = remote_records(remote, seed, tenants)
    return BaselineResult(
        tenants=len(tenants),
        seconds=sum(durations),
        per_record=sum(durations) / len(durations),
        first_quarter=sum(durations[:quarter]) / quarter,
        last_quarter=sum(durations[-quarter:]) / quarter,
        commits=records.commits,
        complete=records.complete and records.new_files == len(tenants),
        cpu_seconds=cpu,
    )


# --- the run -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class ServerRun:
    outcomes: list[Outcome]
    last_answer: float  # seconds from the first request
    all_pushed: float | None
    records: RemoteRecords
    cluster: tuple[int, int]
    cpu: dict[str, float]
    profile: dict[str, Any] | None
    load_before: str = ""
    load_after: str = ""


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (the machine may be shared with other work)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def run_server(args: argparse.Namespace, env: Environment, work: Path, tenants: list[Tenant]) -> ServerRun:
    work.mkdir(parents=True, exist_ok=True)
    remote, seed = seed_remote(work / "server")
    profile_file = work / "profile.json"
    config = ServerConfig(
        kubeconfig=str(env.kubeconfig),
        remote=str(remote),
        workdir=str(work / "server" / "clone"),
        jwks_ca_file=str(env.jwks_ca_file),
        batch_window=args.batch_window,
        max_batch=args.max_batch,
        profile_file=str(profile_file) if args.profile else None,
        cprofile_dir=str(Path(args.cprofile).resolve() / work.name) if args.cprofile else None,
    )
    log_path = work / "server.log"
    with running_server(config, log_path) as (port, process):
        try:
            wait_ready(port)
            requests = prepare(tenants, env.sign)
            log(f"setup: server on 127.0.0.1:{port}, {len(requests)} requests signed; running")
            others = child_pids_named("kube-apiserver", "etcd")
            load_before = load_average()
            cpu_before = cpu_snapshot(process.pid, others)
            outcomes = run_clients(port, requests, args.clients)
            cpu_after = cpu_snapshot(process.pid, others)
            load_after = load_average()
            first = min(o.sent for o in outcomes)
            last_answer = max(o.answered for o in outcomes) - first
            all_pushed, records = wait_all_recorded(
                remote, seed, tenants, outcomes, first=first, last_answer=last_answer
            )
            cluster = cluster_objects(env.kube)
        except BaseException:
            log(f"the server's log (last lines):\n{_tail(log_path)}")
            raise
    cpu = {name: cpu_after[name] - cpu_before[name] for name in cpu_after}
    cpu["wall"] = last_answer
    profile = json.loads(profile_file.read_text()) if args.profile else None
    return ServerRun(
        outcomes, last_answer, all_pushed, records, cluster, cpu, profile, load_before, load_after
    )


def measure(args: argparse.Namespace, work: Path, stack: contextlib.ExitStack) -> Report:
    """One run of one scenario (`args.clients` a number)."""
    env = set_up(work, stack)
    run = run_server(args, env, work, make_tenants(args.requests, "subscriber"))
    sample = make_tenants(min(args.baseline, args.requests), "baseline")
    log(f"baseline: {len(sample)} tenants, one commit + push each")
    baseline = run_baseline(work / "baseline", sample)
    return summarize(args, run, baseline)


def measure_runs(args: argparse.Namespace, work: Path, stack: contextlib.ExitStack) -> list[Report]:
    """Every scenario (--clients value) --runs times, each run with its own remote and server and
    a baseline measured right after it: reports in the order run."""
    env = set_up(work, stack)
    reports = []
    for number in range(args.runs):
        for clients in args.clients:
            scenario = argparse.Namespace(**{**vars(args), "clients": min(clients, args.requests)})
            place = work / f"run-{number}-{clients}"
            log(f"run {number + 1}/{args.runs}: {args.requests} requests from {scenario.clients} clients")
            run = run_server(scenario, env, place, make_tenants(args.requests, f"r{number}c{clients}"))
            sample = make_tenants(min(args.baseline, args.requests), f"baseline{number}c{clients}")
            baseline = run_baseline(place / "baseline", sample)
            reports.append(summarize(scenario, run, baseline))
    return reports


def summarize(args: argparse.Namespace, run: ServerRun, baseline: BaselineResult) -> Report:
    from btp_gitops.controller.gitstore import RepoSettings  # noqa: PLC0415

    defaults = RepoSettings(url="", workdir=Path())
    latencies = sorted(o.latency for o in run.outcomes)
    answers = Counter(str(o.status) if o.status else f"error {o.error}" for o in run.outcomes)
    non_202 = sum(count for status, count in answers.items() if status != "202")
    throughput = len(run.outcomes) / run.last_answer
    extrapolated = baseline.per_record * args.requests
    p99 = percentile(latencies, 0.99)
    records = run.records
    connection_errors = sum(1 for o in run.outcomes if not o.status)
    misses = []
    if non_202 or not records.complete or records.new_files != args.requests:
        misses.append("not all recorded")
    if records.lost or records.duplicated:
        misses.append(f"{records.lost} lost, {records.duplicated} duplicated")
    if args.clients >= args.requests:  # simultaneous clients
        if connection_errors:
            misses.append(f"{connection_errors} connection errors")
        if run.all_pushed is None or run.all_pushed > GOAL_SECONDS:
            misses.append(f"not all pushed within {GOAL_SECONDS:.0f} s")
    elif p99 > GOAL_P99_SECONDS:
        misses.append(f"p99 over {GOAL_P99_SECONDS:.0f} s")
    return Report(
        requests=args.requests,
        clients=args.clients,
        batch_window=defaults.batch_window if args.batch_window is None else args.batch_window,
        max_batch=defaults.max_batch if args.max_batch is None else args.max_batch,
        requests_per_second=throughput,
        p50_ms=percentile(latencies, 0.50) * 1000,
        p90_ms=percentile(latencies, 0.90) * 1000,
        p99_ms=p99 * 1000,
        max_ms=latencies[-1] * 1000,
        answers=dict(sorted(answers.items())),
        non_202=non_202,
        commits=records.commits,
        all_pushed_seconds=run.all_pushed,
        last_answer_seconds=run.last_answer,
        new_files=records.new_files,
        lost=records.lost,
        duplicated=records.duplicated,
        unexpected=records.unexpected,
        context_secrets=run.cluster[0],
        pending_callbacks=run.cluster[1],
        cpu_seconds=run.cpu,
        baseline=baseline,
        baseline_extrapolated_seconds=extrapolated,
        throughput_ratio=throughput / (baseline.tenants / baseline.seconds),
        time_ratio=extrapolated / run.all_pushed if run.all_pushed else None,
        goal_met=not misses,
        goal_misses=misses,
        profile=run.profile,
        connection_errors=connection_errors,
        load_before=run.load_before,
        load_after=run.load_after,
    )


def wait_all_recorded(
    remote: Path,
    seed: str,
    tenants: list[Tenant],
    outcomes: list[Outcome],
    *,
    first: float,
    last_answer: float,
    grace: float = 30.0,
) -> tuple[float | None, RemoteRecords]:
    """When the remote held every record, in seconds from the first request. With every answer a
    202 that is the last answer (each 202 follows the push carrying its record; the final tree is
    checked all the same). Otherwise records may still land (an unconfirmed push): the remote is
    polled for `grace` seconds more, and None says it never held them all."""
    records = remote_records(remote, seed, tenants)
    complete = records.complete and records.new_files == len(tenants)
    if all(o.status == 202 for o in outcomes):
        return (last_answer if complete else None), records
    deadline = time.perf_counter() + grace
    while not complete and time.perf_counter() < deadline:
        time.sleep(0.5)
        records = remote_records(remote, seed, tenants)
        complete = records.complete and records.new_files == len(tenants)
    return (max(last_answer, time.perf_counter() - first) if complete else None), records


# --- main --------------------------------------------------------------------------------------------


def positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=positive, default=1000)
    parser.add_argument(
        "--clients", type=positive, nargs="+", default=[1000, 50], help="one scenario per value"
    )
    parser.add_argument("--runs", type=positive, default=3, help="runs per scenario (medians reported)")
    parser.add_argument("--baseline", type=positive, default=100, help="tenants in the baseline's sample")
    parser.add_argument(
        "--batch-window", type=float, help="RepoSettings.batch_window (default: production's)"
    )
    parser.add_argument("--max-batch", type=positive, help="RepoSettings.max_batch (default: production's)")
    parser.add_argument("--profile", action="store_true", help="time the server's parts (adds a table)")
    parser.add_argument(
        "--cprofile",
        metavar="DIR",
        help="cProfile the server's threads; per run and role (writer, request, event-loop) "
        "DIR/<run>/<role>.pstats and .txt (top functions)",
    )
    parser.add_argument("--output", choices=("text", "json"), default="text")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the server process (internal)
    args = parser.parse_args(argv)
    if args.serve:
        serve(ServerConfig(**json.loads(args.serve)))
        return 0
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))  # clean up on SIGTERM
    with (
        tempfile.TemporaryDirectory(prefix="bench-subscriptions-") as directory,
        contextlib.ExitStack() as stack,
    ):
        reports = measure_runs(args, Path(directory), stack)
    if args.output == "json":
        print(json.dumps([asdict(report) for report in reports], indent=2))
        return 0
    for report in reports:
        print_text(report)
        print()
    print_summary(reports)
    return 0


if __name__ == "__main__":
    sys.exit(main())
