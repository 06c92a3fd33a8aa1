"""What a render did and why: per app, the objects written and notes a reviewer should see."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.redact import redact


class Level(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Note:
    level: Level
    reason: str  # stable, machine-readable (e.g. WrongNamespaceOrName, ExcludedHook, PinnedValue)
    subject: str  # the object or source the note is about
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "subject", redact(self.subject))
        object.__setattr__(self, "message", redact(self.message))

    def as_dict(self) -> dict[str, str]:
        return {
            "level": str(self.level),
            "reason": self.reason,
            "subject": self.subject,
            "message": self.message,
        }


@dataclass(slots=True)
class AppRender:
    """The objects of one app directory (`clusters/<cluster>/<app>/`) and the notes about them.

    An app of a group of many (a CAP tenant: `group` is its application) is laid out in a shard
    directory of its group (core.layout.app_directory); its name, and so its Argo CD Application
    and Flux Kustomizations, stay the same."""

    app: str
    manifests: list[Manifest]
    notes: list[Note] = field(default_factory=list)
    group: str | None = None

    @property
    def object_count(self) -> int:
        """How many objects the app writes (an app reused from the render pack knows it without
        decoding its objects)."""
        return len(self.manifests)


def report_dict(cluster: str, apps: list[AppRender], extra_notes: list[Note]) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "apps": [
            {"app": app.app, "objects": app.object_count, "notes": [n.as_dict() for n in app.notes]}
            for app in sorted(apps, key=lambda a: a.app)
        ],
        "notes": [n.as_dict() for n in extra_notes],
    }
