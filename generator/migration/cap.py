"""CAP Operator's live objects into btp-gitops sources: `import_cap(objects) -> ImportResult`.

The layout is the docs' (`examples/cap-app`), one directory per application, and the tenant
records are where the subscription server writes them (`controller.records.changes.record_path`:
`<directory of the CAPApplication's file>/tenants/<tenant>.yaml`):

    cap/<namespace>/<application>/capapplication.yaml
    cap/<namespace>/<application>/version-<spec.version>.yaml   (the version's name when two
                                                                   versions share a spec.version)
    cap/<namespace>/<application>/tenants/<tenant>.yaml
    cap/<namespace>/domains.yaml                                 every Domain of the namespace
    cap/cluster-domains.yaml                                     every ClusterDomain

What the API server and CAP Operator add is left out (and a render adds back what it needs): the
server's metadata (uid, resourceVersion, generation, managedFields, creationTimestamp,
ownerReferences, finalizers, deletion marks), kubectl's last-applied annotation, CAP Operator's
identity labels and annotations (`OPERATOR_LABELS`, `OPERATOR_ANNOTATIONS`: owner and application
identifiers and their hashes, the owner's generation, the tenant's id and type, which a render
sets from the spec) and every status but a tenant's. A tenant keeps what a render reads from its
record: `state`, `currentCAPApplicationVersionInstance`, the `previousCAPApplicationVersions` that
still exist (version affinity routes to them) and `lastCompletedOperation`, which CAP Operator
does not record: for a Ready tenant it is derived (provisioning on its version, or the upgrade to
it when it ran on earlier ones), so the render does not run that operation again. A tenant's
`spec.version` is CAP Operator's own bookkeeping under `versionUpgradeStrategy: always` (it sets
the newest Ready version there itself) and is left out; under `never` it is the user's pin and
kept. The provider tenant is derived from the application's `spec.provider` by a render; its
record is written only once it has a status, as the controller does.

A version CAP Operator reconciled (its identity labels or its controller reference to the
CAPApplication are on it) gets the annotation `btp-gitops.io/cap-operator-generation` with its live
`metadata.generation`: CAP Operator wrote that generation into the pod selector of every Deployment
it created for the version, a selector cannot change, and with the annotation a render keeps it.
A version without those marks (one btp-gitops applied) gets none, so a round trip gives the same
bytes; one without a usable generation gets none and a comment that its Deployments would be
recreated.

A Domain or ClusterDomain names the certificate manager CAP Operator issued its certificate
with. CAP Operator's chart chooses it from what the cluster serves (CERT_MANAGER: gardener where
Gardener's cert.gardener.cloud API is served, else cert-manager), and so does the import, from
the Certificate CRDs it read (migration.cluster_managers): Gardener's installed, the render's
default, Gardener's; only cert-manager's, `btp-gitops.io/certificate-manager: cert-manager`;
neither read, the default and a comment saying how to choose otherwise.

A comment above each document says where the object came from and what was left out. An object
that cannot be expressed (a version or tenant whose application was not read, a name that cannot
be a file name, the same object read twice) is in `skipped` with the reason. No Secret is read
here: a CAP application names its binding Secrets, and the names are all that is written.
Deterministic: the same objects, in any order, give the same files.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.generator.core.names import NameRule, name_message
from btp_gitops.generator.migration.cluster_managers import (
    CERT_MANAGER,
    KUBERNETES_DNS,
    InstalledManagers,
    installed_managers,
)
from btp_gitops.generator.migration.kinds import CAP_GROUP
from btp_gitops.generator.migration.model import (
    ImportedDocument,
    ImportedFile,
    ImportResult,
    LiveObject,
    Skipped,
)

API_VERSION = f"{CAP_GROUP}/v1alpha1"
CAP_APPLICATION = "CAPApplication"
CAP_APPLICATION_VERSION = "CAPApplicationVersion"
CAP_TENANT = "CAPTenant"
DOMAIN = "Domain"
CLUSTER_DOMAIN = "ClusterDomain"
CAP_KINDS = (CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT, DOMAIN, CLUSTER_DOMAIN)

ROOT = "cap"
APPLICATION_FILE = "capapplication.yaml"  # its directory holds the application's versions and tenants
TENANTS_DIRECTORY = "tenants"
PROVIDER_SUFFIX = "-provider"

_PREFIX = "sme.sap.com/"
# Labels CAP Operator (and a render, which sets them again from the spec) puts on its own objects.
OPERATOR_LABELS = frozenset(
    f"{_PREFIX}{key}"
    for key in (
        "owner-identifier-hash",
        "owner-generation",
        "btp-app-identifier-hash",
        "app-identifier-hash",
        "btp-tenant-id",
        "tenant-type",
        "subscription-guid-hash",
        "relevant-dns-target-hash",
    )
)
OPERATOR_ANNOTATIONS = frozenset(
    {
        f"{_PREFIX}owner-identifier",
        f"{_PREFIX}btp-app-identifier",
        f"{_PREFIX}app-identifier",
        f"{_PREFIX}resource-hash",
        "kubectl.kubernetes.io/last-applied-configuration",
    }
)
# CAP Operator's marks on a version it reconciled: its identity labels, and the controller
# reference to the CAPApplication it adds. A version btp-gitops applied carries none of them.
RECONCILED_LABELS = (f"{_PREFIX}owner-identifier-hash", f"{_PREFIX}btp-app-identifier-hash")
# The render's (domains.cap.model reads the same name): the version's generation when CAP Operator
# created its Deployments, whose pod selectors hold it and cannot change.
CAP_OPERATOR_GENERATION_ANNOTATION = "btp-gitops.io/cap-operator-generation"
MAX_GENERATION = 2**63 - 1  # metadata.generation is an int64
# The render's (domains.cap.model): which certificate manager issues a domain's certificate,
# gardener unless it says cert-manager. Set on import where only cert-manager is installed.
CERTIFICATE_MANAGER_ANNOTATION = "btp-gitops.io/certificate-manager"
# The render's too: who makes a domain's DNS records, gardener (DNSEntries per dnsMode) unless it
# says kubernetes (none). Set on import where Gardener's DNS API is known not to be installed.
DNS_MANAGER_ANNOTATION = "btp-gitops.io/dns-manager"
DNS_MODE_NONE = "None"
APP_LABEL = "app"  # a render labels a tenant with its application's btpAppName
KEPT_METADATA = ("name", "namespace", "labels", "annotations")
TENANT_STATUS_FIELDS = (
    "state",
    "currentCAPApplicationVersionInstance",
    "previousCAPApplicationVersions",
    "lastCompletedOperation",
)
READY = "Ready"
# A file name holds at most 255 bytes; `version-<name>.yaml` is the longest one made from a name.
MAX_FILE_NAME_PART = 255 - len("version-.yaml")
UNFINISHED_STATES = ("Provisioning", "ProvisioningError", "Upgrading", "UpgradeError")
_SEMVER_FILE_PART = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+_-]*$")


def _is_cap(live: LiveObject) -> bool:
    return live.api_version == API_VERSION and live.kind in CAP_KINDS


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _by_key(item: tuple[Any, Any]) -> str:
    """Map entries in key order; a key that is no string (YAML allows it) sorts by its text."""
    return str(item[0])


def _key(live: LiveObject) -> tuple[str, str, str]:
    return live.kind, live.namespace, live.name


@dataclass(slots=True)
class _Notes:
    """What was left out of one object, for the comment above its document."""

    dropped: list[str] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)

    def lines(self, origin: str) -> tuple[str, ...]:
        lines = [f"imported from {origin}"]
        if self.dropped:
            lines.append("left out (the API server's and CAP Operator's own): " + ", ".join(self.dropped))
        return (*lines, *self.remarks)


def _cleaned(live: LiveObject, notes: _Notes, *, strip_app_label: str | None = None) -> dict[str, Any]:
    """The object's apiVersion, kind, the metadata a source may hold (minus what CAP Operator and
    the API server add) and its spec; everything else named in `notes`."""
    body = live.body
    metadata = _mapping(body.get("metadata"))
    kept: dict[str, Any] = {}
    for name in sorted(metadata, key=str):
        if name not in KEPT_METADATA:
            notes.dropped.append(f"metadata.{name}")
    kept["name"] = live.name
    if live.namespace:
        kept["namespace"] = live.namespace
    labels = {}
    for key, value in sorted(_mapping(metadata.get("labels")).items(), key=_by_key):
        if key in OPERATOR_LABELS or (key == APP_LABEL and value == strip_app_label):
            notes.dropped.append(f"label {key}")
        else:
            labels[key] = copy.deepcopy(value)
    annotations = {}
    for key, value in sorted(_mapping(metadata.get("annotations")).items(), key=_by_key):
        if key in OPERATOR_ANNOTATIONS:
            notes.dropped.append(f"annotation {key}")
        else:
            annotations[key] = copy.deepcopy(value)
    if labels:
        kept["labels"] = labels
    if annotations:
        kept["annotations"] = annotations
    for name in ("labels", "annotations"):
        if name in metadata and not isinstance(metadata[name], dict):
            kept[name] = copy.deepcopy(
                metadata[name]
            )  # as read: its schema refuses it, and the import lists it
    result: dict[str, Any] = {"apiVersion": live.api_version, "kind": live.kind, "metadata": kept}
    if "spec" in body:
        result["spec"] = copy.deepcopy(body["spec"])
    for name in sorted(body, key=str):
        if name not in ("apiVersion", "kind", "metadata", "spec", "status"):
            # Not dropped silently and not guessed at: the schema refuses it, and the import lists it.
            result[name] = copy.deepcopy(body[name])
    return result


@dataclass(slots=True)
class _Application:
    live: LiveObject
    directory: str
    versions: dict[str, LiveObject] = field(default_factory=dict)  # by name
    tenants: list[LiveObject] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.live.name

    @property
    def spec(self) -> dict[str, Any]:
        return _mapping(self.live.body.get("spec"))

    def provider_tenant_id(self) -> str:
        return str(_mapping(self.spec.get("provider")).get("tenantId") or "")


@dataclass(slots=True)
class _Import:
    files: list[ImportedFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def skip(self, live: LiveObject, reason: str) -> None:
        self.skipped.append(Skipped(live.describe(), live.origin, reason))

    def add(self, path: str, *documents: ImportedDocument) -> None:
        self.files.append(ImportedFile(path, tuple(documents)))


def _unique(objects: Iterable[LiveObject], result: _Import) -> list[LiveObject]:
    """CAP objects in a stable order, each once: a second copy (two dumps of one object) is a skip."""
    ordered = sorted(
        (live for live in objects if _is_cap(live)),
        key=lambda live: (*_key(live), live.origin),
    )
    seen: dict[tuple[str, str, str], LiveObject] = {}
    unique = []
    for live in ordered:
        first = seen.get(_key(live))
        if first is not None:
            result.skip(live, f"read twice: the copy from {first.origin} is imported")
            continue
        seen[_key(live)] = live
        unique.append(live)
    return unique


def _name_problem(live: LiveObject) -> str | None:
    """Why the object's name or namespace cannot become part of a file path, or None."""
    message = name_message(live.name, NameRule.SUBDOMAIN)
    if message is not None:
        return f"its name cannot be a file name: {message}"
    if len(live.name) > MAX_FILE_NAME_PART:
        return f"its name cannot be a file name: longer than {MAX_FILE_NAME_PART} characters"
    if live.kind != CLUSTER_DOMAIN:
        message = name_message(live.namespace, NameRule.LABEL)
        if message is not None:
            return f"its namespace cannot be a directory name: {message}"
    return None


