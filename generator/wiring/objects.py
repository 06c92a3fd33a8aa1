"""Wiring: the objects that make Argo CD or Flux sync a rendered cluster directory.

The wiring is written beside the apps, never inside one: `clusters/<cluster>/.wiring/` holds the
objects and its own kustomization.yaml, and `clusters/<cluster>/kustomization.yaml` lists
`.wiring` as its only resource. Nothing gets applied twice:

- Argo CD (`--target argocd`): the ApplicationSet's git directory generator makes one Application
  per app directory, `clusters/<cluster>/*` and the tenants' `clusters/<cluster>/tenants/*/*/*`
  (core.layout: `tenants/<group>/<shard>/<app>`), named `<cluster>-<app>` after the directory's
  last part (so that one Argo CD serving several clusters never sees two `btp-operator`
  Applications; bounded to 63 characters like every name here, see `argocd_application_name`).
  Argo CD's repo server never lists directories whose name starts with a dot, and the generator
  excludes `.wiring` explicitly as well, so the wiring is never an Application of its own; it
  excludes `tenants` itself, which holds app directories but is none. Beside the ApplicationSet, the wiring
  holds the Application that syncs the wiring itself (app of apps, as `flux bootstrap` does): it
  reads `clusters/<cluster>`, whose kustomization.yaml lists `.wiring` only, so after it is
  applied once a change of the ApplicationSet in Git is synced like any other.
- Flux (`--target flux`): each stage directory `<app directory>/<NN>-<slug>/` is the path of exactly one
  Kustomization; `.wiring/` is the path of none of them. The root Kustomization
  (`btp-gitops-<cluster>`) has the cluster directory as its path: it applies the wiring, itself
  included, as the Kustomization `flux bootstrap` writes does, and prunes what leaves it. A tenant
  or app added in Git gets its stage Kustomizations applied; a removed app's Kustomizations are
  deleted, and Flux garbage-collects their objects.
- The cluster-level kustomization.yaml makes the cluster directory itself a safe entry point: an
  Argo CD Application or a Flux Kustomization pointed at `clusters/<cluster>` applies the wiring
  only. Without it Flux would generate a kustomization of every manifest below that path (apps
  included) and apply them beside the Kustomizations that own them.

Flux Kustomizations are written whenever the target is Flux (they carry the stage ordering);
`--emit-wiring` adds the GitRepository they read, or for Argo CD the ApplicationSet. Paths in
the wiring assume the render's `--out` is the root of the Git repository.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.errors import InputError
from btp_gitops.generator.core.layout import KUSTOMIZATION, TENANTS_DIR, file_names, kustomization
from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.core.yamlio import dump_object

ARGOCD = "argocd"
FLUX = "flux"
TARGETS = (ARGOCD, FLUX)
WIRING_DIR = ".wiring"

FLUX_GIT_INTERVAL = "1m"  # how often Flux looks for a new commit
FLUX_SYNC_INTERVAL = "10m"  # how often a Kustomization re-applies (drift correction)
FLUX_TIMEOUT = "10m"  # a stage's apply plus health wait; release Jobs run inside it
# A Go duration as the Flux CRDs accept it (their `interval`/`timeout` pattern).
FLUX_DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"

# What cert-manager (or Gardener's CA injector) writes into objects after the sync: Argo CD must
# not see it as drift. The jq paths are Argo CD's own documented form.
CA_BUNDLE_FIELDS = (
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", ".webhooks[]?.clientConfig.caBundle"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", ".webhooks[]?.clientConfig.caBundle"),
    ("apiextensions.k8s.io", "CustomResourceDefinition", ".spec.conversion.webhook.clientConfig.caBundle"),
)
# Server-side apply leaves fields other managers own alone (injected caBundles, defaults), and
# CRs whose CRD arrives in the same sync must not fail Argo CD's dry run.
ARGOCD_SYNC_OPTIONS = ("ServerSideApply=true", "SkipDryRunOnMissingResource=true")
IN_CLUSTER = "https://kubernetes.default.svc"
_MAX_NAME = 63  # Flux copies a Kustomization's name into label values, Argo CD an Application's
_HASHED_PREFIX = _MAX_NAME - 9  # what is kept of a longer name: then "-" and 8 hex digits of its hash


@dataclass(frozen=True, slots=True)
class ArgoCDDestination:
    """Where the Applications deploy: Argo CD's `destination.server` (an API server URL) or
    `destination.name` (a cluster registered in Argo CD), never both."""

    field: str = "server"  # "server" or "name"
    value: str = IN_CLUSTER


@dataclass(frozen=True, slots=True)
class ArgoCDRetry:
    """`syncPolicy.retry`: Argo CD retries a failed automated sync only with it (otherwise not
    before the next commit). The defaults are the ones Argo CD applies to a retry without backoff."""

    limit: int = 5  # failed attempts retried; 0 writes no retry at all
    duration: str = "5s"  # wait before the first retry
    factor: int = 2  # each later wait is the one before times this
    max_duration: str = "3m"  # the longest wait

    def spec(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "backoff": {"duration": self.duration, "factor": self.factor, "maxDuration": self.max_duration},
        }


@dataclass(frozen=True, slots=True)
class FluxSync:
    """How the Flux wiring syncs: `--flux-interval`, `--flux-source-interval`, `--flux-timeout`,
    `--flux-secret-ref`, `--flux-service-account`, `--flux-no-wait`."""

    interval: str = FLUX_SYNC_INTERVAL  # every Kustomization's re-apply interval
    source_interval: str = FLUX_GIT_INTERVAL  # the emitted GitRepository's poll interval
    timeout: str = FLUX_TIMEOUT
    secret_ref: str | None = None  # Secret with the Git credentials (emitted GitRepository only)
    service_account: str | None = None  # kustomize-controller impersonates it to apply
    wait: bool = True  # a stage is Ready only once its objects are healthy


@dataclass(frozen=True, slots=True)
class TargetOptions:
    """The GitOps tool a render is laid out and wired for: `--target T [--emit-wiring ...]`."""

    target: str = ARGOCD
    emit: bool = False  # --emit-wiring: the ApplicationSet (Argo CD) or GitRepository (Flux)
    repo_url: str | None = None  # required with emit
    revision: str = "main"  # branch Argo CD and Flux follow
    argocd_project: str = "default"
    argocd_namespace: str = "argocd"
    argocd_destination: ArgoCDDestination = ArgoCDDestination()
    argocd_retry: ArgoCDRetry = ArgoCDRetry()
    flux_namespace: str = "flux-system"
    flux_source: str = "flux-system"  # the GitRepository read without emit (`flux bootstrap`'s)
    flux: FluxSync = FluxSync()

    @property
    def writes_wiring(self) -> bool:
        return self.emit or self.target == FLUX


DEFAULT_TARGET = TargetOptions()


def wiring_name(cluster: str) -> str:
    """Name of the ApplicationSet or GitRepository of one cluster."""
    return bounded_name(f"btp-gitops-{cluster}")


def bounded_name(name: str) -> str:
    """`name`, or a prefix of it and a hash when it would not fit a label value."""
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:_HASHED_PREFIX].rstrip('.-')}-{digest}"


def argocd_application_name(cluster: str, app: str) -> str:
    """The name of the Application the ApplicationSet makes for one app directory: `<cluster>-<app>`,
    bounded like every name of the wiring. `argocd_application_name_template` computes the same in
    the ApplicationSet controller."""
    return bounded_name(f"{cluster}-{app}")


def argocd_application_name_template(cluster: str) -> str:
    """`argocd_application_name(cluster, <directory name>)` as an ApplicationSet Go template (Sprig
    functions, as the ApplicationSet controller provides them): the app directories are found by
    the controller at sync time, so the name is computed there. `cluster` is a DNS-1123 label
    (checked before anything is rendered): nothing in it needs quoting in a Go string literal."""
    return (
        f'{{{{- $name := printf "%s-%s" "{cluster}" .path.basename -}}}}'
        f"{{{{- if le (len $name) {_MAX_NAME} -}}}}{{{{ $name }}}}"
        f'{{{{- else -}}}}{{{{ regexReplaceAll "[.-]+$" (trunc {_HASHED_PREFIX} $name) "" }}}}'
        "-{{ trunc 8 (sha256sum $name) }}{{- end -}}"
    )


def _argocd_sync_policy(options: TargetOptions, sync_options: Sequence[str]) -> dict[str, Any]:
    policy: dict[str, Any] = {"automated": {"prune": True, "selfHeal": True}}
    if sync_options:
        policy["syncOptions"] = list(sync_options)
    if options.argocd_retry.limit:
        policy["retry"] = options.argocd_retry.spec()
    return policy


def argocd_application_set(cluster: str, options: TargetOptions) -> KubeObject:
    """One Application per app directory of the cluster, synced in waves, pruned, retried."""
    repo_url = _required_repo_url(options)
    root = f"clusters/{cluster}"
    destination = options.argocd_destination
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": wiring_name(cluster), "namespace": options.argocd_namespace},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [
                {
                    "git": {
                        "repoURL": repo_url,
                        "revision": options.revision,
                        "directories": [
                            {"path": f"{root}/*"},
                            {"path": f"{root}/{TENANTS_DIR}/*/*/*"},
                            {"path": f"{root}/{WIRING_DIR}", "exclude": True},
                            {"path": f"{root}/{TENANTS_DIR}", "exclude": True},
                        ],
                    }
                }
            ],
            "template": {
                "metadata": {"name": argocd_application_name_template(cluster)},
                "spec": {
                    "project": options.argocd_project,
                    "source": {
                        "repoURL": repo_url,
                        "targetRevision": options.revision,
                        "path": "{{.path.path}}",
                    },
                    "destination": {destination.field: destination.value},
                    "syncPolicy": _argocd_sync_policy(options, ARGOCD_SYNC_OPTIONS),
                    "ignoreDifferences": [
                        {"group": group, "kind": kind, "jqPathExpressions": [path]}
                        for group, kind, path in CA_BUNDLE_FIELDS
                    ],
                },
            },
        },
    }


def argocd_wiring_application(cluster: str, options: TargetOptions) -> KubeObject:
    """The Application that syncs the wiring itself (app of apps): `clusters/<cluster>`, whose
    kustomization.yaml holds `.wiring` only, i.e. the ApplicationSet and this Application. Argo CD's
    own objects live where Argo CD runs, so its destination is always Argo CD's own cluster and
    namespace, whatever `--argocd-destination-*` says for the apps. No resources finalizer:
    deleting it leaves the ApplicationSet and the apps alone."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": wiring_name(cluster), "namespace": options.argocd_namespace},
        "spec": {
            "project": options.argocd_project,
            "source": {
                "repoURL": _required_repo_url(options),
                "targetRevision": options.revision,
                "path": f"clusters/{cluster}",
            },
            "destination": {"server": IN_CLUSTER, "namespace": options.argocd_namespace},
            "syncPolicy": _argocd_sync_policy(options, ()),
        },
    }


