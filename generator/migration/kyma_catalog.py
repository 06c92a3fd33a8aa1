"""The module catalog a cluster holds, as source documents: ModuleReleaseMetas and ModuleTemplates.

What Lifecycle Manager synchronised into the runtime is kept as it reads it: versions, channels,
the default CR (`spec.data`), the OCM descriptor, the manager, the links. Its own bookkeeping is
left out and said so: the `operator.kyma-project.io/` labels and annotations it sets (but
`module-name`, `beta` and `internal`, which resolution reads, and `module-version` on a template
without `spec.version`), its `mandatory-module` finalizer, and the deprecated
`spec.customStateCheck`, which btp-gitops has no use for.

A template in a cluster has no module resources btp-gitops can read: Lifecycle Manager pulled
them from an OCI layer (named by `spec.descriptor`, often linked in `spec.resources`). The
imported template gets `spec.rawManifest.path` pointing where the user puts them
(`kyma/.modules/<module>/<version>/`), and a listed item says what to fetch from where: the
sources validate as written, and a render says which path is still missing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.names import NameRule, name_message
from btp_gitops.generator.core.objects import get_path
from btp_gitops.generator.migration.kyma_fields import (
    MANDATORY_VERSION,
    MODULE_NAME,
    MODULE_NAME_MAX,
    OCM_COMPONENT,
    OPTIONAL_VERSION,
    TEMPLATE_CHANNEL,
    VERSION,
    VERSION_MAX,
    embedded_object,
    flag,
    records,
    section,
    text,
    type_word,
)
from btp_gitops.generator.migration.live_meta import (
    Refused,
    document,
    kept_metadata,
    left_out_line,
    safe_link,
    unknown_fields,
    without_userinfo,
)
from btp_gitops.generator.migration.model import FollowUp, ImportedDocument, LiveObject

OPERATOR_PREFIX = "operator.kyma-project.io/"
MODULE_NAME_LABEL = "operator.kyma-project.io/module-name"
BETA_LABEL = "operator.kyma-project.io/beta"
INTERNAL_LABEL = "operator.kyma-project.io/internal"
LEGACY_VERSION_ANNOTATION = "operator.kyma-project.io/module-version"
CATALOG_DIR = "kyma/catalog"
# How the follow-up of a template starts: its raw manifest must be fetched before a render.
RAW_MANIFEST_TO_FETCH = "its raw manifest is not in the cluster"
MODULES_DIR = "kyma/.modules"

_TEMPLATE_FIELDS = (
    "channel", "version", "moduleName", "mandatory", "requiresDowntime", "data", "descriptor",
    "resources", "info", "associatedResources", "manager", "rawManifest", "chart",
)  # fmt: skip
_RELEASE_META_FIELDS = (
    "moduleName", "ocmComponentName", "channels", "mandatory", "beta", "internal", "kymaSelector",
)  # fmt: skip
_DEPRECATED = {"customStateCheck": "deprecated by Lifecycle Manager; a module reports its own state"}


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One imported catalog object: the module it belongs to, its document, what it says."""

    module: str
    document: ImportedDocument
    kind: str
    name: str
    namespace: str
    version: str = ""
    channel: str = ""
    channels: tuple[tuple[str, str], ...] = ()  # a release meta's (channel, version) pairs
    fetch: FollowUp | None = None  # the raw manifest the user must fetch


def _origin_line(live: LiveObject) -> str:
    return f"Imported from {live.origin}: {live.describe()}."


def _module_file_name(module: str, field_path: str) -> str:
    message = name_message(module, NameRule.LABEL)
    if message is not None:
        raise Refused(field_path, message)
    return module


def _info(spec: Mapping[str, Any], left_out: list[str]) -> dict[str, Any] | None:
    """`spec.info` as the schema holds it; informational, so a wrong part is left out, not refused."""
    info = spec.get("info")
    if info is None:
        return None
    if not isinstance(info, Mapping):
        left_out.append(f"spec.info (not a map: {type_word(info)})")
        return None
    kept: dict[str, Any] = {}
    for key in ("repository", "documentation"):
        if isinstance(info.get(key), str):
            kept[key] = info[key]
        elif key in info:
            left_out.append(f"spec.info.{key} (not a string)")
    try:
        icons = records(info, "icons", "spec.info.icons", ("name", "link"))
    except Refused as refusal:
        left_out.append(f"{refusal.field_path} ({refusal.message})")
        icons = None
    if icons is not None:
        kept["icons"] = icons
    left_out += unknown_fields(info, ("repository", "documentation", "icons"), "spec.info")
    return kept


