"""Options and helpers several commands share: what a render reads, the target and its wiring,
manifest validation (the chart engine's are in cli.engine)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from btp_gitops.generator.cli.restricted_modules import restricted_modules
from btp_gitops.generator.core.errors import (
    InputError,
    Problem,
    UsageError,
)
from btp_gitops.generator.core.names import NameRule, name_message
from btp_gitops.generator.domains.kyma import DEFAULT_MIN_WINDOW, PolicyText
from btp_gitops.generator.io.input_files import UnreadableInput, read_input_text
from btp_gitops.generator.io.sources import display_path
from btp_gitops.generator.wiring.objects import (
    ARGOCD,
    FLUX,
    FLUX_DURATION_PATTERN,
    FLUX_GIT_INTERVAL,
    FLUX_SYNC_INTERVAL,
    FLUX_TIMEOUT,
    IN_CLUSTER,
    TARGETS,
    ArgoCDDestination,
    ArgoCDRetry,
    FluxSync,
    TargetOptions,
)

if TYPE_CHECKING:
    from btp_gitops.generator.io.render_cache import RenderCache
    from btp_gitops.generator.pipeline.render import KymaOptions
    from btp_gitops.generator.pipeline.validate import ValidateOptions


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"give 0 to 86400 seconds, not {text}")
    return value


def render_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError as error:
        raise UsageError(f"--at {text!r}: not a timestamp like 2025-10-11T21:30:00Z") from error
    if at.tzinfo is None:
        raise UsageError(f"--at {text!r}: give a UTC offset (Z or +hh:mm)")
    return at


def kyma_options(args: argparse.Namespace) -> KymaOptions:
    # The render pipeline (every domain, the writer; ~0.1 s of imports) is loaded by the command
    # that runs it, not by building the parser (`--help`, a usage error).
    from btp_gitops.generator.pipeline.render import KymaOptions  # noqa: PLC0415

    policy = None
    if args.maintenance_policy:
        path = Path(args.maintenance_policy)
        try:
            policy = PolicyText(display_path(path), read_input_text(path))
        except UnreadableInput as error:
            problem = Problem(display_path(path), error.reason)
            raise InputError("cannot read the maintenance policy", [problem]) from error
    return KymaOptions(
        tuple(Path(c) for c in args.catalog),
        policy,
        render_time(args.at),
        timedelta(minutes=args.min_maintenance_window),
        restricted_modules(args.restricted_modules),
        allow_module_removal=args.allow_module_removal,
    )


def minutes(text: str) -> float:
    """A number of minutes from 0 to a week."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give a number of minutes, not {text!r}") from None
    if not 0 <= value <= 7 * 24 * 60:
        raise argparse.ArgumentTypeError(f"give 0 to 10080 minutes, not {text}")
    return value


def target_options(args: argparse.Namespace) -> TargetOptions:
    if args.emit_wiring and not args.repo_url:
        raise UsageError(
            "--emit-wiring needs --repo-url: the Git URL Argo CD or Flux reads the rendered repo from"
        )
    return TargetOptions(
        target=args.target,
        emit=args.emit_wiring,
        repo_url=args.repo_url,
        revision=args.revision,
        argocd_project=args.argocd_project,
        argocd_namespace=args.argocd_namespace,
        argocd_destination=argocd_destination(args),
        argocd_retry=argocd_retry(args),
        flux_namespace=args.flux_namespace,
        flux_source=args.flux_source,
        flux=flux_sync_options(args),
    )


# --- Flux: how the wiring syncs ------------------------------------------------------------------

_FLUX_SYNC_FLAGS = (
    ("flux_interval", "--flux-interval"),
    ("flux_source_interval", "--flux-source-interval"),
    ("flux_timeout", "--flux-timeout"),
    ("flux_secret_ref", "--flux-secret-ref"),
    ("flux_service_account", "--flux-service-account"),
    ("flux_no_wait", "--flux-no-wait"),
)


def flux_sync_options(args: argparse.Namespace) -> FluxSync:
    """The `--flux-*` sync options; each one given is refused when nothing would carry it."""
    given = [flag for attr, flag in _FLUX_SYNC_FLAGS if getattr(args, attr) not in (None, False)]
    if given and args.target != FLUX:
        raise UsageError(f"{given[0]} shapes the Flux wiring: it needs --target flux")
    if not args.emit_wiring:
        for attr, flag in (
            ("flux_secret_ref", "--flux-secret-ref"),
            ("flux_source_interval", "--flux-source-interval"),
        ):
            if getattr(args, attr) is not None:
                raise UsageError(
                    f"{flag} is set on the GitRepository that --emit-wiring writes; without it the "
                    f"Kustomizations read --flux-source ({args.flux_source}), which the render does not write"
                )
    return FluxSync(
        interval=args.flux_interval or FLUX_SYNC_INTERVAL,
        source_interval=args.flux_source_interval or FLUX_GIT_INTERVAL,
        timeout=args.flux_timeout or FLUX_TIMEOUT,
        secret_ref=args.flux_secret_ref,
        service_account=args.flux_service_account,
        wait=not args.flux_no_wait,
    )


