"""The two long-running processes, assembled from flags: what runs, in which order, and how it stops.

Controller:  probes up (alive, and ready once listed) -> wait for the Lease -> start the source
             repository and the reconcilers -> run until SIGTERM or the Lease is lost -> stop the
             reconcilers, push what is queued, release the Lease. Losing the Lease ends the process
             (exit 8, LEASE_LOST): the Pod restarts as a candidate, so two leaders never overlap.
Subscription server: the HTTP server and its Git writer; every replica answers (the writer
             retries when another replica pushed first), so it needs no Lease.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry

from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.controller.gitstore import RepoSettings, SourceRepo
from btp_gitops.controller.health import ProbeServer
from btp_gitops.controller.kube import KubeClient, load_api_client
from btp_gitops.controller.leader import LeaderElector, LeaseSettings
from btp_gitops.controller.reconcilers import ReconcilerOptions, build_reconcilers
from btp_gitops.controller.records import WorkingIndex
from btp_gitops.controller.runtime import Manager, RuntimeSettings
from btp_gitops.controller.subscription.git_ledger import GitTenantLedger
from btp_gitops.controller.subscription.server import SubscriptionServerSettings, build_subscription_server
from btp_gitops.generator.core import BtpGitopsError, ExitCode
from btp_gitops.generator.io import bundled

log = logging.getLogger("btp_gitops.controller")


def module_resources_dir(given: Path | None) -> Path:
    """--module-resources, else the artifact shipped with btp-gitops (of its bundled chart)."""
    candidate = given if given is not None else bundled.module_resources_dir()
    if not (candidate / "apply").is_dir():
        raise ConfigurationError(
            f"no module-resources directory (with apply/) at {candidate}: pass --module-resources"
        )
    return candidate


def process_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def source_repo_from_args(args: argparse.Namespace) -> SourceRepo | None:
    if not args.source_repo:
        return None
    return SourceRepo(
        RepoSettings(
            url=args.source_repo,
            workdir=Path(args.workdir),
            branch=args.source_branch,
            network_timeout=args.git_timeout,
            probe_interval=args.git_probe_interval,
        ),
        tracker=WorkingIndex(),
    )


@dataclass
class ControllerProcess:
    kube: KubeClient
    options: ReconcilerOptions
    runtime: RuntimeSettings
    lease: LeaseSettings | None
    probe_address: tuple[str, int]
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    _manager: Manager | None = None
    _lost_lease: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ControllerProcess:
        kube = KubeClient(load_api_client(args.kubeconfig, args.context))
        options = ReconcilerOptions(
            module_resources=module_resources_dir(args.module_resources),
            source_repo=source_repo_from_args(args),
            prometheus_url=args.prometheus_url,
            cleanup_interval=args.cleanup_interval,
            hard_delete_timeout=args.hard_delete_timeout,
        )
        lease = (
            LeaseSettings(
                namespace=args.namespace,
                name=args.lease_name,
                identity=process_identity(),
                lease_duration=args.lease_duration,
                renew_deadline=args.renew_deadline,
                retry_period=args.retry_period,
            )
            if args.leader_elect
            else None
        )
        if args.renew_deadline >= args.lease_duration:
            raise ConfigurationError("--renew-deadline must be shorter than --lease-duration")
        runtime = RuntimeSettings(resync_period=args.resync_period)
        return cls(kube, options, runtime, lease, args.probe_address)

    def _alive(self) -> bool:
        return self._manager is None or self._manager.healthy()

    def _ready(self) -> bool:
        # A standby (no manager yet) is ready: it has nothing to serve until it leads.
        return self._manager is None or self._manager.ready()

    def _unready_reason(self) -> str | None:
        """Why the leader is not ready on account of its source repository (None: it is, or no
        repository, or a standby that has not started it)."""
        repo = self.options.source_repo
        if self._manager is None or repo is None:
            return None
        return repo.remote_health().unready_reason()

    def _start_leading(self) -> None:
        if self.options.source_repo is not None:
            self.options.source_repo.start()
        reconcilers = build_reconcilers(self.kube, self.options, self.registry)
        log.info("starting reconcilers: %s", ", ".join(r.name for r in reconcilers))
        self._manager = Manager(self.kube, reconcilers, self.runtime, self.registry)
        self._manager.start()

    def _stop_leading(self) -> None:
        if self._manager is not None:
            self._manager.stop()
        if self.options.source_repo is not None:
            self.options.source_repo.stop()

    def run(self, stop: threading.Event) -> int:
        probes = ProbeServer(
            *self.probe_address,
            healthy=self._alive,
            ready=self._ready,
            registry=self.registry,
            unready_reason=self._unready_reason,
        )
        probes.start()
        log.info("probes on port %d", probes.port)
        try:
            if self.lease is None:
                self._start_leading()
                stop.wait()
                self._stop_leading()
                return ExitCode.OK
            return self._run_elected(self.lease, stop)
        finally:
            probes.stop()

    def _run_elected(self, lease: LeaseSettings, stop: threading.Event) -> int:
        elector = LeaderElector(self.kube, lease)
        ended = threading.Event()

        failure: list[BtpGitopsError] = []

        def lead() -> None:
            try:
                elector.run(self._start_leading, self._stop_leading)
            except BtpGitopsError as error:  # e.g. the source repository cannot be cloned (GitError)
                failure.append(error)
            finally:
                ended.set()

        leading = threading.Thread(target=lead, name="leader-election", daemon=True)
        leading.start()
        while not stop.wait(0.5):
            if ended.is_set():
                leading.join(5)
                if failure:
                    raise failure[0]
                log.error("leadership lost: exiting so a new leader takes over cleanly")
                return ExitCode.LEASE_LOST
        elector.stop()
        leading.join(30)
        return ExitCode.OK


@dataclass
class SubscriptionServerProcess:
    kube: KubeClient
    settings: SubscriptionServerSettings
    source_repo: SourceRepo

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SubscriptionServerProcess:
        repo = source_repo_from_args(args)
        if repo is None:
            raise ConfigurationError("the subscription server records tenants in Git: pass --source-repo")
        if args.callback_timeout_ms <= 0:
            raise ConfigurationError("--callback-timeout-ms must be positive")
        host, port = args.address
        settings = SubscriptionServerSettings(
            host=host,
            port=port,
            tls_cert_file=str(args.tls_cert) if args.tls_cert else None,
            tls_key_file=str(args.tls_key) if args.tls_key else None,
            namespaces=tuple(args.application_namespace),
            callback_timeout=dt.timedelta(milliseconds=args.callback_timeout_ms),
            jwks_ca_file=str(args.jwks_ca_file) if args.jwks_ca_file else None,
            max_body_bytes=args.max_body_bytes,
            body_timeout=args.body_timeout,
            keepalive_timeout=args.idle_timeout,
            max_concurrent=args.max_concurrent,
            max_queued=max(0, args.max_queued),
        )
        return cls(KubeClient(load_api_client(args.kubeconfig, args.context)), settings, repo)

    def run(self, stop: threading.Event) -> int:
        self.source_repo.start()
        server = build_subscription_server(self.settings, self.kube, GitTenantLedger(self.source_repo))
        try:
            server.start()
            log.info("subscription server on %s port %d", server.scheme, server.port)
            stop.wait()
        finally:
            server.stop()
            self.source_repo.stop()
        return ExitCode.OK
