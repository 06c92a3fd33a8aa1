"""Reading schemas/ for the CRD generator, and where the generated CRDs live in a checkout."""

from __future__ import annotations

import json
from pathlib import Path

from btp_gitops.generator.core.errors import Problem, SourceSyntaxError, raise_if_problems
from btp_gitops.generator.crds.generate import SchemaFile
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.input_files import UnreadableInput, decoded_text, read_input_bytes
from btp_gitops.generator.io.schemas import MAX_SCHEMA_BYTES, default_schema_dir


def default_crd_dir() -> Path:
    """charts/btp-gitops/crds: the chart that installs the CRDs (shipped with btp-gitops)."""
    return bundled.crd_dir()


def read_schema_files(directory: Path | None = None) -> list[SchemaFile]:
    """Every `*.json` under the schema directory, named relative to it; all syntax errors at once."""
    root = directory or default_schema_dir()
    if not root.is_dir():
        raise SourceSyntaxError("cannot read schemas", [Problem(file=str(root), message="not a directory")])
    files, problems = [], []
    for path in sorted(root.rglob("*.json")):
        try:
            # Bounded, regular files only: a FIFO named *.json is refused, not waited on.
            document = json.loads(decoded_text(read_input_bytes(path, MAX_SCHEMA_BYTES)))
        except UnreadableInput as error:
            problems.append(Problem(file=str(path), message=error.reason))
            continue
        except json.JSONDecodeError as error:
            problems.append(
                Problem(
                    file=str(path),
                    message=f"invalid JSON: line {error.lineno}, column {error.colno}: {error.msg}",
                )
            )
            continue
        except (ValueError, RecursionError):
            problems.append(
                Problem(file=str(path), message="invalid JSON: a number too long, or nested too deeply")
            )
            continue
        if not isinstance(document, dict):
            problems.append(Problem(file=str(path), message="a schema file must hold a JSON object"))
            continue
        files.append(
            SchemaFile(name=path.relative_to(root).as_posix(), location=str(path), document=document)
        )
    raise_if_problems(SourceSyntaxError, "cannot read schemas", problems)
    return files
