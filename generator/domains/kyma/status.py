"""What a render resolved for each Kyma, in the shape of the Kyma CR's `status.modules[]`.

Module states are Lifecycle Manager's. A render knows no live health, so a rendered module is
Ready (its objects are in Git); Warning means an older version is kept (no downgrade) or no
template was found for the module; Error means its template cannot be resolved (or a maintenance
window cannot be determined), and its previously rendered app, if any, is kept as it was; a
module waiting for a maintenance window keeps its previous state with `maintenance: true`;
Unmanaged modules are not rendered; Deleting modules are on their way out of the repo. The
Kyma's state aggregates its modules: Error over Warning over Processing over Ready, Deleting and
Unmanaged modules aside.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from btp_gitops.generator.domains.kyma.model import API_VERSION


class ModuleState(StrEnum):
    READY = "Ready"
    PROCESSING = "Processing"
    WARNING = "Warning"
    ERROR = "Error"
    DELETING = "Deleting"
    UNMANAGED = "Unmanaged"


_PRECEDENCE = (ModuleState.ERROR, ModuleState.WARNING, ModuleState.PROCESSING)


def aggregate_state(states: Iterable[ModuleState]) -> ModuleState:
    """The Kyma's state from its modules' (Deleting and Unmanaged modules do not count)."""
    found = set(states)
    return next((state for state in _PRECEDENCE if state in found), ModuleState.READY)


@dataclass(frozen=True, slots=True)
class TemplateRef:
    name: str
    namespace: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": "ModuleTemplate",
            "metadata": {"name": self.name, "namespace": self.namespace},
        }


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """The module's default CR (the template's spec.data): Lifecycle Manager's status.modules[].resource."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""

    def as_dict(self) -> dict[str, Any]:
        metadata = {"name": self.name, **({"namespace": self.namespace} if self.namespace else {})}
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata}

    def matches(self, body: dict[str, Any]) -> bool:
        """Whether an object is this resource (by apiVersion, kind and name)."""
        metadata = body.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        return (body.get("apiVersion"), body.get("kind"), name) == (self.api_version, self.kind, self.name)


@dataclass(frozen=True, slots=True)
class ModuleStatus:
    name: str
    state: ModuleState
    message: str
    fqdn: str = ""
    channel: str = ""
    version: str = ""
    template: TemplateRef | None = None
    app: str = ""  # the app directory of the module's objects; empty when nothing is rendered
    maintenance: bool = False  # waiting for a maintenance window
    mandatory: bool = False
    resource: ResourceRef | None = None  # the default CR rendered with the module (CreateAndDelete)

    def as_dict(self) -> dict[str, Any]:
        resource = {"resource": self.resource.as_dict()} if self.resource else {}
        return {
            **resource,
            "name": self.name,
            "fqdn": self.fqdn,
            "channel": self.channel,
            "version": self.version,
            "state": str(self.state),
            "message": self.message,
            "template": self.template.as_dict() if self.template else None,
            "app": self.app,
            "maintenance": self.maintenance,
            "mandatory": self.mandatory,
        }


@dataclass(frozen=True, slots=True)
class KymaReport:
    kyma: str  # "namespace/name"
    source: str  # "file: document n"
    channel: str
    modules: tuple[ModuleStatus, ...] = ()
    skip_reconciliation: bool = False
    messages: tuple[str, ...] = field(default=())  # about the Kyma as a whole

    @property
    def state(self) -> ModuleState:
        return aggregate_state(m.state for m in self.modules)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kyma": self.kyma,
            "source": self.source,
            "channel": self.channel,
            "state": str(self.state),
            "skipReconciliation": self.skip_reconciliation,
            "messages": list(self.messages),
            "modules": [m.as_dict() for m in sorted(self.modules, key=lambda m: m.name)],
        }


_COLUMNS = ("MODULE", "CHANNEL", "VERSION", "STATE", "TEMPLATE", "MESSAGE")


def _row(status: ModuleStatus) -> tuple[str, ...]:
    template = f"{status.template.namespace}/{status.template.name}" if status.template else "-"
    state = f"{status.state} (maintenance)" if status.maintenance else str(status.state)
    return (status.name, status.channel or "-", status.version or "-", state, template, status.message)


def report_table(report: KymaReport) -> list[str]:
    """The report as text lines: a heading, the Kyma's messages, a table of modules."""
    lines = [f"Kyma {report.kyma} ({report.source}): {report.state}"]
    lines += [f"  {message}" for message in report.messages]
    rows = [_COLUMNS, *(_row(m) for m in sorted(report.modules, key=lambda m: m.name))]
    if len(rows) == 1:
        return [*lines, "  no modules"]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  " + "  ".join([*cells, row[-1]]).rstrip())
    return lines
