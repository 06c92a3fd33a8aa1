"""The edges of the pipeline: files, schemas on disk, the Helm engine, the repo writer and Git.

This face lists the readers the controller may use (source files, source schemas, the files that
ship); the writers (io.repo, io.git) are not on it and the controller may not import them. It is
lazy (core.faces): `post-render` reads stdin and maybe a file, and does not need the data-file
finder or the schema loader.
"""

from typing import TYPE_CHECKING

from btp_gitops.generator.core.faces import lazy_face

if TYPE_CHECKING:
    from btp_gitops.generator.io import bundled
    from btp_gitops.generator.io.input_files import MAX_FILE_BYTES
    from btp_gitops.generator.io.schemas import load_schema_registry
    from btp_gitops.generator.io.sources import YAML_SUFFIXES, display_path, documents_in_text, load_sources

__all__ = [
    "MAX_FILE_BYTES",
    "YAML_SUFFIXES",
    "bundled",
    "display_path",
    "documents_in_text",
    "load_schema_registry",
    "load_sources",
]

__getattr__ = lazy_face(
    __name__,
    {
        "bundled": ("bundled",),
        "input_files": ("MAX_FILE_BYTES",),
        "schemas": ("load_schema_registry",),
        "sources": ("YAML_SUFFIXES", "display_path", "documents_in_text", "load_sources"),
    },
)
