"""Lifecycle Manager's objects -> the Kyma source and its module catalog, under `kyma/`.

Writes only under `kyma/`, in the layout of `examples/kyma-modules`:

    kyma/kyma.yaml                 the cluster's Kyma (spec, and the labels and annotations a user set)
    kyma/catalog/<module>.yaml     the module's ModuleReleaseMeta(s), then its ModuleTemplates
    kyma/.modules/<module>/<ver>/  not written: where the user puts each module's raw manifest

It picks the kinds Kyma, ModuleTemplate and ModuleReleaseMeta of operator.kyma-project.io; other
versions than v1beta2 are listed as skipped. A cluster has one Kyma (the render refuses two): of
several, `kyma-system/default` (the runtime's Kyma as Lifecycle Manager names it) is imported and
the others are listed; without it, none is, each listed.

The Kyma's status is not a source. The render keeps its own record of what it installed from its
first render on (domains.kyma.record); until then it resolves every module from the catalog. So
the imported Kyma's comment states what Lifecycle Manager reported (state, and per module its
version, channel and state), and warns where the imported catalog resolves another version than
the one installed: the first render would install that one (a downgrade, if lower).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import semver

from btp_gitops.generator.migration.kyma_catalog import (
    BETA_LABEL,
    CATALOG_DIR,
    INTERNAL_LABEL,
    OPERATOR_PREFIX,
    RAW_MANIFEST_TO_FETCH,
    CatalogEntry,
    release_meta_entry,
    template_entry,
)
from btp_gitops.generator.migration.kyma_fields import (
    CHANNEL,
    VERSION,
    VERSION_MAX,
    flag,
    section,
    text,
    type_word,
)
from btp_gitops.generator.migration.live_meta import (
    Refused,
    document,
    kept_metadata,
    left_out_line,
    quoted,
    refused,
    skipped,
    unique_objects,
    unknown_fields,
)
from btp_gitops.generator.migration.model import (
    FollowUp,
    ImportedDocument,
    ImportedFile,
    ImportResult,
    LiveObject,
    Skipped,
)

GROUP = "operator.kyma-project.io"
API_VERSION = f"{GROUP}/v1beta2"
KINDS = ("Kyma", "ModuleTemplate", "ModuleReleaseMeta")
__all__ = ["API_VERSION", "KYMA_FILE", "RAW_MANIFEST_TO_FETCH", "import_kyma"]
KYMA_FILE = "kyma/kyma.yaml"
RUNTIME_KYMA = ("kyma-system", "default")
SKIP_RECONCILIATION_LABEL = "operator.kyma-project.io/skip-reconciliation"
DEFAULT_CHANNEL = "regular"

_SPEC_FIELDS = ("channel", "skipMaintenanceWindows", "modules")
_MODULE_FIELDS = (
    "name", "channel", "version", "controller", "customResourcePolicy", "managed", "remoteModuleTemplateRef",
)  # fmt: skip
_POLICIES = ("CreateAndDelete", "Ignore")


def _picked(live: LiveObject) -> bool:
    return live.api_version.split("/", 1)[0] == GROUP and live.kind in KINDS


def _module_entry(entry: Any, index: int, left_out: list[str]) -> dict[str, Any]:
    where = f"spec.modules[{index}]"
    if not isinstance(entry, Mapping):
        raise Refused(where, f"must be a map, not {type_word(entry)}")
    name = text(entry, "name", f"{where}.name", min_length=1, max_length=64)
    if name is None:
        raise Refused(f"{where}.name", "required field is missing")
    kept: dict[str, Any] = {"name": name}
    for key, value in (
        ("channel", text(entry, "channel", f"{where}.channel", CHANNEL)),
        ("version", text(entry, "version", f"{where}.version", VERSION, max_length=VERSION_MAX)),
        ("controller", text(entry, "controller", f"{where}.controller")),
        ("customResourcePolicy", text(entry, "customResourcePolicy", f"{where}.customResourcePolicy")),
        ("managed", flag(entry, "managed", f"{where}.managed")),
        (
            "remoteModuleTemplateRef",
            text(entry, "remoteModuleTemplateRef", f"{where}.remoteModuleTemplateRef"),
        ),
    ):
        if value is not None:
            kept[key] = value
    if kept.get("customResourcePolicy", _POLICIES[0]) not in _POLICIES:
        raise Refused(f"{where}.customResourcePolicy", "must be CreateAndDelete or Ignore")
    # A field btp-gitops does not know cannot change what it renders: said, and left out.
    left_out += [
        f"{field} (not a field btp-gitops reads)" for field in unknown_fields(entry, _MODULE_FIELDS, where)
    ]
    return kept


def _kyma_spec(body: Mapping[str, Any], left_out: list[str]) -> dict[str, Any]:
    spec = section(body, "spec", "spec")
    kept: dict[str, Any] = {}
    channel = text(spec, "channel", "spec.channel", CHANNEL)
    if channel is not None:
        kept["channel"] = channel
    skip_windows = flag(spec, "skipMaintenanceWindows", "spec.skipMaintenanceWindows")
    if skip_windows is not None:
        kept["skipMaintenanceWindows"] = skip_windows
    modules = spec.get("modules")
    if modules is not None:
        if not isinstance(modules, list):
            raise Refused("spec.modules", f"must be a list, not {type_word(modules)}")
        entries = [_module_entry(entry, index, left_out) for index, entry in enumerate(modules)]
        names = [entry["name"] for entry in entries]
        for index, name in enumerate(names):
            if name in names[:index]:
                raise Refused(f"spec.modules[{index}].name", f"{name!r} is listed twice")
        kept["modules"] = entries
    left_out += [
        f"{field} (not a field btp-gitops reads)" for field in unknown_fields(spec, _SPEC_FIELDS, "spec")
    ]
    return kept


def _resolved_version(module: Mapping[str, Any], kyma_channel: str, catalog: Sequence[CatalogEntry]) -> str:
    """The version the imported catalog gives an entry of spec.modules, as the render resolves it
    on its first run (release meta first, else the one classic template of the channel); empty
    when it resolves none or several."""
    if module.get("version"):
        return str(module["version"])
    name = str(module["name"])
    channel = str(module.get("channel") or kyma_channel)
    metas = [e for e in catalog if e.kind == "ModuleReleaseMeta" and e.name == name]
    if metas:
        return next((version for ch, version in metas[0].channels if ch == channel), "")
    candidates = [
        e for e in catalog if e.kind == "ModuleTemplate" and e.module == name and e.channel == channel
    ]
    return candidates[0].version if len(candidates) == 1 else ""


def _lower(first: str, second: str) -> bool:
    try:
        return semver.Version.parse(first) < semver.Version.parse(second)
    except ValueError:
        return False


def _status_lines(
    body: Mapping[str, Any], spec: Mapping[str, Any], catalog: Sequence[CatalogEntry]
) -> list[str]:
    """What Lifecycle Manager reported, and where the first render would install another version."""
    status = body.get("status")
    if not isinstance(status, Mapping):
        return ["Lifecycle Manager reported no status (the render resolves every module from the catalog)."]
    state = quoted(status.get("state") or "no state")
    lines = [f"Lifecycle Manager's status (not a source; the render keeps its own record): {state}."]
    modules = status.get("modules")
    installed: dict[str, Mapping[str, Any]] = {}
    for index, entry in enumerate(modules if isinstance(modules, list) else []):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            lines.append(f"  status.modules[{index}]: unreadable, left aside")
            continue
        installed[entry["name"]] = entry
        lines.append(
            f"  {quoted(entry['name'])}: {quoted(entry.get('version') or 'no version')}, channel "
            f"{quoted(entry.get('channel') or '-')}, {quoted(entry.get('state') or 'no state')}"
        )
    kyma_channel = str(spec.get("channel") or DEFAULT_CHANNEL)
    for module in spec.get("modules", []):
        before = installed.get(module["name"])
        version = before.get("version") if before else None
        if (
            not isinstance(version, str)
            or VERSION.fullmatch(version) is None
            or module.get("managed") is False
        ):
            continue
        resolved = _resolved_version(module, kyma_channel, catalog)
        if not resolved:
            lines.append(
                f"Warning: {module['name']} is installed at {version}, but the imported catalog resolves "
                "no version for it: the first render reports it unresolved and renders nothing for it."
            )
        elif resolved != version:
            downgrade = _lower(resolved, version)
            lines.append(
                f"Warning: {module['name']} is installed at {version}; the first render installs {resolved} "
                + (
                    f"(a downgrade: set version: {version} on its entry to keep it)."
                    if downgrade
                    else "(an upgrade)."
                )
            )
    return lines


def _kyma_document(live: LiveObject, catalog: Sequence[CatalogEntry]) -> ImportedDocument:
    kept = kept_metadata(
        live, (OPERATOR_PREFIX,), keep_labels=(BETA_LABEL, INTERNAL_LABEL, SKIP_RECONCILIATION_LABEL)
    )
    left_out = kept.left_out
    spec = _kyma_spec(live.body, left_out)
    if "status" in live.body:
        left_out.append("status (see above)")
    comment = [f"Imported from {live.origin}: {live.describe()}.", *_status_lines(live.body, spec, catalog)]
    if kept.metadata.get("labels", {}).get(SKIP_RECONCILIATION_LABEL, "").lower() == "true":
        comment.append(
            f"Labelled {SKIP_RECONCILIATION_LABEL}: the render keeps what it rendered before, "
            "and renders nothing on its first run."
        )
    body: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Kyma", "metadata": kept.metadata}
    if spec:
        body["spec"] = copy.deepcopy(spec)
    return document(body, (*comment, *left_out_line(left_out)))


def _choose_kyma(kymas: list[LiveObject]) -> tuple[LiveObject | None, list[Skipped]]:
    if len(kymas) <= 1:
        return (kymas[0] if kymas else None), []
    chosen = next((k for k in kymas if (k.namespace, k.name) == RUNTIME_KYMA), None)
    names = ", ".join(k.describe() for k in kymas)
    reason = (
        f"a cluster has one Kyma and {RUNTIME_KYMA[0]}/{RUNTIME_KYMA[1]} is the runtime's; "
        if chosen
        else f"a cluster has one Kyma, {len(kymas)} were read ({names}): import each runtime's on its own; "
    )
    return chosen, [skipped(k, reason + "this one is not imported") for k in kymas if k is not chosen]


def _catalog_files(entries: Sequence[CatalogEntry]) -> list[ImportedFile]:
    """One file per module: its release meta(s), then its templates, each by namespace and name."""
    by_module: dict[str, list[CatalogEntry]] = {}
    for entry in entries:
        by_module.setdefault(entry.module, []).append(entry)
    files = []
    for module in sorted(by_module):
        ordered = sorted(
            by_module[module], key=lambda e: (e.kind != "ModuleReleaseMeta", e.namespace, e.name)
        )
        files.append(ImportedFile(f"{CATALOG_DIR}/{module}.yaml", tuple(e.document for e in ordered)))
    return files


def import_kyma(objects: Sequence[LiveObject]) -> ImportResult:
    """The Kyma source and its module catalog from Lifecycle Manager's live objects (pure)."""
    picked, skips = unique_objects(objects, _picked)
    current: dict[str, list[LiveObject]] = {kind: [] for kind in KINDS}
    for live in picked:
        if live.api_version != API_VERSION:
            skips.append(
                skipped(
                    live,
                    f"only {API_VERSION} is imported: read the object at that version",
                )
            )
        else:
            current[live.kind].append(live)
    entries: list[CatalogEntry] = []
    follow_ups: list[FollowUp] = []
    for live in [*current["ModuleReleaseMeta"], *current["ModuleTemplate"]]:
        try:
            entry = (release_meta_entry if live.kind == "ModuleReleaseMeta" else template_entry)(live)
        except Refused as refusal:
            skips.append(refused(live, refusal))
            continue
        entries.append(entry)
        if entry.fetch is not None:
            follow_ups.append(entry.fetch)
    files = _catalog_files(entries)
    kyma, kyma_skips = _choose_kyma(current["Kyma"])
    skips += kyma_skips
    if kyma is not None:
        try:
            files.append(ImportedFile(KYMA_FILE, (_kyma_document(kyma, entries),)))
        except Refused as refusal:
            skips.append(refused(kyma, refusal))
    return ImportResult(
        files=tuple(sorted(files, key=lambda f: f.path)),
        skipped=tuple(sorted(skips, key=lambda s: (s.object, s.origin, s.reason))),
        follow_ups=tuple(sorted(follow_ups, key=lambda f: (f.object, f.origin, f.action))),
    )
