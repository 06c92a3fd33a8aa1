"""The kernel: pure building blocks every stage shares (errors, object helpers, YAML style, kinds,
names, layout, source documents and their validation, reports, redaction, private-key detection).

This face lists what the controller may use; generator packages import the kernel's modules
directly. Features (diff, crds, manifests, wiring, streams, charts) have packages of their own.
"""

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
    "ObjectKey",
    "Problem",
    "SchemaRegistry",
    "ScopeIndex",
    "SourceDocument",
    "SourceSet",
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
    "validate_sources",
]
