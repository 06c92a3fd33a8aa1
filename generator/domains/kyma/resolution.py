"""Resolving a Kyma's module entries against the catalog, as Lifecycle Manager does.

Desired channel: the entry's channel, else the Kyma's, else `regular`; `none` is refused as a
channel the Kyma asks for, and a fixed version is looked up in channel `none` (reported so). Then
one of two schemes:

- ModuleReleaseMeta (when one is named after the module): its `spec.channels[]` gives the version
  of the desired channel (a fixed version is taken as it is), and the template is
  `<module>-<version>` in the same namespace. A release meta needs a `spec.ocmComponentName` (the
  module's OCM identity). A restricted module is one named in Lifecycle Manager's restricted-modules
  list (`--restricted-modules`): its release meta's `spec.kymaSelector` says which Kymas may use
  it; a selector on a module not in that list, or a listed module without one, is not allowed.
- Classic: the templates of the module (by `spec.moduleName`, or by the label
  `operator.kyma-project.io/module-name` when `spec.moduleName` is empty) whose `spec.channel` is
  the desired channel, or, for a fixed version, whose channel is `none` and version is that one;
  exactly one must remain.

Beta and internal templates (label on the template, or flag on its release meta) are only for a
Kyma labelled the same. A mandatory template is not eligible for a `spec.modules` entry (Lifecycle
Manager's "no templates were found"). A template whose OCM component name is invalid is refused.
Mandatory modules (a release meta's `spec.mandatory`, a template's `spec.mandatory`) are resolved
for every Kyma, through their own lookup.

Every failure is one module's (`Unresolved`): it carries Lifecycle Manager's state for it
(Warning when no template was found, Error otherwise), its message, and where to point at.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

import semver

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.sources import SourceDocument, problem_at
from btp_gitops.generator.core.suggestions import did_you_mean
from btp_gitops.generator.domains.kyma.catalog import Catalog
from btp_gitops.generator.domains.kyma.model import (
    BETA_LABEL,
    DEFAULT_CHANNEL,
    INTERNAL_LABEL,
    MODULE_NAME_LABEL,
    NO_CHANNEL,
    Kyma,
    ModuleRequest,
    ReleaseMeta,
    Template,
    qualified,
)
from btp_gitops.generator.domains.kyma.selector import SelectorError, restricted_match
from btp_gitops.generator.domains.kyma.status import ModuleState

# The OCM component name Lifecycle Manager accepts (a DNS domain, then one or more path segments),
# at most 255 characters: the ModuleReleaseMeta CRD's pattern for spec.ocmComponentName, and what
# the OCM library demands of a template's descriptor.
OCM_COMPONENT_NAME = re.compile(
    r"[a-z][-a-z0-9]*([.][a-z][-a-z0-9]*)*[.][a-z]{2,}(/[a-z][-a-z0-9_]*([.][a-z][-a-z0-9_]*)*)+"
)
OCM_COMPONENT_NAME_MAX = 255

# Lifecycle Manager's error texts, which its module statuses start with.
NO_TEMPLATES = "no templates were found"
NOT_UNIQUE = "no unique template could be identified"
NOT_ALLOWED = "module template not allowed"
NO_DESCRIPTOR = "failed to get descriptor"
NO_IDENTITY = "failed to create OCM Component Identity"


@dataclass(frozen=True, slots=True)
class Resolved:
    module: str
    template: Template
    version: str
    channel: str  # the desired channel; `none` for a fixed version; empty for a mandatory module
    how: str  # why this template, for the report
    release_meta: ReleaseMeta | None = None
    mandatory: bool = False

    @property
    def fqdn(self) -> str:
        return (self.release_meta.fqdn if self.release_meta else "") or self.template.fqdn


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A module whose template cannot be resolved, in Lifecycle Manager's state and words."""

    module: str
    channel: str
    message: str
    field_path: str
    state: ModuleState = ModuleState.ERROR
    source: SourceDocument | None = None  # the document to point at; None: the Kyma's

    def problem(self, kyma: Kyma) -> Problem:
        return problem_at(
            self.source or kyma.source, self.field_path, f"module {self.module}: {self.message}"
        )


Resolution = Resolved | Unresolved


def semantic_version(text: str) -> semver.Version | None:
    try:
        return semver.Version.parse(text)
    except (ValueError, TypeError):
        return None


def is_lower(candidate: str, installed: str) -> bool:
    """Whether `candidate` is below `installed` in major.minor.patch; False when either is no semver."""
    new, old = semantic_version(candidate), semantic_version(installed)
    if new is None or old is None:
        return False
    return (new.major, new.minor, new.patch) < (old.major, old.minor, old.patch)