def _informational(spec: Mapping[str, Any], key: str, left_out: list[str], *fields: str) -> Any:
    """A list the render only carries along (`resources`, `associatedResources`): a wrong one is
    left out and said so, the template stays."""
    try:
        return records(spec, key, f"spec.{key}", fields)
    except Refused as refusal:
        left_out.append(f"{refusal.field_path} ({refusal.message})")
        return None


def _manager(spec: Mapping[str, Any]) -> dict[str, str] | None:
    if "manager" not in spec:
        return None
    manager = section(spec, "manager", "spec.manager")
    if extra := unknown_fields(manager, ("group", "version", "kind", "namespace", "name"), "spec.manager"):
        raise Refused(extra[0], "not a field of spec.manager")
    kept: dict[str, str] = {}
    for key in ("group", "version", "kind", "namespace", "name"):
        value = text(manager, key, f"spec.manager.{key}")
        if value is None and key != "namespace":
            raise Refused(f"spec.manager.{key}", "required field is missing")
        if value is not None:
            kept[key] = value
    return kept


def _raw_manifest_source(spec: Mapping[str, Any]) -> str:
    """Where Lifecycle Manager got the module's resources, as the template says it."""
    for resource in spec.get("resources") or []:
        if (
            isinstance(resource, Mapping)
            and isinstance(resource.get("link"), str)
            and str(resource.get("name", "")).lower().replace("-", "") == "rawmanifest"
        ):
            return f"from {safe_link(resource['link'])}"
    component = get_path(spec, "descriptor", "component")
    if isinstance(component, Mapping) and isinstance(component.get("name"), str):
        version = component.get("version")
        name = f"{component['name']}:{version}" if isinstance(version, str) else str(component["name"])
        contexts = component.get("repositoryContexts")
        base = get_path(contexts, 0, "baseUrl") if isinstance(contexts, list) and contexts else None
        where = f" in {safe_link(base)}" if isinstance(base, str) else ""
        return f"from the raw-manifest resource of OCM component {safe_link(name)}{where}"
    return "from the module's release (the template names no source)"


def _template_spec(spec: Mapping[str, Any], version: str, left_out: list[str]) -> dict[str, Any]:
    """A template's spec as the schema holds it: what resolution reads is checked (and refuses
    the template when wrong), what is only carried along is left out when wrong."""
    new_spec: dict[str, Any] = {}
    for key, value in (
        ("channel", text(spec, "channel", "spec.channel", TEMPLATE_CHANNEL)),
        ("version", version if "version" in spec else None),
        ("moduleName", text(spec, "moduleName", "spec.moduleName", MODULE_NAME, max_length=MODULE_NAME_MAX)),
        ("mandatory", flag(spec, "mandatory", "spec.mandatory")),
        ("requiresDowntime", flag(spec, "requiresDowntime", "spec.requiresDowntime")),
        ("data", embedded_object(spec, "data", "spec.data")),
    ):
        if value is not None:
            new_spec[key] = copy.deepcopy(value)
    descriptor = spec.get("descriptor")
    if isinstance(descriptor, Mapping):
        new_spec["descriptor"] = copy.deepcopy(dict(descriptor))
    elif descriptor is not None:
        left_out.append(f"spec.descriptor (not a map: {type_word(descriptor)})")
    for key, fields in (
        ("resources", ("name", "link")),
        ("associatedResources", ("group", "version", "kind")),
    ):
        value = _informational(spec, key, left_out, *fields)
        if value is not None:
            new_spec[key] = value
    for index, resource in enumerate(new_spec.get("resources", [])):
        link = without_userinfo(resource["link"])
        if link != resource["link"]:
            # A password in a URL is a credential, and a template is no place for one.
            resource["link"] = link
            left_out.append(f"spec.resources[{index}].link's user information")
    info = _info(spec, left_out)
    if info is not None:
        new_spec["info"] = info
    manager = _manager(spec)
    if manager is not None:
        new_spec["manager"] = manager
    return new_spec


