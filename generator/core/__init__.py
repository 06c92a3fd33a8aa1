"""The kernel: pure building blocks every stage shares (errors, object helpers, YAML style, kinds,
names, layout, source documents and their validation, reports, redaction, private-key detection).

This face lists what the controller may use; generator packages import the kernel's modules
directly. Features (diff, crds, manifests, wiring, streams, charts) have packages of their own.

The face is lazy (PEP 562): each name is imported from its module when it is first asked for.
Every command imports a kernel module (`core.errors` at least), which runs this file first; an
eager face would load the whole kernel, PyYAML with it, even for `btp-gitops --version`.
See core.faces.
"""

from typing import TYPE_CHECKING

from btp_gitops.generator.core.faces import lazy_face

if TYPE_CHECKING:
    from btp_gitops.generator.core.errors import BtpGitopsError, GitError, Problem, SourceSyntaxError
    from btp_gitops.generator.core.exit_codes import ExitCode, exit_code_for
    from btp_gitops.generator.core.kinds import ScopeIndex, install_rank
    from btp_gitops.generator.core.objects import (
        ObjectKey,
        api_group,
        get_path,
        kind_of,
        name_of,
        namespace_of,
        object_key,
    )
    from btp_gitops.generator.core.source_contents import KnownKinds, SourceSorting, skipped_file
    from btp_gitops.generator.core.sources import SourceDocument, SourceSet
    from btp_gitops.generator.core.validation import SchemaRegistry, problems_in, validate_sources
    from btp_gitops.generator.core.yamlio import (
        SourceSyntaxProblem,
        dump_each,
        dump_object,
        load_source_documents,
    )

__all__ = [
    "BtpGitopsError",
    "ExitCode",
    "GitError",
    "KnownKinds",
    "ObjectKey",
    "Problem",
    "SchemaRegistry",
    "ScopeIndex",
    "SourceDocument",
    "SourceSet",
    "SourceSorting",
    "SourceSyntaxError",
    "SourceSyntaxProblem",
    "api_group",
    "dump_each",
    "dump_object",
    "exit_code_for",
    "get_path",
    "install_rank",
    "kind_of",
    "load_source_documents",
    "name_of",
    "namespace_of",
    "object_key",
    "problems_in",
    "skipped_file",
    "validate_sources",
]

__getattr__ = lazy_face(
    __name__,
    {
        "errors": ("BtpGitopsError", "GitError", "Problem", "SourceSyntaxError"),
        "exit_codes": ("ExitCode", "exit_code_for"),
        "kinds": ("ScopeIndex", "install_rank"),
        "objects": ("ObjectKey", "api_group", "get_path", "kind_of", "name_of", "namespace_of", "object_key"),
        "source_contents": ("KnownKinds", "SourceSorting", "skipped_file"),
        "sources": ("SourceDocument", "SourceSet"),
        "validation": ("SchemaRegistry", "problems_in", "validate_sources"),
        "yamlio": ("SourceSyntaxProblem", "dump_each", "dump_object", "load_source_documents"),
    },
)
