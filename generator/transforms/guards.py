"""Last checks before anything leaves for Git: no credential and no private key gets through.

The guard sees what kustomize and Argo CD will see: every object, and every object inside a
wrapper (`kind: List`, a `*List` kind, any object with an `items` array, at any depth), so a
Secret inside a List is found like a top-level one. It refuses

- a Secret (`kind: Secret`) with `data` or `stringData`, wherever it sits, unless every value in
  both is PEM certificates and nothing else (core.keys.is_certificate_bundle): public data, such
  as the client CA Istio reads from `<credentialName>-cacert`; for module-resources
  (`placeholders`), unless every value is a placeholder: empty, or under a key of
  PUBLIC_SECRET_CONSTANTS exactly one of the constants listed for it;
- a private key in any string of any object, keys of maps included, in any encoding core.keys
  recognises (PEM, OpenSSH, PuTTY, base64 or hex of those, DER PKCS#8 / PKCS#1 / SEC1 in base64);
- a private key anywhere in the text of any output file (kustomization, wiring, records).

Certificates and public keys pass: a caBundle is public. Problems name the object and the field,
never the value.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from btp_gitops.generator.core.errors import CredentialInOutput, Problem
from btp_gitops.generator.core.keys import MIN_KEY_TEXT, is_certificate_bundle, private_key_in
from btp_gitops.generator.core.objects import Manifest, describe, format_field_path

REFUSAL = (
    "refusing to write credentials into the rendered repo: credentials must be referenced "
    "(ExternalSecret) and certificates issued in-cluster (cert-manager)"
)

Path = tuple[str | int, ...]

# The only values other than empty ones a placeholder Secret of module-resources may hold, by key:
# constants of the SAP BTP service operator's chart, the same on every landscape (the path of the
# OAuth token endpoint is not a credential; BTP Manager's artifact carries it in the operator's
# Secret, which the cluster fills with the real values). Exact text, nothing derived from it.
PUBLIC_SECRET_CONSTANTS: Mapping[str, frozenset[str]] = MappingProxyType(
    {"tokenurlsuffix": frozenset({"/oauth/token"})}
)
_PLACEHOLDER_REFUSAL = (
    "Secret with a value: module-resources keeps a Secret only with empty values (and "
    + ", ".join(f"{key}: {' or '.join(sorted(v))}" for key, v in sorted(PUBLIC_SECRET_CONSTANTS.items()))
    + ")"
)
_SECRET_KIND = re.compile(r"""kind["']?[ \t]*:[ \t]*["']?Secret(?![\w-])""")


def _nodes(body: Any) -> Iterator[tuple[Path, Any]]:
    """Every node under `body` with its path, depth first (iterative: depth is the input's)."""
    stack: list[tuple[Path, Any]] = [((), body)]
    while stack:
        path, node = stack.pop()
        yield path, node
        if isinstance(node, dict):
            stack.extend(((*path, str(key)), value) for key, value in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend(((*path, index), item) for index, item in reversed(list(enumerate(node))))


def _value_text(field: str, value: object) -> str | None:
    """A Secret value as text (`data` is base64), or None when it is not text."""
    if not isinstance(value, str):
        return None
    if field == "stringData":
        return value
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _certificates_only(node: dict[str, Any]) -> bool:
    """Whether every value of the Secret is PEM certificates (and there is at least one)."""
    texts: list[str | None] = []
    for field in ("data", "stringData"):
        values = node.get(field)
        if values in (None, {}):
            continue
        if not isinstance(values, dict):
            return False
        texts += [_value_text(field, value) for value in values.values()]
    return bool(texts) and all(text is not None and is_certificate_bundle(text) for text in texts)


def _is_placeholder(field: str, key: object, value: object) -> bool:
    """An empty value, or one of the public constants listed for its key: in `data` the canonical
    base64 of the constant, in `stringData` the constant itself."""
    if value in ("", None):
        return True
    constants = PUBLIC_SECRET_CONSTANTS.get(key) if isinstance(key, str) else None
    if constants is None or not isinstance(value, str):
        return False
    if field == "stringData":
        return value in constants
    return any(value == base64.b64encode(c.encode("utf-8")).decode("ascii") for c in constants)


def _secret_fields_with_data(node: dict[str, Any], placeholders: bool) -> list[Path]:
    """Where a Secret holds values that count: `data`, `stringData` (or, with `placeholders`, each
    of their keys whose value is not a placeholder). None for an object that is not a Secret or
    a Secret of public certificates only."""
    if node.get("kind") != "Secret" or _certificates_only(node):
        return []
    found: list[Path] = []
    for field in ("data", "stringData"):
        values = node.get(field)
        if not values:
            continue
        if placeholders and isinstance(values, dict):
            found += [(field, str(k)) for k, v in values.items() if not _is_placeholder(field, k, v)]
        else:
            found.append((field,))
    return found


def _data_message(path: Path, placeholders: bool) -> str:
    return _PLACEHOLDER_REFUSAL if placeholders and len(path) > 1 else "Secret with data"


def _where(path: Path) -> str:
    return format_field_path(list(path))


def object_problems(manifest: Manifest, placeholders: bool = False) -> list[Problem]:
    """Secrets with data and private keys anywhere in one object, located by field path and by
    the innermost object around them (a List's item, not the List). With `placeholders`, a
    Secret whose values are all empty passes."""
    objects: dict[Path, str] = {}  # where an object (a map with a kind) starts -> "Kind ns/name"

    def found(path: Path, message: str) -> Problem:
        around = next((objects[path[:n]] for n in range(len(path), -1, -1) if path[:n] in objects), None)
        return Problem(manifest.origin, message, object_ref=around, field_path=_where(path))

    problems: list[Problem] = []
    for path, node in _nodes(manifest.body):
        if isinstance(node, str):
            if len(node) >= MIN_KEY_TEXT and (what := private_key_in(node)):
                problems.append(found(path, f"contains {_article(what)}"))
            continue
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("kind"), str):
            objects[path] = describe(node)
        for where in _secret_fields_with_data(node, placeholders):
            inside = " (inside a list)" if path else ""
            problems.append(found((*path, *where), f"{_data_message(where, placeholders)}{inside}"))
        for key in node:
            if isinstance(key, str) and len(key) >= MIN_KEY_TEXT and (what := private_key_in(key)):
                problems.append(found(path, f"a map key is {_article(what)}"))
    return problems


def _article(what: str) -> str:
    return what if what.startswith(("a ", "an ", "base64", "hex")) else f"a {what}"


def _secret_below_the_top(text: str) -> bool:
    """Whether an output text shows an object of kind Secret that is not a document's top level
    (an item of a List, a field of another object): only then are the objects walked for one."""
    for match in _SECRET_KIND.finditer(text):
        if match.start() != text.rfind("\n", 0, match.start()) + 1:
            return True
    return False


def credential_problems(
    manifests: list[Manifest], serialized: Mapping[str, str], placeholders: bool = False
) -> list[Problem]:
    """Every problem, objects first, then files.

    `serialized` is every byte that would be written, the objects' text included, and is where
    keys are searched first: one pass over the text in C (core.keys) is far cheaper than a walk
    through every string of every object. The objects are walked (for keys and for Secrets at any
    depth) only when a text shows a key or a Secret below the top, or when there is no text.
    """
    keyed = [(name, what) for name, text in sorted(serialized.items()) if (what := private_key_in(text))]
    walk = bool(keyed) or not serialized or any(_secret_below_the_top(t) for t in serialized.values())
    problems: list[Problem] = []
    for manifest in manifests:
        if walk:
            problems += object_problems(manifest, placeholders)
        elif isinstance(manifest.body, dict):
            problems += [
                Problem(
                    manifest.origin,
                    _data_message(where, placeholders),
                    object_ref=describe(manifest.body),
                    field_path=_where(where),
                )
                for where in _secret_fields_with_data(manifest.body, placeholders)
            ]
    problems += [Problem(file=name, message=f"contains {_article(what)}") for name, what in keyed]
    return problems


def assert_no_credentials(
    manifests: list[Manifest], serialized: Mapping[str, str], *, placeholders: bool = False
) -> None:
    """Refuse Secrets with data and private keys in the objects, and private keys in any output
    text. `serialized` maps output file names to their text: every byte we would write.

    `placeholders` is for module-resources: BTP Manager's artifact ships the operator's Secret
    with its credentials empty (filled in the cluster) and `tokenurlsuffix: /oauth/token`; a
    Secret passes when every value is empty or a constant of PUBLIC_SECRET_CONSTANTS for its
    key, and any other value is refused at its key.
    """
    problems = credential_problems(manifests, serialized, placeholders)
    if problems:
        raise CredentialInOutput(REFUSAL, problems)


def assert_no_private_key_in_text(name: str, text: str) -> None:
    """Refuse a text about to be shown (a diff report) that holds a private key: the masking
    before it should have removed every one; this is the check that it did."""
    what = private_key_in(text)
    if what:
        raise CredentialInOutput(
            f"refusing to print {name}: it would show a private key",
            [Problem(file=name, message=f"contains {_article(what)}")],
        )