def check_argocd_names(cluster: str, apps: Sequence[str]) -> None:
    """The Applications of one cluster's apps and the wiring's Application must not share a name
    (`<cluster>-<app>` against `btp-gitops-<cluster>`: only contrived names meet)."""
    for app in apps:
        if argocd_application_name(cluster, app) == wiring_name(cluster):
            raise InputError(
                f"app {app!r} of cluster {cluster!r} would get the Argo CD Application name "
                f"{wiring_name(cluster)!r}, which the wiring's own Application has: rename the app "
                "or the cluster"
            )


def flux_git_repository(cluster: str, options: TargetOptions) -> KubeObject:
    spec: dict[str, Any] = {
        "interval": options.flux.source_interval,
        "url": _required_repo_url(options),
        "ref": {"branch": options.revision},
    }
    if options.flux.secret_ref:
        spec["secretRef"] = {"name": options.flux.secret_ref}
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": wiring_name(cluster), "namespace": options.flux_namespace},
        "spec": spec,
    }


def flux_source_name(cluster: str, options: TargetOptions) -> str:
    """The GitRepository every Kustomization of the cluster reads."""
    return wiring_name(cluster) if options.emit else options.flux_source


def flux_root_kustomization(cluster: str, options: TargetOptions) -> KubeObject:
    """The Kustomization of the cluster directory: it applies `.wiring/` (itself included) and
    prunes what leaves it, so the wiring follows Git once this object has been applied by hand.

    It does not wait for the stage Kustomizations it applies: each reports its own readiness, and
    one failing app must not hold back the wiring of the others."""
    spec: dict[str, Any] = {
        "interval": options.flux.interval,
        "path": f"./clusters/{cluster}",
        "prune": True,
        "wait": False,
        "timeout": options.flux.timeout,
        "sourceRef": {"kind": "GitRepository", "name": flux_source_name(cluster, options)},
    }
    if options.flux.service_account:
        spec["serviceAccountName"] = options.flux.service_account
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": wiring_name(cluster), "namespace": options.flux_namespace},
        "spec": spec,
    }


