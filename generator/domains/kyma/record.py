"""The record of what a render resolved, read back by the next render of the same cluster.

Lifecycle Manager keeps the installed version of each module in the Kyma's status; a render has no
cluster to ask, so the version lives in the rendered repo: `clusters/<cluster>/.kyma-modules.json`,
beside the app directories rather than in one. Argo CD's directory generator and Flux
Kustomizations point at app directories and never read it; it is JSON, not a Kubernetes object,
so tools that scan for `*.yaml` manifests pass it by too. The no-downgrade rule, maintenance
windows and skip-reconciliation all compare against it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.errors import InputError, Problem
from btp_gitops.generator.core.names import NameRule, name_message
from btp_gitops.generator.domains.kyma.status import (
    KymaReport,
    ModuleState,
    ModuleStatus,
    ResourceRef,
    TemplateRef,
)

RECORD_FILE = ".kyma-modules.json"
_NOTE = (
    "Written by `btp-gitops render`: the Kyma modules rendered for this cluster. The next render "
    "reads it (no downgrades, maintenance windows); keep it in Git and do not edit it."
)


@dataclass(frozen=True, slots=True)
class Record:
    kyma: str
    modules: Mapping[str, ModuleStatus]

    def module(self, name: str) -> ModuleStatus | None:
        return self.modules.get(name)


EMPTY_RECORD = Record("", {})
# Only what the next render decides by: messages and waiting flags would churn the file (and the
# commits) without changing any decision.
_NOT_RECORDED = frozenset({"message", "maintenance"})


def _resource(entry: Mapping[str, Any]) -> ResourceRef | None:
    resource = entry.get("resource")
    if resource is None:
        return None
    metadata = resource["metadata"]
    return ResourceRef(
        str(resource["apiVersion"]),
        str(resource["kind"]),
        str(metadata["name"]),
        str(metadata.get("namespace", "")),
    )


def _status(entry: Mapping[str, Any]) -> ModuleStatus:
    template = entry.get("template")
    return ModuleStatus(
        name=str(entry["name"]),
        state=ModuleState(entry["state"]),
        message=str(entry.get("message", "")),
        fqdn=str(entry.get("fqdn", "")),
        channel=str(entry.get("channel", "")),
        version=str(entry.get("version", "")),
        template=TemplateRef(str(template["metadata"]["name"]), str(template["metadata"]["namespace"]))
        if isinstance(template, dict)
        else None,
        app=str(entry.get("app", "")),
        maintenance=bool(entry.get("maintenance", False)),
        mandatory=bool(entry.get("mandatory", False)),
        resource=_resource(entry),
    )


def read_record(previous: Mapping[str, str], where: str) -> Record:
    """The record among the previous render's files (`where` names that render, for errors)."""
    text = previous.get(RECORD_FILE)
    if text is None:
        return EMPTY_RECORD
    try:
        data = json.loads(text)
        modules = [_status(entry) for entry in data["modules"]]
        record = Record(str(data["kyma"]), {m.name: m for m in modules})
    except (ValueError, KeyError, TypeError) as error:
        raise InputError(
            "cannot read the record of the previous render",
            [Problem(f"{where}/{RECORD_FILE}", f"not a record btp-gitops wrote ({error!r}); restore it")],
        ) from error
    # A kept module's app directory comes from here: the record names no path a render would not.
    problems = [
        Problem(f"{where}/{RECORD_FILE}", message, field_path=f"modules[{index}].app")
        for index, module in enumerate(modules)
        if module.app and (message := name_message(module.app, NameRule.SUBDOMAIN)) is not None
    ]
    if problems:
        raise InputError("cannot read the record of the previous render", problems)
    return record


def _remembered(module: ModuleStatus) -> bool:
    """Whether the next render needs the module: it has an app, or a version not to go below; a
    module whose removal is complete (Deleting, no app left) is forgotten."""
    if module.state is ModuleState.DELETING:
        return bool(module.app)
    return bool(module.version or module.app)


def record_text(report: KymaReport) -> str:
    """The record of one Kyma's render: every module that has output or a version to remember."""
    data = {
        "note": _NOTE,
        "kyma": report.kyma,
        "modules": [
            {key: value for key, value in m.as_dict().items() if key not in _NOT_RECORDED}
            for m in sorted(report.modules, key=lambda m: m.name)
            if _remembered(m)
        ],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