def desired_channel(kyma: Kyma, request: ModuleRequest) -> str:
    """The channel a module entry asks for; `none` when it fixes a version (Lifecycle Manager's)."""
    if request.version:
        return NO_CHANNEL
    return request.channel or kyma.channel or DEFAULT_CHANNEL


def request_problems(kyma: Kyma, requests: tuple[ModuleRequest, ...]) -> list[Problem]:
    """Entries Lifecycle Manager refuses whatever the catalog holds."""
    problems = []
    if kyma.channel == NO_CHANNEL:
        problems.append(problem_at(kyma.source, "spec.channel", "'none' is not a release channel"))
    seen: set[str] = set()
    for request in requests:
        if request.channel == NO_CHANNEL:
            problems.append(_problem(kyma, request.field("channel"), "'none' is not a release channel"))
        if request.channel and request.version:
            problems.append(
                _problem(kyma, request.field("version"), "version and channel are mutually exclusive")
            )
        if request.name in seen:
            problems.append(_problem(kyma, request.field("name"), f"module {request.name} is listed twice"))
        seen.add(request.name)
    return problems


def _problem(kyma: Kyma, field_path: str, message: str) -> Problem:
    return problem_at(kyma.source, field_path, message)


def _channel_field(kyma: Kyma, request: ModuleRequest) -> str:
    """Where the desired channel came from, for an error about it."""
    if request.channel:
        return request.field("channel")
    return "spec.channel" if kyma.channel else request.field("name")


def _candidates(templates: list[Template]) -> str:
    return "[" + ", ".join(sorted(t.qualified_name for t in templates)) + "]"


def gate(
    kyma: Kyma, template: Template, meta: ReleaseMeta | None, restricted: Collection[str] = ()
) -> str | None:
    """Why this Kyma may not use the template (beta, internal, restricted), or None. `restricted`
    is Lifecycle Manager's restricted-modules list."""
    checks = (
        ("beta", BETA_LABEL, kyma.beta, template.beta, meta is not None and meta.beta),
        ("internal", INTERNAL_LABEL, kyma.internal, template.internal, meta is not None and meta.internal),
    )
    for flag, label, allowed, on_template, on_meta in checks:
        if (on_template or on_meta) and not allowed:
            what = f"template {template.qualified_name}"
            if on_meta and meta is not None:
                what = f"ModuleReleaseMeta {meta.qualified_name}"
            only = f'only a Kyma labelled {label}: "true" may use it'
            return f"{NOT_ALLOWED}: {flag} module: {what} is {flag}, {only}"
    if meta is None:
        return None
    listed = meta.module_name in restricted
    if meta.kyma_selector is None:
        if not listed:
            return None
        return (
            f"{NOT_ALLOWED}: {meta.module_name} is a restricted module (--restricted-modules), but "
            f"ModuleReleaseMeta {meta.qualified_name} has no spec.kymaSelector naming the Kymas that may "
            "use it"
        )
    if not listed:
        return (
            f"{NOT_ALLOWED}: module has kymaSelector but is not in restricted modules list: "
            f"ModuleReleaseMeta {meta.qualified_name} has a spec.kymaSelector, and {meta.module_name} is not "
            "named by --restricted-modules"
        )
    try:
        matched = restricted_match(meta.kyma_selector, kyma.labels)
    except SelectorError as error:
        return f"{NOT_ALLOWED}: ModuleReleaseMeta {meta.qualified_name}: spec.kymaSelector.{error}"
    if not matched:
        return (
            f"{NOT_ALLOWED}: restricted module not allowed for this Kyma: the spec.kymaSelector of "
            f"ModuleReleaseMeta {meta.qualified_name} does not match the Kyma's labels"
        )
    return None


def descriptor_problem(template: Template) -> str | None:
    """Why the template's OCM component name is refused, or None (a template without one is fine;
    a release meta's spec.ocmComponentName is checked by its schema, as the CRD does)."""
    name = template.fqdn
    if not name or (len(name) <= OCM_COMPONENT_NAME_MAX and OCM_COMPONENT_NAME.fullmatch(name)):
        return None
    return (
        f"{NO_DESCRIPTOR}: template {template.qualified_name}: spec.descriptor.component.name "
        f"{name[:80]!r} is not a valid OCM component name (a domain, then a path, in lower case, "
        f"at most {OCM_COMPONENT_NAME_MAX} characters)"
    )


def identity_problem(meta: ReleaseMeta) -> Unresolved | None:
    """A release meta without `spec.ocmComponentName`: Lifecycle Manager cannot name the module's
    OCM component, an error of that module (pointing at the release meta)."""
    if meta.fqdn:
        return None
    message = (
        f"{NO_IDENTITY}: ModuleReleaseMeta {meta.qualified_name} has no spec.ocmComponentName "
        "(the module's OCM component, e.g. kyma-project.io/module/<name>)"
    )
    return Unresolved(meta.name, "", message, "spec.ocmComponentName", source=meta.source)


