"""The exception tree of btp-gitops (the controller's errors are a branch of it, see
controller.errors), and the exit code of each branch (core.exit_codes holds the table).

    BtpGitopsError                      exit 6 (never raised directly)
    +-- UsageError                      exit 2  options that contradict each other
    +-- InputError                      exit 3  a source document is wrong
    |   +-- SourceSyntaxError                   not YAML, or not a Kubernetes object
    |   +-- SchemaViolation                     does not match its schema in schemas/
    |   +-- InvalidSpec                         valid shape, but a rule of the domain is broken
    |   |   +-- MissingSecret, InvalidSecret        post-render credentials (BTP Manager's reasons)
    |   +-- ManifestInvalid                     `validate`: an object does not match its kind's schema
    |   +-- UnconvertibleSchema                 a schema in schemas/ has no CRD equivalent
    |   +-- ClusterUnreachable                  a cluster cannot be read (--from-cluster, --against-cluster)
    |   +-- PathNotAllowed                      a source reaches a file outside the source roots
    |   +-- RenderWouldEmpty                    a render would remove most objects of a populated cluster
    |   +-- ModuleRemovalRefused                a Kyma module would be removed while an entry is unresolvable
    +-- ChartError                      exit 4  a chart cannot be found or rendered
    |   +-- ChartNotFound
    |   +-- ChartRenderFailed
    |   +-- NondeterministicChart               output changes between two renders and cannot be pinned
    |   +-- EmptyChartOutput                    a chart, or the stream Helm hands post-render, has no object
    +-- OutputError                     exit 5  the result cannot be written
    |   +-- OutputNotWritable
    |   +-- GitError                            a Git repository cannot be read or written (the
    |   |                                       rendered repo, or the controller's source repository)
    |   +-- CredentialInOutput                  a credential or private key would reach Git
    |   +-- UnsafeOutput                        a symlink in the output, or files btp-gitops did not write
    |   +-- OutputLocked                        another run holds the output's lock past --lock-timeout
    +-- InstallationBroken              exit 70 btp-gitops's own data files are missing
    +-- ControllerError                 exit 7  (controller.errors)

Exit code 1 is reserved for "changes found" (`diff --exit-code`), 70 for a bug in btp-gitops.
Every input error carries `Problem`s: file, document index, object and field path, so that one
run reports everything that is wrong, not only the first thing. Messages and problems are
redacted when they are made (core.redact): no private key, token or long value is ever shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.redact import redact


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with one input document, located as precisely as we know."""

    file: str
    message: str
    document: int | None = None  # 1-based index of the YAML document in the file
    object_ref: str | None = None  # "Kind namespace/name"
    field_path: str | None = None  # "spec.modules[2].channel"

    def __post_init__(self) -> None:
        # The one place every problem's text passes: no key, token or long value gets through
        # (core.redact); CI logs are public.
        for name in ("message", "object_ref", "field_path"):
            text = getattr(self, name)
            if text is not None:
                object.__setattr__(self, name, redact(text))

    def render(self) -> str:
        where = self.file
        if self.document is not None:
            where += f": document {self.document}"
        if self.object_ref:
            where += f" ({self.object_ref})"
        if self.field_path:
            where += f": {self.field_path}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, str | int | None]:
        """The problem as the JSON reports and JSON errors give it (None where not known)."""
        return {
            "file": self.file,
            "document": self.document,
            "object": self.object_ref,
            "field": self.field_path,
            "message": self.message,
        }


class BtpGitopsError(Exception):
    """Root of every error btp-gitops raises on purpose, the controller's included."""

    exit_code: ClassVar[ExitCode] = ExitCode.ERROR
    # Machine-readable, for the controller's statuses, Events and HTTP answers.
    reason: ClassVar[str] = "Error"

    def __init__(self, message: str, problems: Iterable[Problem] = ()) -> None:
        message = redact(message)
        super().__init__(message)
        self.message = message
        self.problems: tuple[Problem, ...] = tuple(problems)

    def lines(self) -> list[str]:
        """The message followed by one line per problem, as shown to the user."""
        return [self.message, *(f"  {p.render()}" for p in self.problems)]


class InstallationBroken(BtpGitopsError):
    """btp-gitops's own data files are missing: a broken install, not the user's input."""

    exit_code = ExitCode.INTERNAL


class UsageError(BtpGitopsError):
    exit_code = ExitCode.USAGE


class InputError(BtpGitopsError):
    exit_code = ExitCode.INPUT


class SourceSyntaxError(InputError):
    pass


class SchemaViolation(InputError):
    pass


class InvalidSpec(InputError):
    pass


class ManifestInvalid(InputError):
    """At least one manifest does not match the schema of its kind."""


class UnconvertibleSchema(InputError):
    """A schema in schemas/ cannot become a CustomResourceDefinition without changing its meaning."""


class ClusterUnreachable(InputError):
    """post-render --from-cluster or diff --against-cluster could not read the cluster (the
    kubeconfig is an input), or its answer was over a bound."""


class PathNotAllowed(InputError):
    """A source names a file, or a source directory holds a symlink, outside the roots given on the
    command line (sources, catalogs, `--allow-path`, the charts shipped with btp-gitops)."""


class RenderWouldEmpty(InputError):
    """The sources would remove more than half of the objects of a populated cluster directory,
    counted in every app (core.ownership.removal_refusal)."""


class ModuleRemovalRefused(InputError):
    """A Kyma module would be removed while an entry of the same Kyma's spec.modules cannot be
    resolved (likely a misspelt name), and the removal was not asked for explicitly."""


class ChartError(BtpGitopsError):
    exit_code = ExitCode.CHART


class ChartNotFound(ChartError):
    pass


class ChartRenderFailed(ChartError):
    pass


class NondeterministicChart(ChartError):
    pass


class EmptyChartOutput(ChartError):
    """A chart rendered no object and its source does not say it may (`spec.chart.allowEmpty`), or
    Helm handed post-render a stream without one (`post-render --allow-empty`): what a broken Helm
    binary prints, and what would make Argo CD, Flux or `helm upgrade` delete everything."""


class OutputError(BtpGitopsError):
    exit_code = ExitCode.OUTPUT


class OutputNotWritable(OutputError):
    pass


class GitError(OutputError):
    """Git failed: committing or reading the rendered repo, or (in the controller) cloning,
    reading or pushing the source repository."""

    reason = "GitError"


class CredentialInOutput(OutputError):
    """Rendering would write a credential into Git: a chart or configuration must be fixed."""


class UnsafeOutput(OutputError):
    """The output holds something btp-gitops must not follow or delete: a symbolic link where it
    writes, or files it did not write in a directory it would replace."""


class OutputLocked(OutputError):
    """Another btp-gitops run kept the output directory locked past the timeout."""


def raise_if_problems(error_type: type[InputError], message: str, problems: list[Problem]) -> None:
    """Raise `error_type` carrying every problem found, sorted for a stable report."""
    if problems:
        ordered = sorted(problems, key=lambda p: (p.file, p.document or 0, p.field_path or "", p.message))
        raise error_type(f"{message} ({len(ordered)} problem{'s' if len(ordered) != 1 else ''})", ordered)