def flux_bootstrap_objects(cluster: str, options: TargetOptions) -> list[KubeObject]:
    """What a user applies once: the root Kustomization, and the GitRepository it reads when the
    render emits one. Flux reconciles everything else from Git."""
    source = [flux_git_repository(cluster, options)] if options.emit else []
    return [*source, flux_root_kustomization(cluster, options)]


def flux_kustomization_name(app: str, stage_dir: str) -> str:
    return bounded_name(f"{app}-{stage_dir}")


def flux_kustomizations(
    cluster: str, app: str, stage_dirs: Sequence[str], options: TargetOptions, directory: str | None = None
) -> list[KubeObject]:
    """One Kustomization per stage of one app (`stage_dirs` in sync order), each waiting for its
    objects to be healthy and depending on the stage before it. `directory` is the app's directory
    in the cluster directory (core.layout.app_directory), the app's name when not given."""
    source = flux_source_name(cluster, options)
    directory = directory or app
    objects = []
    for index, stage_dir in enumerate(stage_dirs):
        spec: dict[str, Any] = {
            "interval": options.flux.interval,
            "path": f"./clusters/{cluster}/{directory}/{stage_dir}",
            "prune": True,
            "wait": options.flux.wait,
            "timeout": options.flux.timeout,
            "sourceRef": {"kind": "GitRepository", "name": source},
        }
        if options.flux.service_account:
            spec["serviceAccountName"] = options.flux.service_account
        if index:
            spec["dependsOn"] = [{"name": flux_kustomization_name(app, stage_dirs[index - 1])}]
        objects.append(
            {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {
                    "name": flux_kustomization_name(app, stage_dir),
                    "namespace": options.flux_namespace,
                },
                "spec": spec,
            }
        )
    return objects


