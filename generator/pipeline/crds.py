"""`btp-gitops crds`: the CustomResourceDefinitions of charts/btp-gitops/crds, from schemas/.

    read schemas/*.json -> build one CRD per group+kind -> <plural>.<group>.yaml -> write atomically

The output directory holds generated files only: writing replaces it as a whole, so the CRD of a
kind whose schema was removed disappears. `check_crds` is the same run without the write, for CI.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from btp_gitops.generator.crds.generate import build_crds, crd_files
from btp_gitops.generator.io.crd_files import read_schema_files
from btp_gitops.generator.io.repo import TreeChanges, diff_trees, read_tree, write_subtree


@dataclass(frozen=True, slots=True)
class CrdFiles:
    files: dict[str, str]  # file name -> text
    changes: TreeChanges


def generate_crd_files(schema_dir: Path | None = None) -> dict[str, str]:
    return crd_files(build_crds(read_schema_files(schema_dir)))


def write_crds(schema_dir: Path | None, out_dir: Path) -> CrdFiles:
    """Make `out_dir` hold exactly the CRDs generated from `schema_dir`."""
    files = generate_crd_files(schema_dir)
    changes = write_subtree(out_dir.parent, out_dir.name, files)
    return CrdFiles(files=files, changes=changes)


def check_crds(schema_dir: Path | None, out_dir: Path) -> list[str]:
    """Files of `out_dir` that differ from what `write_crds` would write: missing, changed or stale."""
    files = generate_crd_files(schema_dir)
    changes = diff_trees(read_tree(out_dir), {name: text.encode("utf-8") for name, text in files.items()})
    return sorted((*changes.added, *changes.changed, *changes.removed))
