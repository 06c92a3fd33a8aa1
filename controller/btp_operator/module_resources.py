"""BTP Manager's `module-resources/` artifact, read for the controller: kinds, identities, chart version.

`apply/<template>.yml` holds the objects the current chart version installs, `delete/to-delete.yml`
those of the previous version that it no longer produces (README "module-resources"). Deprovisioning
removes every object of their kinds that carries the module label; the outdated-resources sweep
compares live objects with `apply/` and honours `delete/`.

The current chart version is read from the artifact itself, so the controller needs the artifact
only, not the chart: the `chart-version` label if the documents carry it (BTP Manager's runtime
label), else Helm's `helm.sh/chart: <chart>-<version>`, where `<chart>` is the chart named by the
document's `# Source: <chart>/templates/...` line. Every document must agree on it.

The API path of a kind comes from the artifact's own CRDs when it defines the kind, else from the
lower-cased plural that Kubernetes' own kinds follow (client-go's guess: `-s`, `-es`, `-ies`);
cluster scope from the generator's table of built-in kinds plus those CRDs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.controller.kube import KubeObject, Resource
from btp_gitops.generator.core import (
    ObjectKey,
    ScopeIndex,
    api_group,
    get_path,
    install_rank,
    kind_of,
    object_key,
)
from btp_gitops.generator.domains.btp_operator import (
    APPLY,
    CHART_VERSION_LABEL,
    DELETE_FILE,
    HELM_CHART_LABEL,
    NotAnObject,
    SourcedDocument,
    chart_versions,
    is_apply_file,
    labels_on,
    parse_artifact_objects,
)

APPLY_DIR = APPLY

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "btp-manager"
MODULE_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"

# Kinds the render adds beside the chart's objects (certificates, the credentials ExternalSecret and
# its store), labelled as module objects too. They are not in the artifact, but deprovisioning must
# remove them: an ExternalSecret left behind would write the credentials Secret again.
RENDER_ADDED_KINDS = (
    Resource("cert-manager.io", "v1", "certificates", "Certificate"),
    Resource("cert-manager.io", "v1", "issuers", "Issuer"),
    Resource("cert.gardener.cloud", "v1alpha1", "certificates", "Certificate"),
    Resource("cert.gardener.cloud", "v1alpha1", "issuers", "Issuer"),
    Resource("external-secrets.io", "v1", "externalsecrets", "ExternalSecret"),
    Resource("external-secrets.io", "v1", "secretstores", "SecretStore"),
)

_CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


ArtifactDocument = SourcedDocument  # one document of the artifact: its `# Source:` and object


@dataclass(frozen=True, slots=True)
class ModuleResources:
    chart_version: str
    apply_objects: tuple[KubeObject, ...]
    delete_objects: tuple[KubeObject, ...]
    kinds: tuple[Resource, ...]  # every kind of apply/ and delete/, in deletion order (CRDs last)

    @property
    def apply_identities(self) -> frozenset[ObjectKey]:
        return frozenset(object_key(obj) for obj in self.apply_objects)

    def resource_of(self, obj: KubeObject) -> Resource:
        """The kind of one artifact object, as `kinds` holds it."""
        for resource in self.kinds:
            if resource.api_version == obj.get("apiVersion") and resource.kind == kind_of(obj):
                return resource
        raise KeyError(f"{obj.get('apiVersion')} {kind_of(obj)} is not a kind of the module resources")


def is_crd(resource: Resource) -> bool:
    return (resource.group, resource.kind) == _CRD


def deletion_order(resources: Iterable[Resource]) -> tuple[Resource, ...]:
    """Helm's uninstall order (reverse install order), CRDs last whatever the table says, because
    deleting a CRD deletes every object of its kind."""
    unique = dict.fromkeys(resources)
    return tuple(sorted(unique, key=lambda r: (is_crd(r), -install_rank(r.kind), r.group, r.kind)))


def guess_plural(kind: str) -> str:
    """The resource name Kubernetes' built-in kinds follow (Deployment -> deployments, Ingress ->
    ingresses, NetworkPolicy -> networkpolicies)."""
    lower = kind.lower()
    if lower.endswith("s"):
        return f"{lower}es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return f"{lower[:-1]}ies"
    return f"{lower}s"


def parse_artifact_file(text: str, where: str) -> list[ArtifactDocument]:
    """The documents of one artifact file (each `---`, `# Source:` line, object)."""
    try:
        return parse_artifact_objects(text)
    except yaml.YAMLError as error:
        raise ConfigurationError(f"{where}: not valid YAML: {error}") from error
    except NotAnObject as error:
        raise ConfigurationError(f"{where}: {error}") from error


def _read(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigurationError(f"cannot read {where}: {error}") from error


def is_module_object(obj: KubeObject) -> bool:
    return labels_on(obj).get(MANAGED_BY_LABEL) == MANAGED_BY


def chart_version_of(documents: list[ArtifactDocument], where: str) -> str:
    versions = chart_versions(documents)
    if len(versions) != 1:
        found = ", ".join(sorted(versions)) or "none"
        raise ConfigurationError(
            f"{where}: cannot tell the chart version (versions found on the apply/ objects: {found}); "
            f"each object needs a `{CHART_VERSION_LABEL}` or `{HELM_CHART_LABEL}` label"
        )
    return versions.pop()


def _kinds(objects: list[KubeObject]) -> tuple[Resource, ...]:
    crds = [obj for obj in objects if (api_group(obj), kind_of(obj)) == _CRD]
    scopes = ScopeIndex(crds)
    plurals = {
        (str(get_path(crd, "spec", "group")), str(get_path(crd, "spec", "names", "kind"))): str(
            get_path(crd, "spec", "names", "plural")
        )
        for crd in crds
    }
    resources = []
    for obj in objects:
        group, version = api_group(obj), str(obj["apiVersion"]).rpartition("/")[2]
        kind = kind_of(obj)
        plural = plurals.get((group, kind)) or guess_plural(kind)
        resources.append(Resource(group, version, plural, kind, not scopes.is_cluster_scoped(obj)))
    return deletion_order(resources)


def load_module_resources(directory: Path) -> ModuleResources:
    """Read `apply/*.yaml` and `apply/*.yml` (a template's own extension) and
    `delete/to-delete.yml` (which may be empty or absent)."""
    apply_dir = directory / APPLY_DIR
    files = (
        sorted(p for p in apply_dir.iterdir() if p.is_file() and is_apply_file(p.name))
        if apply_dir.is_dir()
        else []
    )
    if not files:
        raise ConfigurationError(f"no module resources: {apply_dir} holds no .yaml or .yml files")
    applied = [
        document
        for path in files
        for document in parse_artifact_file(_read(path, str(path)), f"{APPLY_DIR}/{path.name}")
    ]
    delete_path = directory / DELETE_FILE
    deleted = []
    if delete_path.exists():
        deleted = parse_artifact_file(_read(delete_path, str(delete_path)), DELETE_FILE)
    apply_objects = [document.body for document in applied]
    delete_objects = [document.body for document in deleted]
    return ModuleResources(
        chart_version=chart_version_of(applied, str(apply_dir)),
        apply_objects=tuple(apply_objects),
        delete_objects=tuple(delete_objects),
        kinds=_kinds(apply_objects + delete_objects),
    )