def template_entry(live: LiveObject) -> CatalogEntry:
    """A live ModuleTemplate as its source document, or `Refused`."""
    spec = section(live.body, "spec", "spec", required=True)
    kept = kept_metadata(
        live,
        (OPERATOR_PREFIX,),
        keep_labels=(MODULE_NAME_LABEL, BETA_LABEL, INTERNAL_LABEL),
        keep_annotations=(LEGACY_VERSION_ANNOTATION,),
    )
    left_out = kept.left_out
    version = text(spec, "version", "spec.version", OPTIONAL_VERSION, max_length=VERSION_MAX) or ""
    annotations = kept.metadata.get("annotations", {})
    if version and LEGACY_VERSION_ANNOTATION in annotations:
        # spec.version wins; the legacy annotation would only say the same or mislead.
        del annotations[LEGACY_VERSION_ANNOTATION]
        left_out.append(f"metadata.annotations.{LEGACY_VERSION_ANNOTATION}")
        if not annotations:
            del kept.metadata["annotations"]
    if not version:
        legacy_field = f"metadata.annotations.{LEGACY_VERSION_ANNOTATION}"
        version = text(annotations, LEGACY_VERSION_ANNOTATION, legacy_field, VERSION) or ""
    new_spec = _template_spec(spec, version, left_out)
    channel, module_name = new_spec.get("channel"), new_spec.get("moduleName")
    labels = kept.metadata.get("labels", {})
    module = module_name or labels.get(MODULE_NAME_LABEL) or kept.metadata["name"]
    field_path = (
        "spec.moduleName"
        if module_name
        else f"metadata.labels.{MODULE_NAME_LABEL}"
        if MODULE_NAME_LABEL in labels
        else "metadata.name"
    )
    _module_file_name(module, field_path)
    left_out += [
        f"spec.{key} ({_DEPRECATED.get(key, 'not a field btp-gitops reads')})"
        for key in sorted(map(str, spec))
        if key not in _TEMPLATE_FIELDS
    ]
    comment = [_origin_line(live)]
    if "rawManifest" in spec or "chart" in spec:
        # A template written by btp-gitops and applied: its paths meant something in that
        # repository only, so the import cannot carry them over.
        left_out += [
            f"spec.{key} (a path of another repository)" for key in ("rawManifest", "chart") if key in spec
        ]
    folder = f"{MODULES_DIR}/{module}/{version or kept.metadata['name']}"
    new_spec["rawManifest"] = {"path": f"../.modules/{module}/{version or kept.metadata['name']}"}
    source = _raw_manifest_source(new_spec)  # its fields checked: resources, descriptor a map
    comment.append(f"Its resources are not in the cluster: put them into {folder}/ ({source}).")
    fetch = FollowUp(
        live.describe(),
        live.origin,
        f"{RAW_MANIFEST_TO_FETCH}: fetch it {source} into {folder}/ before rendering "
        "(the template is imported, spec.rawManifest.path points there)",
    )
    return CatalogEntry(
        module=module,
        document=document(
            {
                "apiVersion": live.api_version,
                "kind": "ModuleTemplate",
                "metadata": kept.metadata,
                "spec": new_spec,
            },
            (*comment, *left_out_line(left_out)),
        ),
        kind="ModuleTemplate",
        name=kept.metadata["name"],
        namespace=kept.metadata.get("namespace", ""),
        version=version,
        channel=channel or "",
        fetch=fetch,
    )


def _channels(spec: Mapping[str, Any]) -> list[dict[str, str]] | None:
    channels: list[dict[str, str]] | None = records(spec, "channels", "spec.channels", ("channel", "version"))
    if channels is None:
        return None
    seen: set[str] = set()
    for index, entry in enumerate(channels):
        text(entry, "channel", f"spec.channels[{index}].channel", TEMPLATE_CHANNEL, min_length=3)
        text(entry, "version", f"spec.channels[{index}].version", OPTIONAL_VERSION, max_length=VERSION_MAX)
        if entry["channel"] in seen:
            raise Refused(f"spec.channels[{index}].channel", f"{entry['channel']!r} is listed twice")
        seen.add(entry["channel"])
    return channels


def _kyma_selector(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    if "kymaSelector" not in spec:
        return None
    selector = section(spec, "kymaSelector", "spec.kymaSelector")
    if extra := unknown_fields(selector, ("matchLabels", "matchExpressions"), "spec.kymaSelector"):
        raise Refused(extra[0], "not a field of a label selector")
    kept: dict[str, Any] = {}
    if "matchLabels" in selector:
        labels = selector["matchLabels"]
        if not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values()):
            raise Refused("spec.kymaSelector.matchLabels", "not a map of strings to strings")
        kept["matchLabels"] = dict(labels)
    if "matchExpressions" in selector:
        kept["matchExpressions"] = _expressions(selector["matchExpressions"])
    return kept


