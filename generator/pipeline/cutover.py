"""`btp-gitops diff --against-cluster`: the cutover plan of a render against a running cluster.

render in memory (nothing written) -> list, in the namespaces the render writes to, the kinds it
writes and those the operators make (each rendered identity there is found in its list, or known
absent) -> GET the live object of every other rendered identity (cluster-scoped ones) -> classify
(migration.plan) -> report

The render is the one `diff` and `render` make, for a cluster directory not rendered yet (a
cutover starts from a cluster no render wrote to): tenant apps sharded, no previous Kyma record.
The cluster is only read (io.live_lookup: GETs, bounded). Listed Secrets lose their values as
soon as they are read: a Secret left behind is judged by its name and markers, never by what it
holds; only the live Secret of a rendered identity keeps them, to tell whether an immutable one
would change, and the plan keeps none of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from btp_gitops.generator.charts.renderer import ChartRenderer
from btp_gitops.generator.core.objects import ObjectKey, object_key
from btp_gitops.generator.core.ownership import shards_tenants
from btp_gitops.generator.core.progress import NO_PROGRESS, Progress
from btp_gitops.generator.core.validation import SchemaRegistry
from btp_gitops.generator.core.yamlio import dump_report
from btp_gitops.generator.diff.compare import tree_entries
from btp_gitops.generator.io.live_lookup import LiveLookup
from btp_gitops.generator.io.render_cache import RenderCache
from btp_gitops.generator.migration.model import LiveObject
from btp_gitops.generator.migration.plan import CutoverPlan, RenderedObject, plan_cutover
from btp_gitops.generator.migration.plan_report import json_report, markdown_report, text_report
from btp_gitops.generator.pipeline.render import KymaOptions, RenderResult, render_cluster
from btp_gitops.generator.transforms.guards import assert_no_private_key_in_text
from btp_gitops.generator.wiring.objects import DEFAULT_TARGET, TargetOptions

# Kinds the three operators create beside (or instead of) what a render produces, listed in
# every namespace the render writes to so that what they made under other names is found.
OPERATOR_KINDS = (
    ("apps/v1", "Deployment"),
    ("v1", "Service"),
    ("v1", "Secret"),
    ("v1", "ConfigMap"),
    ("batch/v1", "Job"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("networking.istio.io/v1", "VirtualService"),
    ("networking.istio.io/v1", "Gateway"),
    ("networking.istio.io/v1", "DestinationRule"),
    ("dns.gardener.cloud/v1alpha1", "DNSEntry"),
    ("cert.gardener.cloud/v1alpha1", "Certificate"),
    ("cert-manager.io/v1", "Certificate"),
    ("sme.sap.com/v1alpha1", "CAPTenantOperation"),
)
# Cluster-scoped objects are listed only by the operators' labels: a cluster holds many of them.
CLUSTER_SELECTORS = ("app.kubernetes.io/managed-by=btp-manager", "operator.kyma-project.io/managed-by")


@dataclass(frozen=True, slots=True)
class CutoverRequest:
    sources: tuple[Path, ...]
    cluster: str
    kyma: KymaOptions
    target: TargetOptions = DEFAULT_TARGET
    allow_paths: tuple[Path, ...] = ()
    cache: RenderCache | None = None


@dataclass(frozen=True, slots=True)
class CutoverResult:
    plan: CutoverPlan
    render: RenderResult


def rendered_objects(result: RenderResult) -> list[RenderedObject]:
    files = {**result.files, **result.records}
    return [
        RenderedObject(entry.app, entry.path, entry.body)
        for entry in tree_entries(files).values()
        if entry.body is not None
    ]


def cutover_plan(
    request: CutoverRequest,
    engine: ChartRenderer,
    schemas: SchemaRegistry,
    lookup: LiveLookup,
    progress: Progress = NO_PROGRESS,
) -> CutoverResult:
    result = render_cluster(
        request.sources,
        request.cluster,
        engine,
        schemas,
        kyma=request.kyma,
        previous={},
        target=request.target,
        allow_paths=request.allow_paths,
        shard_tenants=shards_tenants(None, (), migrate=False),
        cache=request.cache,
        progress=progress,
    )
    rendered = rendered_objects(result)
    wanted = {object_key(item.body) for item in rendered}
    live: dict[ObjectKey, LiveObject] = {}
    owned: list[LiveObject] = []
    listed: set[tuple[str, str, str]] = set()  # (apiVersion, kind, namespace) read whole
    for (api_version, kind, namespace), found in _operator_objects(lookup, rendered):
        listed.add((api_version, kind, namespace))
        for listed_object in found:
            key = object_key(listed_object.body)
            if key in wanted:
                live[key] = listed_object  # the list answers for a rendered identity: no GET of its own
            owned.append(_without_values(listed_object))
    for item in rendered:
        key = object_key(item.body)
        api_version = str(item.body.get("apiVersion", ""))
        if (api_version, key.kind, key.namespace) in listed:
            continue  # its namespace's list held it, or showed it does not exist
        found_one = lookup.get(api_version, key)
        if found_one is not None:
            live[key] = found_one
    unserved = {
        (api_version, kind)
        for api_version, kind in {
            (str(i.body.get("apiVersion", "")), str(i.body.get("kind", ""))) for i in rendered
        }
        if lookup.served(api_version, kind) is None
    }
    plan = plan_cutover(request.cluster, lookup.where(), rendered, live, owned, unserved=unserved)
    return CutoverResult(plan, result)


def _operator_objects(
    lookup: LiveLookup, rendered: list[RenderedObject]
) -> Iterable[tuple[tuple[str, str, str], list[LiveObject]]]:
    """Each list read, by (apiVersion, kind, namespace): every kind rendered or made by an
    operator, in every namespace the render writes to; cluster-scoped kinds by the operators'
    labels only (namespace "", and never taken as the whole of that kind)."""
    namespaces = sorted({object_key(item.body).namespace for item in rendered} - {""})
    kinds = {(str(item.body.get("apiVersion", "")), str(item.body.get("kind", ""))) for item in rendered}
    for api_version, kind in sorted(kinds | set(OPERATOR_KINDS)):
        served = lookup.served(api_version, kind)
        if served is None:
            continue
        if served.namespaced:
            for namespace in namespaces:
                yield (api_version, kind, namespace), lookup.list(api_version, kind, namespace)
        elif (api_version, kind) in kinds:
            for selector in CLUSTER_SELECTORS:
                # Not a whole list: keyed so that no rendered identity is taken as absent from it.
                yield (
                    (api_version, kind, f"?{selector}"),
                    lookup.list(api_version, kind, label_selector=selector),
                )


def _without_values(found: LiveObject) -> LiveObject:
    """A listed Secret with its keys and no values (see the module docstring)."""
    body = found.body
    if body.get("kind") != "Secret":
        return found
    stripped = {key: value for key, value in body.items() if key not in ("data", "stringData")}
    data = body.get("data")
    if isinstance(data, dict):
        stripped["data"] = dict.fromkeys(data, "")
    return LiveObject(stripped, found.origin)


def cutover_report(plan: CutoverPlan, output: str, max_length: int) -> str:
    """The plan as printed, checked for private keys (the plan holds no values; this proves it)."""
    if output == "json":
        text = json.dumps(json_report(plan), indent=2, sort_keys=True) + "\n"
    elif output == "yaml":
        text = dump_report(json_report(plan))
    elif output == "markdown":
        text = markdown_report(plan, max_length)
    else:
        text = text_report(plan)
    assert_no_private_key_in_text(f"the {output} cutover plan", text)
    return text
