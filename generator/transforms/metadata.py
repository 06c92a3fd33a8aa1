"""Labels, namespaces and finalizers: the metadata rendered objects carry."""

from __future__ import annotations

from collections.abc import Mapping

from btp_gitops.generator.core.kinds import ScopeIndex
from btp_gitops.generator.core.objects import Manifest, labels_of, metadata, pod_template


def add_labels(manifests: list[Manifest], wanted: Mapping[str, str]) -> list[Manifest]:
    """Set `wanted` labels on every object; other labels the object has are kept."""
    for manifest in manifests:
        labels_of(manifest.body).update(wanted)
    return manifests


def add_pod_template_labels(manifests: list[Manifest], wanted: Mapping[str, str]) -> list[Manifest]:
    """Set `wanted` labels on the pod template of every workload (Deployment, Job, ...)."""
    for manifest in manifests:
        template = pod_template(manifest.body)
        if template is not None:
            labels_of(template).update(wanted)
    return manifests


def remove_labels(manifests: list[Manifest], keys: set[str]) -> list[Manifest]:
    for manifest in manifests:
        found = labels_of(manifest.body)
        for key in keys:
            found.pop(key, None)
    return manifests


def set_default_namespace(manifests: list[Manifest], namespace: str, scopes: ScopeIndex) -> list[Manifest]:
    """Namespaced objects without a namespace get `namespace`; cluster-scoped ones lose theirs.

    An explicit namespace is kept: charts place some objects elsewhere on purpose (the BTP operator
    Secret lives in the credentials namespace).
    """
    for manifest in manifests:
        scopes.learn(manifest.body)
    for manifest in manifests:
        meta = metadata(manifest.body)
        if scopes.is_cluster_scoped(manifest.body):
            meta.pop("namespace", None)
        elif not meta.get("namespace"):
            meta["namespace"] = namespace
    return manifests


def add_finalizer(manifest: Manifest, finalizer: str) -> Manifest:
    """Put `finalizer` on the object, once, after any it already has."""
    meta = metadata(manifest.body)
    finalizers = list(meta.get("finalizers") or [])
    if finalizer not in finalizers:
        meta["finalizers"] = [*finalizers, finalizer]
    return manifest


def drop_empty_metadata_maps(manifests: list[Manifest]) -> list[Manifest]:
    """Remove `labels: {}` / `annotations: {}` left behind by filters, to keep output tidy."""
    for manifest in manifests:
        meta = metadata(manifest.body)
        for key in ("labels", "annotations"):
            if key in meta and not meta[key]:
                del meta[key]
    return manifests