def flux_duration(text: str) -> str:
    """A duration as Flux reads it (Go's form: 30s, 5m, 1h30m)."""
    if re.fullmatch(FLUX_DURATION_PATTERN, text) is None or not any(c in "123456789" for c in text):
        raise argparse.ArgumentTypeError(f"not a positive duration like 30s, 5m or 1h30m: {text!r}")
    return text


def object_name(text: str) -> str:
    """The name of a Secret or ServiceAccount: a DNS-1123 subdomain."""
    if name_message(text, NameRule.SUBDOMAIN) is not None:
        raise argparse.ArgumentTypeError(f"{text!r} is not {NameRule.SUBDOMAIN.value}")
    return text


def add_flux_sync_options(parser: argparse.ArgumentParser) -> None:
    """The `--flux-*` options that shape how the Flux wiring syncs (with --target flux)."""
    parser.add_argument(
        "--flux-interval",
        type=flux_duration,
        metavar="DURATION",
        help=f"how often each Flux Kustomization re-applies its path (default: {FLUX_SYNC_INTERVAL})",
    )
    parser.add_argument(
        "--flux-source-interval",
        type=flux_duration,
        metavar="DURATION",
        help="with --emit-wiring: how often the GitRepository looks for a new commit "
        f"(default: {FLUX_GIT_INTERVAL})",
    )
    parser.add_argument(
        "--flux-timeout",
        type=flux_duration,
        metavar="DURATION",
        help=f"how long a Kustomization's apply and health wait may take (default: {FLUX_TIMEOUT})",
    )
    parser.add_argument(
        "--flux-secret-ref",
        type=object_name,
        metavar="SECRET",
        help="with --emit-wiring: the Secret (in --flux-namespace) with the Git credentials of a private "
        "repository, set as the GitRepository's secretRef",
    )
    parser.add_argument(
        "--flux-service-account",
        type=object_name,
        metavar="NAME",
        help="the ServiceAccount kustomize-controller impersonates to apply each Kustomization "
        "(serviceAccountName; in --flux-namespace)",
    )
    parser.add_argument(
        "--flux-no-wait",
        action="store_true",
        help="Kustomizations do not wait for their objects to be ready (wait: false): a stage counts as "
        "done once applied, so later stages no longer wait for Deployments or release Jobs",
    )


# --- Argo CD: where the Applications deploy and how a failed sync is retried ---------------------

_GO_DURATION = re.compile(r"(?:[0-9]+(?:h|m|s))+")  # what Argo CD's time.ParseDuration takes, in h/m/s
_DURATION_PART = re.compile(r"([0-9]+)(h|m|s)")
_MAX_DURATION_SECONDS = 24 * 3600
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}


def duration_seconds(text: str) -> int:
    """A Go duration of hours, minutes and seconds (`5s`, `1m30s`, `3m`), in seconds."""
    if not _GO_DURATION.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a duration like 5s, 1m30s or 3m: {text!r}")
    seconds = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION_PART.findall(text))
    if not 0 < seconds <= _MAX_DURATION_SECONDS:
        raise argparse.ArgumentTypeError(f"give a duration from 1s to 24h, not {text}")
    return seconds


def go_duration(text: str) -> str:
    duration_seconds(text)
    return text


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"give {low} to {high}, not {value}")
        return value

    return parse


def _templated(value: str) -> bool:
    # The Application template is a Go template: a value holding its delimiters would be run.
    return "{{" in value or "}}" in value