def _not_eligible(resolved: Resolved) -> str | None:
    """A mandatory template is for every Kyma, never for a spec.modules entry (Lifecycle Manager
    reports it as no template found)."""
    if not resolved.template.mandatory:
        return None
    return (
        f"{NO_TEMPLATES}: for module {resolved.module} in channel {resolved.channel or DEFAULT_CHANNEL}: "
        f"template {resolved.template.qualified_name} is mandatory (installed for every Kyma), so no "
        "spec.modules entry may name it"
    )


def _checked(catalog: Catalog, kyma: Kyma, resolved: Resolved, request: ModuleRequest) -> Resolution:
    """The resolution, unless the Kyma may not use its template or the template is invalid, in
    Lifecycle Manager's order: beta and internal, mandatory, restricted, the OCM identity."""
    template, meta = resolved.template, resolved.release_meta
    reason = gate(kyma, template, None)
    if reason is None and (eligible := _not_eligible(resolved)) is not None:
        where = request.field("name")
        return Unresolved(resolved.module, resolved.channel, eligible, where, ModuleState.WARNING)
    reason = reason or gate(kyma, template, meta, catalog.restricted_modules)
    if reason is None and meta is not None and (failure := identity_problem(meta)) is not None:
        return dataclasses.replace(failure, module=resolved.module, channel=resolved.channel)
    reason = reason or descriptor_problem(template)
    if reason is None:
        return resolved
    return Unresolved(resolved.module, resolved.channel, reason, request.field("name"))


def _by_release_meta(
    catalog: Catalog, kyma: Kyma, request: ModuleRequest, meta: ReleaseMeta, channel: str
) -> Resolution:
    module = request.name
    if request.version:
        version, how = request.version, f"version {request.version} fixed in spec.modules"
    else:
        found = meta.version_for(channel)
        if found is None:
            channels = ", ".join(sorted(name for name, _ in meta.channels)) or "none"
            message = f"ModuleReleaseMeta {meta.qualified_name} has no version for channel {channel}"
            return Unresolved(
                module, channel, f"{message} (channels: {channels})", _channel_field(kyma, request)
            )
        version = found
        how = f"ModuleReleaseMeta {meta.qualified_name}: channel {channel} has version {found}"
    template = catalog.template(meta.namespace, meta.template_name(version))
    if template is None:
        missing = qualified(meta.namespace, meta.template_name(version))
        return Unresolved(
            module,
            channel,
            f"{how}, but the catalog has no ModuleTemplate {missing}",
            request.field("version" if request.version else "name"),
        )
    resolved = Resolved(module, template, version, channel, how, release_meta=meta)
    return _checked(catalog, kyma, resolved, request)


def _not_found(catalog: Catalog, request: ModuleRequest, looked_for: str, others: str) -> str:
    module = request.name
    message = f"{NO_TEMPLATES}: for module {module} {looked_for}"
    if others:
        message += f" ({others})"
    if catalog.templates_of(module):
        return message
    if catalog.named_or_by_fqdn(module):
        return message + (
            f"; templates are found by their spec.moduleName (or, without one, their {MODULE_NAME_LABEL} "
            "label), references by template name or FQDN are deprecated and not supported"
        )
    # No module of that name at all: most likely a misspelt one. A module being removed is looked
    # up by its recorded name (no entry of spec.modules): no name was written to suggest against.
    return message + (did_you_mean(module, catalog.module_names()) if request.index >= 0 else "")


def _by_channel(catalog: Catalog, kyma: Kyma, request: ModuleRequest, channel: str) -> Resolution:
    module = request.name
    candidates = [t for t in catalog.templates_of(module) if not t.mandatory]
    if request.version:
        matches = [t for t in candidates if t.channel == NO_CHANNEL and t.version == request.version]
        looked_for, where = f"in version {request.version}", request.field("version")
        others = ", ".join(sorted({t.version for t in candidates if t.channel == NO_CHANNEL and t.version}))
        others = f"versions in channel {NO_CHANNEL}: {others}" if others else ""
    else:
        matches = [t for t in candidates if t.channel == channel]
        looked_for, where = f"in channel {channel}", _channel_field(kyma, request)
        others = ", ".join(sorted({t.channel for t in candidates if t.channel and t.channel != NO_CHANNEL}))
        others = f"channels with templates: {others}" if others else ""
    if not matches:
        # With no template of the module at all, its name is the likely mistake, not the channel.
        where = where if candidates else request.field("name")
        message = _not_found(catalog, request, looked_for, others)
        return Unresolved(module, channel, message, where, ModuleState.WARNING)
    # Beta and internal templates are not in the catalog a Kyma without the label sees.
    allowed = [t for t in matches if gate(kyma, t, None) is None]
    if not allowed:
        return Unresolved(module, channel, str(gate(kyma, matches[0], None)), request.field("name"))
    if len(allowed) > 1:
        message = (
            f"{NOT_UNIQUE}: more than one module template found for module {module} {looked_for}: "
            f"candidates: {_candidates(allowed)}"
        )
        return Unresolved(module, channel, message, where)
    template = allowed[0]
    found_by = f"spec.moduleName={module}" if template.module_name else f"{MODULE_NAME_LABEL}={module}"
    how = f"template {template.qualified_name}: {found_by}, " + (
        f"version {request.version} in channel {NO_CHANNEL}" if request.version else f"channel {channel}"
    )
    return _checked(catalog, kyma, Resolved(module, template, template.version, channel, how), request)