def _owning_application(
    live: LiveObject, applications: Mapping[tuple[str, str], _Application], result: _Import
) -> _Application | None:
    owner = _mapping(live.body.get("spec")).get("capApplicationInstance")
    if not isinstance(owner, str) or not owner:
        result.skip(live, "spec.capApplicationInstance is missing: no CAPApplication it belongs to")
        return None
    application = applications.get((live.namespace, owner))
    if application is None:
        result.skip(live, f"its CAPApplication {live.namespace}/{owner} was not read (nor imported)")
    return application


def import_cap(objects: Iterable[LiveObject]) -> ImportResult:
    """The CAP objects among `objects` as source files, and the ones that cannot be expressed."""
    result = _Import()
    objects = list(objects)
    managers = installed_managers(objects)
    applications: dict[tuple[str, str], _Application] = {}
    domains: dict[str, list[LiveObject]] = {}
    cluster_domains: list[LiveObject] = []
    dependents: list[LiveObject] = []
    for live in _unique(objects, result):
        problem = _name_problem(live)
        if problem is not None:
            result.skip(live, problem)
        elif live.kind == CAP_APPLICATION:
            directory = f"{ROOT}/{live.namespace}/{live.name}"
            applications[(live.namespace, live.name)] = _Application(live, directory)
        elif live.kind == DOMAIN:
            domains.setdefault(live.namespace, []).append(live)
        elif live.kind == CLUSTER_DOMAIN:
            cluster_domains.append(live)
        else:
            dependents.append(live)
    for live in dependents:
        application = _owning_application(live, applications, result)
        if application is None:
            continue
        if live.kind == CAP_APPLICATION_VERSION:
            application.versions[live.name] = live
        else:
            application.tenants.append(live)
    for application in applications.values():
        _import_application(application, result)
    for namespace, found in sorted(domains.items()):
        result.add(f"{ROOT}/{namespace}/domains.yaml", *(_domain(live, managers) for live in found))
    if cluster_domains:
        result.add(f"{ROOT}/cluster-domains.yaml", *(_domain(live, managers) for live in cluster_domains))
    _refuse_clashing_paths(result)
    return ImportResult(
        files=tuple(sorted(result.files, key=lambda f: f.path)), skipped=tuple(result.skipped)
    )