def destination_server(text: str) -> str:
    """An API server URL as Argo CD names a cluster: https (or http), a host, nothing else odd."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an API server URL: {text!r}") from None
    if (
        parts.scheme not in ("https", "http")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username is not None
        or any(c.isspace() or not c.isprintable() for c in text)
        or _templated(text)
        or len(text) > 2048
    ):
        raise argparse.ArgumentTypeError(
            f"not an API server URL like https://kubernetes.default.svc or https://10.0.0.1:6443: {text!r}"
        )
    return text


def destination_name(text: str) -> str:
    """A cluster name as registered in Argo CD (`argocd cluster list`): free text to Argo CD, e.g. an
    EKS ARN, so only what cannot be meant is refused."""
    if (
        not text
        or len(text) > 253
        or any(c.isspace() or not c.isprintable() for c in text)
        or _templated(text)
    ):
        raise argparse.ArgumentTypeError(
            f"not a cluster name as Argo CD lists them (1 to 253 printable characters, no spaces): {text!r}"
        )
    return text


def argocd_destination(args: argparse.Namespace) -> ArgoCDDestination:
    if args.argocd_destination_name is not None:
        return ArgoCDDestination("name", args.argocd_destination_name)
    return ArgoCDDestination("server", args.argocd_destination_server or IN_CLUSTER)


def argocd_retry(args: argparse.Namespace) -> ArgoCDRetry:
    retry = ArgoCDRetry(
        limit=args.argocd_retry_limit,
        duration=args.argocd_retry_duration,
        factor=args.argocd_retry_factor,
        max_duration=args.argocd_retry_max_duration,
    )
    if duration_seconds(retry.max_duration) < duration_seconds(retry.duration):
        raise UsageError(
            f"--argocd-retry-max-duration {retry.max_duration} is shorter than --argocd-retry-duration "
            f"{retry.duration}: the longest wait cannot be shorter than the first"
        )
    return retry


def add_argocd_options(parser: argparse.ArgumentParser) -> None:
    """Argo CD's Applications (with --target argocd --emit-wiring)."""
    defaults = ArgoCDRetry()
    destination = parser.add_mutually_exclusive_group()
    destination.add_argument(
        "--argocd-destination-server",
        type=destination_server,
        metavar="URL",
        help=f"the API server the Applications deploy to (default: {IN_CLUSTER}, Argo CD's own cluster)",
    )
    destination.add_argument(
        "--argocd-destination-name",
        type=destination_name,
        metavar="NAME",
        help="instead: the cluster the Applications deploy to, by its name in Argo CD",
    )
    parser.add_argument(
        "--argocd-retry-limit",
        type=bounded_int(0, 100),
        default=defaults.limit,
        metavar="N",
        help=f"retry a failed sync N times (default: {defaults.limit}; 0: no retry)",
    )
    parser.add_argument(
        "--argocd-retry-duration",
        type=go_duration,
        default=defaults.duration,
        metavar="DURATION",
        help=f"wait before the first retry (default: {defaults.duration})",
    )
    parser.add_argument(
        "--argocd-retry-factor",
        type=bounded_int(1, 10),
        default=defaults.factor,
        metavar="N",
        help=f"each later wait is the one before times N (default: {defaults.factor})",
    )
    parser.add_argument(
        "--argocd-retry-max-duration",
        type=go_duration,
        default=defaults.max_duration,
        metavar="DURATION",
        help=f"the longest wait between retries (default: {defaults.max_duration})",
    )


def validate_options(args: argparse.Namespace) -> ValidateOptions:
    # The Kubernetes schemas and the manifest validator (and with them jsonschema) are for
    # --validate and `validate` alone.
    from btp_gitops.generator.io.kube_schemas import resolve_kubernetes_version  # noqa: PLC0415
    from btp_gitops.generator.pipeline.validate import ValidateOptions  # noqa: PLC0415

    return ValidateOptions(
        # Resolved here so that an unsupported version is a usage error before any work is done.
        kubernetes_version=resolve_kubernetes_version(args.kubernetes_version),
        crd_paths=tuple(args.crds),
        ignore_missing_schemas=args.ignore_missing_schemas,
    )


def add_validation_options(parser: argparse.ArgumentParser, applies: str = "") -> None:
    parser.add_argument(
        "--kubernetes-version",
        metavar="X.Y",
        help=f"validate built-in kinds against this Kubernetes version{applies} (default: newest bundled)",
    )
    parser.add_argument(
        "--crds",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help=f"CRD manifests (files or directories) for custom resources{applies}; repeatable",
    )
    parser.add_argument(
        "--ignore-missing-schemas",
        action="store_true",
        help=f"a kind without any schema is a warning, not an error{applies}",
    )


def add_cache_options(parser: argparse.ArgumentParser) -> None:
    """The render cache (io.render_cache): where it is, or none."""
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="keep what the render learnt of each CAP tenant record here, so the next render parses, "
        "validates and renders only the records that changed (default: "
        "$XDG_CACHE_HOME/btp-gitops/render, else ~/.cache/btp-gitops/render)",
    )
    cache.add_argument("--no-cache", action="store_true", help="neither read nor write the render cache")


