"""Typed views of the Kyma CR, ModuleTemplates and ModuleReleaseMetas.

The documents have passed their schemas in schemas/ before they get here, so the views only apply
defaults and resolve paths; rules that span fields or documents live in catalog and resolution.
Names, labels and defaults are Lifecycle Manager's (https://github.com/kyma-project/lifecycle-manager/tree/main/docs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.objects import KubeObject, get_path
from btp_gitops.generator.core.sources import SourceDocument

API_VERSION = "operator.kyma-project.io/v1beta2"
KYMA = (API_VERSION, "Kyma")
MODULE_TEMPLATE = (API_VERSION, "ModuleTemplate")
MODULE_RELEASE_META = (API_VERSION, "ModuleReleaseMeta")
CATALOG_KINDS = (MODULE_TEMPLATE, MODULE_RELEASE_META)

MODULE_NAME_LABEL = "operator.kyma-project.io/module-name"
BETA_LABEL = "operator.kyma-project.io/beta"
INTERNAL_LABEL = "operator.kyma-project.io/internal"
SKIP_RECONCILIATION_LABEL = "operator.kyma-project.io/skip-reconciliation"
# Templates from before spec.version carried their version in this annotation.
LEGACY_VERSION_ANNOTATION = "operator.kyma-project.io/module-version"

DEFAULT_CHANNEL = "regular"
NO_CHANNEL = "none"  # a placeholder Lifecycle Manager refuses as a channel
SYNC_NAMESPACE = "kyma-system"


class CustomResourcePolicy(StrEnum):
    CREATE_AND_DELETE = "CreateAndDelete"
    IGNORE = "Ignore"


def is_enabled(labels: Mapping[str, str], key: str) -> bool:
    """Lifecycle Manager's boolean labels: on when the value is "true", in any case."""
    return str(labels.get(key, "")).lower() == "true"


