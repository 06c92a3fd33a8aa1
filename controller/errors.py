"""The controller's exception tree; third-party errors are wrapped at the boundary (`raise ... from e`).

It is a branch of the generator's (core.errors.BtpGitopsError is the one root), so one `except`
and one table of exit codes (core.exit_codes) serve both. Git failures are the generator's
`GitError` (an OutputError, exit 5): the controller raises that same class.

    ControllerError                 exit 7; `controller.app.run_command` prints it and exits
    ├── ConfigurationError          exit 2; bad flags or settings: the process exits, nothing is retried
    ├── TemporaryError              retry the reconcile after `delay` seconds (bounded backoff)
    │   ├── KubeUnavailable         the API server did not answer, or answered 5xx / 429
    │   ├── GitPushRejected         the remote moved on: fetch, re-apply, push again
    │   ├── OutcomeUnknown          a write may or may not have landed (a push timed out and the
    │   │                           remote could not be asked since): never undo what depends on it
    │   └── PrometheusUnavailable   a cleanup rule cannot be evaluated now
    ├── PermanentError              retrying without a change to the object cannot help
    │   ├── KubeRequestRefused      the API server refused the request (4xx other than 409/429)
    │   └── UnreadableSource        a source file is not YAML, or a CAP document breaks its schema
    └── AuthenticationFailed        a callback without valid credentials (the server answers 401/403)

    GitError (the generator's)
    └── GitTimeout                  a Git network operation did not finish in time; its process group
                                    was killed

Reasons are machine-readable (`reason`) so statuses and Events carry them; messages never contain
secret values or response bodies that could.
"""

from __future__ import annotations

from btp_gitops.generator.core import BtpGitopsError, ExitCode, GitError


class ControllerError(BtpGitopsError):
    """Root of the errors only the controller raises."""

    exit_code = ExitCode.CONTROLLER

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ConfigurationError(ControllerError):
    exit_code = ExitCode.USAGE
    reason = "InvalidConfiguration"


class TemporaryError(ControllerError):
    """Try again later; `delay` is a hint in seconds, the runtime caps and backs it off."""

    reason = "Retrying"

    def __init__(self, message: str, delay: float = 10.0) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(ControllerError):
    reason = "Failed"


class KubeUnavailable(TemporaryError):
    reason = "KubeUnavailable"


class KubeRequestRefused(PermanentError):
    reason = "KubeRequestRefused"

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class UnreadableSource(PermanentError):
    """Only a commit to the source repository helps (controller.records.unreadable makes it)."""

    reason = "UnreadableSource"


class GitPushRejected(TemporaryError):
    reason = "GitPushRejected"


class OutcomeUnknown(TemporaryError):
    """The change may have reached the remote or not; asking again later tells. Whoever answers a
    caller must not undo anything that exists for the change's sake (a pending callback)."""

    reason = "OutcomeUnknown"


class GitTimeout(GitError):
    """`git <operation>` against the remote did not finish within `timeout` seconds (the remote is
    hung or a network path drops packets); the process and its helpers were killed."""

    reason = "GitTimeout"

    def __init__(self, operation: str, remote: str, timeout: float) -> None:
        super().__init__(f"git {operation} of {remote} did not finish within {timeout:g}s")
        self.operation = operation
        self.timeout = timeout


class PrometheusUnavailable(TemporaryError):
    reason = "PrometheusUnavailable"


class AuthenticationFailed(ControllerError):
    """`status` is the HTTP status to answer (401 no or bad credentials, 403 not allowed)."""

    reason = "Unauthorized"

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status