def render_cache(args: argparse.Namespace) -> RenderCache | None:
    if args.no_cache:
        return None
    # Loaded once a render asks for its cache, not by building the parser.
    from btp_gitops.generator.io.render_cache import RenderCache, default_cache_dir  # noqa: PLC0415

    directory = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    return RenderCache(directory, pack_place=getattr(args, "pack_place", None))


def print_cache_use(cache: RenderCache | None, args: argparse.Namespace) -> None:
    """--verbose: on stderr, how much the render took from the render cache (RenderCache.summary)."""
    summary = cache.summary() if cache is not None and args.verbose else ""
    if summary:
        print(summary, file=sys.stderr)


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """What a render reads besides its sources, and the cluster it renders (render and diff)."""
    parser.add_argument("--cluster", default="default", help="renders clusters/<cluster>/ (default: default)")
    # -q/--quiet (cli.output's verbosity options) also leaves out the notes naming what under the
    # source paths is no source and was skipped.
    add_cache_options(parser)
    parser.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="DIR",
        help="Kyma module catalog: ModuleTemplates and ModuleReleaseMetas (files or directories); repeatable",
    )
    parser.add_argument(
        "--maintenance-policy",
        metavar="FILE",
        help="maintenance windows for Kyma module upgrades that need downtime (Lifecycle Manager's format)",
    )
    parser.add_argument(
        "--min-maintenance-window",
        type=minutes,
        default=DEFAULT_MIN_WINDOW.total_seconds() / 60,
        metavar="MINUTES",
        help="a maintenance window with less than this left is not entered, as Lifecycle Manager's "
        f"--min-maintenance-window-size (default: {DEFAULT_MIN_WINDOW.total_seconds() / 60:g})",
    )
    parser.add_argument(
        "--restricted-modules",
        action="append",
        default=[],
        metavar="NAMES",
        help="Kyma modules (comma-separated; repeatable) whose ModuleReleaseMeta's spec.kymaSelector says "
        "which Kymas may use them, as Lifecycle Manager's restricted-modules list; a kymaSelector on any "
        "other module makes it unavailable",
    )
    parser.add_argument(
        "--allow-module-removal",
        action="store_true",
        help="let the render remove Kyma modules no longer in spec.modules even while an entry there "
        "cannot be resolved (refused by default: a misspelt module name would delete the module it "
        "meant); the Kyma's annotation btp-gitops.io/allow-module-removal: NAMES allows it per module",
    )
    parser.add_argument(
        "--at",
        metavar="TIME",
        help="when maintenance windows are checked, e.g. 2025-10-11T21:30:00Z (default: now)",
    )
    parser.add_argument(
        "--allow-path",
        action="append",
        default=[],
        metavar="DIR",
        help="also let sources name files (charts, values files, raw manifests) under DIR; by default "
        "only the SOURCE paths, --catalog directories and the charts shipped with btp-gitops. Whoever "
        "writes the sources can then read anything under DIR into the output; repeatable",
    )
    parser.add_argument("--schemas", type=Path, help=argparse.SUPPRESS)


def add_target_options(parser: argparse.ArgumentParser) -> None:
    """The GitOps tool the repo is laid out for, and its wiring (render and diff)."""
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default=ARGOCD,
        help="argocd: one directory per app, ordered by sync waves (default); flux: stage directories "
        "per app and Flux Kustomizations ordering them (in clusters/<cluster>/.wiring/)",
    )
    parser.add_argument(
        "--emit-wiring",
        action="store_true",
        help="also write what makes the tool sync the repo: an Argo CD ApplicationSet, or a Flux "
        "GitRepository for the Kustomizations (in clusters/<cluster>/.wiring/)",
    )
    parser.add_argument(
        "--repo-url", metavar="URL", help="the GitOps repo's URL, as Argo CD or Flux clone it"
    )
    parser.add_argument(
        "--revision", default="main", help="the branch Argo CD or Flux follow (default: main)"
    )
    parser.add_argument("--argocd-project", default="default", metavar="NAME", help="default: default")
    parser.add_argument("--argocd-namespace", default="argocd", metavar="NS", help="default: argocd")
    add_argocd_options(parser)
    parser.add_argument("--flux-namespace", default="flux-system", metavar="NS", help="default: flux-system")
    parser.add_argument(
        "--flux-source",
        default="flux-system",
        metavar="NAME",
        help="without --emit-wiring: the GitRepository the Flux Kustomizations read (default: flux-system, "
        "the one `flux bootstrap` creates)",
    )
    add_flux_sync_options(parser)
