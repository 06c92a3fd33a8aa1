"""Resolving a Kyma's module entries against the catalog, as Lifecycle Manager does.

Desired channel: the entry's channel, else the Kyma's, else `regular`; `none` is no channel, and
a fixed version excludes a channel. Then one of two schemes:

- ModuleReleaseMeta (when one is named after the module): its `spec.channels[]` gives the version
  of the desired channel, and the template is `<module>-<version>` in the same namespace.
- Classic: the templates labelled `operator.kyma-project.io/module-name: <module>` whose
  `spec.channel` is the desired channel (or whose version is the fixed one); exactly one must remain.

Beta and internal templates (label on the template, or flag on its release meta) are only for a
Kyma labelled the same. Mandatory modules (a release meta's `spec.mandatory`, a template's
`spec.mandatory`) are resolved for every Kyma and may not be listed in `spec.modules`.
Every failure names what was looked for and the candidates that were found.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import semver

from btp_gitops.generator.core.errors import Problem
from btp_gitops.generator.core.sources import problem_at
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


@dataclass(frozen=True, slots=True)
class Resolved:
    module: str
    template: Template
    version: str
    channel: str  # the desired channel; empty for a fixed version or a mandatory module
    how: str  # why this template, for the report
    release_meta: ReleaseMeta | None = None
    mandatory: bool = False

    @property
    def fqdn(self) -> str:
        return (self.release_meta.fqdn if self.release_meta else "") or self.template.fqdn


@dataclass(frozen=True, slots=True)
class Unresolved:
    module: str
    channel: str
    message: str
    field_path: str


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
    if request.version:
        return ""
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


def _mandatory_message(module: str) -> str:
    return f"module {module} is mandatory: it is rendered for every Kyma and cannot be listed in spec.modules"


def gate(kyma: Kyma, template: Template, meta: ReleaseMeta | None) -> str | None:
    """Why this Kyma may not use the template (beta or internal), or None."""
    checks = (
        ("beta", BETA_LABEL, kyma.beta, template.beta, meta is not None and meta.beta),
        ("internal", INTERNAL_LABEL, kyma.internal, template.internal, meta is not None and meta.internal),
    )
    for flag, label, allowed, on_template, on_meta in checks:
        if (on_template or on_meta) and not allowed:
            what = f"template {template.qualified_name}"
            if on_meta and meta is not None:
                what = f"ModuleReleaseMeta {meta.qualified_name}"
            return f'{what} is {flag}: only a Kyma labelled {label}: "true" may use it'
    return None


def _by_release_meta(
    catalog: Catalog, kyma: Kyma, request: ModuleRequest, meta: ReleaseMeta, channel: str
) -> Resolution:
    module = request.name
    if meta.mandatory_version is not None:
        return Unresolved(module, channel, _mandatory_message(module), request.field("name"))
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
    if reason := gate(kyma, template, meta):
        return Unresolved(module, channel, reason, request.field("name"))
    return Resolved(module, template, version, channel, how, release_meta=meta)


def _not_found(catalog: Catalog, module: str, looked_for: str, others: str) -> str:
    message = f"no templates were found: {looked_for} for module {module}"
    if others:
        message += f" ({others})"
    if not catalog.labelled(module) and catalog.named_or_by_fqdn(module):
        message += (
            f"; templates are found by their {MODULE_NAME_LABEL} label, references by template name or "
            "FQDN are deprecated and not supported"
        )
    return message


def _by_channel(catalog: Catalog, kyma: Kyma, request: ModuleRequest, channel: str) -> Resolution:
    module = request.name
    labelled = catalog.labelled(module)
    if labelled and all(t.mandatory for t in labelled):
        return Unresolved(module, channel, _mandatory_message(module), request.field("name"))
    candidates = [t for t in labelled if not t.mandatory]
    if request.version:
        matches = [t for t in candidates if t.version == request.version]
        looked_for, where = f"with version {request.version}", request.field("version")
        others = ", ".join(sorted({t.version for t in candidates if t.version}))
        others = f"versions: {others}" if others else ""
    else:
        matches = [t for t in candidates if t.channel == channel]
        looked_for, where = f"in channel {channel}", _channel_field(kyma, request)
        others = ", ".join(sorted({t.channel for t in candidates if t.channel}))
        others = f"channels with templates: {others}" if others else ""
    if not matches:
        # With no template of the module at all, its name is the likely mistake, not the channel.
        where = where if candidates else request.field("name")
        return Unresolved(module, channel, _not_found(catalog, module, looked_for, others), where)
    allowed = [t for t in matches if gate(kyma, t, None) is None]
    if not allowed:
        return Unresolved(module, channel, str(gate(kyma, matches[0], None)), request.field("name"))
    if len(allowed) > 1:
        message = (
            f"no unique template could be identified for module {module} {looked_for}: "
            f"candidates: {_candidates(allowed)}"
        )
        return Unresolved(module, channel, message, where)
    template = allowed[0]
    how = f"template {template.qualified_name}: {MODULE_NAME_LABEL}={module}, " + (
        f"version {request.version}" if request.version else f"channel {channel}"
    )
    return Resolved(module, template, template.version, channel, how)


def resolve_module(catalog: Catalog, kyma: Kyma, request: ModuleRequest) -> Resolution:
    """The template of one spec.modules entry (assumed free of request_problems)."""
    channel = desired_channel(kyma, request)
    metas = catalog.release_metas_named(request.name)
    if len(metas) > 1:
        names = "[" + ", ".join(sorted(m.qualified_name for m in metas)) + "]"
        message = f"no unique ModuleReleaseMeta for module {request.name}: candidates: {names}"
        return Unresolved(request.name, channel, message, request.field("name"))
    if metas:
        return _by_release_meta(catalog, kyma, request, metas[0], channel)
    return _by_channel(catalog, kyma, request, channel)


def _mandatory_by_release_meta(catalog: Catalog) -> tuple[dict[str, Resolved], list[Problem]]:
    found: dict[str, Resolved] = {}
    problems = []
    for meta in sorted(catalog.mandatory_release_metas(), key=lambda m: m.qualified_name):
        version = str(meta.mandatory_version)
        template = catalog.template(meta.namespace, meta.template_name(version))
        if template is None:
            missing = qualified(meta.namespace, meta.template_name(version))
            problems.append(
                problem_at(
                    meta.source,
                    "spec.mandatory.version",
                    f"mandatory version {version} has no ModuleTemplate {missing} in the catalog",
                )
            )
            continue
        how = f"mandatory: ModuleReleaseMeta {meta.qualified_name} has version {version}"
        found[meta.name] = Resolved(meta.name, template, version, "", how, release_meta=meta, mandatory=True)
    return found, problems


def _highest(templates: list[Template]) -> tuple[Template | None, list[Template]]:
    """The template with the highest version, or None and the templates sharing the top spot."""
    ranked = sorted(templates, key=lambda t: semantic_version(t.version) or semver.Version(0), reverse=True)
    top = semantic_version(ranked[0].version) or semver.Version(0)
    tied = [t for t in ranked if (semantic_version(t.version) or semver.Version(0)) == top]
    return (ranked[0], []) if len(tied) == 1 else (None, tied)


def resolve_mandatory(catalog: Catalog) -> tuple[list[Resolved], list[Problem]]:
    """Every mandatory module: by release meta, else the highest version of its mandatory templates."""
    found, problems = _mandatory_by_release_meta(catalog)
    classic: dict[str, list[Template]] = defaultdict(list)
    for template in catalog.mandatory_templates():
        if template.module not in found:
            classic[template.module].append(template)
    for module, templates in sorted(classic.items()):
        highest, tied = _highest(templates)
        if highest is None:
            for candidate in tied:
                problems.append(
                    problem_at(
                        candidate.source,
                        "spec.version",
                        f"no unique mandatory template of module {module}: candidates: {_candidates(tied)}",
                    )
                )
            continue
        how = f"mandatory: template {highest.qualified_name} is the highest mandatory version"
        found[module] = Resolved(module, highest, highest.version, "", how, mandatory=True)
    return [found[name] for name in sorted(found)], problems