def wiring_objects(
    cluster: str,
    app_stages: Mapping[str, Sequence[str]],
    options: TargetOptions,
    directories: Mapping[str, str] | None = None,
) -> list[KubeObject]:
    """The wiring of one cluster; `app_stages` maps each app to its stage directories (Flux; for
    Argo CD the apps, with no stages), `directories` each app to its directory where that is not
    the app's name (a tenant's shard directory)."""
    if options.target == FLUX:
        where = directories or {}
        stages = [
            obj
            for app in sorted(app_stages)
            for obj in flux_kustomizations(cluster, app, app_stages[app], options, where.get(app))
        ]
        return [*flux_bootstrap_objects(cluster, options), *stages]
    if not options.emit:
        return []
    check_argocd_names(cluster, list(app_stages))
    return [argocd_application_set(cluster, options), argocd_wiring_application(cluster, options)]


def wiring_files(
    cluster: str,
    app_stages: Mapping[str, Sequence[str]],
    options: TargetOptions,
    directories: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Files relative to `clusters/<cluster>/`: `.wiring/*` and the cluster's kustomization.yaml."""
    if not options.writes_wiring:
        return {}
    objects = wiring_objects(cluster, app_stages, options, directories)
    names = file_names(objects)
    files = {f"{WIRING_DIR}/{name}": dump_object(obj) for name, obj in zip(names, objects, strict=True)}
    files[f"{WIRING_DIR}/{KUSTOMIZATION}"] = kustomization(names)
    files[KUSTOMIZATION] = kustomization([WIRING_DIR])
    return dict(sorted(files.items()))


def _required_repo_url(options: TargetOptions) -> str:
    if not options.repo_url:
        # The CLI refuses --emit-wiring without --repo-url; reaching this is a bug.
        raise ValueError("the wiring needs the Git repository's URL")
    return options.repo_url
