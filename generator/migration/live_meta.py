"""What the operator translators (kyma, btp_operator) do alike with a live object.

A live object carries what its user set and what its operator and the API server added: the
translators keep the first and leave the second out, saying so in the imported document's
comment (`Kept.left_out`). A value the sources cannot hold (a name that cannot be a file, a field
of the wrong type) refuses the whole object (`Refused`, turned into a `Skipped` naming the
field): importing it without the field would change what the sources mean.

An object read twice (two dumps, or a dump and a cluster) is imported once when both copies
agree, and refused when they differ: which one is right is the user's call, not the input order's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from btp_gitops.generator.core.names import NameRule, name_message
from btp_gitops.generator.core.redact import printable, shown
from btp_gitops.generator.migration.model import ImportedDocument, LiveObject, Skipped

# Set by kubectl and the API server, never by what a user means the object to be.
_SYSTEM_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
)
# What the GitOps tools and a render put on the objects they apply (sync waves, tracking, the
# render's own checksums): a cluster btp-gitops already syncs imports to the sources it came from.
GITOPS_PREFIXES = ("argocd.argoproj.io/", "kustomize.toolkit.fluxcd.io/", "btp-gitops.io/")


class Refused(Exception):
    """An object the sources cannot express: the field and why (never a credential's value)."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field_path = field_path
        self.message = message


def skipped(live: LiveObject, reason: str) -> Skipped:
    return Skipped(live.describe() or "an object without kind or name", live.origin, reason)


def refused(live: LiveObject, refusal: Refused) -> Skipped:
    return skipped(live, str(refusal))


@dataclass(slots=True)
class Kept:
    """The metadata a source document keeps of a live object, and what was left out of it."""

    metadata: dict[str, Any]
    left_out: list[str] = field(default_factory=list)


def _string_map(value: Any, field_path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise Refused(field_path, "not a map of strings to strings")
    return dict(value)


def check_name(value: Any, field_path: str, rule: NameRule = NameRule.SUBDOMAIN) -> str:
    """`value` when it can name a Kubernetes object and a file; else the object is refused."""
    message = name_message(value, rule)
    if message is not None or not isinstance(value, str):
        raise Refused(field_path, message or f"{shown(value)} is not a string")
    return value


def kept_metadata(
    live: LiveObject,
    operator_prefixes: Sequence[str],
    keep_labels: Iterable[str] = (),
    keep_annotations: Iterable[str] = (),
) -> Kept:
    """Name, namespace, and the labels and annotations a user set: those under an operator's
    prefixes are the operator's own (but for `keep_*`, which the render reads), and finalizers,
    owner references and the server's bookkeeping are the cluster's."""
    metadata = live.body.get("metadata")
    if not isinstance(metadata, Mapping):
        raise Refused("metadata", "missing, or not a map")
    if metadata.get("deletionTimestamp"):
        raise Refused(
            "metadata.deletionTimestamp", "the object is being deleted: importing it would bring it back"
        )
    kept: dict[str, Any] = {"name": check_name(metadata.get("name"), "metadata.name")}
    namespace = metadata.get("namespace")
    if namespace not in (None, ""):
        kept["namespace"] = check_name(namespace, "metadata.namespace", NameRule.LABEL)
    left_out: list[str] = []
    for key, wanted in (("labels", frozenset(keep_labels)), ("annotations", frozenset(keep_annotations))):
        values = _string_map(metadata.get(key), f"metadata.{key}")
        mine = {
            name: value
            for name, value in sorted(values.items())
            if name in wanted
            or not (name.startswith((*operator_prefixes, *GITOPS_PREFIXES)) or name in _SYSTEM_ANNOTATIONS)
        }
        left_out += [f"metadata.{key}.{name}" for name in sorted(values) if name not in mine]
        if mine:
            kept[key] = mine
    finalizers = metadata.get("finalizers")
    if isinstance(finalizers, list) and finalizers:
        left_out.append("metadata.finalizers (" + ", ".join(sorted(map(str, finalizers))) + ")")
    if metadata.get("ownerReferences"):
        left_out.append("metadata.ownerReferences")
    return Kept(kept, left_out)


def unknown_fields(section: Mapping[str, Any], known: Iterable[str], prefix: str) -> list[str]:
    """The keys of `section` the schema has no field for, as field paths."""
    allowed = frozenset(known)
    return [f"{prefix}.{key}" for key in sorted(map(str, section)) if key not in allowed]


def document(body: Mapping[str, Any], comment: Iterable[str]) -> ImportedDocument:
    """A source document whose comment lines stay comment lines: a line break or control
    character from a live value (a status message) is escaped, never written."""
    lines = (printable(line).replace("\n", "\\n").replace("\r", "\\r").replace("\t", " ") for line in comment)
    return ImportedDocument(body, tuple(lines))


def quoted(value: Any) -> str:
    """A live value a comment names (a version, a state): as it is when short text, else shown."""
    return value if isinstance(value, str) and len(value) <= 64 and value.isprintable() else shown(value)


def left_out_line(fields: Sequence[str]) -> list[str]:
    """The comment lines naming what a document leaves out of its live object, one field a line."""
    return ["Left out:", *(f"  {field}" for field in fields)] if fields else []


def _identity(live: LiveObject) -> tuple[str, str, str, str]:
    return (live.api_version, live.kind, live.namespace, live.name)


def _fingerprint(live: LiveObject) -> str:
    return json.dumps(live.body, sort_keys=True, default=repr)


def unique_objects(
    objects: Iterable[LiveObject], picks: Callable[[LiveObject], bool]
) -> tuple[list[LiveObject], list[Skipped]]:
    """The objects `picks` takes, each once, sorted by identity and origin (the input order never
    shows); an object read twice with different contents is refused in every copy."""
    groups: dict[tuple[str, str, str, str], list[LiveObject]] = {}
    for live in objects:
        if picks(live):
            groups.setdefault(_identity(live), []).append(live)
    unique: list[LiveObject] = []
    skips: list[Skipped] = []
    for identity in sorted(groups):
        copies = sorted(groups[identity], key=lambda live: (live.origin, _fingerprint(live)))
        if len({_fingerprint(live) for live in copies}) == 1:
            unique.append(copies[0])
            continue
        origins = ", ".join(live.origin for live in copies)
        skips += [
            skipped(live, f"read {len(copies)} times with different contents ({origins}): import one of them")
            for live in copies
        ]
    return unique, skips


_LINK_USERINFO = re.compile(r"^([a-zA-Z][-+.a-zA-Z0-9]*://)[^/@]*@")


def without_userinfo(link: str) -> str:
    """A URL without user information (`user:password@`)."""
    return _LINK_USERINFO.sub(r"\1", link)


def safe_link(link: str) -> str:
    """A URL as a comment may quote it: without user information, shortened."""
    return shown(without_userinfo(link)).strip("'")