def depends_on(path: str, refused: str) -> bool:
    """Whether the file at `path` names what the refused file `refused` held: the versions and
    tenants of an application whose own file is not written would name an application that is
    not there, and a render of the sources would refuse them all."""
    directory, _, name = refused.rpartition("/")
    return name == APPLICATION_FILE and path != refused and path.startswith(f"{directory}/")


def _refuse_clashing_paths(result: _Import) -> None:
    """A file where another file needs a directory (an application named `domains.yaml`): the file
    of the application is not written, and says why, rather than one overwriting the other."""
    paths = {imported.path for imported in result.files}
    directories = {"/".join(path.split("/")[:n]) for path in paths for n in range(1, path.count("/") + 1)}
    clashing = paths & directories
    if not clashing:
        return
    kept = []
    for imported in result.files:
        parents = {"/".join(imported.path.split("/")[:n]) for n in range(1, imported.path.count("/") + 1)}
        if parents & clashing:
            for document in imported.documents:
                metadata = _mapping(document.body.get("metadata"))
                ref = f"{document.body.get('kind')} {metadata.get('namespace')}/{metadata.get('name')}"
                origin = document.comment[0].removeprefix("imported from ") if document.comment else ""
                clash = sorted(parents & clashing)[0]
                result.skipped.append(
                    Skipped(ref, origin, f"{imported.path}: {clash} is a file of another object")
                )
            continue
        kept.append(imported)
    result.files[:] = kept