def resolve_module(catalog: Catalog, kyma: Kyma, request: ModuleRequest) -> Resolution:
    """The template of one spec.modules entry (assumed free of request_problems and not mandatory)."""
    channel = desired_channel(kyma, request)
    metas = catalog.release_metas_named(request.name)
    if len(metas) > 1:
        names = "[" + ", ".join(sorted(m.qualified_name for m in metas)) + "]"
        message = f"no unique ModuleReleaseMeta for module {request.name}: candidates: {names}"
        return Unresolved(request.name, channel, message, request.field("name"))
    if metas:
        return _by_release_meta(catalog, kyma, request, metas[0], channel)
    return _by_channel(catalog, kyma, request, channel)


def _mandatory_by_release_meta(catalog: Catalog) -> dict[str, Resolution]:
    found: dict[str, Resolution] = {}
    for meta in sorted(catalog.mandatory_release_metas(), key=lambda m: m.qualified_name):
        version = str(meta.mandatory_version)
        template = catalog.template(meta.namespace, meta.template_name(version))
        if template is None:
            missing = qualified(meta.namespace, meta.template_name(version))
            message = f"mandatory version {version} has no ModuleTemplate {missing} in the catalog"
            found[meta.name] = Unresolved(
                meta.name, "", message, "spec.mandatory.version", source=meta.source
            )
            continue
        how = f"mandatory: ModuleReleaseMeta {meta.qualified_name} has version {version}"
        resolved = Resolved(meta.name, template, version, "", how, release_meta=meta, mandatory=True)
        if (failure := identity_problem(meta)) is not None:
            found[meta.name] = failure
            continue
        reason = descriptor_problem(template)
        found[meta.name] = (
            resolved
            if reason is None
            else Unresolved(meta.name, "", reason, "spec.descriptor.component.name", source=template.source)
        )
    return found


def _rank(template: Template) -> semver.Version:
    return semantic_version(template.version) or semver.Version(0)


def _mandatory_by_templates(module: str, templates: list[Template]) -> Resolution:
    """The highest version among a module's mandatory templates; a template without a version is
    an error naming it (its version decides, and is recorded)."""
    unversioned = sorted((t for t in templates if not t.version), key=lambda t: t.qualified_name)
    if unversioned:
        first = unversioned[0]
        message = (
            f"mandatory template {first.qualified_name} has no version (spec.version, or the "
            "operator.kyma-project.io/module-version annotation of older templates)"
        )
        return Unresolved(module, "", message, "spec.version", source=first.source)
    ranked = sorted(templates, key=_rank, reverse=True)
    tied = [t for t in ranked if _rank(t) == _rank(ranked[0])]
    if len(tied) > 1:
        message = f"no unique mandatory template of module {module}: candidates: {_candidates(tied)}"
        first = min(tied, key=lambda t: t.qualified_name)
        return Unresolved(module, "", message, "spec.version", source=first.source)
    highest = ranked[0]
    reason = descriptor_problem(highest)
    if reason is not None:
        return Unresolved(module, "", reason, "spec.descriptor.component.name", source=highest.source)
    how = f"mandatory: template {highest.qualified_name} is the highest mandatory version"
    return Resolved(module, highest, highest.version, "", how, mandatory=True)


def resolve_mandatory(catalog: Catalog) -> dict[str, Resolution]:
    """Every mandatory module, by name: by release meta, else the highest of its mandatory templates."""
    found = _mandatory_by_release_meta(catalog)
    classic: dict[str, list[Template]] = defaultdict(list)
    for template in catalog.mandatory_templates():
        if template.module not in found:
            classic[template.module].append(template)
    for module, templates in sorted(classic.items()):
        found[module] = _mandatory_by_templates(module, templates)
    return dict(sorted(found.items()))
