"""Loading the JSON Schemas of schemas/ from disk.

The shipped schemas are read as they are. Others (`--schemas DIR`, a hidden option for schema
development, or `$BTP_GITOPS_SCHEMAS`) are input like any file a command reads: only regular
files up to `MAX_SCHEMA_BYTES` (a FIFO named `*.json` is refused without blocking), no directory
link followed, and a file that is not JSON, not a schema object with an `$id`, with a malformed
`x-kubernetes-group-version-kind`, or not a valid JSON Schema (draft 2020-12) is an input error
(exit 3) naming the file, never a traceback. Argo CD's plugin refuses `--schemas` altogether
(cli.argocd_parameters): a repository's schemas would let its own sources through unchecked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.errors import InputError, Problem, raise_if_problems
from btp_gitops.generator.core.validation import SchemaRegistry
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.input_files import UnreadableInput, decoded_text, read_input_bytes

MAX_SCHEMA_BYTES = 8 * 1024 * 1024  # the largest shipped schema is a few dozen KiB


def default_schema_dir() -> Path:
    """The schemas shipped with btp-gitops, or $BTP_GITOPS_SCHEMAS when set (a schema under development)."""
    override = os.environ.get("BTP_GITOPS_SCHEMAS")
    if override:
        return Path(override)
    return bundled.schema_dir()


def _schema_files(root: Path) -> list[Path]:
    found = []
    for parent, directories, files in os.walk(root):  # links to directories are not followed
        directories.sort()
        found += [Path(parent) / name for name in files if name.endswith(".json")]
    return sorted(found)


def _gvk_problem(document: dict[str, Any]) -> str | None:
    gvk = document.get("x-kubernetes-group-version-kind")
    if gvk is None:
        return None
    if not isinstance(gvk, dict) or not all(
        isinstance(gvk.get(k), str) for k in ("group", "version", "kind")
    ):
        return "x-kubernetes-group-version-kind must be a mapping of strings: group, version, kind"
    return None


def _schema_problem(document: dict[str, Any]) -> str | None:
    import jsonschema  # noqa: PLC0415 - as core.validation: only where schemas are built

    try:
        jsonschema.Draft202012Validator.check_schema(document)
    except jsonschema.SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "the top"
        return f"not a valid JSON Schema at {where}: {error.message[:200]}"
    except RecursionError:
        return "not a valid JSON Schema: nested too deeply"
    return None


def read_schema_documents(root: Path) -> list[dict[str, Any]]:
    """Every `*.json` under `root`, each checked to be a schema; raises InputError naming each
    file that is not."""
    if not root.is_dir():
        raise InputError(f"cannot read the schemas: {root} is not a directory")
    documents: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for path in _schema_files(root):
        try:
            document = json.loads(decoded_text(read_input_bytes(path, MAX_SCHEMA_BYTES)))
        except UnreadableInput as error:
            problems.append(Problem(str(path), error.reason))
            continue
        except json.JSONDecodeError as error:
            problems.append(Problem(str(path), f"not JSON: {error.msg} at line {error.lineno}"))
            continue
        except (ValueError, RecursionError):
            problems.append(
                Problem(str(path), "not JSON that can be read (a number too long, nested too deeply)")
            )
            continue
        if not isinstance(document, dict) or not isinstance(document.get("$id"), str):
            problems.append(Problem(str(path), "not a schema: a JSON object with a string $id"))
            continue
        message = _gvk_problem(document) or _schema_problem(document)
        if message is not None:
            problems.append(Problem(str(path), message))
            continue
        documents.append(document)
    raise_if_problems(InputError, "cannot read the schemas", problems)
    return documents


def load_schema_registry(directory: Path | None = None) -> SchemaRegistry:
    root = directory or default_schema_dir()
    if root == bundled.schema_dir():
        shipped = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.json"))]
        return SchemaRegistry(shipped)
    return SchemaRegistry(read_schema_documents(root))
