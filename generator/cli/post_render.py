"""`btp-gitops post-render`: the Helm post-renderer command (stdin to stdout).

Gathers what the pure pipeline needs from the edges (the stream on stdin, credentials from a
file or the cluster, existing certificates, the clock and the key factory) and prints its result.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from btp_gitops.generator.cli.output import add_verbosity_options, print_notes
from btp_gitops.generator.core.errors import InputError, Problem, SourceSyntaxError, UsageError
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.io.cluster import ClusterReader
from btp_gitops.generator.io.input_files import UnreadableInput
from btp_gitops.generator.io.sources import load_sources
from btp_gitops.generator.pipeline.post_render import PostRenderRequest, PostRenderResult, post_render_to
from btp_gitops.generator.pipeline.post_render import certificate_plan as post_render_certificate_plan
from btp_gitops.generator.pipeline.post_render_domains import BTP_OPERATOR, CERTIFICATE_MODES, DOMAINS, KYMA
from btp_gitops.generator.transforms.certificates import (
    NO_EXISTING_CERTIFICATES,
    CertificatePlan,
    ExistingCertificates,
)
from btp_gitops.generator.transforms.operator_secret import (
    REQUIRED_SECRET,
    REQUIRED_SECRET_NAMESPACE,
    OperatorCredentials,
    missing_secret_error,
    operator_credentials_from_secret,
)

# Helm runs this command on every install and upgrade, mostly in the default mode, where starting
# is most of the work: what only another mode needs is imported in that mode's function below
# (self-signed certificates: `cryptography`; --domain cap and kyma: schemas, chart engine and the
# render pipeline). tests/packaging/test_startup.py keeps the default mode free of them.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa

    from btp_gitops.generator.pipeline.post_render_sources import SourceDomainInputs


def _credentials_from_file(path: Path) -> OperatorCredentials:
    secrets = [d for d in load_sources([path]) if d.kind == "Secret"]
    if len(secrets) != 1:
        names = ", ".join(d.ref for d in secrets) or "none"
        raise InputError(
            "--credentials must name a file holding one Secret",
            [Problem(str(path), f"found {len(secrets)} Secrets ({names})")],
        )
    secret = secrets[0]
    return operator_credentials_from_secret(secret.body, f"{secret.file}: document {secret.document}")


def _credentials(args: argparse.Namespace) -> OperatorCredentials | None:
    if args.credentials:
        return _credentials_from_file(Path(args.credentials))
    if not args.from_cluster:
        return None
    reader = ClusterReader(args.kubeconfig, args.context)
    secret = reader.read_secret(REQUIRED_SECRET_NAMESPACE, REQUIRED_SECRET)
    if secret is None:
        raise missing_secret_error(reader.where())
    return operator_credentials_from_secret(
        secret, f"{reader.where()}: Secret {REQUIRED_SECRET_NAMESPACE}/{REQUIRED_SECRET}"
    )


def _post_render_stdin(request: PostRenderRequest, inputs: SourceDomainInputs | None) -> PostRenderResult:
    """stdin to stdout, one document at a time; nothing is printed unless the whole stream is."""
    try:
        result = post_render_to(
            sys.stdin.buffer, sys.stdout, request, datetime.now(UTC), _new_key, sources=inputs
        )
    except UnreadableInput as error:
        raise SourceSyntaxError(
            "the manifest stream is not valid post-renderer input", [Problem("<stdin>", error.reason)]
        ) from error
    sys.stdout.flush()
    return result


def _existing_certificates(args: argparse.Namespace, plan: CertificatePlan) -> ExistingCertificates:
    """Certificates self-signed mode may reuse: from --existing-certificates, else the cluster."""
    if args.certificates != "self-signed":
        return NO_EXISTING_CERTIFICATES
    from btp_gitops.generator.transforms.self_signed_certificates import (  # noqa: PLC0415 - self-signed only
        existing_certificates_from_secrets,
    )

    if args.existing_certificates:
        documents = load_sources([Path(args.existing_certificates)])
        secrets = [Manifest(d.body, f"{d.file}: document {d.document}") for d in documents]
        return existing_certificates_from_secrets(secrets, plan)
    if not args.from_cluster:
        return NO_EXISTING_CERTIFICATES
    reader = ClusterReader(args.kubeconfig, args.context)
    found = [
        Manifest(secret, f"{reader.where()}: Secret {plan.namespace}/{name}")
        for name in (plan.ca_secret, plan.serving_secret)
        if (secret := reader.read_secret(plan.namespace, name)) is not None
    ]
    return existing_certificates_from_secrets(found, plan)


_BTP_OPERATOR_ONLY = (
    "credentials",
    "from_cluster",
    "existing_certificates",
    "issuer",
    "issuer_namespace",
    "chart_version",
    "manager_image",
)


def _new_key() -> rsa.RSAPrivateKey:
    """The key factory of self-signed mode (the only one that calls it)."""
    from btp_gitops.generator.transforms.self_signed_certificates import (  # noqa: PLC0415 - self-signed only
        generate_rsa_4096_key,
    )

    return generate_rsa_4096_key()


def _source_domain_inputs(args: argparse.Namespace) -> SourceDomainInputs:
    """CAP and Kyma: schemas, namespace, and for Kyma the catalog and the chart engine."""
    # The source domains' modules, imported with their mode (see the imports above).
    from btp_gitops.generator.cli.engine import allow_paths, chart_engine  # noqa: PLC0415
    from btp_gitops.generator.cli.restricted_modules import restricted_modules  # noqa: PLC0415
    from btp_gitops.generator.io.schemas import load_schema_registry  # noqa: PLC0415
    from btp_gitops.generator.pipeline.post_render_sources import SourceDomainInputs  # noqa: PLC0415

    given = [f"--{name.replace('_', '-')}" for name in _BTP_OPERATOR_ONLY if getattr(args, name)]
    given += ["--certificates"] if args.certificates != "cert-manager" else []
    if given:
        raise UsageError(f"{', '.join(given)}: only for --domain {BTP_OPERATOR}, not {args.domain}")
    if args.domain != KYMA and (args.catalog or args.allow_path or args.restricted_modules):
        raise UsageError(f"--catalog, --allow-path, --restricted-modules: only for --domain {KYMA}")
    if args.domain == KYMA and not args.catalog:
        raise UsageError(f"--domain {KYMA} renders the Kyma's modules from a catalog: pass --catalog DIR")
    return SourceDomainInputs(
        schemas=load_schema_registry(args.schemas),
        namespace=args.namespace,
        catalogs=tuple(Path(c) for c in args.catalog),
        engine=chart_engine(args) if args.domain == KYMA else None,
        allow_paths=allow_paths(args),
        restricted_modules=restricted_modules(args.restricted_modules),
    )


def run_post_render(args: argparse.Namespace) -> int:
    if args.domain != BTP_OPERATOR:
        request = PostRenderRequest(
            domain=args.domain, namespace=args.namespace, allow_empty=args.allow_empty
        )
        inputs = _source_domain_inputs(args)
        result = _post_render_stdin(request, inputs)
        _print_outcome(args, result)
        return ExitCode.OK
    if args.catalog or args.allow_path or args.restricted_modules:
        raise UsageError(f"--catalog, --allow-path, --restricted-modules: only for --domain {KYMA}")
    if args.certificates != "self-signed" and args.existing_certificates:
        raise UsageError("--existing-certificates is only read with --certificates self-signed")
    issuer = {"name": args.issuer, "kind": args.issuer_kind} if args.issuer else None
    if issuer and args.issuer_namespace:
        issuer["namespace"] = args.issuer_namespace
    request = PostRenderRequest(
        domain=args.domain,
        certificate_mode=args.certificates,
        namespace=args.namespace,
        chart_version=args.chart_version,
        credentials=_credentials(args),
        enable_limited_cache=args.limited_cache == "true",
        manager_image=args.manager_image,
        issuer=issuer,
        allow_empty=args.allow_empty,
    )
    request = dataclasses.replace(
        request, existing_certificates=_existing_certificates(args, post_render_certificate_plan(request))
    )
    result = _post_render_stdin(request, None)
    _print_outcome(args, result)
    return ExitCode.OK


def _print_outcome(args: argparse.Namespace, result: PostRenderResult) -> None:
    """Notes on stderr (stdout is Helm's stream); --quiet: warnings only; --verbose: a count too."""
    print_notes(result.notes, sys.stderr, quiet=args.quiet)
    if args.verbose:
        print(
            f"post-render --domain {args.domain}: {result.objects} objects written, "
            f"{result.added} of them added",
            file=sys.stderr,
        )


def add_post_render_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "post-render",
        help="Helm post-renderer: a domain's rendering on the manifest stream (stdin to stdout)",
        description="Reads the manifests Helm rendered on stdin and writes them back, transformed, on "
        "stdout (Helm 3 --post-renderer, Helm 4 postrenderer/v1 plugin). Diagnostics go to stderr. "
        "There is no -o/--output: stdout is the manifest stream Helm reads.",
    )
    add_verbosity_options(parser)
    parser.add_argument(
        "--domain",
        "--module",
        dest="domain",
        choices=DOMAINS,
        default=BTP_OPERATOR,
        help="btp-operator: the module transforms on the chart's objects (default); cap: CAP Operator's "
        "objects rendered into their workloads, Jobs and routing as render does; kyma: the Kyma's "
        "modules from --catalog. With cap and kyma every other object passes through untouched",
    )
    parser.add_argument(
        "--certificates",
        choices=CERTIFICATE_MODES,
        default="cert-manager",
        help="how webhook serving certificates are issued (default: cert-manager); self-signed generates "
        "a CA and serving certificate here, reusing existing ones until they near expiry",
    )
    parser.add_argument(
        "--existing-certificates",
        metavar="FILE",
        help="self-signed: Secrets ca-server-cert and webhook-server-cert to reuse (else --from-cluster)",
    )
    parser.add_argument("--issuer", metavar="NAME", help="an existing cert-manager issuer to use")
    parser.add_argument("--issuer-kind", choices=("Issuer", "ClusterIssuer"), default="Issuer")
    parser.add_argument("--issuer-namespace", help="gardener: namespace of --issuer (else Gardener's)")
    parser.add_argument(
        "--namespace",
        help="btp-operator: namespace of namespaced objects (default: kyma-system); cap, kyma: namespace "
        "of the domain's objects the chart leaves without one (Helm's release namespace)",
    )
    parser.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="DIR",
        help="kyma: module catalog, ModuleTemplates and ModuleReleaseMetas (files, directories); repeatable",
    )
    parser.add_argument(
        "--allow-path",
        action="append",
        default=[],
        metavar="DIR",
        help="kyma: also let the catalog name files (charts, raw manifests) under DIR; repeatable",
    )
    parser.add_argument(
        "--restricted-modules",
        action="append",
        default=[],
        metavar="NAMES",
        help="kyma: modules (comma-separated; repeatable) whose ModuleReleaseMeta's spec.kymaSelector says "
        "which Kymas may use them, as Lifecycle Manager's restricted-modules list",
    )
    parser.add_argument(
        "--helm-binary",
        metavar="PATH",
        help="kyma: render module charts with this helm CLI instead of the embedded Helm engine",
    )
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="pass on a stream without objects (the chart rendered none); without it that is an error "
        "(exit 4), as handing Helm nothing makes an upgrade delete every object of the release",
    )
    parser.add_argument("--schemas", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--chart-version", help="chart-version label (default: from helm.sh/chart labels)")
    parser.add_argument(
        "--credentials",
        metavar="FILE",
        help="a Secret manifest with the Service Manager credentials (as sap-btp-manager holds them)",
    )
    parser.add_argument(
        "--from-cluster",
        action="store_true",
        help=f"read {REQUIRED_SECRET_NAMESPACE}/{REQUIRED_SECRET} (and certificates) from the cluster",
    )
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for --from-cluster")
    parser.add_argument("--context", help="kubeconfig context for --from-cluster")
    parser.add_argument("--limited-cache", choices=("true", "false"), default="true")
    parser.add_argument("--manager-image", metavar="IMAGE", help="image of the container named manager")
    parser.set_defaults(handler=run_post_render)