def _domain(live: LiveObject, managers: InstalledManagers) -> ImportedDocument:
    notes = _Notes()
    body = _cleaned(live, notes)
    if "status" in live.body:
        notes.dropped.append("status")
    metadata = body["metadata"]
    _choose_dns_manager(metadata, body.get("spec"), managers, notes)
    annotations = metadata.get("annotations", {})
    if isinstance(annotations, dict) and CERTIFICATE_MANAGER_ANNOTATION not in annotations:
        # CAP Operator's chart sets CERT_MANAGER to gardener wherever the cluster serves Gardener's
        # cert.gardener.cloud API, else to cert-manager: the render's default is the former.
        if managers.cert_manager and not managers.gardener:
            _annotate(metadata, annotations, CERTIFICATE_MANAGER_ANNOTATION, CERT_MANAGER)
            notes.remarks.append(
                f"{CERTIFICATE_MANAGER_ANNOTATION}: {CERT_MANAGER}, as CAP Operator issued it: "
                "cert-manager's Certificate CRD is installed and Gardener's is not (CAP Operator's "
                "chart then sets CERT_MANAGER to cert-manager)"
            )
        elif not managers.gardener:
            notes.remarks.append(
                "neither certificate manager's Certificate CRD was among the objects read: the render "
                "issues this domain's certificate with Gardener cert-management (its default, and CAP "
                "Operator's where the cluster serves cert.gardener.cloud). Where CAP Operator ran with "
                f"CERT_MANAGER=cert-manager, annotate {CERTIFICATE_MANAGER_ANNOTATION}: {CERT_MANAGER}, "
                "or the TLS Secret changes at the switch"
            )
    return ImportedDocument(body, notes.lines(live.origin))


