"""Names that become directories or files of a rendered tree, checked before they are used.

Every path segment btp-gitops derives from its input passes through here: the `--cluster` flag,
app directories (from CAP applications, tenants and domains, Kyma modules and the Kyma record),
object names, template file names of module-resources, Helm 4 filename annotations. What is
allowed is what Kubernetes allows for the name: a DNS-1123 label or subdomain. Anything else
(`..`, `.`, `/`, an empty or absolute value, control characters) is refused with the value, shown
short, and where it came from; it is never repaired into something that looks safe.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum

from btp_gitops.generator.core.errors import Problem, UsageError
from btp_gitops.generator.core.redact import shown
from btp_gitops.generator.core.sources import SourceDocument, problem_at

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # whole strings (fullmatch): `$` lets a final "\n" by
MAX_LABEL = 63
MAX_SUBDOMAIN = 253
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class NameRule(Enum):
    """What Kubernetes allows for a name, and the words an error uses for it."""

    LABEL = "a DNS-1123 label (at most 63 of a-z, 0-9 and '-', starting and ending with a letter or digit)"
    SUBDOMAIN = (
        "a DNS-1123 subdomain (at most 253 characters: DNS-1123 labels joined by '.', e.g. 'my-app.v1')"
    )


def _is_label(text: str) -> bool:
    return len(text) <= MAX_LABEL and _LABEL.fullmatch(text) is not None


def is_name(value: object, rule: NameRule) -> bool:
    if not isinstance(value, str):
        return False
    if rule is NameRule.LABEL:
        return _is_label(value)
    return len(value) <= MAX_SUBDOMAIN and all(_is_label(part) for part in value.split("."))


def name_message(value: object, rule: NameRule) -> str | None:
    """Why `value` cannot name a directory or file, or None when it can."""
    if is_name(value, rule):
        return None
    return f"{shown(value)} is not {rule.value}: it would become a path segment of the rendered tree"


def require_cluster_name(cluster: object) -> str:
    """`--cluster` names `clusters/<cluster>/`: a flag, so a wrong value is a usage error (exit 2)."""
    message = name_message(cluster, NameRule.LABEL)
    if message is not None:
        raise UsageError(f"--cluster {message}")
    if not isinstance(cluster, str):  # a name is a string, so a message was given above; for mypy
        raise UsageError(f"--cluster {shown(cluster)} is not a string")
    return cluster


def source_name_problem(
    source: SourceDocument, field_path: str, value: object, rule: NameRule = NameRule.LABEL
) -> Problem | None:
    """A problem at the source field a path segment comes from, or None when the value is safe."""
    message = name_message(value, rule)
    return None if message is None else problem_at(source, field_path, message)


def metadata_name_problems(documents: Iterable[SourceDocument]) -> list[Problem]:
    """Every source object's name is a DNS-1123 subdomain and its namespace a label, as Kubernetes
    requires of custom resources: app directories are made of them."""
    problems = []
    for document in documents:
        metadata = document.body.get("metadata")
        if not isinstance(metadata, dict):
            continue
        if "name" in metadata:
            problems.append(
                source_name_problem(document, "metadata.name", metadata["name"], NameRule.SUBDOMAIN)
            )
        if metadata.get("namespace") not in (None, ""):
            problems.append(source_name_problem(document, "metadata.namespace", metadata["namespace"]))
    return [problem for problem in problems if problem is not None]


def object_name_message(name: object) -> str | None:
    """Why no Kubernetes kind would accept `name` (nor may it name a file), or None. Kubernetes asks
    at least this of every name (a path segment: not `.` or `..`, no `/` or `%`); most kinds ask
    for a DNS-1123 subdomain, which `validate` checks per kind."""
    if not isinstance(name, str) or name in ("", ".", ".."):
        return f"{shown(name)} is not a name Kubernetes accepts"
    if "/" in name or "%" in name or _CONTROL.search(name):
        return f"{shown(name)} holds '/', '%' or a control character: not a name Kubernetes accepts"
    return None


def path_message(path: object) -> str | None:
    """Why `path` is not a plain relative path of the tree (`a/b.yaml`), or None when it is.

    For names that are not Kubernetes names but still become files: chart template paths and the
    files of a rendered tree. No empty, `.` or `..` segment, nothing absolute, no backslash and no
    control character.
    """
    if not isinstance(path, str) or not path:
        return f"{shown(path)} is not a relative path"
    if path.startswith("/"):
        return f"{shown(path)} is absolute: only paths inside the tree are allowed"
    if _CONTROL.search(path) or "\\" in path:
        return f"{shown(path)} holds a control character or a backslash"
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        return f"{shown(path)} has an empty, '.' or '..' segment"
    return None
