"""The `btp-gitops` command line: parse options, run one pipeline, turn errors into exit codes.

This is the only place that decides exit codes and prints errors (see generator.core.errors for
the table). Controller commands (`controller`, `subscription-server`) are contributed through the
`btp_gitops.commands` entry-point group, so the generator never imports the controller.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from btp_gitops import __version__
from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.cli.output import print_notes
from btp_gitops.generator.cli.post_render import add_post_render_parser
from btp_gitops.generator.core.errors import (
    EXIT_CHANGES,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    BtpGitopsError,
    InputError,
    Problem,
    UsageError,
)
from btp_gitops.generator.core.redact import redact
from btp_gitops.generator.diff.report import DEFAULT_MAX_LENGTH, MIN_MAX_LENGTH
from btp_gitops.generator.domains.kyma import PolicyText, report_table
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.crd_files import default_crd_dir
from btp_gitops.generator.io.helm import EmbeddedHelm, HelmCli
from btp_gitops.generator.io.input_files import UnreadableInput, read_input_text
from btp_gitops.generator.io.kube_schemas import resolve_kubernetes_version
from btp_gitops.generator.io.progress import progress_for
from btp_gitops.generator.io.repo import DEFAULT_LOCK_TIMEOUT
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.io.sources import display_path
from btp_gitops.generator.pipeline.crds import check_crds, write_crds
from btp_gitops.generator.pipeline.diff import DiffRequest, diff_cluster, diff_report
from btp_gitops.generator.pipeline.module_resources import generate_module_resources
from btp_gitops.generator.pipeline.render import (
    KymaOptions,
    RenderRequest,
    cluster_stream,
    render_cluster,
    render_into_repo,
    validate_render,
)
from btp_gitops.generator.pipeline.validate import ValidateOptions, validate_paths
from btp_gitops.generator.wiring.objects import ARGOCD, TARGETS, TargetOptions

Handler = Callable[[argparse.Namespace], int]
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader exited


def chart_engine(args: argparse.Namespace) -> ChartRenderer:
    if args.helm_binary:
        return HelmCli(args.helm_binary)
    return EmbeddedHelm()


def run_render_to_stdout(args: argparse.Namespace) -> int:
    if args.commit or args.output == "json":
        raise UsageError(
            "--stdout writes only manifests: it cannot be combined with --commit or --output json"
        )
    if args.target != ARGOCD or args.emit_wiring:
        raise UsageError(
            "--stdout is for Argo CD's plugin: it cannot be combined with --target flux or --emit-wiring"
        )
    result = render_cluster(
        tuple(Path(s) for s in args.sources),
        args.cluster,
        chart_engine(args),
        load_schema_registry(args.schemas),
        kyma=kyma_options(args),
        allow_paths=allow_paths(args),
    )
    if args.validate:
        where = Path(f"clusters/{args.cluster}")  # the files go to stdout: name them as in a repo
        result.notes += validate_render(where, result.files, validate_options(args))
    sys.stdout.write(cluster_stream(result))
    for app in result.apps:
        print_notes(app.notes, sys.stderr)
    print_notes(result.notes, sys.stderr)
    return EXIT_OK


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"give 0 to 86400 seconds, not {text}")
    return value


def _render_time(text: str | None) -> datetime | None:
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
    policy = None
    if args.maintenance_policy:
        path = Path(args.maintenance_policy)
        try:
            policy = PolicyText(display_path(path), read_input_text(path))
        except UnreadableInput as error:
            problem = Problem(display_path(path), error.reason)
            raise InputError("cannot read the maintenance policy", [problem]) from error
    return KymaOptions(tuple(Path(c) for c in args.catalog), policy, _render_time(args.at))


def allow_paths(args: argparse.Namespace) -> tuple[Path, ...]:
    for path in args.allow_path:
        if not Path(path).exists():
            raise UsageError(f"--allow-path {path}: no such file or directory")
    return tuple(Path(path) for path in args.allow_path)


def run_render(args: argparse.Namespace) -> int:
    if args.stdout:
        return run_render_to_stdout(args)
    request = RenderRequest(
        sources=tuple(Path(s) for s in args.sources),
        out=Path(args.out),
        cluster=args.cluster,
        commit=args.commit,
        validate=validate_options(args) if args.validate else None,
        kyma=kyma_options(args),
        target=target_options(args),
        allow_paths=allow_paths(args),
        allow_empty=args.allow_empty,
        lock_timeout=args.lock_timeout,
    )
    progress = progress_for(sys.stderr, os.environ)
    try:
        result = render_into_repo(
            request, chart_engine(args), load_schema_registry(args.schemas), progress=progress
        )
    finally:
        progress.finish()
    if args.output == "json":
        json.dump(result.report(), sys.stdout, indent=2, sort_keys=True)
        print()
        return EXIT_OK
    objects = sum(len(app.manifests) for app in result.apps)
    changes = result.changes
    print(
        f"rendered cluster {result.cluster} into {request.out}/clusters/{result.cluster}: "
        f"{objects} objects in {len([a for a in result.apps if a.manifests])} app(s); "
        f"{len(changes.added)} added, {len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    for app in result.apps:
        if app.notes:
            print(f"{app.app}:")
            print_notes(app.notes, sys.stdout)
    print_notes(result.notes, sys.stdout)
    for kyma in result.kymas:
        print("\n".join(report_table(kyma)))
    if request.commit:
        print(f"committed {result.commit}" if result.commit else "nothing to commit")
    return EXIT_OK


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
        flux_namespace=args.flux_namespace,
        flux_source=args.flux_source,
    )


def run_diff(args: argparse.Namespace) -> int:
    if args.max_length < MIN_MAX_LENGTH:
        raise UsageError(f"--max-length must be at least {MIN_MAX_LENGTH}")
    request = DiffRequest(
        sources=tuple(Path(s) for s in args.sources),
        against=args.against,
        cluster=args.cluster,
        repo=Path(args.repo) if args.repo else None,
        kyma=kyma_options(args),
        target=target_options(args),
        allow_paths=allow_paths(args),
    )
    result = diff_cluster(request, chart_engine(args), load_schema_registry(args.schemas))
    sys.stdout.write(diff_report(result, args.output, args.max_length))
    # Notes go to stderr: stdout is the report, which a workflow posts as it is.
    for app in result.render.apps:
        print_notes(app.notes, sys.stderr)
    print_notes(result.render.notes, sys.stderr)
    return EXIT_CHANGES if args.exit_code and not result.diff.empty else EXIT_OK


def run_module_resources(args: argparse.Namespace) -> int:
    result = generate_module_resources(
        chart=Path(args.chart) if args.chart else bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART),
        values_files=tuple(Path(v) for v in args.values),
        release=args.release,
        namespace=args.namespace,
        out=Path(args.out),
        engine=chart_engine(args),
    )
    if args.output == "json":
        json.dump(
            {
                "files": sorted(result.files),
                "changes": {
                    "added": list(result.changes.added),
                    "changed": list(result.changes.changed),
                    "removed": list(result.changes.removed),
                },
                "notes": [n.as_dict() for n in result.notes],
            },
            sys.stdout,
            indent=2,
            sort_keys=True,
        )
        print()
        return EXIT_OK
    changes = result.changes
    print(
        f"wrote {args.out}: {len(result.files)} files; {len(changes.added)} added, "
        f"{len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    print_notes(result.notes, sys.stdout)
    return EXIT_OK


def run_crds(args: argparse.Namespace) -> int:
    if not args.out and not args.check and not bundled.is_checkout():
        # The default is the install chart inside this installation: never rewrite installed files.
        raise UsageError("btp-gitops crds: pass --out DIR (only a checkout writes its own chart's CRDs)")
    out = Path(args.out) if args.out else default_crd_dir()
    if args.check:
        drifting = check_crds(args.schemas, out)
        if args.output == "json":
            json.dump({"out": str(out), "drifting": drifting}, sys.stdout, indent=2, sort_keys=True)
            print()
        elif drifting:
            print(f"CRDs in {out} drift from the schemas (run `btp-gitops crds` to regenerate them):")
            print("".join(f"  {name}\n" for name in drifting), end="")
        else:
            print(f"CRDs in {out} match the schemas")
        return EXIT_CHANGES if drifting else EXIT_OK
    result = write_crds(args.schemas, out)
    changes = result.changes
    if args.output == "json":
        summary = {"added": changes.added, "changed": changes.changed, "removed": changes.removed}
        json.dump(
            {"out": str(out), "files": sorted(result.files), "changes": summary},
            sys.stdout,
            indent=2,
            sort_keys=True,
        )
        print()
        return EXIT_OK
    print(
        f"wrote {out}: {len(result.files)} CRDs; {len(changes.added)} added, "
        f"{len(changes.changed)} changed, {len(changes.removed)} removed"
    )
    return EXIT_OK


def validate_options(args: argparse.Namespace) -> ValidateOptions:
    return ValidateOptions(
        # Resolved here so that an unsupported version is a usage error before any work is done.
        kubernetes_version=resolve_kubernetes_version(args.kubernetes_version),
        crd_paths=tuple(args.crds),
        ignore_missing_schemas=args.ignore_missing_schemas,
    )


def run_validate(args: argparse.Namespace) -> int:
    report = validate_paths(args.paths, validate_options(args))
    if args.output == "json":
        json.dump(report.as_dict(), sys.stdout, indent=2, sort_keys=True)
        print()
        return EXIT_OK if report.valid else EXIT_INPUT
    for problem in report.problems:
        print(problem.render(), file=sys.stderr)
    for warning in report.warnings:
        print(f"warning: {warning.render()}", file=sys.stderr)
    objects = _counted(report.objects, "object")
    problems = _counted(len(report.problems), "problem")
    summary = f"{objects} valid" if report.valid else f"{problems} in {objects}"
    if report.warnings:
        summary += f", {_counted(len(report.warnings), 'warning')}"
    print(f"{summary} (Kubernetes {report.kubernetes_version})")
    return EXIT_OK if report.valid else EXIT_INPUT


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _add_validation_options(parser: argparse.ArgumentParser, applies: str = "") -> None:
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


def _add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--helm-binary",
        metavar="PATH",
        help="render charts with this helm CLI (v3 or v4) instead of the embedded Helm engine",
    )
    parser.add_argument("--output", choices=("text", "json"), default="text", help="result format on stdout")


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    """What a render reads besides its sources, and the cluster it renders (render and diff)."""
    parser.add_argument("--cluster", default="default", help="renders clusters/<cluster>/ (default: default)")
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


def _add_target_options(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--flux-namespace", default="flux-system", metavar="NS", help="default: flux-system")
    parser.add_argument(
        "--flux-source",
        default="flux-system",
        metavar="NAME",
        help="without --emit-wiring: the GitRepository the Flux Kustomizations read (default: flux-system, "
        "the one `flux bootstrap` creates)",
    )


def _add_diff_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "diff",
        help="render in memory and compare with the rendered repo at a Git ref or directory",
        description="Renders the sources as `render` would (nothing is written) and compares the result "
        "with clusters/<cluster>/ at --against: a directory (the GitOps repo's root) if one exists at that "
        "path, else a Git ref of --repo. Objects are matched by app, kind, namespace and name; Secret "
        "values, caBundles, PEM bodies and private keys in any encoding are masked on both sides.",
    )
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="YAML files or directories")
    parser.add_argument("--against", required=True, metavar="REF|DIR", help="what to compare with")
    parser.add_argument(
        "--repo",
        metavar="DIR",
        help="the GitOps repo (where clusters/ is) a ref is read from; default: the top of the current "
        "directory's Git work tree",
    )
    _add_source_options(parser)
    _add_target_options(parser)
    parser.add_argument(
        "--output",
        choices=("text", "markdown", "json"),
        default="text",
        help="text (summary and unified diffs), markdown (for a pull-request comment) or json",
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=DEFAULT_MAX_LENGTH,
        metavar="CHARS",
        help="markdown: at most this many characters; a note says what was left out "
        f"(default: {DEFAULT_MAX_LENGTH})",
    )
    parser.add_argument("--exit-code", action="store_true", help="exit 1 when there are changes, 0 when none")
    parser.add_argument(
        "--helm-binary",
        metavar="PATH",
        help="render charts with this helm CLI (v3 or v4) instead of the embedded Helm engine",
    )
    parser.set_defaults(handler=run_diff)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="btp-gitops",
        description="Render SAP BTP workloads (BTP operator, Kyma modules, CAP) into a GitOps repository.",
    )
    parser.add_argument("--version", action="version", version=f"btp-gitops {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    render = commands.add_parser("render", help="render source custom resources into a GitOps repo")
    render.add_argument("sources", nargs="+", metavar="SOURCE", help="YAML files or directories")
    destination = render.add_mutually_exclusive_group(required=True)
    destination.add_argument("--out", metavar="REPO", help="the GitOps repository (work tree) to write")
    destination.add_argument(
        "--stdout",
        action="store_true",
        help="write the objects to stdout as one YAML stream instead (for an Argo CD plugin)",
    )
    render.add_argument("--commit", action="store_true", help="commit the result when the tree changed")
    render.add_argument(
        "--allow-empty",
        action="store_true",
        help="allow a render that removes every app of a populated cluster directory, or apps holding "
        "more than half of its objects (refused by default: an empty source directory or a glob that "
        "matched nothing would make Argo CD or Flux prune everything)",
    )
    render.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=DEFAULT_LOCK_TIMEOUT,
        metavar="SECONDS",
        help="wait this long for another render writing the same --out, then fail with exit 5 "
        f"(default: {DEFAULT_LOCK_TIMEOUT:g})",
    )
    _add_source_options(render)
    _add_target_options(render)
    render.add_argument(
        "--validate",
        action="store_true",
        help="validate the rendered objects (as `validate` does) before anything is written",
    )
    _add_validation_options(render, applies=" (with --validate)")
    _add_engine_options(render)
    render.set_defaults(handler=run_render)

    module_resources = commands.add_parser(
        "module-resources",
        help="write BTP Manager's module-resources/ (apply, delete, excluded) from a chart",
    )
    module_resources.add_argument(
        "--chart", metavar="DIR", help="the module chart (default: the SAP BTP operator chart shipped)"
    )
    module_resources.add_argument("--values", action="append", default=[], metavar="FILE")
    module_resources.add_argument("--release", default="sap-btp-operator", metavar="TAG")
    module_resources.add_argument("--namespace", default="kyma-system")
    module_resources.add_argument("--out", default="module-resources", metavar="DIR")
    _add_engine_options(module_resources)
    module_resources.set_defaults(handler=run_module_resources)

    crds = commands.add_parser("crds", help="write the CustomResourceDefinitions of the chart from schemas/")
    crds.add_argument(
        "--out",
        metavar="DIR",
        help="default: charts/btp-gitops/crds (in a checkout; elsewhere --out is needed)",
    )
    crds.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if DIR drifts from schemas/"
    )
    crds.add_argument("--schemas", type=Path, help=argparse.SUPPRESS)
    crds.add_argument("--output", choices=("text", "json"), default="text", help="result format on stdout")
    crds.set_defaults(handler=run_crds)

    add_post_render_parser(commands)
    _add_diff_parser(commands)

    validate = commands.add_parser(
        "validate",
        help="validate manifests offline: built-in kinds, our CRDs and the CRDs given",
        description="Checks every object against the Kubernetes schemas of one version and against the "
        "CRDs found among the objects, given with --crds, and those btp-gitops installs. Problems go to "
        "stderr, one per line; a summary to stdout. Exit 3 when anything is invalid.",
    )
    validate.add_argument(
        "paths", nargs="+", metavar="PATH", help="YAML files, directories (walked), or - for stdin"
    )
    _add_validation_options(validate)
    validate.add_argument(
        "--output", choices=("text", "json"), default="text", help="result format on stdout"
    )
    validate.set_defaults(handler=run_validate)

    for entry in sorted(entry_points(group="btp_gitops.commands"), key=lambda e: e.name):
        register: Callable[[Any], None] = entry.load()
        register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BtpGitopsError as error:
        for line in error.lines():
            print(f"error: {line}" if line == error.message else line, file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): not our failure. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again, and exit as a SIGPIPE'd tool would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception:
        print("internal error in btp-gitops (please report it with this trace):", file=sys.stderr)
        print(redact(traceback.format_exc()), end="", file=sys.stderr)  # it may quote input values
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