def qualified(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _labels(source: SourceDocument, key: str = "labels") -> dict[str, str]:
    labels = get_path(source.body, "metadata", key)
    return dict(labels) if isinstance(labels, dict) else {}


def _meta(source: SourceDocument, key: str) -> str:
    return str(get_path(source.body, "metadata", key) or "")


@dataclass(frozen=True, slots=True)
class ModuleRequest:
    """One entry of a Kyma's spec.modules."""

    index: int
    name: str
    channel: str | None
    version: str | None
    policy: CustomResourcePolicy
    managed: bool

    def field(self, name: str) -> str:
        return f"spec.modules[{self.index}].{name}"

    @classmethod
    def from_spec(cls, index: int, entry: Mapping[str, Any]) -> ModuleRequest:
        return cls(
            index=index,
            name=str(entry["name"]),
            channel=entry.get("channel"),
            version=entry.get("version"),
            policy=CustomResourcePolicy(entry.get("customResourcePolicy", "CreateAndDelete")),
            managed=bool(entry.get("managed", True)),
        )


@dataclass(frozen=True, slots=True)
class Kyma:
    source: SourceDocument
    channel: str | None
    modules: tuple[ModuleRequest, ...]
    skip_maintenance_windows: bool
    labels: Mapping[str, str]
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return self.source.ref

    @property
    def name(self) -> str:
        return str(self.source.body["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.source.body["metadata"].get("namespace", ""))

    @property
    def beta(self) -> bool:
        return is_enabled(self.labels, BETA_LABEL)

    @property
    def internal(self) -> bool:
        return is_enabled(self.labels, INTERNAL_LABEL)

    @property
    def skips_reconciliation(self) -> bool:
        return is_enabled(self.labels, SKIP_RECONCILIATION_LABEL)

    @classmethod
    def from_source(cls, source: SourceDocument) -> Kyma:
        spec = source.body.get("spec") or {}
        return cls(
            source=source,
            channel=spec.get("channel"),
            modules=tuple(ModuleRequest.from_spec(i, m) for i, m in enumerate(spec.get("modules") or [])),
            skip_maintenance_windows=bool(spec.get("skipMaintenanceWindows", False)),
            labels=_labels(source),
            annotations=_labels(source, "annotations"),
        )


@dataclass(frozen=True, slots=True)
class RawManifest:
    """A module's resources as plain manifests: one YAML file or a directory of them."""

    path: Path


@dataclass(frozen=True, slots=True)
class ChartContent:
    """A module's resources as a Helm chart."""

    path: Path
    release_name: str | None
    values_files: tuple[Path, ...]
    values: dict[str, Any]
    allow_empty: bool = False  # spec.chart.allowEmpty: the chart may render no object


Content = RawManifest | ChartContent


def _content(source: SourceDocument, spec: Mapping[str, Any]) -> Content | None:
    if "rawManifest" in spec:
        return RawManifest(source.path_of(spec["rawManifest"]["path"]))
    if "chart" in spec:
        chart = spec["chart"]
        return ChartContent(
            path=source.path_of(chart["path"]),
            release_name=chart.get("releaseName"),
            values_files=tuple(source.path_of(f) for f in chart.get("valuesFiles", [])),
            values=dict(chart.get("values", {})),
            allow_empty=chart.get("allowEmpty", False) is True,
        )
    return None


@dataclass(frozen=True, slots=True)
class Template:
    """A ModuleTemplate: one version of one module."""

    source: SourceDocument
    name: str
    namespace: str
    module_label: str | None  # operator.kyma-project.io/module-name: the fallback when moduleName is empty
    module_name: str  # spec.moduleName (may be empty): how Lifecycle Manager finds the template
    channel: str
    version: str
    mandatory: bool
    requires_downtime: bool
    beta: bool
    internal: bool
    fqdn: str
    data: KubeObject | None
    content: Content | None

    @property
    def qualified_name(self) -> str:
        return qualified(self.namespace, self.name)

    @property
    def module(self) -> str:
        """The module this template belongs to: spec.moduleName, else the module-name label (as
        Lifecycle Manager names a mandatory template's module), else the template's own name."""
        return self.module_name or self.module_label or self.name

    def belongs_to(self, module: str) -> bool:
        """Lifecycle Manager's match of a template to a module: by spec.moduleName, and by the
        module-name label only when spec.moduleName is empty."""
        if self.module_name:
            return self.module_name == module
        return self.module_label == module

    @classmethod
    def from_source(cls, source: SourceDocument) -> Template:
        spec = source.body.get("spec") or {}
        labels = _labels(source)
        annotations = get_path(source.body, "metadata", "annotations") or {}
        data = spec.get("data")
        return cls(
            source=source,
            name=_meta(source, "name"),
            namespace=_meta(source, "namespace"),
            module_label=labels.get(MODULE_NAME_LABEL),
            module_name=str(spec.get("moduleName", "")),
            channel=str(spec.get("channel", "")),
            version=str(spec.get("version") or annotations.get(LEGACY_VERSION_ANNOTATION, "")),
            mandatory=bool(spec.get("mandatory", False)),
            requires_downtime=bool(spec.get("requiresDowntime", False)),
            beta=is_enabled(labels, BETA_LABEL),
            internal=is_enabled(labels, INTERNAL_LABEL),
            fqdn=str(get_path(spec, "descriptor", "component", "name") or ""),
            data=data if isinstance(data, dict) else None,
            content=_content(source, spec),
        )


@dataclass(frozen=True, slots=True)
class ReleaseMeta:
    """A ModuleReleaseMeta: which version of a module each channel gets, or its mandatory version."""

    source: SourceDocument
    name: str
    namespace: str
    module_name: str
    channels: tuple[tuple[str, str], ...]  # (channel, version) in the order written
    mandatory_version: str | None
    beta: bool
    internal: bool
    fqdn: str
    kyma_selector: Mapping[str, Any] | None  # spec.kymaSelector: a restricted module, for matching Kymas only

    @property
    def qualified_name(self) -> str:
        return qualified(self.namespace, self.name)

    def version_for(self, channel: str) -> str | None:
        return next((version for name, version in self.channels if name == channel), None)

    def template_name(self, version: str) -> str:
        """Lifecycle Manager's naming: the template of version V of module M is `M-V`."""
        return f"{self.name}-{version}"

    @classmethod
    def from_source(cls, source: SourceDocument) -> ReleaseMeta:
        spec = source.body.get("spec") or {}
        mandatory = spec.get("mandatory")
        return cls(
            source=source,
            name=_meta(source, "name"),
            namespace=_meta(source, "namespace"),
            module_name=str(spec.get("moduleName", "")),
            channels=tuple((str(c["channel"]), str(c["version"])) for c in spec.get("channels") or []),
            mandatory_version=str(mandatory["version"]) if isinstance(mandatory, dict) else None,
            beta=bool(spec.get("beta", False)),
            internal=bool(spec.get("internal", False)),
            fqdn=str(spec.get("ocmComponentName", "")),
            kyma_selector=spec["kymaSelector"] if isinstance(spec.get("kymaSelector"), dict) else None,
        )