def _annotate(metadata: dict[str, Any], annotations: dict[str, Any], key: str, value: str) -> None:
    """`metadata` with the annotation `key` added to `annotations` (its own), in name order."""
    metadata["annotations"] = dict(sorted({**annotations, key: value}.items()))


def _choose_dns_manager(
    metadata: dict[str, Any], spec: Any, managers: InstalledManagers, notes: _Notes
) -> None:
    """CAP Operator's chart sets DNS_MANAGER to gardener where the cluster serves Gardener's
    dns.gardener.cloud API, else to kubernetes, and CAP Operator then makes no DNS entry for any
    dnsMode. The render's default is the former; a domain already naming one keeps it."""
    annotations = metadata.get("annotations", {})
    if not isinstance(annotations, dict) or DNS_MANAGER_ANNOTATION in annotations or managers.gardener_dns:
        return
    mode = spec.get("dnsMode") if isinstance(spec, dict) else None
    if managers.kubernetes_dns:
        _annotate(metadata, annotations, DNS_MANAGER_ANNOTATION, KUBERNETES_DNS)
        ignored = f" (its dnsMode {mode} made none)" if mode not in (None, DNS_MODE_NONE) else ""
        notes.remarks.append(
            f"{DNS_MANAGER_ANNOTATION}: {KUBERNETES_DNS}, as CAP Operator ran: of the CRDs read, "
            "cert-manager's is installed and neither Gardener's Certificate nor its DNSEntry CRD is (no "
            "Gardener cluster), "
            f"so its chart set DNS_MANAGER to kubernetes and it made no DNS entries{ignored}; the render "
            "makes none either"
        )
    elif mode not in (None, DNS_MODE_NONE):
        notes.remarks.append(
            "Gardener's DNSEntry CRD was not among the objects read: the render makes this domain's "
            f"DNS entries for dnsMode {mode} with Gardener DNS (its default, and CAP Operator's where the "
            "cluster serves dns.gardener.cloud). Where CAP Operator ran with DNS_MANAGER=kubernetes, "
            f"annotate {DNS_MANAGER_ANNOTATION}: {KUBERNETES_DNS}, or the render adds DNSEntries the "
            "cluster does not serve"
        )


