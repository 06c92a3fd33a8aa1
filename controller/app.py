"""The `controller` and `subscription-server` processes: flags, logging, and wiring the parts.

Everything here is plumbing: which reconcilers run (each needs only what its flags give it: the
BTP operator ones need just the cluster, the CAP Git ones need `--source-repo`, version cleanup
also `--prometheus-url`), the probe server, leader election, and a clean stop on SIGTERM. The
one place that turns controller errors into exit codes and messages is `run_command`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.generator.core import BtpGitopsError, exit_code_for

log = logging.getLogger("btp_gitops.controller")

DEFAULT_WORKDIR = "/var/lib/btp-gitops/source"


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: what log collectors parse without rules."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, sort_keys=True)


def configure_logging(log_format: str, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The Kubernetes client logs request bodies at DEBUG (Secrets included): never let it.
    logging.getLogger("kubernetes").setLevel(max(logging.INFO, root.level))
    logging.getLogger("urllib3").setLevel(max(logging.WARNING, root.level))


def host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "0.0.0.0", int(port)


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from error
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def _add_common_options(parser: argparse.ArgumentParser) -> None:
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument("--kubeconfig", help="default: in-cluster credentials, else $KUBECONFIG")
    cluster.add_argument("--context", help="kubeconfig context")
    git = parser.add_argument_group("source repository")
    git.add_argument("--source-repo", metavar="URL", help="the Git repository the generator renders from")
    git.add_argument("--source-branch", metavar="BRANCH", default="main")
    git.add_argument("--workdir", metavar="DIR", default=DEFAULT_WORKDIR, help="where the clone is kept")
    git.add_argument(
        "--git-timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="a fetch, push or ls-remote of the source repository is killed after this long",
    )
    git.add_argument(
        "--git-probe-interval",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="an idle writer checks that the remote answers this often (readiness)",
    )
    logs = parser.add_argument_group("logging")
    logs.add_argument("--log-format", choices=("json", "text"), default="json")
    logs.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")


def add_controller_command(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "controller",
        help="run the reconcilers that need live cluster state",
        description="Deletion finalizers (BtpOperator, CAP), outdated module resources, tenant operation "
        "outcomes and subscription callbacks, and CAP version cleanup. Safe to restart at any moment; "
        "with leader election only one replica acts. A long-running server: it prints no result, so there "
        "is no -o/--output, and it logs (--log-format, --log-level) instead of taking --quiet or --verbose.",
    )
    _add_common_options(parser)
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "btp-gitops-system"),
        help="the namespace the Lease lives in (default: $POD_NAMESPACE)",
    )
    parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--lease-name", default="btp-gitops-controller")
    parser.add_argument(
        "--lease-duration",
        type=positive_seconds,
        default=15.0,
        metavar="SECONDS",
        help="how long a standby waits after the last renewal before taking over",
    )
    parser.add_argument(
        "--renew-deadline",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="a leader that could not renew for this long stops (and exits)",
    )
    parser.add_argument("--retry-period", type=positive_seconds, default=2.0, metavar="SECONDS")
    parser.add_argument(
        "--probe-address",
        type=host_port,
        default=("0.0.0.0", 8081),
        help="serves /healthz, /readyz, /metrics",
    )
    parser.add_argument(
        "--module-resources",
        type=Path,
        default=None,
        help="the module-resources/ directory (default: the one shipped with btp-gitops)",
    )
    parser.add_argument("--prometheus-url", metavar="URL", help="enables CAP version cleanup")
    parser.add_argument("--cleanup-interval", type=positive_seconds, default=600.0, metavar="SECONDS")
    parser.add_argument("--hard-delete-timeout", type=positive_seconds, default=1200.0, metavar="SECONDS")
    parser.add_argument("--resync-period", type=positive_seconds, default=300.0, metavar="SECONDS")
    parser.set_defaults(handler=lambda args: run_command(args, run_controller))


def add_subscription_server_command(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "subscription-server",
        help="answer SaaS registry and subscription manager callbacks",
        description="Records subscribed tenants in the source Git repository (202 only once pushed) and "
        "marks unsubscribed ones for deprovisioning; the controller sends the asynchronous callbacks. "
        "A long-running server: it prints no result, so there is no -o/--output, and it logs "
        "(--log-format, --log-level) instead of taking --quiet or --verbose.",
    )
    _add_common_options(parser)
    parser.add_argument("--address", type=host_port, default=("0.0.0.0", 8080))
    parser.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate chain")
    parser.add_argument("--tls-key", type=Path, help="the key of --tls-cert")
    parser.add_argument("--callback-timeout-ms", type=int, default=900_000, metavar="MS")
    parser.add_argument(
        "--jwks-ca-file", type=Path, help="CA bundle for the token issuers' token_keys (default: system CAs)"
    )
    limits = parser.add_argument_group("limits (per connection and request)")
    limits.add_argument("--max-body-bytes", type=positive_int, default=1 << 20, metavar="BYTES")
    limits.add_argument(
        "--body-timeout", type=positive_seconds, default=30.0, metavar="SECONDS", help="a slower body: 408"
    )
    limits.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=15.0,
        metavar="SECONDS",
        help="close a connection without a complete request for this long (a new one too)",
    )
    limits.add_argument(
        "--max-concurrent",
        type=positive_int,
        default=128,
        metavar="N",
        help="handlers at work at once (one waiting for its Git push does not count)",
    )
    limits.add_argument(
        "--max-queued",
        type=int,
        default=1024,
        metavar="N",
        help="requests waiting for a handler; more: 503 with Retry-After",
    )
    parser.add_argument(
        "--application-namespace",
        action="append",
        default=[],
        metavar="NS",
        help="serve only CAPApplications of this namespace (repeatable; default: all)",
    )
    parser.set_defaults(handler=lambda args: run_command(args, run_subscription_server))


def run_command(args: argparse.Namespace, body: Callable[[argparse.Namespace], int]) -> int:
    """The one place controller errors become exit codes (core.exit_codes) and messages. Errors of
    the generator's raised here (a GitError of the source repository, a broken installation) are
    errors of this process too."""
    configure_logging(args.log_format, args.log_level)
    try:
        return body(args)
    except BtpGitopsError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return exit_code_for(error)


class StopSignal:
    """SIGTERM/SIGINT set an event the process waits on (the kubelet's way to stop a Pod)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._received = itertools.count()
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, self._handle)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        # A supervisor may deliver the stop more than once (`timeout` signals the process and then
        # its process group): the stop is one event, reported once. The second signal's handler
        # can run inside the first's (between any two of its bytecodes, as while it logs): the
        # count is taken in one call, so exactly one of them is the first.
        if next(self._received):
            log.debug("received signal %d: already stopping", number)
            return
        self.event.set()
        log.info("received signal %d: stopping", number)


# The top-level modules of the `controller` extra (pip install 'btp-gitops[controller]'); the
# generator's own dependencies are always installed.
EXTRA_MODULES = frozenset({"aiohttp", "jwt", "kubernetes", "prometheus_client", "urllib3"})


@contextmanager
def _controller_extra(command: str) -> Iterator[None]:
    """Turn the import of a missing extra module into a clear error instead of a traceback."""
    try:
        yield
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in EXTRA_MODULES:
            raise
        raise ConfigurationError(
            f"btp-gitops {command} needs the controller extra ({error.name} is not installed): "
            "pip install 'btp-gitops[controller]'"
        ) from error


def run_controller(args: argparse.Namespace) -> int:
    with _controller_extra("controller"):
        from btp_gitops.controller.process import ControllerProcess  # noqa: PLC0415 (heavy: only when run)
    return ControllerProcess.from_args(args).run(StopSignal().event)


def run_subscription_server(args: argparse.Namespace) -> int:
    with _controller_extra("subscription-server"):
        from btp_gitops.controller.process import SubscriptionServerProcess  # noqa: PLC0415
    return SubscriptionServerProcess.from_args(args).run(StopSignal().event)