def _expressions(items: Any) -> list[dict[str, Any]]:
    """A selector's matchExpressions: key, operator and a list of string values."""
    if not isinstance(items, list):
        raise Refused("spec.kymaSelector.matchExpressions", f"must be a list, not {type_word(items)}")
    checked = []
    for index, item in enumerate(items):
        where = f"spec.kymaSelector.matchExpressions[{index}]"
        if not isinstance(item, Mapping):
            raise Refused(where, f"must be a map, not {type_word(item)}")
        values = item.get("values", [])
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise Refused(f"{where}.values", "must be a list of strings")
        rest = records(
            {"items": [{k: v for k, v in item.items() if k != "values"}]}, "items", where, ("key", "operator")
        )
        entry: dict[str, Any] = dict((rest or [{}])[0])
        if entry.get("operator") not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise Refused(f"{where}.operator", "must be In, NotIn, Exists or DoesNotExist")
        if "values" in item:
            entry["values"] = list(values)
        checked.append(entry)
    return checked


def _restricted_line(module: str, spec: Mapping[str, Any]) -> list[str]:
    if "kymaSelector" not in spec:
        return []
    # Lifecycle Manager's restricted-modules list is a flag of its own, not an object to import.
    return [f"A restricted module (spec.kymaSelector): render with --restricted-modules {module}."]


def release_meta_entry(live: LiveObject) -> CatalogEntry:
    """A live ModuleReleaseMeta as its source document, or `Refused`."""
    spec = section(live.body, "spec", "spec", required=True)
    kept = kept_metadata(live, (OPERATOR_PREFIX,))
    name = kept.metadata["name"]
    module = text(spec, "moduleName", "spec.moduleName", MODULE_NAME, max_length=MODULE_NAME_MAX)
    if module is None:
        raise Refused("spec.moduleName", "required field is missing")
    if module != name:
        raise Refused(
            "spec.moduleName", f"must equal metadata.name ({name!r}): a release meta is found by its name"
        )
    _module_file_name(module, "metadata.name")
    channels = _channels(spec)
    mandatory: dict[str, str] | None = None
    if "mandatory" in spec:
        mandatory_spec = section(spec, "mandatory", "spec.mandatory")
        if extra := unknown_fields(mandatory_spec, ("version",), "spec.mandatory"):
            raise Refused(extra[0], "not a field of spec.mandatory")
        version = text(mandatory_spec, "version", "spec.mandatory.version", MANDATORY_VERSION, min_length=1)
        if version is None:
            raise Refused("spec.mandatory.version", "required field is missing")
        mandatory = {"version": version}
    if (channels is None) == (mandatory is None):
        raise Refused("spec", "exactly one of 'mandatory' or 'channels' must be specified")
    new_spec: dict[str, Any] = {"moduleName": module}
    component = text(spec, "ocmComponentName", "spec.ocmComponentName", OCM_COMPONENT, max_length=255)
    for key, value in (
        ("ocmComponentName", component),
        ("channels", channels),
        ("mandatory", mandatory),
        ("beta", flag(spec, "beta", "spec.beta")),
        ("internal", flag(spec, "internal", "spec.internal")),
        ("kymaSelector", _kyma_selector(spec)),
    ):
        if value is not None:
            new_spec[key] = value
    left_out = kept.left_out + [
        f"spec.{key} (not a field btp-gitops reads)"
        for key in sorted(map(str, spec))
        if key not in _RELEASE_META_FIELDS
    ]
    return CatalogEntry(
        module=module,
        document=document(
            {
                "apiVersion": live.api_version,
                "kind": "ModuleReleaseMeta",
                "metadata": kept.metadata,
                "spec": new_spec,
            },
            (_origin_line(live), *_restricted_line(module, new_spec), *left_out_line(left_out)),
        ),
        kind="ModuleReleaseMeta",
        name=name,
        namespace=kept.metadata.get("namespace", ""),
        channels=tuple((c["channel"], c["version"]) for c in channels or ()),
        version=mandatory["version"] if mandatory else "",
    )