def _import_application(application: _Application, result: _Import) -> None:
    notes = _Notes()
    body = _cleaned(application.live, notes)
    if "status" in application.live.body:
        notes.dropped.append("status")
    tenant_files = _tenant_files(application, result)
    provider = _provider_tenant(application)
    if provider is not None and not any(path.endswith(f"/{provider.name}.yaml") for path in tenant_files):
        notes.remarks.append(
            f"its provider tenant {provider.name} has no status yet: a render derives it from spec.provider"
        )
    result.add(
        f"{application.directory}/{APPLICATION_FILE}",
        ImportedDocument(body, notes.lines(application.live.origin)),
    )
    for path, version in _version_files(application).items():
        version_notes = _Notes()
        version_body = _cleaned(version, version_notes)
        if "status" in version.body:
            version_notes.dropped.append("status")
        _keep_cap_operators_selectors(version, version_body, version_notes)
        result.add(path, ImportedDocument(version_body, version_notes.lines(version.origin)))
    for path, document in tenant_files.items():
        result.add(path, document)


def _reconciled_by_cap_operator(version: LiveObject) -> bool:
    metadata = _mapping(version.body.get("metadata"))
    labels = _mapping(metadata.get("labels"))
    if any(key in labels for key in RECONCILED_LABELS):
        return True
    references = metadata.get("ownerReferences")
    return isinstance(references, list) and any(
        isinstance(reference, dict)
        and reference.get("kind") == CAP_APPLICATION
        and reference.get("controller") is True
        for reference in references
    )


def _keep_cap_operators_selectors(version: LiveObject, body: dict[str, Any], notes: _Notes) -> None:
    """A version CAP Operator reconciled gets `btp-gitops.io/cap-operator-generation`, its live
    generation: CAP Operator put that generation into the pod selector of each Deployment it
    created for the version, a selector cannot change, and with the annotation a render keeps it,
    so the cutover updates the Deployments in place instead of deleting and recreating them."""
    if not _reconciled_by_cap_operator(version):
        return
    generation = _mapping(version.body.get("metadata")).get("generation")
    if (
        isinstance(generation, bool)
        or not isinstance(generation, int)
        or not 0 < generation <= MAX_GENERATION
    ):
        notes.remarks.append(
            f"no usable metadata.generation was read, so {CAP_OPERATOR_GENERATION_ANNOTATION} is not set: a "
            "render gives this version's Deployments btp-gitops's own pod selector, and the switch deletes "
            "and recreates the Deployments CAP Operator made (set the annotation to their "
            "sme.sap.com/owner-generation label to keep them)"
        )
        return
    metadata = body["metadata"]
    annotations = metadata.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        return  # as read: its schema refuses it, and the import lists it
    written = dict(annotations or {})
    written[CAP_OPERATOR_GENERATION_ANNOTATION] = str(generation)
    metadata["annotations"] = dict(sorted(written.items(), key=_by_key))
    notes.remarks.append(
        f'{CAP_OPERATOR_GENERATION_ANNOTATION}: "{generation}" added: CAP Operator reconciled this version '
        f"(generation {generation}) and selects the pods of the Deployments it made by that generation; a "
        "Deployment's selector cannot change, so a render keeps CAP Operator's and the switch updates "
        "them in place"
    )


def _version_files(application: _Application) -> dict[str, LiveObject]:
    """`version-<spec.version>.yaml` per version, or `version-<name>.yaml` where that is no file
    name or two versions share it."""
    by_version: dict[str, list[LiveObject]] = {}
    for version in application.versions.values():
        number = _mapping(version.body.get("spec")).get("version")
        text = number if isinstance(number, str) and _SEMVER_FILE_PART.match(number) else ""
        by_version.setdefault(text, []).append(version)
    files: dict[str, LiveObject] = {}
    for number, versions in by_version.items():
        for version in versions:
            part = number if number and len(versions) == 1 else version.name
            files[f"{application.directory}/version-{part}.yaml"] = version
    return dict(sorted(files.items()))


def _provider_tenant(application: _Application) -> LiveObject | None:
    provider_id = application.provider_tenant_id()
    for tenant in application.tenants:
        spec = _mapping(tenant.body.get("spec"))
        labels = _mapping(_mapping(tenant.body.get("metadata")).get("labels"))
        if labels.get(f"{_PREFIX}tenant-type") == "provider" or (
            provider_id
            and spec.get("tenantId") == provider_id
            and tenant.name == application.name + PROVIDER_SUFFIX
        ):
            return tenant
    return None


def _tenant_files(application: _Application, result: _Import) -> dict[str, ImportedDocument]:
    provider = _provider_tenant(application)
    btp_app_name = application.spec.get("btpAppName")
    files: dict[str, ImportedDocument] = {}
    for tenant in sorted(application.tenants, key=lambda live: live.name):
        status = tenant.body.get("status")
        if tenant is provider and not _mapping(status).get("currentCAPApplicationVersionInstance"):
            continue  # the application's spec.provider says all there is; noted on the application
        notes = _Notes()
        body = _cleaned(
            tenant, notes, strip_app_label=btp_app_name if isinstance(btp_app_name, str) else None
        )
        _tenant_spec(body, notes)
        if status is None:
            notes.remarks.append(
                "no status was read: a render provisions this tenant (if it runs already, import a dump "
                "that kept the status)"
            )
        elif not isinstance(status, dict):
            result.skip(tenant, f"status is {type(status).__name__}, not a mapping")
            continue
        else:
            kept_status = _tenant_status(status, application, notes)
            if kept_status:
                body["status"] = kept_status
            if kept_status.get("state") in UNFINISHED_STATES:
                notes.remarks.append(
                    f"state {kept_status['state']}: an operation had not completed when this was read; a "
                    "render runs it (again): let CAP Operator finish it before the switch"
                )
        files[f"{application.directory}/{TENANTS_DIRECTORY}/{tenant.name}.yaml"] = ImportedDocument(
            body, notes.lines(tenant.origin)
        )
    return files


def _tenant_spec(body: dict[str, Any], notes: _Notes) -> None:
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    strategy = spec.get("versionUpgradeStrategy")
    if strategy == "always":
        del spec["versionUpgradeStrategy"]
        notes.dropped.append("spec.versionUpgradeStrategy (always is the default)")
    if strategy != "never" and "version" in spec:
        notes.remarks.append(
            f"spec.version {spec.pop('version')} left out: CAP Operator sets it to the newest version "
            "itself; the render follows the newest version in the sources"
        )


def _tenant_status(status: dict[str, Any], application: _Application, notes: _Notes) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for name in sorted(status, key=str):
        if name not in TENANT_STATUS_FIELDS:
            notes.dropped.append(f"status.{name}")
    for name in TENANT_STATUS_FIELDS:
        if name in status:
            kept[name] = copy.deepcopy(status[name])
    previous = kept.get("previousCAPApplicationVersions")
    # A list of anything but names is left as read: its schema refuses it, and the import lists it.
    if isinstance(previous, list) and all(isinstance(name, str) for name in previous):
        existing = [name for name in previous if name in application.versions]
        gone = [str(name) for name in previous if name not in application.versions]
        if gone:
            notes.remarks.append(
                "previous versions no longer there left out of status.previousCAPApplicationVersions: "
                + ", ".join(gone)
            )
        if existing:
            kept["previousCAPApplicationVersions"] = existing
        else:
            del kept["previousCAPApplicationVersions"]
    current = kept.get("currentCAPApplicationVersionInstance")
    if (
        "lastCompletedOperation" not in kept
        and kept.get("state") == READY
        and isinstance(current, str)
        and current
    ):
        operation = "upgrade" if kept.get("previousCAPApplicationVersions") or previous else "provisioning"
        kept["lastCompletedOperation"] = {"operation": operation, "capApplicationVersionInstance": current}
        notes.remarks.append(
            f"status.lastCompletedOperation derived: the tenant is Ready on {current} after its {operation}"
        )
    return kept
